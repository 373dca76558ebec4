// softmax, layer_norm and reductions.
#include <cfloat>

#include "runtime/cuda/dependent_launch.cuh"
#include "runtime/cuda/float_types.cuh"
#include "runtime/cuda/launch_util.cuh"

namespace tgr::gpu {
namespace {

// Block-wide sum or max (every thread gets the result); blockDim.x a multiple of 32.
template <bool kMax>
__device__ float block_reduce(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  __syncthreads();  // `shared` may still be read by a previous reduction
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : (kMax ? -FLT_MAX : 0.f);
  for (int o = 16; o > 0; o >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  return v;
}

// One block per row of a contiguous softmax axis (inner == 1). A float32
// row keeps each exponential in the output and scales it there; a half one
// computes it again for the final store (one rounding, in float32 until then).
template <class T>
__global__ void softmax_rows(const T* x, T* out, int64_t n) {
  await_previous_grid();
  __shared__ float shared[32];
  const T* row = x + blockIdx.x * n;
  T* dst = out + blockIdx.x * n;
  float m = -INFINITY;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) m = fmaxf(m, to_f32(row[k]));
  m = block_reduce<true>(m, shared);
  float s = 0.f;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
    const float e = expf(to_f32(row[k]) - m);
    if constexpr (std::is_same_v<T, float>) dst[k] = e;
    s += e;
  }
  s = block_reduce<false>(s, shared);
  const float scale = 1.f / s;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
    if constexpr (std::is_same_v<T, float>) dst[k] *= scale;
    else dst[k] = from_f32<T>(expf(to_f32(row[k]) - m) * scale);
  }
}

// One thread per (outer, inner) position when the axis is not the last.
template <class T>
__global__ void softmax_strided(const T* x, T* out, int64_t outer, int64_t n, int64_t inner) {
  await_previous_grid();
  TGR_GRID_STRIDE(t, outer * inner) {
    const int64_t base = (t / inner) * n * inner + t % inner;
    float m = to_f32(x[base]);
    for (int64_t k = 1; k < n; ++k) m = fmaxf(m, to_f32(x[base + k * inner]));
    float s = 0.f;
    for (int64_t k = 0; k < n; ++k) {
      const float e = expf(to_f32(x[base + k * inner]) - m);
      if constexpr (std::is_same_v<T, float>) out[base + k * inner] = e;
      s += e;
    }
    const float scale = 1.f / s;
    for (int64_t k = 0; k < n; ++k) {
      if constexpr (std::is_same_v<T, float>) out[base + k * inner] *= scale;
      else out[base + k * inner] = from_f32<T>(expf(to_f32(x[base + k * inner]) - m) * scale);
    }
  }
}

template <class T>
__global__ void layer_norm_rows(const T* x, const T* scale, const T* bias, T* out, int64_t n, float eps) {
  await_previous_grid();
  __shared__ float shared[32];
  const T* row = x + blockIdx.x * n;
  T* dst = out + blockIdx.x * n;
  float s = 0.f;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) s += to_f32(row[k]);
  const float mean = block_reduce<false>(s, shared) / static_cast<float>(n);
  float v = 0.f;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) v += (to_f32(row[k]) - mean) * (to_f32(row[k]) - mean);
  const float var = block_reduce<false>(v, shared) / static_cast<float>(n);
  const float r = 1.f / sqrtf(var + eps);
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x)
    dst[k] = from_f32<T>((to_f32(row[k]) - mean) * r * to_f32(scale[k]) + to_f32(bias[k]));
}

// Layer norm of rows whose channels are strided and whose positions are
// contiguous (runtime/views.h ChannelStridedRows: a permute(0,2,3,1) of an
// NCHW tensor read in place), element (b, p, c) at b * in.batch +
// p * in.position + c * in.channel (in.position 1 for coalesced reads); the
// output at the same indices of `out_layout`: row-major rows, or channel
// strided too (a layer norm placed so that its permute back to NCHW runs
// nothing). A block of kLnThreads threads takes `tile` consecutive positions
// of one batch (tile a power of two up to 32): threadIdx.x is the position
// within the tile (a warp reads `tile` consecutive floats of each of
// 32 / tile channels), threadIdx.y starts a channel and steps by
// blockDim.y = kLnThreads / tile. The launch picks the tile so that there
// are enough blocks to fill the GPU: 32 positions per block left
// ConvNeXt's 14 x 14 stage (196 positions, 384 channels) with 7 blocks on
// 132 multiprocessors, 17 us per layer norm on the H100.
constexpr int kLnThreads = 256;
constexpr int kLnMaxTile = 32;

