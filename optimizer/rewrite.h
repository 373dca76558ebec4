// Applying a proved instance to a graph: a new graph in which the matched
// outputs are replaced by the instance's target (built over the matched
// variables' values) and everything no output needs any more is gone.
// Equal subgraphs are shared (Graph::find_or_add_op), weights are shared
// with the old graph, not copied; nodes that are copied keep their names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "optimizer/instance.h"
#include "optimizer/node_names.h"

namespace tgr::optimizer {

// The nodes the instance's target adds are named after a replaced node and
// `rule_tag` (optimizer/node_names.h); with an empty tag they have no names.
// `record` (when given) receives the names of the nodes replaced and made.
Graph apply_instance(const Graph& graph, const Match& match, const Instance& instance, const std::string& rule_tag = "",
                     AppliedRewrite* record = nullptr);

// The hash the search uses to recognise graphs it has seen: the structural
// hash (Graph::node(i).hash for inputs and constants), except that an
// operator that is the identity by its definition at these shapes (enlarge
// to the kernel's own size, reshape or expand to the input's shape, concat
// of one value) hashes as its input, and the arguments of a commutative
// operator hash in either order, so rewrites that only add such
// operators lead to graphs already seen. It only prunes: no graph is changed.
uint64_t search_hash(const Graph& graph);

// The graph rebuilt from its outputs: live nodes only, duplicates shared.
Graph compact(const Graph& graph);

}  // namespace tgr::optimizer
