// Matching a rule's source side against a model graph.
//
// The source side is a small graph over variables (built at the generator's
// shapes). A match maps each of its operator nodes to a distinct node of the
// model with the same operator and output index, and each variable to a
// model value (one variable, one value; a value may bind several variables).
// Parameters must be equal, except shape-dependent ones (split sizes,
// reshape and expand shapes, enlarge sizes, the constant operators' sizes),
// which take the model's values: the instance proof at the model's shapes
// (optimizer/instance.h) decides whether the rule holds with them. A
// convolution's 'valid' and 'same' padding match each other for a 1 x 1
// kernel, where they mean the same (the instance proof checks that too).
// Commutative operators match with their arguments in either order. The
// outputs of a rule with several (a tuple) match distinct values.
//
// A match is kept only when the rewrite leaves a valid graph:
//  - every value computed inside the match that is not one of its outputs is
//    read only inside the match (otherwise the rewrite would have to keep it);
//  - no variable's value depends on a matched node (the replacement would
//    read a value computed from what it replaces: a cycle).
// Matching is indexed by operator (GraphIndex::by_op).
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "optimizer/rule_set.h"

namespace tgr::optimizer {

// Whether parameter `param` of `op` depends on the shapes it is applied to
// (and so is re-derived from the matched shapes rather than compared).
bool is_shape_param(std::string_view op, std::string_view param);

// Whether a pattern operator's parameters accept a model operator's `model`
// parameters (the matching rule above, for the matcher here and the
// e-matcher of saturation/pattern.cpp): the same names, each value equal, or
// a shape parameter of one kind (bound at instantiation), or a convolution's
// 'valid' against 'same' padding where `kernel()`, the model operator's
// second input's shape, is 1 x 1 (ONNX models write pads 0 there, the
// generator's rules the default 'same').
bool params_accept(const Node& pattern, const Params& model, const std::function<const Shape&()>& kernel);

// What matching needs to know about a graph, computed once per graph.
struct GraphIndex {
  explicit GraphIndex(const Graph& graph);
  const Graph& graph;
  std::unordered_map<const OpDef*, std::vector<int32_t>> by_op;  // live operator nodes by operator
  // readers[node][output]: the operator nodes reading that value, one entry per read.
  std::vector<std::vector<std::vector<int32_t>>> readers;
  std::vector<std::vector<int32_t>> output_reads;  // [node][output]: how often it is a graph output
};

struct Match {
  std::vector<ValueRef> variables;  // per input of the rule's source graph (declared order)
  std::vector<int32_t> nodes;       // per node of the rule's source graph: the model node, -1 for variables
  std::vector<ValueRef> outputs;    // per source output: the model value it matched
};

struct MatchStats {
  int64_t found = 0;             // structural matches
  int64_t used_outside = 0;      // rejected: an intermediate is read outside the match
  int64_t cycles = 0;            // rejected: a variable depends on a matched node
};

// All valid matches of `rule` in the indexed graph, at most `limit`.
std::vector<Match> find_matches(const GraphIndex& index, const DirectedRule& rule, size_t limit = 64,
                                MatchStats* stats = nullptr);

}  // namespace tgr::optimizer