// The sum over threadIdx.y of v, for this thread's position (every thread gets it).
__device__ float sum_over_channel_threads(float v, float* partial) {
  __syncthreads();  // `partial` may still be read by the previous sum
  partial[threadIdx.y * blockDim.x + threadIdx.x] = v;
  __syncthreads();
  float total = 0.f;
  for (unsigned k = 0; k < blockDim.y; ++k) total += partial[k * blockDim.x + threadIdx.x];
  return total;
}

// This thread's place in a block of the two kernels below: batch b, the
// tile's first position p0, its position within the tile (tx), its first
// channel (ty) and the channel step (ny); src points at (b, p0 + tx, 0).
template <class T>
struct LnTileThread {
  int64_t b, p0;
  int tile, tx, ty, ny;
  bool valid;  // p0 + tx < positions: src may be read
  const T* src;
};

template <class T>
__device__ LnTileThread<T> ln_tile_thread(const T* x, int64_t position_tiles, int64_t positions, const RowsLayout& in) {
  LnTileThread<T> t;
  t.tile = static_cast<int>(blockDim.x);
  t.b = blockIdx.x / position_tiles;
  t.p0 = (blockIdx.x % position_tiles) * t.tile;
  t.tx = static_cast<int>(threadIdx.x), t.ty = static_cast<int>(threadIdx.y), t.ny = static_cast<int>(blockDim.y);
  t.valid = t.p0 + t.tx < positions;
  t.src = x + t.b * in.batch + (t.p0 + t.tx) * in.position;
  return t;
}

// The unstaged kernel, for more channels than a staged tile holds: mean
// and variance are two passes over the input (the second from cache), each
// summed over threadIdx.y through `partial`. Row-major output rows are
// written 32 channels at a time through `staged`, transposed, so that
// consecutive threads write consecutive channels of one position; a
// channel-strided output is written directly (consecutive threads,
// consecutive positions).
template <class T>
__global__ void layer_norm_strided(const T* x, const T* scale, const T* bias, T* out, int64_t position_tiles,
                                   int64_t positions, int64_t channels, RowsLayout in, RowsLayout ol, float eps) {
  await_previous_grid();
  __shared__ float partial[kLnThreads];         // [threadIdx.y][threadIdx.x]
  __shared__ float staged[32][kLnMaxTile + 1];  // [channel in chunk][position]; +1: no bank conflicts
  const auto [b, p0, tile, tx, ty, ny, valid, src] = ln_tile_thread(x, position_tiles, positions, in);
  float s = 0.f;
  if (valid)
    for (int64_t c = ty; c < channels; c += ny) s += to_f32(src[c * in.channel]);
  const float mean = sum_over_channel_threads(s, partial) / static_cast<float>(channels);
  float v = 0.f;
  if (valid)
    for (int64_t c = ty; c < channels; c += ny) {
      const float d = to_f32(src[c * in.channel]) - mean;
      v += d * d;
    }
  const float var = sum_over_channel_threads(v, partial) / static_cast<float>(channels);
  const float r = 1.f / sqrtf(var + eps);
  T* dst = out + b * ol.batch + p0 * ol.position;  // position p0, channel 0
  if (ol.channel != 1) {
    if (valid)
      for (int64_t c = ty; c < channels; c += ny)
        dst[tx * ol.position + c * ol.channel] =
            from_f32<T>((to_f32(src[c * in.channel]) - mean) * r * to_f32(scale[c]) + to_f32(bias[c]));
    return;
  }
  const int thread = ty * tile + tx, threads = ny * tile;
  for (int64_t c0 = 0; c0 < channels; c0 += 32) {
    for (int k = ty; k < 32; k += ny) {  // this thread's position, channels c0 + k
      const int64_t c = c0 + k;
      if (valid && c < channels)
        staged[k][tx] = (to_f32(src[c * in.channel]) - mean) * r * to_f32(scale[c]) + to_f32(bias[c]);
    }
    __syncthreads();
    for (int i = thread; i < 32 * tile; i += threads) {  // position p0 + i / 32, channel c0 + i % 32
      const int k = i / 32;
      const int64_t c = c0 + i % 32;
      if (p0 + k < positions && c < channels) dst[k * ol.position + c] = from_f32<T>(staged[i % 32][k]);
    }
    __syncthreads();  // `staged` is rewritten by the next chunk
  }
}

