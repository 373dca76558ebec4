// Strided copies (every layout operator) and fills.
#include "runtime/cuda/dependent_launch.cuh"
#include "runtime/cuda/launch_util.cuh"

namespace tgr::gpu {
namespace {

template <class T, class I>
__global__ void strided_copy_kernel(const T* src, Strides ss, T* dst, Strides ds, Dims iter) {
  await_previous_grid();
  TGR_GRID_STRIDE_T(I, i, iter.count()) {
    I index = i, s = 0, d = 0;
    for (int a = iter.rank - 1; a >= 0; --a) {
      const I size = static_cast<I>(iter.size[a]);
      const I c = index % size;
      index /= size;
      s += c * static_cast<I>(ss.s[a]);
      d += c * static_cast<I>(ds.s[a]);
    }
    dst[d] = src[s];
  }
}

template <class T>
void copy(const T* src, Strides ss, T* dst, Strides ds, Dims iter, cudaStream_t stream) {
  Strides* list[2] = {&ss, &ds};
  collapse(iter, list, 2);
  const int64_t n = iter.count();
  if (iter.rank <= 1 && (iter.rank == 0 || (ss.s[0] == 1 && ds.s[0] == 1))) {
    cudaMemcpyAsync(dst, src, static_cast<size_t>(n) * sizeof(T), cudaMemcpyDeviceToDevice, stream);
    return;
  }
  if (fits_32_bits(n))
    launch_kernel(strided_copy_kernel<T, int32_t>, grid_for(n), kBlock, 0, stream, src, ss, dst, ds, iter);
  else launch_kernel(strided_copy_kernel<T, int64_t>, grid_for(n), kBlock, 0, stream, src, ss, dst, ds, iter);
}

template <class T>
__global__ void fill_kernel(T* dst, int64_t n, T value) {
  await_previous_grid();
  TGR_GRID_STRIDE(i, n) dst[i] = value;
}

__global__ void delay_kernel(int64_t cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

template <class T>
__global__ void concat_kernel(const ConcatArgs a, T* dst) {
  await_previous_grid();
  const uint32_t block = static_cast<uint32_t>(a.begin[a.inputs]);
  TGR_GRID_STRIDE_T(uint32_t, i, a.outer * block) {
    const uint32_t o = i / block, j = i % block;
    int lo = 0, hi = a.inputs - 1;  // the input whose columns hold j
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (a.begin[mid] <= j) lo = mid;
      else hi = mid - 1;
    }
    const uint32_t width = static_cast<uint32_t>(a.begin[lo + 1] - a.begin[lo]);
    dst[i] = static_cast<const T*>(a.src[lo])[o * width + j - static_cast<uint32_t>(a.begin[lo])];
  }
}

}  // namespace

void launch_concat(const ConcatArgs& args, void* dst, int elem_bytes, cudaStream_t stream) {
  const int64_t n = args.outer * args.begin[args.inputs];
  if (elem_bytes == 2)
    launch_kernel(concat_kernel<uint16_t>, grid_for(n), kBlock, 0, stream, args, static_cast<uint16_t*>(dst));
  else if (elem_bytes == 4)
    launch_kernel(concat_kernel<float>, grid_for(n), kBlock, 0, stream, args, static_cast<float*>(dst));
  else launch_kernel(concat_kernel<int64_t>, grid_for(n), kBlock, 0, stream, args, static_cast<int64_t*>(dst));
}

void launch_delay(int64_t cycles, cudaStream_t stream) { delay_kernel<<<1, 1, 0, stream>>>(cycles); }

void launch_strided_copy(const void* src, int64_t src_offset, const Strides& src_strides, void* dst,
                         int64_t dst_offset, const Strides& dst_strides, const Dims& iter, int elem_bytes,
                         cudaStream_t stream) {
  if (elem_bytes == 2)
    copy(static_cast<const uint16_t*>(src) + src_offset, src_strides, static_cast<uint16_t*>(dst) + dst_offset,
         dst_strides, iter, stream);
  else if (elem_bytes == 4)
    copy(static_cast<const float*>(src) + src_offset, src_strides, static_cast<float*>(dst) + dst_offset, dst_strides,
         iter, stream);
  else
    copy(static_cast<const int64_t*>(src) + src_offset, src_strides, static_cast<int64_t*>(dst) + dst_offset,
         dst_strides, iter, stream);
}

void launch_fill_16(void* dst, int64_t n, uint16_t bits, cudaStream_t stream) {
  launch_kernel(fill_kernel<uint16_t>, grid_for(n), kBlock, 0, stream, static_cast<uint16_t*>(dst), n, bits);
}

void launch_fill(void* dst, int64_t n, double value, int elem_bytes, cudaStream_t stream) {
  if (elem_bytes == 4)
    launch_kernel(fill_kernel<float>, grid_for(n), kBlock, 0, stream, static_cast<float*>(dst), n,
                  static_cast<float>(value));
  else
    launch_kernel(fill_kernel<int64_t>, grid_for(n), kBlock, 0, stream, static_cast<int64_t*>(dst), n,
                  static_cast<int64_t>(value));
}

}  // namespace tgr::gpu
