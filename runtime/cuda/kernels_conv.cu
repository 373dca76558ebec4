// Depthwise convolution (one input and one output channel per group) with
// its bias, residual and activation (relu, clip, SiLU), where cuDNN reaches a small fraction of the
// memory bandwidth (ConvNeXt's 7 x 7 convolutions: about 23 us each on the
// H100 for tensors of 1.2 MB). lower_conv.cpp times this against cuDNN when
// the plan is loaded and keeps the faster.
//
// A block computes a tile of outputs of `planes_per_block` planes
// (threadIdx.z picks the plane). The input the tile needs (the tile's window
// with its halo, zero outside the plane: the padding) is loaded into shared
// memory once; thread (x, y) then computes the outputs of column x, rows
// y*kRows .. y*kRows + kRows - 1, walking the input rows those need once and
// adding each into every output that uses it (a row is read from shared
// memory into registers once, not kRows times). Kernel size, stride and
// kRows are template parameters, so the loops unroll and the accumulators
// and weights live in registers.
#include <algorithm>

#include "runtime/cuda/dependent_launch.cuh"
#include "runtime/cuda/float_types.cuh"
#include "runtime/cuda/launch_util.cuh"

namespace tgr::gpu {
namespace {

// Output rows per thread: 4 at stride 1, 2 at stride 2 (the input rows a
// thread walks, (kRows - 1) * S + K, stay within 2 K).
template <int S>
constexpr int kRowsPerThread = S == 1 ? 4 : 2;

// Threads of a block: blockDim.x columns x blockDim.y row groups x blockDim.z planes.
constexpr int kMaxThreads = 256;

template <int K, int S, class T>
__global__ void depthwise_conv(const T* x, const T* weight, const T* bias, const T* residual, T* y,
                               DepthwiseGeometry geo, int tiles_x, ConvActivation act) {
  await_previous_grid();
  constexpr int kRows = kRowsPerThread<S>;
  // Sizes within a plane fit 32 bits (depthwise_kernel_fits).
  const int in_h = static_cast<int>(geo.in_h), in_w = static_cast<int>(geo.in_w);
  const int out_h = static_cast<int>(geo.out_h), out_w = static_cast<int>(geo.out_w);
  extern __shared__ float smem[];
  // The tile: blockDim.x x (blockDim.y * kRows) outputs; the input it reads.
  const int tile_w = static_cast<int>(blockDim.x), tile_h = static_cast<int>(blockDim.y) * kRows;
  const int in_tile_w = (tile_w - 1) * S + K, in_tile_h = (tile_h - 1) * S + K;
  const int ox0 = static_cast<int>(blockIdx.y % tiles_x) * tile_w;
  const int oy0 = static_cast<int>(blockIdx.y / tiles_x) * tile_h;
  // The input tile's corner (negative in the padding).
  const int ix0 = ox0 * S - static_cast<int>(geo.pad_left), iy0 = oy0 * S - static_cast<int>(geo.pad_top);
  const int64_t plane = static_cast<int64_t>(blockIdx.x) * blockDim.z + threadIdx.z;
  const bool has_plane = plane < geo.planes;
  float* in_tile = smem + threadIdx.z * in_tile_h * in_tile_w;

  // Load this plane's input tile (zeros in the padding and past the last plane).
  const T* src = x + plane * in_h * in_w;
  const int lane = static_cast<int>(threadIdx.y * blockDim.x + threadIdx.x);
  const int lanes = static_cast<int>(blockDim.x * blockDim.y);
  for (int i = lane; i < in_tile_h * in_tile_w; i += lanes) {
    const int iy = iy0 + i / in_tile_w, ix = ix0 + i % in_tile_w;
    in_tile[i] = has_plane && iy >= 0 && iy < in_h && ix >= 0 && ix < in_w ? to_f32(src[iy * in_w + ix]) : 0.f;
  }
  __syncthreads();
  if (!has_plane) return;  // no barrier follows

  const int64_t channel = plane % geo.channels;
  float w[K * K];
#pragma unroll
  for (int k = 0; k < K * K; ++k) w[k] = to_f32(weight[channel * K * K + k]);
  float acc[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) acc[r] = 0.f;
  // Output (oy0 + ty*kRows + r, ox0 + tx) reads tile rows (ty*kRows + r)*S + kh,
  // columns tx*S + kw: the input rows of this thread are `first` + 0 .. (kRows-1)*S + K-1.
  const float* first = in_tile + threadIdx.y * kRows * S * in_tile_w + threadIdx.x * S;
#pragma unroll
  for (int i = 0; i < (kRows - 1) * S + K; ++i) {
    float row[K];
#pragma unroll
    for (int kw = 0; kw < K; ++kw) row[kw] = first[i * in_tile_w + kw];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int kh = i - r * S;  // the kernel row by which input row i enters output row r
      if (kh >= 0 && kh < K) {
#pragma unroll
        for (int kw = 0; kw < K; ++kw) acc[r] = fmaf(w[kh * K + kw], row[kw], acc[r]);
      }
    }
  }