// The same layer norm reading its input once: a block stages its `tile`
// positions' channels in shared memory ([channel][position], padded to
// tile + 1 so that neither the strided load nor the store conflicts on
// banks), takes mean and variance from there, and writes the tile: row-major
// rows as one contiguous run per row with consecutive threads on
// consecutive channels, a channel-strided output with consecutive threads
// on consecutive positions. The unstaged kernel re-reads the input three
// times and writes 32 channels per round between two barriers; at 384
// channels that is 12 dependent rounds, which made it latency bound (about
// 13 us per layer norm of ConvNeXt-tiny on the H100). Used when the tile
// fits in kLnStagedFloats.
constexpr int64_t kLnStagedFloats = 11000;  // 44 KB: with the static arrays, under the 48 KB a launch gets by default

template <class T>
__global__ void layer_norm_strided_staged(const T* x, const T* scale, const T* bias, T* out, int64_t position_tiles,
                                          int64_t positions, int64_t channels, RowsLayout in, RowsLayout ol,
                                          float eps) {
  await_previous_grid();
  extern __shared__ float staged_values[];  // [channel][tile + 1]
  __shared__ float partial[kLnThreads];     // [threadIdx.y][threadIdx.x]
  __shared__ float stats[2][kLnMaxTile];    // mean, 1 / standard deviation per position of the tile
  const auto [b, p0, tile, tx, ty, ny, valid, src] = ln_tile_thread(x, position_tiles, positions, in);
  const int pitch = tile + 1;
  float s = 0.f;
  if (valid)
    for (int64_t c = ty; c < channels; c += ny) {
      const float v = to_f32(src[c * in.channel]);
      staged_values[c * pitch + tx] = v;
      s += v;
    }
  const float mean = sum_over_channel_threads(s, partial) / static_cast<float>(channels);
  float v = 0.f;
  if (valid)
    for (int64_t c = ty; c < channels; c += ny) {  // this thread's own staged values: no barrier needed
      const float d = staged_values[c * pitch + tx] - mean;
      v += d * d;
    }
  const float var = sum_over_channel_threads(v, partial) / static_cast<float>(channels);
  if (ty == 0) {
    stats[0][tx] = mean;
    stats[1][tx] = 1.f / sqrtf(var + eps);
  }
  __syncthreads();
  const int64_t here = positions - p0 < tile ? positions - p0 : tile;  // positions of this tile
  const int64_t count = here * channels;
  T* dst = out + b * ol.batch + p0 * ol.position;  // position p0, channel 0
  if (ol.channel == 1) {
    for (int64_t i = ty * tile + tx; i < count; i += kLnThreads) {  // position k, channel c
      const int64_t k = i / channels, c = i - k * channels;
      dst[k * ol.position + c] =
          from_f32<T>((staged_values[c * pitch + k] - stats[0][k]) * stats[1][k] * to_f32(scale[c]) + to_f32(bias[c]));
    }
  } else {
    for (int64_t i = ty * tile + tx; i < count; i += kLnThreads) {  // channel c, position k
      const int64_t c = i / here, k = i - c * here;
      dst[k * ol.position + c * ol.channel] =
          from_f32<T>((staged_values[c * pitch + k] - stats[0][k]) * stats[1][k] * to_f32(scale[c]) + to_f32(bias[c]));
    }
  }
}

// An element as the reductions accumulate it: int64 as itself, a float type in float32.
template <class T>
__device__ __forceinline__ auto widen(T v) {
  if constexpr (std::is_same_v<T, int64_t>) return v;
  else return to_f32(v);
}
template <class T, class A>
__device__ __forceinline__ T narrow(A v) {
  if constexpr (std::is_same_v<T, int64_t>) return v;
  else return from_f32<T>(v);
}

