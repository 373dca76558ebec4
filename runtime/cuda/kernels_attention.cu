// Scaled-dot-product attention in one kernel, float32 (kernels.h's
// launch_attention). A block takes 4 x kRowsPerWarp query rows of one batch
// entry (four warps of kRowsPerWarp rows each); it walks the keys in tiles
// of kKeys, each tile's keys (transposed: lane j reads key j) and values in
// shared memory, and keeps per row the running maximum m, the running sum l
// of exp(x - m) and the running output acc (each lane kChunks of the head's
// elements), rescaled by exp(m_old - m_new) when the maximum grows: the
// online softmax of flash attention (Dao et al., 2022). Lane j computes the
// score of key j for its warp's rows; the warp's shuffles give every lane
// the tile's maximum and sum and each key's probability.
#include <cmath>

#include "runtime/cuda/dependent_launch.cuh"
#include "runtime/cuda/launch_util.cuh"

namespace tgr::gpu {
namespace {

constexpr int kKeys = 32;  // keys per tile: one per lane
constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ int64_t batch_offset(const AttnOperand& o, int64_t b) {
  int64_t offset = 0;
  for (int i = o.batch_axes - 1; i >= 0; --i) {
    offset += (b % o.batch_size[i]) * o.batch_stride[i];
    b /= o.batch_size[i];
  }
  return offset;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

// Head dimensions up to 32 * kChunks (shorter ones padded with zeros).
template <int kChunks, int kRowsPerWarp>
__global__ void __launch_bounds__(kThreads) attention_kernel(AttentionArgs a) {
  await_previous_grid();
  constexpr int kD = 32 * kChunks;
  constexpr int kRowsPerBlock = kWarps * kRowsPerWarp;
  __shared__ __align__(16) float q_s[kRowsPerBlock][kD];
  __shared__ float k_s[kD][kKeys + 1];  // transposed, padded: conflict-free writes along d and reads along keys
  __shared__ float v_s[kKeys][kD];
  const int64_t b = blockIdx.x;
  const int64_t row0 = int64_t{blockIdx.y} * kRowsPerBlock;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int rbase = warp * kRowsPerWarp;
  const float* q = a.q.data + batch_offset(a.q, b);
  const float* k = a.k.data + batch_offset(a.k, b);
  const float* v = a.v.data + batch_offset(a.v, b);
  const float* mask = a.mask.data ? a.mask.data + batch_offset(a.mask, b) : nullptr;
  for (int i = threadIdx.x; i < kRowsPerBlock * kD; i += kThreads) {
    const int r = i / kD, d = i % kD;
    const int64_t row = row0 + r;
    q_s[r][d] = row < a.rows && d < a.head_dim ? q[row * a.q.row_stride + d * a.q.col_stride] : 0.f;
  }
  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kChunks];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.f;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) acc[r][c] = 0.f;
  }
  const int64_t last_row = min(row0 + kRowsPerBlock, a.rows) - 1;
  const int64_t key_end = a.causal ? min(a.keys, last_row + a.keys - a.rows + 1) : a.keys;
  for (int64_t t0 = 0; t0 < key_end; t0 += kKeys) {
    __syncthreads();  // the previous tile is read
    for (int i = threadIdx.x; i < kKeys * kD; i += kThreads) {
      const int j = i / kD, d = i % kD;  // d fastest: coalesced where the head's elements are contiguous
      const int64_t t = t0 + j;
      const bool key = t < a.keys;
      k_s[d][j] = key && d < a.head_dim ? k[d * a.k.row_stride + t * a.k.col_stride] : 0.f;
      v_s[j][d] = key && d < a.value_dim ? v[t * a.v.row_stride + d * a.v.col_stride] : 0.f;
    }
    __syncthreads();
    float s[kRowsPerWarp] = {};
#pragma unroll 4
    for (int d = 0; d < kD; d += 4) {
      const float k0 = k_s[d][lane], k1 = k_s[d + 1][lane], k2 = k_s[d + 2][lane], k3 = k_s[d + 3][lane];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const float4 qv = *reinterpret_cast<const float4*>(&q_s[rbase + r][d]);
        s[r] = fmaf(qv.x, k0, s[r]);
        s[r] = fmaf(qv.y, k1, s[r]);
        s[r] = fmaf(qv.z, k2, s[r]);
        s[r] = fmaf(qv.w, k3, s[r]);
      }
    }
    const int64_t t = t0 + lane;
    float p[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int64_t row = row0 + rbase + r;
      float x = s[r] * a.scale;
      if (mask && t < a.keys && row < a.rows) x += mask[row * a.mask.row_stride + t * a.mask.col_stride];
      if (t >= a.keys) x = -INFINITY;
      const float m_new = fmaxf(m[r], warp_max(x));
      const float base = m_new == -INFINITY ? 0.f : m_new;  // a row all -inf so far: exp(-inf) = 0, not NaN
      p[r] = expf(x - base);
      const float rescale = expf(m[r] - base);
      l[r] = l[r] * rescale + warp_sum(p[r]);
      m[r] = m_new;
#pragma unroll
      for (int c = 0; c < kChunks; ++c) acc[r][c] *= rescale;
    }
#pragma unroll 4
    for (int j = 0; j < kKeys; ++j) {
      float vj[kChunks];
#pragma unroll
      for (int c = 0; c < kChunks; ++c) vj[c] = v_s[j][lane + 32 * c];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const float pj = __shfl_sync(kFullMask, p[r], j);
#pragma unroll
        for (int c = 0; c < kChunks; ++c) acc[r][c] = fmaf(pj, vj[c], acc[r][c]);
      }
    }
  }
  float* out = const_cast<float*>(a.out.data) + batch_offset(a.out, b);  // the one operand written
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t row = row0 + rbase + r;
    if (row >= a.rows) continue;
    const bool undefined = !(l[r] > 0.f);  // every entry -inf (0 / 0), or NaN
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int d = lane + 32 * c;
      if (d < a.value_dim)
        out[row * a.out.row_stride + d * a.out.col_stride] = a.nan_guard && undefined ? 0.f : acc[r][c] / l[r];
    }
  }
}

