// PET's seam merges of two convolutions that share a kernel, as graphs to
// time (tools/bench_seams.cpp): whether a partial rule can pay on a runtime
// is first a question of whether the merged convolution, with or without
// its correction, runs faster than the two convolutions and than their exact
// merge along batch.
//
//   separate          y0 = conv2d(x0, k), y1 = conv2d(x1, k)
//   batch             one convolution of concat[axis=0](x0, x1), split: exact
//   height, width     one convolution of concat[axis=2 or 3](x0, x1), split,
//                     the seam's rows or columns recomputed by the correction
//                     (pet/correction.h), as the optimizer applies a partial
//                     rule: equal to `separate`
//   height-uncorrected, width-uncorrected
//                     the merged convolution without its correction: wrong
//                     at the seam, the lower bound of any correction fused
//                     into it (timed, never used)
//
// Every graph has three inputs, the two images and k (the shared kernel),
// and two outputs. With `computed_inputs` (the default) the convolutions
// read x0 = relu(a0) and x1 = relu(a1) of inputs a0, a1: in a model the
// images are computed by earlier steps, and the runtime has such a step
// write straight into a batch concatenation's bytes (runtime/views.h), so
// the batch merge copies nothing there, where a concatenation of graph
// inputs is a copy. Without it, x0 and x1 are the inputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace tgr::pet {

struct SeamMergeConfig {
  int64_t channels = 64;            // in and out
  int64_t height = 14, width = 14;  // of each image (x0 and x1 alike), batch 1
  int64_t kernel = 3;               // square, stride 1, padding "same"
  bool computed_inputs = true;      // the images computed by a relu each (above)
};

struct SeamMergeVariant {
  std::string name;  // "separate", "batch", "height", ...
  Graph graph;
  bool exact = true;        // computes what "separate" does (false: an uncorrected merge)
  int corrected_boxes = 0;  // the boxes the correction recomputes (height, width)
};

// The variants above for `config`, "separate" first. The corrections come from
// the region checker at these shapes; throws std::logic_error should the
// checker not find a merge partially equivalent (a bug).
std::vector<SeamMergeVariant> seam_merge_variants(const SeamMergeConfig& config);

// "c64 14x14 k3": how bench_seams names a configuration.
std::string seam_config_name(const SeamMergeConfig& config);

}  // namespace tgr::pet