// One thread per output element, looping over the reduced sub-box.
// Maxima and minima propagate NaN, as the CPU reference does.
template <class T>
__global__ void reduce_kernel(const T* x, T* out, Dims kept, Strides kept_strides, Dims red, Strides red_strides,
                              ReduceKind kind) {
  await_previous_grid();
  using A = decltype(widen(T{}));
  const int64_t count = red.count();
  TGR_GRID_STRIDE(o, kept.count()) {
    const int64_t base = strided_offset(o, kept, kept_strides);
    A acc = A(0);
    if (kind == ReduceKind::kSum || kind == ReduceKind::kMean) {
      for (int64_t r = 0; r < count; ++r) acc += widen(x[base + strided_offset(r, red, red_strides)]);
    } else {
      const bool is_max = kind == ReduceKind::kMax;
      if (count > 0) acc = widen(x[base]);
      for (int64_t r = 1; r < count; ++r) {
        const A v = widen(x[base + strided_offset(r, red, red_strides)]);
        if constexpr (std::is_same_v<A, float>) {
          if (isnan(v) || (!isnan(acc) && (is_max ? v > acc : v < acc))) acc = v;
        } else if (is_max ? v > acc : v < acc) {
          acc = v;
        }
      }
    }
    if constexpr (std::is_same_v<A, float>) {
      if (kind == ReduceKind::kMean) acc *= 1.f / static_cast<float>(count);
    }
    out[o] = narrow<T>(acc);
  }
}

// Rows of contiguous elements, each reduced to one value (global pooling,
// reduce over the trailing axes): the threads of a row read it together
// (coalesced) and combine by shuffles, where one thread per output (above)
// walked a 56 x 56 plane alone (86 us per SE block's global pooling on the
// H100). `kThreads` threads per row: a warp for short rows (8 rows per block),
// a block for long ones. NaN propagates through maxima and minima.
__device__ inline float combine(float a, float b, ReduceKind kind) {
  if (kind == ReduceKind::kSum || kind == ReduceKind::kMean) return a + b;
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  return kind == ReduceKind::kMax ? fmaxf(a, b) : fminf(a, b);
}

template <int kThreads, class T>
__global__ void reduce_rows(const T* x, T* out, int64_t rows, int64_t n, ReduceKind kind) {
  await_previous_grid();
  __shared__ float shared[32];
  constexpr int kRowsPerBlock = kThreads >= 256 ? 1 : 256 / kThreads;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kThreads;
  const int lane = static_cast<int>(threadIdx.x % kThreads);
  const float identity = kind == ReduceKind::kMax   ? -INFINITY
                         : kind == ReduceKind::kMin ? INFINITY
                                                    : 0.f;  // n >= 1 replaces it
  float acc = identity;
  if (row < rows) {
    const T* r = x + row * n;
    for (int64_t k = lane; k < n; k += kThreads) acc = combine(acc, to_f32(r[k]), kind);
  }
  for (int o = (kThreads < 32 ? kThreads : 32) / 2; o > 0; o >>= 1)
    acc = combine(acc, __shfl_xor_sync(0xffffffffu, acc, o), kind);
  if constexpr (kThreads > 32) {
    const int warp = threadIdx.x / 32, warps = kThreads / 32;
    if (threadIdx.x % 32 == 0) shared[warp] = acc;
    __syncthreads();
    acc = threadIdx.x < warps ? shared[threadIdx.x] : identity;
    for (int o = 16; o > 0; o >>= 1) acc = combine(acc, __shfl_xor_sync(0xffffffffu, acc, o), kind);
  }
  if (lane == 0 && row < rows) out[row] = from_f32<T>(kind == ReduceKind::kMean ? acc / static_cast<float>(n) : acc);
}

}  // namespace

void launch_reduce_rows(const void* x, void* out, int64_t rows, int64_t n, ReduceKind kind, FloatType type,
                        cudaStream_t stream) {
  if (rows == 0) return;  // an empty output (a kept axis of size 0): a launch of no blocks would be an error
  with_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x);
    T* o = static_cast<T*>(out);
    if (n > 1024) {
      launch_kernel(reduce_rows<256, T>, static_cast<unsigned>(rows), 256, 0, stream, in, o, rows, n, kind);
    } else {
      const auto blocks = static_cast<unsigned>((rows + 7) / 8);
      launch_kernel(reduce_rows<32, T>, blocks, 256, 0, stream, in, o, rows, n, kind);
    }
  });
}

