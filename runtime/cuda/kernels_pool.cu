// avgpool and maxpool over N x C x H x W, one thread per output element,
// with the geometry of ir/geometry.h (asymmetric padding, dilation).
#include <cfloat>

#include "runtime/cuda/dependent_launch.cuh"
#include "runtime/cuda/float_types.cuh"
#include "runtime/cuda/launch_util.cuh"

namespace tgr::gpu {
namespace {

// Taps of a window along one axis inside the input: first, count.
__device__ inline void clip_window(int64_t start, int64_t kernel, int64_t dilation, int64_t size, int64_t& first,
                                   int64_t& count) {
  const int64_t k0 = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
  int64_t k1 = start >= size ? 0 : (size - start + dilation - 1) / dilation;
  if (k1 > kernel) k1 = kernel;
  first = start + k0 * dilation;
  count = k1 > k0 ? k1 - k0 : 0;
}

template <bool kMax, class T>
__global__ void pool_kernel(const T* x, T* out, PoolGeometry g) {
  await_previous_grid();
  TGR_GRID_STRIDE(i, g.planes * g.out_h * g.out_w) {
    const int64_t ow = i % g.out_w, oh = i / g.out_w % g.out_h, p = i / (g.out_w * g.out_h);
    int64_t r0, rn, c0, cn;
    clip_window(oh * g.stride_h - g.pad_top, g.kernel_h, g.dilation_h, g.in_h, r0, rn);
    clip_window(ow * g.stride_w - g.pad_left, g.kernel_w, g.dilation_w, g.in_w, c0, cn);
    const T* plane = x + p * g.in_h * g.in_w;
    float acc = kMax ? -INFINITY : 0.f;
    for (int64_t r = 0; r < rn; ++r)
      for (int64_t c = 0; c < cn; ++c) {
        const float v = to_f32(plane[(r0 + r * g.dilation_h) * g.in_w + c0 + c * g.dilation_w]);
        acc = kMax ? fmaxf(acc, v) : acc + v;
      }
    if (!kMax) acc /= static_cast<float>(g.include_pad ? g.kernel_h * g.kernel_w : rn * cn);
    out[i] = from_f32<T>(acc);
  }
}

// A window that is the whole plane, unpadded (global average pooling): a
// mean of each plane, with the threads of a plane reading it together.
// (maxpool keeps its kernel: it skips NaN as the CPU reference's maxpool
// does, where the reductions propagate it.)
bool whole_plane(const PoolGeometry& g) {
  return g.out_h == 1 && g.out_w == 1 && g.kernel_h == g.in_h && g.kernel_w == g.in_w && g.pad_top == 0 &&
         g.pad_left == 0 && g.dilation_h == 1 && g.dilation_w == 1 && g.in_h * g.in_w > 0;
}

}  // namespace

void launch_avgpool(const void* x, void* out, const PoolGeometry& g, FloatType type, cudaStream_t stream) {
  if (whole_plane(g)) return launch_reduce_rows(x, out, g.planes, g.in_h * g.in_w, ReduceKind::kMean, type, stream);
  with_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(pool_kernel<false, T>, grid_for(g.planes * g.out_h * g.out_w), kBlock, 0, stream,
                  static_cast<const T*>(x), static_cast<T*>(out), g);
  });
}

void launch_maxpool(const void* x, void* out, const PoolGeometry& g, FloatType type, cudaStream_t stream) {
  with_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(pool_kernel<true, T>, grid_for(g.planes * g.out_h * g.out_w), kBlock, 0, stream,
                  static_cast<const T*>(x), static_cast<T*>(out), g);
  });
}

}  // namespace tgr::gpu
