// Launch shapes and index helpers shared by the runtime's .cu files.
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

// Offset of output element `index` in an input with `strides` over `dims`.
__device__ inline int64_t strided_offset(int64_t index, const Dims& dims, const Strides& strides) {
  int64_t offset = 0;
  for (int d = dims.rank - 1; d >= 0; --d) {
    const int64_t c = index % dims.size[d];
    index /= dims.size[d];
    offset += c * strides.s[d];
  }
  return offset;
}

__device__ inline int64_t input_offset(int64_t index, const Dims& dims, const EwInput& in) {
  return in.contiguous ? index : strided_offset(index, dims, in.strides);
}

#define TGR_GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); i += int64_t{gridDim.x} * blockDim.x)

}  // namespace tgr::gpu
