// The storage types of float values in device code (kernels.h FloatType):
// loads widen to float32, stores round to nearest even; and the dispatch
// from a FloatType to a kernel's template argument.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "runtime/cuda/kernels.h"

namespace tgr::gpu {

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T>
__device__ __forceinline__ T from_f32(float v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(v);
  else return v;
}

// f(T{}) with T the element type of `type`: float, __half or __nv_bfloat16.
template <class F>
void with_float_type(FloatType type, F&& f) {
  switch (type) {
    case FloatType::kF32:
      f(float{});
      return;
    case FloatType::kF16:
      f(__half{});
      return;
    case FloatType::kBF16:
      f(__nv_bfloat16{});
      return;
  }
}

}  // namespace tgr::gpu
