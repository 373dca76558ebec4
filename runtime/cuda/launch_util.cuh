// Index helpers shared by the runtime's .cu files (launch shapes: launch_shape.h).
#pragma once

#include <cstdint>

#include "runtime/cuda/kernels.h"
#include "runtime/cuda/launch_shape.h"

namespace tgr::gpu {

// Offset of output element `index` in an input with `strides` over `dims`,
// in index type I (32-bit where the tensors allow: far cheaper division).
template <class I = int64_t>
__device__ inline I strided_offset(I index, const Dims& dims, const Strides& strides) {
  I offset = 0;
  for (int d = dims.rank - 1; d >= 0; --d) {
    const I size = static_cast<I>(dims.size[d]);
    const I c = index % size;
    index /= size;
    offset += c * static_cast<I>(strides.s[d]);
  }
  return offset;
}

template <class I = int64_t>
__device__ inline I input_offset(I index, const Dims& dims, const EwInput& in) {
  return in.contiguous ? index : strided_offset<I>(index, dims, in.strides);
}

#define TGR_GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); i += int64_t{gridDim.x} * blockDim.x)
#define TGR_GRID_STRIDE_T(I, i, n) \
  for (I i = blockIdx.x * blockDim.x + threadIdx.x; i < static_cast<I>(n); i += gridDim.x * blockDim.x)

}  // namespace tgr::gpu
