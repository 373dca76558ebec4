// The signature of one operator application: what its cost depends on
// (operator, canonical parameters, input shapes and element types). The
// measured cost table of the rules database (op_costs) is keyed by it, so
// it is defined once, here, for the runtime that measures and the optimizer
// that reads.
//
//   conv2d[pad=same,stride=2x2](float:1x3x224x224,float:64x3x3x3)
//
// Parameters at their default value are omitted (as in the text form), and
// so is the padding of a 1 x 1 convolution with no padding to read.
#pragma once

#include <string>
#include <string_view>

#include "ir/graph.h"

namespace tgr {

std::string op_signature(const Graph& graph, const Node& node);

// The graph of one signature: inputs in0, in1, ... of its element types and
// shapes, the operator applied to them, its outputs the graph's. What a cost
// model fits its fallback to (the FLOPs and bytes of each measured
// signature). Throws ParseError or ShapeError for a malformed signature.
Graph graph_of_signature(std::string_view signature);

}  // namespace tgr
