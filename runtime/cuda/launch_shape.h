// Launch shapes and the collapsing of elementwise index spaces: host code
// shared by the runtime's .cu files (through launch_util.cuh) and by the
// compiled elementwise programs (ew_compile.cpp), which launch the same way.
#pragma once

#include <cstdint>

#include "runtime/cuda/kernels.h"

namespace tgr::gpu {

inline constexpr int kBlock = 256;

inline unsigned grid_for(int64_t n) {
  int64_t blocks = (n + kBlock - 1) / kBlock;
  if (blocks < 1) blocks = 1;
  if (blocks > (int64_t{1} << 20)) blocks = int64_t{1} << 20;  // grid-stride loops cover the rest
  return static_cast<unsigned>(blocks);
}

// Host: drops size-1 axes and merges neighbouring axes that every stride
// array walks contiguously (in place), so most kernels index in 1 or 2 axes.
inline void collapse(Dims& dims, Strides* const* strides, int count) {
  Dims out;
  Strides merged[kMaxEwInputs + 2];
  for (int d = 0; d < dims.rank; ++d) {
    if (dims.size[d] == 1) continue;
    bool joins = out.rank > 0;
    for (int j = 0; j < count && joins; ++j) joins = merged[j].s[out.rank - 1] == strides[j]->s[d] * dims.size[d];
    if (joins) {
      out.size[out.rank - 1] *= dims.size[d];
      for (int j = 0; j < count; ++j) merged[j].s[out.rank - 1] = strides[j]->s[d];
    } else {
      out.size[out.rank] = dims.size[d];
      for (int j = 0; j < count; ++j) merged[j].s[out.rank] = strides[j]->s[d];
      ++out.rank;
    }
  }
  dims = out;
  for (int j = 0; j < count; ++j) *strides[j] = merged[j];
}

// Collapses an output shape with the inputs that are not contiguous.
inline void collapse_inputs(Dims& dims, EwInput* inputs, int count) {
  Strides* list[kMaxEwInputs + 1];
  int n = 0;
  for (int k = 0; k < count; ++k)
    if (!inputs[k].contiguous) list[n++] = &inputs[k].strides;
  if (n == 0) {  // all contiguous: one axis
    const int64_t total = dims.count();
    dims = Dims{};
    dims.rank = 1;
    dims.size[0] = total;
    return;
  }
  collapse(dims, list, n);
}

inline bool fits_32_bits(int64_t n) { return n < (int64_t{1} << 31); }

}  // namespace tgr::gpu
