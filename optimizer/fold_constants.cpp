#include "optimizer/fold_constants.h"

#include "onnx/opaque_op.h"
#include "runtime/interpreter.h"

namespace tgr::optimizer {
namespace {

// The outputs of `node` evaluated on its constant inputs.
std::vector<Value<float>> evaluate_node(const Graph& graph, const Node& node) {
  Graph one;
  std::vector<ValueRef> inputs;
  for (ValueRef in : node.inputs) inputs.push_back(one.add_shared_constant(graph.node(in.node)));
  // A constant node has one output; a multi-output input (split) was folded
  // into one constant per output below, so in.output is always 0 here.
  auto outs = one.add_op(*node.op, node.params, std::move(inputs));
  for (ValueRef o : outs) one.add_output(o);
  return evaluate_values<float>(one, std::span<const Value<float>>{});
}

}  // namespace

Graph fold_constants(const Graph& graph, FoldStats* stats) {
  Graph out;
  std::vector<std::vector<ValueRef>> copied(graph.nodes().size());
  int folded = 0;
  for (int32_t in : graph.inputs()) {  // all inputs, in declared order
    const Node& n = graph.node(in);
    copied[in] = {out.add_input(n.name, n.output_shapes[0], n.output_dtypes[0])};
  }
  for (int32_t i : graph.topological_order()) {
    const Node& n = graph.node(i);
    if (n.is_input()) continue;
    if (n.is_constant()) {
      copied[i] = {out.add_shared_constant(n)};
      continue;
    }
    std::vector<ValueRef> inputs;
    bool all_constant = true;
    for (ValueRef in : n.inputs) {
      inputs.push_back(copied[in.node].at(in.output));
      all_constant = all_constant && out.node(inputs.back().node).is_constant();
    }
    if (all_constant && !onnx_io::is_opaque(*n.op)) {
      Node folded_op = n;
      folded_op.inputs = inputs;
      std::vector<Value<float>> values = evaluate_node(out, folded_op);
      // The folded weight is named as the value it replaces (else as the node).
      for (size_t k = 0; k < values.size(); ++k)
        copied[i].push_back(out.add_constant(
            std::move(values[k]), k < n.value_names.size() && !n.value_names[k].empty() ? n.value_names[k] : n.name));
      ++folded;
      continue;
    }
    copied[i] = out.find_or_add_op(*n.op, n.params, std::move(inputs), n.name, n.value_names);
  }
  for (size_t k = 0; k < graph.outputs().size(); ++k) {
    const ValueRef v = graph.outputs()[k];
    out.add_output(copied[v.node].at(v.output), graph.output_names()[k]);
  }
  if (stats) stats->folded_nodes = folded;
  return out;
}

}  // namespace tgr::optimizer
