// E-node costs in context, for cost models that fuse operators.
//
// Extraction (saturation/extract.h) prices each e-node alone. A cost model
// that knows the runtime runs several operators as one (ONNX Runtime's Gemm
// and Conv with their bias, a product between reshapes written as one
// MatMul: onnx/export_fusions.h) charges a graph less than the sum of its
// operators alone, and which of two
// equivalent forms is cheaper can depend on it: GPT-2's bias add moved
// inside the reshape after its product lets ONNX Runtime run both reshapes
// inside one MatMul, which no e-node priced alone shows.
//
// context_costs prices each operator e-node by its marginal cost in context:
// the cost model's graph_cost of the e-node's tree (the e-node, then below
// it `depth` levels of the e-nodes a selection chose for its descendants,
// constants to their leaves, the rest graph inputs) minus the graph_cost of
// its children's trees one level shallower. Along a chain the marginals sum
// to the cost of the whole chain, and the e-node that completes a fused
// group is credited with what the group saves (its marginal may be
// negative: the outer reshape of reshape(matmul(reshape(x), w)) removes the
// inner one's cost). The result is an estimate (a child read elsewhere too
// may not fuse); the optimizer keeps whichever extracted graph costs least by
// the model's graph_cost, so an estimate can only widen the choice. Which
// models are priced this way: CostModel::prices_in_context (not the GPU
// plan's, whose small trees do not cost what they cost in the model).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>

#include "optimizer/cost_model.h"
#include "saturation/egraph.h"
#include "saturation/extract.h"

namespace tgr::saturation {

struct ContextCostOptions {
  int depth = 4;  // levels of an e-node's tree: 4 covers relu(add(add(conv, bias), residual))
  // E-nodes not reached by then keep their cost alone (ContextCostStats::complete false).
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

struct ContextCostStats {
  size_t priced = 0;         // operator e-nodes given a cost in context
  size_t graphs_costed = 0;  // distinct trees the cost model was asked about
  bool complete = true;      // every operator e-node was priced
  double seconds = 0;
};

// `alone`: the costs of the e-nodes alone (NodeCosts of the same e-graph);
// `below`: the e-node each class's descendants are taken with (a greedy
// selection; a class without a choice is a graph input there).
NodeCosts context_costs(const EGraph& egraph, const NodeCosts& alone, optimizer::CostModel& model,
                        const Selection& below, const ContextCostOptions& options, ContextCostStats* stats = nullptr);

}  // namespace tgr::saturation
