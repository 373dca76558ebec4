// Weight pre-processing at export: every operator whose inputs are all
// constants (concatenated or summed weights, enlarged kernels, folded
// scalars, eye / ones / conv_identity) is computed once with the reference
// interpreter (float32) and becomes a constant, so the exported model holds
// the merged weights as initializers and computes nothing at run time that
// depends on weights only.
#pragma once

#include "ir/graph.h"

namespace tgr::optimizer {

struct FoldStats {
  int folded_nodes = 0;
};

Graph fold_constants(const Graph& graph, FoldStats* stats = nullptr);

}  // namespace tgr::optimizer
