#include "optimizer/rewrite.h"
#include "ir/hash.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <unordered_set>

namespace tgr::optimizer {
namespace {

// Copies values of `from` into `to` on demand, depth first, with
// `replace` giving the substitute of a value (or nullopt).
class Copier {
 public:
  using Replacement = std::function<std::optional<ValueRef>(ValueRef)>;
  Copier(const Graph& from, Graph& to, Replacement replace) : from_(from), to_(to), replace_(std::move(replace)) {
    copied_.resize(from.nodes().size());
    for (int32_t in : from.inputs()) {
      const Node& n = from.node(in);
      copied_[in] = {to.add_input(n.name, n.output_shapes[0], n.output_dtypes[0])};
    }
  }

  // Iterative (an explicit stack instead of recursion): a model may be a
  // chain of 100,000 nodes, deeper than the call stack allows. Nodes are
  // added in the same order as a depth-first recursion would add them.
  ValueRef get(ValueRef v) {
    if (auto r = replace_(v)) return *r;
    struct Frame {
      int32_t node;
      std::vector<ValueRef> inputs;  // copies of the inputs done so far
    };
    std::vector<Frame> stack;
    if (copied_[v.node].empty()) stack.push_back({v.node, {}});
    while (!stack.empty()) {
      const int32_t id = stack.back().node;
      const Node& n = from_.node(id);
      if (n.is_constant()) {
        copied_[id] = {to_.add_shared_constant(n)};
        stack.pop_back();
        continue;
      }
      const size_t next = stack.back().inputs.size();
      if (next < n.inputs.size()) {
        const ValueRef in = n.inputs[next];
        if (auto r = replace_(in)) {
          stack.back().inputs.push_back(*r);
        } else if (!copied_[in.node].empty()) {
          stack.back().inputs.push_back(copied_[in.node].at(in.output));
        } else {
          stack.push_back({in.node, {}});  // copied first; this input is read again then
        }
        continue;
      }
      copied_[id] = to_.find_or_add_op(*n.op, n.params, std::move(stack.back().inputs), n.name, n.value_names);
      stack.pop_back();
    }
    return copied_[v.node].at(v.output);
  }

 private:
  const Graph& from_;
  Graph& to_;
  Replacement replace_;
  std::vector<std::vector<ValueRef>> copied_;
};

void copy_outputs(const Graph& from, Graph& to, Copier& copier) {
  for (size_t i = 0; i < from.outputs().size(); ++i) to.add_output(copier.get(from.outputs()[i]), from.output_names()[i]);
}

}  // namespace

Graph apply_instance(const Graph& graph, const Match& match, const Instance& instance, const std::string& rule_tag,
                     AppliedRewrite* record) {
  Graph out;
  std::vector<std::string> replaced;  // the matched operator nodes' names
  for (int32_t node : match.nodes)
    if (node >= 0 && !graph.node(node).name.empty()) replaced.push_back(graph.node(node).name);
  std::unordered_set<std::string> names;  // the graph's, which new nodes must not take
  if (!rule_tag.empty())
    for (const Node& n : graph.nodes())
      if (n.is_op() && !n.name.empty()) names.insert(n.name);
  RewriteNamer namer(rule_tag, replaced, [&](const std::string& name) { return names.contains(name); });
  if (record) record->removed = replaced;
  std::optional<std::vector<ValueRef>> replacement;
  std::function<std::optional<ValueRef>(ValueRef)> replace;
  Copier copier(graph, out, [&](ValueRef v) { return replace(v); });
  // The target of the instance, built in `out` once, over the variables' copies.
  auto build_target = [&] {
    const Graph& target = instance.rule.target;
    std::vector<std::vector<ValueRef>> built(target.nodes().size());
    for (int32_t i = 0; i < static_cast<int32_t>(target.nodes().size()); ++i) {
      const Node& n = target.node(i);
      if (n.is_input()) {
        built[i] = {copier.get(instance.bindings.at(n.name))};
      } else if (n.is_constant()) {
        built[i] = {out.add_shared_constant(n)};
      } else {
        std::vector<ValueRef> inputs;
        for (ValueRef in : n.inputs) inputs.push_back(built[in.node].at(in.output));
        const size_t nodes_before = out.nodes().size();
        if (rule_tag.empty()) {
          built[i] = out.find_or_add_op(*n.op, n.params, std::move(inputs));
          continue;
        }
        std::string name = namer.node_name(n.op->name);
        std::vector<std::string> values = RewriteNamer::value_names(name, n.output_shapes.size());
        built[i] = out.find_or_add_op(*n.op, n.params, std::move(inputs), name, std::move(values));
        if (record && out.nodes().size() > nodes_before) record->added.push_back(std::move(name));
      }
    }
    std::vector<ValueRef> values;
    for (ValueRef o : target.outputs()) values.push_back(built[o.node].at(o.output));
    return values;
  };
  replace = [&](ValueRef v) -> std::optional<ValueRef> {
    for (size_t k = 0; k < match.outputs.size(); ++k) {
      if (match.outputs[k] != v) continue;
      if (!replacement) replacement = build_target();
      return (*replacement)[k];
    }
    return std::nullopt;
  };
  copy_outputs(graph, out, copier);
  return out;
}

namespace {

bool is_identity(const Graph& g, const Node& n) {
  switch (n.op->kind) {
    case OpKind::kConcat:
      return n.inputs.size() == 1;
    case OpKind::kEnlarge:
    case OpKind::kReshape:
    case OpKind::kExpand:
      return n.inputs.size() == 1 && g.shape(n.inputs[0]) == n.output_shapes[0];
    default:
      return false;
  }
}

}  // namespace

uint64_t search_hash(const Graph& graph) {
  std::vector<std::vector<uint64_t>> hashes(graph.nodes().size());
  const std::hash<std::string> hash_string;
  for (int32_t i : graph.topological_order()) {
    const Node& n = graph.node(i);
    if (!n.is_op()) {
      hashes[i] = {n.hash};
      continue;
    }
    if (is_identity(graph, n)) {
      hashes[i] = {hashes[n.inputs[0].node][n.inputs[0].output]};
      continue;
    }
    uint64_t h = hash_string(n.op->name);
    for (const auto& [key, value] : n.params.entries()) h = hash_combine(hash_combine(h, hash_string(key)), hash_string(param_value_to_string(value)));
    std::vector<uint64_t> args;
    for (ValueRef in : n.inputs) args.push_back(hashes[in.node][in.output]);
    if (n.op->commutative) std::sort(args.begin(), args.end());
    for (uint64_t a : args) h = hash_combine(h, a);
    for (size_t o = 0; o < n.output_shapes.size(); ++o) hashes[i].push_back(hash_combine(h, o));
  }
  uint64_t h = 0x51ed27;
  for (ValueRef out : graph.outputs()) h = hash_combine(h, hashes[out.node][out.output]);
  return h;
}

Graph compact(const Graph& graph) {
  Graph out;
  Copier copier(graph, out, [](ValueRef) { return std::nullopt; });
  copy_outputs(graph, out, copier);
  return out;
}

}  // namespace tgr::optimizer
