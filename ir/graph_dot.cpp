#include "ir/graph_dot.h"

#include <cstdio>

#include "ir/text.h"

namespace tgr {
namespace {

// "matmul", "split[axis=1, sizes=4x5]": the parameters that differ from their defaults.
std::string op_text(const Node& n) {
  std::string out = n.op->name, params;
  for (const auto& [key, v] : n.params.entries()) {
    const ParamSpec* spec = n.op->find_param(key);
    if (spec && spec->default_value && *spec->default_value == v) continue;
    params += (params.empty() ? "" : ", ") + key + "=" + param_value_to_string(v);
  }
  return params.empty() ? out : out + "[" + params + "]";
}

std::string shapes_text(const Node& n) {
  std::string out;
  for (const Shape& s : n.output_shapes) out += (out.empty() ? "" : ", ") + shape_to_string(s);
  return out;
}

std::string cost_text(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f us", us);
  return buf;
}

}  // namespace

std::string dot_quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string graph_dot_statements(const Graph& graph, const DotStyle& style) {
  const std::string& p = style.id_prefix;
  auto id = [&](int32_t i) { return p + "n" + std::to_string(i); };
  std::string out;
  std::vector<char> drawn(graph.nodes().size(), 0);
  for (int32_t i : graph.topological_order()) {
    const Node& n = graph.node(i);
    auto lit = style.highlight.find(i);
    const bool highlighted = lit != style.highlight.end();
    if (n.is_constant() && !style.weights && !highlighted) continue;
    drawn[i] = 1;
    std::string label, attrs;
    if (n.is_input()) {
      label = n.name + "\n" + shape_to_string(n.output_shapes[0]);
      attrs = "shape=ellipse, fillcolor=\"#e8eef8\"";
    } else if (n.is_constant()) {
      label = (n.name.empty() ? std::string("weight") : n.name) + "\n" + shape_to_string(n.output_shapes[0]);
      attrs = "shape=box, fontsize=8, fillcolor=\"#f2f2f2\"";
    } else {
      label = op_text(n);
      if (!n.name.empty()) label += "\n" + n.name;
      label += "\n" + shapes_text(n);
      if (static_cast<size_t>(i) < style.node_costs_us.size() && style.node_costs_us[i] > 0)
        label += "\n" + cost_text(style.node_costs_us[i]);
      attrs = "shape=box, style=\"rounded,filled\"";
    }
    if (highlighted) attrs += ", fillcolor=" + dot_quote(lit->second) + ", penwidth=2, class=\"highlighted\"";
    out += "  " + dot_quote(id(i)) + " [id=" + dot_quote(id(i)) + ", label=" + dot_quote(label) + ", " + attrs + "];\n";
  }
  for (int32_t i : graph.topological_order()) {
    if (!drawn[i]) continue;
    for (ValueRef in : graph.node(i).inputs) {
      if (!drawn[in.node]) continue;
      std::string edge = "  " + dot_quote(id(in.node)) + " -> " + dot_quote(id(i));
      if (graph.node(in.node).output_shapes.size() > 1) edge += " [label=" + dot_quote(std::to_string(in.output)) + "]";
      out += edge + ";\n";
    }
  }
  for (size_t k = 0; k < graph.outputs().size(); ++k) {
    const ValueRef v = graph.outputs()[k];
    const std::string out_id = p + "out" + std::to_string(k);
    out += "  " + dot_quote(out_id) + " [id=" + dot_quote(out_id) + ", label=" + dot_quote(graph.output_names()[k]) +
           ", shape=ellipse, fillcolor=\"#e8eef8\"];\n";
    if (drawn[v.node]) out += "  " + dot_quote(id(v.node)) + " -> " + dot_quote(out_id) + ";\n";
  }
  return out;
}

namespace {

const char* kGraphDefaults =
    "  node [style=filled, fillcolor=white, fontname=\"Helvetica\", fontsize=10];\n"
    "  edge [color=\"#555555\", fontsize=8];\n";

}  // namespace

std::string graph_to_dot(const Graph& graph, const DotStyle& style) {
  return "digraph " + dot_quote(style.name) + " {\n" + kGraphDefaults + graph_dot_statements(graph, style) + "}\n";
}

std::string rule_to_dot(const Rule& rule, const std::string& title) {
  std::string out = "digraph " + dot_quote(title) + " {\n" + kGraphDefaults;
  out += "  label=" + dot_quote(title) + ";\n  labelloc=t;\n";
  for (const auto& [side, graph] : {std::pair{"source", &rule.source}, std::pair{"target", &rule.target}}) {
    DotStyle style;
    style.id_prefix = std::string(side) + "_";
    out += "  subgraph " + dot_quote(std::string("cluster_") + side) + " {\n  label=" + dot_quote(side) + ";\n";
    out += graph_dot_statements(*graph, style);
    out += "  }\n";
  }
  return out + "}\n";
}

}  // namespace tgr
