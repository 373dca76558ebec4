// Applying a proved instance to a graph: a new graph in which the matched
// outputs are replaced by the instance's target (built over the matched
// variables' values) and everything no output needs any more is gone.
// Equal subgraphs are shared (Graph::find_or_add_op), weights are shared
// with the old graph, not copied.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "optimizer/instance.h"

namespace tgr::optimizer {

Graph apply_instance(const Graph& graph, const Match& match, const Instance& instance);

// The graph rebuilt from its outputs: live nodes only, duplicates shared.
Graph compact(const Graph& graph);

}  // namespace tgr::optimizer
