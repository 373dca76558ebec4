#include "pet/region_check.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "runtime/interpreter.h"

namespace tgr::pet {

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kFull: return "full";
    case Verdict::kPartial: return "partial";
    case Verdict::kNone: return "none";
  }
  return "?";
}

namespace {

void check_supported(const Graph& g, const char* side) {
  for (int32_t index : g.topological_order()) {
    const std::string why = region_refusal(g, index);
    if (why.empty()) continue;
    const Node& n = g.node(index);
    std::string msg = side;
    msg += ": ";
    msg += why;
    if (n.is_op()) {
      msg += " in '";
      msg += to_text(to_expr(g, ValueRef{index, 0}));
      msg += "'";
    }
    msg += "; the region checker handles multi-linear programs only";
    throw RegionCheckError(msg);
  }
}

// Degree bound of every value: inputs 1, constant operators 0, products add.
std::vector<int> degrees(const Graph& g) {
  std::vector<int> deg(g.nodes().size(), 0);
  for (int32_t index : g.topological_order()) {
    const Node& n = g.node(index);
    if (n.is_input()) {
      deg[index] = 1;
    } else if (n.is_op()) {
      const bool product = find_region_rule(n.op->name)->product;
      for (ValueRef v : n.inputs) deg[index] = product ? deg[index] + deg[v.node] : std::max(deg[index], deg[v.node]);
    }
  }
  return deg;
}

// Whether output `value` reads some input variable along two or more paths
// (then one linear index map per input is not guaranteed).
bool reads_an_input_twice(const Graph& g, ValueRef value) {
  std::vector<int64_t> paths(g.nodes().size(), 0);
  paths[value.node] = 1;
  const std::vector<int32_t> order = g.topological_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node& n = g.node(*it);
    if (n.is_input() && paths[*it] > 1) return true;
    for (ValueRef v : n.inputs) paths[v.node] += paths[*it];
  }
  return false;
}

int64_t total_elements(const Graph& g) {
  int64_t n = 0;
  for (int32_t index : g.topological_order())
    for (const Shape& s : g.node(index).output_shapes) n += num_elements(s);
  return n;
}

// Positions tested in a box: the corner, and its neighbour along each axis
// longer than one; or every position.
std::vector<std::vector<int64_t>> test_positions(const Box& box, bool every) {
  std::vector<std::vector<int64_t>> out;
  if (every) {
    std::vector<int64_t> p = box.lo;
    for (int64_t k = 0; k < box.volume(); ++k) {
      out.push_back(p);
      for (int d = box.rank() - 1; d >= 0; --d) {
        if (++p[d] < box.hi[d]) break;
        p[d] = box.lo[d];
      }
    }
    return out;
  }
  out.push_back(box.lo);
  for (int d = 0; d < box.rank(); ++d)
    if (box.hi[d] - box.lo[d] >= 2) {
      out.push_back(box.lo);
      out.back()[d] += 1;
    }
  return out;
}

int64_t flat_index(const Shape& shape, const std::vector<int64_t>& p) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + p[d];
  return f;
}

// The graph's inputs in its order, taken by name from `by_name`.
std::vector<Tensor<Fp>> inputs_by_name(const Graph& g, const std::map<std::string, Tensor<Fp>>& by_name) {
  std::vector<Tensor<Fp>> out;
  for (int32_t i : g.inputs()) out.push_back(by_name.at(g.node(i).name));
  return out;
}

// A graph with the same inputs whose outputs are `graph`'s values at the
// given positions (one output per position), each computed from the input
// region it reads.
Graph point_graph(const Graph& graph, const std::vector<std::pair<int, std::vector<int64_t>>>& points) {
  Graph g;
  for (int32_t i : graph.inputs()) g.add_input(graph.node(i).name, graph.node(i).output_shapes[0]);
  RestrictedBuilder builder(graph, g);
  for (const auto& [output, p] : points) {
    Box b{p, p};
    for (int64_t& v : b.hi) ++v;
    g.add_output(builder.restricted(graph.outputs()[output], b));
  }
  return g;
}

struct Plan {
  std::vector<std::vector<std::vector<std::vector<int64_t>>>> positions;  // [output][box][k] -> position
  std::vector<std::pair<int, std::vector<int64_t>>> flat;                // (output, position), in order
};

}  // namespace

