// Strided copies (every layout operator) and fills.
#include "runtime/cuda/launch_util.cuh"

namespace tgr::gpu {
namespace {

template <class T>
__global__ void strided_copy_kernel(const T* src, Strides ss, T* dst, Strides ds, Dims iter) {
  TGR_GRID_STRIDE(i, iter.count()) {
    int64_t index = i, s = 0, d = 0;
    for (int a = iter.rank - 1; a >= 0; --a) {
      const int64_t c = index % iter.size[a];
      index /= iter.size[a];
      s += c * ss.s[a];
      d += c * ds.s[a];
    }
    dst[d] = src[s];
  }
}

template <class T>
__global__ void fill_kernel(T* dst, int64_t n, T value) {
  TGR_GRID_STRIDE(i, n) dst[i] = value;
}

__global__ void delay_kernel(int64_t cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

}  // namespace

void launch_delay(int64_t cycles, cudaStream_t stream) { delay_kernel<<<1, 1, 0, stream>>>(cycles); }

void launch_strided_copy(const void* src, int64_t src_offset, const Strides& src_strides, void* dst,
                         int64_t dst_offset, const Strides& dst_strides, const Dims& iter, int elem_bytes,
                         cudaStream_t stream) {
  const unsigned grid = grid_for(iter.count());
  if (elem_bytes == 4)
    strided_copy_kernel<float><<<grid, kBlock, 0, stream>>>(static_cast<const float*>(src) + src_offset, src_strides,
                                                            static_cast<float*>(dst) + dst_offset, dst_strides, iter);
  else
    strided_copy_kernel<int64_t><<<grid, kBlock, 0, stream>>>(static_cast<const int64_t*>(src) + src_offset, src_strides,
                                                              static_cast<int64_t*>(dst) + dst_offset, dst_strides, iter);
}

void launch_fill(void* dst, int64_t n, double value, int elem_bytes, cudaStream_t stream) {
  if (elem_bytes == 4)
    fill_kernel<float><<<grid_for(n), kBlock, 0, stream>>>(static_cast<float*>(dst), n, static_cast<float>(value));
  else
    fill_kernel<int64_t><<<grid_for(n), kBlock, 0, stream>>>(static_cast<int64_t*>(dst), n, static_cast<int64_t>(value));
}

}  // namespace tgr::gpu
