// Corrections of partially equivalent programs: the target program with each
// disagreeing box of each output recomputed by the source program on the
// input region that box reads (inputs sliced with their halo, the source's
// operators with the padding that remains, the pieces put back in place with
// concat). Only IR operators, so the interpreter runs it and a GPU runtime
// can fuse it.
#pragma once

#include <string>

#include "pet/region_check.h"

namespace tgr::pet {

// The corrected target: same inputs (the target's, then any more the source
// reads) and outputs as the target, equal to the source on every box.
// `regions` is check_regions(source, target)'s result (or any grid and
// disagreeing boxes of the same outputs).
Graph corrected_graph(const Graph& source, const Graph& target, const CheckResult& regions);

// The correction of one box alone: the source's output `output` on `box`,
// computed from the inputs it reads (what corrected_graph writes into it).
Graph box_correction(const Graph& source, int output, const Box& box);

}  // namespace tgr::pet