CheckResult check_regions(const Graph& source, const Graph& target, const CheckOptions& options) {
  if (options.trials < 1) throw RegionCheckError("the number of trials must be at least 1");
  if (source.outputs().size() != target.outputs().size())
    throw RegionCheckError("the source has " + std::to_string(source.outputs().size()) + " outputs, the target " +
                           std::to_string(target.outputs().size()));
  for (size_t o = 0; o < source.outputs().size(); ++o)
    if (source.shape(source.outputs()[o]) != target.shape(target.outputs()[o]))
      throw RegionCheckError("output " + std::to_string(o) + " has shape " +
                             shape_to_string(source.shape(source.outputs()[o])) + " in the source but " +
                             shape_to_string(target.shape(target.outputs()[o])) + " in the target");
  for (int32_t i : target.inputs())
    if (!source.find_input(target.node(i).name))
      throw RegionCheckError("the target reads '" + target.node(i).name + "', which the source does not declare");
  check_supported(source, "source");
  check_supported(target, "target");

  const auto src_parts = propagate_partitions(source);
  const auto dst_parts = propagate_partitions(target);
  const std::vector<int> src_deg = degrees(source), dst_deg = degrees(target);

  CheckResult result;
  result.trials = options.trials;
  Plan plan;
  bool every_somewhere = false;
  for (size_t o = 0; o < source.outputs().size(); ++o) {
    const ValueRef s = source.outputs()[o], t = target.outputs()[o];
    OutputRegions out;
    out.shape = source.shape(s);
    out.grid = intersect(src_parts[s.node][s.output], dst_parts[t.node][t.output]);
    out.every_position = reads_an_input_twice(source, s) || reads_an_input_twice(target, t);
    out.degree = std::max({1, src_deg[s.node], dst_deg[t.node]});
    every_somewhere = every_somewhere || out.every_position;
    plan.positions.emplace_back();
    for (const Box& b : out.grid.boxes()) {
      plan.positions.back().push_back(test_positions(b, out.every_position));
      for (const auto& p : plan.positions.back().back()) plan.flat.emplace_back(static_cast<int>(o), p);
    }
    result.outputs.push_back(std::move(out));
  }
  result.positions_tested = 2 * static_cast<int64_t>(plan.flat.size());

  // Evaluate both sides at the planned positions, trial by trial.
  const bool whole = every_somewhere ||
                     total_elements(source) + total_elements(target) <= options.whole_evaluation_limit;
  std::optional<Graph> src_points, dst_points;
  if (!whole) {
    src_points = point_graph(source, plan.flat);
    dst_points = point_graph(target, plan.flat);
  }
  std::vector<bool> differs(plan.flat.size(), false);
  for (int trial = 0; trial < options.trials; ++trial) {
    const std::vector<Tensor<Fp>> random = random_inputs<Fp>(source, options.seed + 7919 * trial);
    std::map<std::string, Tensor<Fp>> by_name;
    for (size_t i = 0; i < random.size(); ++i) by_name[source.node(source.inputs()[i]).name] = random[i];
    if (whole) {
      const auto a = evaluate<Fp>(source, std::span<const Tensor<Fp>>(random));
      const auto b = evaluate<Fp>(target, std::span<const Tensor<Fp>>(inputs_by_name(target, by_name)));
      for (size_t k = 0; k < plan.flat.size(); ++k) {
        const auto& [o, p] = plan.flat[k];
        const int64_t f = flat_index(a[o].shape, p);
        if (!(a[o].data[f] == b[o].data[f])) differs[k] = true;
      }
    } else {
      const auto a = evaluate<Fp>(*src_points, std::span<const Tensor<Fp>>(random));
      const auto b = evaluate<Fp>(*dst_points, std::span<const Tensor<Fp>>(inputs_by_name(*dst_points, by_name)));
      for (size_t k = 0; k < plan.flat.size(); ++k)
        if (!(a[k].data[0] == b[k].data[0])) differs[k] = true;
    }
  }

  // Per box: agrees when every tested position agreed in every trial.
  size_t k = 0;
  const double p = static_cast<double>(Fp::kModulus);
  for (size_t o = 0; o < result.outputs.size(); ++o) {
    OutputRegions& out = result.outputs[o];
    const std::vector<Box> boxes = out.grid.boxes();
    for (size_t b = 0; b < boxes.size(); ++b) {
      bool bad = false;
      for (size_t j = 0; j < plan.positions[o][b].size(); ++j) bad = differs[k++] || bad;
      (bad ? out.disagree : out.agree).push_back(boxes[b]);
      if (!bad) result.agreeing_elements += boxes[b].volume();
      result.total_elements += boxes[b].volume();
    }
    result.false_acceptance_bound +=
        static_cast<double>(out.agree.size()) * std::pow(out.degree / p, options.trials);
  }
  bool any_agree = false, any_disagree = false;
  for (const auto& out : result.outputs) {
    any_agree = any_agree || !out.agree.empty();
    any_disagree = any_disagree || !out.disagree.empty();
  }
  result.verdict = !any_disagree ? Verdict::kFull : any_agree ? Verdict::kPartial : Verdict::kNone;
  return result;
}