template <int kRowsPerWarp>
void launch_rows(const AttentionArgs& a, cudaStream_t stream) {
  const int64_t head = a.head_dim > a.value_dim ? a.head_dim : a.value_dim;
  const int64_t rows_per_block = kWarps * kRowsPerWarp;
  const dim3 grid(static_cast<unsigned>(a.batch),
                  static_cast<unsigned>((a.rows + rows_per_block - 1) / rows_per_block));
  if (head <= 32) launch_kernel(attention_kernel<1, kRowsPerWarp>, grid, kThreads, 0, stream, a);
  else if (head <= 64) launch_kernel(attention_kernel<2, kRowsPerWarp>, grid, kThreads, 0, stream, a);
  else launch_kernel(attention_kernel<4, kRowsPerWarp>, grid, kThreads, 0, stream, a);
}

}  // namespace

// Four rows per warp reuse each key and value read from shared memory four
// times; fewer rows per block give more blocks. At batch 1 the blocks are
// few (BERT-base: 12 heads x 128 rows), so the rows per warp are the most
// that still give about two blocks per multiprocessor of an H100 or H200 (132).
void launch_attention(const AttentionArgs& a, cudaStream_t stream) {
  const int64_t rows = a.batch * a.rows;
  if (a.rows_per_warp == 1 || a.rows_per_warp == 2 || a.rows_per_warp == 4) {
    if (a.rows_per_warp == 1) launch_rows<1>(a, stream);
    else if (a.rows_per_warp == 2) launch_rows<2>(a, stream);
    else launch_rows<4>(a, stream);
  } else if (rows >= 16 * 264) launch_rows<4>(a, stream);
  else if (rows >= 8 * 264) launch_rows<2>(a, stream);
  else launch_rows<1>(a, stream);
}

}  // namespace tgr::gpu