void launch_softmax(const void* x, void* out, int64_t outer, int64_t n, int64_t inner, FloatType type,
                    cudaStream_t stream) {
  with_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x);
    T* o = static_cast<T*>(out);
    if (inner == 1) {
      const int threads = n >= 1024 ? 1024 : n >= 256 ? 256 : 128;
      launch_kernel(softmax_rows<T>, static_cast<unsigned>(outer), threads, 0, stream, in, o, n);
    } else {
      launch_kernel(softmax_strided<T>, grid_for(outer * inner), kBlock, 0, stream, in, o, outer, n, inner);
    }
  });
}

void launch_layer_norm(const void* x, const void* scale, const void* bias, void* out, int64_t rows, int64_t n,
                       float epsilon, FloatType type, cudaStream_t stream) {
  const int threads = n >= 1024 ? 512 : n >= 256 ? 256 : 128;
  with_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(layer_norm_rows<T>, static_cast<unsigned>(rows), threads, 0, stream, static_cast<const T*>(x),
                  static_cast<const T*>(scale), static_cast<const T*>(bias), static_cast<T*>(out), n, epsilon);
  });
}

void launch_layer_norm_strided(const void* x, const void* scale, const void* bias, void* out, int64_t batches,
                               int64_t positions, int64_t channels, const RowsLayout& in, const RowsLayout& out_layout,
                               float epsilon, FloatType type, cudaStream_t stream) {
  if (batches * positions * channels == 0) return;
  // The widest tile (best coalesced) that still gives about two blocks per
  // multiprocessor of an H100 (132); at batch 1 the tensors sit in L2, where
  // narrower reads cost little.
  constexpr int64_t kBlocksWanted = 264;
  int tile = kLnMaxTile;
  while (tile > 1 && batches * ((positions + tile - 1) / tile) < kBlocksWanted) tile /= 2;
  while (tile > 1 && channels * (tile + 1) > kLnStagedFloats) tile /= 2;
  const int64_t tiles = (positions + tile - 1) / tile;
  const auto blocks = static_cast<unsigned>(batches * tiles);
  const dim3 threads(static_cast<unsigned>(tile), kLnThreads / tile);
  with_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    const T *xt = static_cast<const T*>(x), *st = static_cast<const T*>(scale), *bt = static_cast<const T*>(bias);
    T* ot = static_cast<T*>(out);
    if (channels * (tile + 1) <= kLnStagedFloats) {
      const size_t bytes = static_cast<size_t>(channels * (tile + 1)) * sizeof(float);
      launch_kernel(layer_norm_strided_staged<T>, blocks, threads, bytes, stream, xt, st, bt, ot, tiles, positions,
                    channels, in, out_layout, epsilon);
      return;
    }
    launch_kernel(layer_norm_strided<T>, blocks, threads, 0, stream, xt, st, bt, ot, tiles, positions, channels, in,
                  out_layout, epsilon);
  });
}

void launch_reduce(const void* x, void* out, const Dims& in_dims, const bool* reduced, ReduceKind kind, bool int64,
                   FloatType type, cudaStream_t stream) {
  Dims kept, red;
  Strides kept_strides, red_strides;
  int64_t stride = 1;
  int64_t strides[kMaxRank];
  for (int d = in_dims.rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= in_dims.size[d];
  }
  // Reduced axes after every kept axis of size > 1: each output reads one
  // contiguous run of the input.
  bool trailing = true, seen_reduced = false;
  for (int d = 0; d < in_dims.rank; ++d) {
    if (reduced[d]) seen_reduced = true;
    else if (seen_reduced && in_dims.size[d] > 1) trailing = false;
  }
  for (int d = 0; d < in_dims.rank; ++d) {
    Dims& target = reduced[d] ? red : kept;
    Strides& ts = reduced[d] ? red_strides : kept_strides;
    ts.s[target.rank] = strides[d];
    target.size[target.rank++] = in_dims.size[d];
  }
  if (!int64 && trailing && red.count() > 0) {
    launch_reduce_rows(x, out, kept.count(), red.count(), kind, type, stream);
    return;
  }
  const unsigned grid = grid_for(kept.count());
  if (int64) {
    launch_kernel(reduce_kernel<int64_t>, grid, kBlock, 0, stream, static_cast<const int64_t*>(x),
                  static_cast<int64_t*>(out), kept, kept_strides, red, red_strides, kind);
    return;
  }
  with_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(reduce_kernel<T>, grid, kBlock, 0, stream, static_cast<const T*>(x), static_cast<T*>(out), kept,
                  kept_strides, red, red_strides, kind);
  });
}

}  // namespace tgr::gpu