CheckResult check_rule(std::string_view rule_text, const ShapeMap& shapes, const CheckOptions& options) {
  const Rule rule = build_rule(rule_text, shapes);
  return check_regions(rule.source, rule.target, options);
}

std::string format_result(const CheckResult& r) {
  std::string s(verdict_name(r.verdict));
  s += '\n';
  for (size_t o = 0; o < r.outputs.size(); ++o) {
    const OutputRegions& out = r.outputs[o];
    s += "  output " + std::to_string(o) + " (" + shape_to_string(out.shape) + "): ";
    s += std::to_string(out.agree.size() + out.disagree.size()) + " boxes, ";
    s += std::to_string(out.agree.size()) + " agree, " + std::to_string(out.disagree.size()) + " disagree";
    s += out.every_position ? " (every position tested: an input is read along two paths)\n" : "\n";
    for (const Box& b : out.disagree) {
      s += "    disagree ";
      s += box_to_string(b);
      s += '\n';
    }
  }
  char line[200];
  std::snprintf(line, sizeof line,
                "  %lld positions tested per trial, %d trials; agreeing elements %lld of %lld; "
                "false-acceptance bound %.1e\n",
                static_cast<long long>(r.positions_tested), r.trials, static_cast<long long>(r.agreeing_elements),
                static_cast<long long>(r.total_elements), r.false_acceptance_bound);
  s += line;
  return s;
}

namespace {
void append_boxes(std::string& s, const std::vector<Box>& boxes) {
  s += '[';
  for (size_t i = 0; i < boxes.size(); ++i) {
    if (i) s += ',';
    s += '[';
    for (int d = 0; d < boxes[i].rank(); ++d) {
      if (d) s += ',';
      s += '[' + std::to_string(boxes[i].lo[d]);
      s += ',' + std::to_string(boxes[i].hi[d]);
      s += ']';
    }
    s += ']';
  }
  s += ']';
}
}  // namespace

std::string region_map_json(const CheckResult& r, std::string_view shapes, std::string_view source,
                            std::string_view target) {
  auto quoted = [](std::string_view text) {
    std::string q = "\"";
    for (char c : text) {
      if (c == '"' || c == '\\') q += '\\';
      q += c;
    }
    return q + '"';
  };
  std::string s = "{\"shapes\":";
  s += quoted(shapes);
  if (!source.empty()) {
    s += ",\"source\":";
    s += quoted(source);
    s += ",\"target\":";
    s += quoted(target);
  }
  s += ",\"verdict\":\"";
  s += verdict_name(r.verdict);
  s += "\",\"trials\":" + std::to_string(r.trials);
  s += ",\"outputs\":[";
  for (size_t o = 0; o < r.outputs.size(); ++o) {
    if (o) s += ',';
    s += "{\"shape\":\"" + shape_to_string(r.outputs[o].shape);
    s += "\",\"agree\":";
    append_boxes(s, r.outputs[o].agree);
    s += ",\"disagree\":";
    append_boxes(s, r.outputs[o].disagree);
    s += '}';
  }
  s += "]}";
  return s;
}

}  // namespace tgr::pet