  const float b = bias ? to_f32(bias[channel]) : 0.f;
  const int ox = ox0 + static_cast<int>(threadIdx.x);
  if (ox >= out_w) return;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int oy = oy0 + static_cast<int>(threadIdx.y) * kRows + r;
    if (oy >= out_h) break;
    const int64_t o = (plane * out_h + oy) * out_w + ox;
    float v = acc[r] + b;
    if (residual) v += to_f32(residual[o]);
    if (act.kind == ConvActivation::kRelu) v = fmaxf(v, 0.f);
    else if (act.kind == ConvActivation::kClip) v = fminf(fmaxf(v, act.lo), act.hi);
    else if (act.kind == ConvActivation::kSilu) v = v * (1.f / (1.f + expf(-v)));
    y[o] = from_f32<T>(v);
  }
}

// The launch shape for a geometry: tile width (8, 16 or 32 columns: the
// smallest that covers a row, up to 32), row groups (up to 8, no more than
// the plane needs), and as many planes per block as fill 256 threads (small
// planes: ConvNeXt's 7 x 7 and 14 x 14 take 16 and 4 planes a block).
struct DepthwiseLaunch {
  dim3 block, grid;
  int tiles_x = 1;
  size_t shared_bytes = 0;
};

template <int K, int S>
DepthwiseLaunch depthwise_launch(const DepthwiseGeometry& g) {
  constexpr int kRows = kRowsPerThread<S>;
  DepthwiseLaunch l;
  const int tile_w = g.out_w <= 8 ? 8 : g.out_w <= 16 ? 16 : 32;
  const int groups = static_cast<int>(std::min<int64_t>(8, (g.out_h + kRows - 1) / kRows));
  const int tile_h = groups * kRows;
  const int64_t planes_per_block = std::max<int64_t>(1, std::min<int64_t>(g.planes, kMaxThreads / (tile_w * groups)));
  l.tiles_x = static_cast<int>((g.out_w + tile_w - 1) / tile_w);
  const int tiles_y = static_cast<int>((g.out_h + tile_h - 1) / tile_h);
  l.block = dim3(tile_w, groups, static_cast<unsigned>(planes_per_block));
  l.grid = dim3(static_cast<unsigned>((g.planes + planes_per_block - 1) / planes_per_block),
                static_cast<unsigned>(l.tiles_x * tiles_y));
  const int in_tile_w = (tile_w - 1) * S + K, in_tile_h = (tile_h - 1) * S + K;
  l.shared_bytes = static_cast<size_t>(planes_per_block) * in_tile_h * in_tile_w * sizeof(float);
  return l;
}

template <int K, int S>
void launch(const void* x, const void* weight, const void* bias, const void* residual, void* y,
            const DepthwiseGeometry& g, ConvActivation act, FloatType type, cudaStream_t stream) {
  const DepthwiseLaunch l = depthwise_launch<K, S>(g);
  with_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(depthwise_conv<K, S, T>, l.grid, l.block, l.shared_bytes, stream, static_cast<const T*>(x),
                  static_cast<const T*>(weight), static_cast<const T*>(bias), static_cast<const T*>(residual),
                  static_cast<T*>(y), g, l.tiles_x, act);
  });
}

}  // namespace

bool depthwise_kernel_fits(const DepthwiseGeometry& g) {
  if (g.planes <= 0 || g.channels <= 0 || g.out_h <= 0 || g.out_w <= 0) return false;
  if (g.kernel != 3 && g.kernel != 5 && g.kernel != 7) return false;
  if (g.stride != 1 && g.stride != 2) return false;
  // 32-bit indices within a plane; the grid's limits (x: 2^31 - 1 blocks, y: 65535 tiles).
  if (g.in_h * g.in_w >= (int64_t{1} << 31) || g.out_h * g.out_w >= (int64_t{1} << 31)) return false;
  if ((g.out_w + 31) / 32 * ((g.out_h + 7) / 8) > 65535) return false;
  return g.planes < (int64_t{1} << 31);
}

void launch_depthwise_conv(const void* x, const void* weight, const void* bias, const void* residual, void* y,
                           const DepthwiseGeometry& g, ConvActivation act, FloatType type, cudaStream_t stream) {
  // Shared memory: the largest tile (kernel 7, stride 2, 32 planes of 8 x 2
  // outputs: 32 x 21 x 9 floats) is 24 KB, within the 48 KB a block may use
  // without opting in.
  switch (g.kernel * 10 + g.stride) {
    case 31:
      launch<3, 1>(x, weight, bias, residual, y, g, act, type, stream);
      break;
    case 32:
      launch<3, 2>(x, weight, bias, residual, y, g, act, type, stream);
      break;
    case 51:
      launch<5, 1>(x, weight, bias, residual, y, g, act, type, stream);
      break;
    case 52:
      launch<5, 2>(x, weight, bias, residual, y, g, act, type, stream);
      break;
    case 71:
      launch<7, 1>(x, weight, bias, residual, y, g, act, type, stream);
      break;
    case 72:
      launch<7, 2>(x, weight, bias, residual, y, g, act, type, stream);
      break;
    default:
      break;  // depthwise_kernel_fits said no: never called
  }
}

}  // namespace tgr::gpu
