// The runtime's own CUDA kernels, behind host functions that launch them on a
// stream (definitions in the *.cu files beside this). Shapes travel as Dims
// (rank <= kMaxRank, outermost first); element types are float32 (4 bytes),
// float16 and bfloat16 (2 bytes: FloatType) and int64 (8 bytes; bool values
// are stored as int64 0/1). Kernels on the half types load them as float32,
// compute and accumulate in float32, and round to the half type as they
// store (runtime/precision.h).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#ifdef __CUDACC__
#define TGR_HOST_DEVICE __host__ __device__
#else
#define TGR_HOST_DEVICE
#endif

namespace tgr::gpu {

inline constexpr int kMaxRank = 8;

// How a float value is stored: float32, float16 or bfloat16.
enum class FloatType : uint8_t { kF32, kF16, kBF16 };
inline constexpr int float_type_bytes(FloatType t) { return t == FloatType::kF32 ? 4 : 2; }

struct Dims {
  int rank = 0;
  int64_t size[kMaxRank] = {};
  TGR_HOST_DEVICE int64_t count() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= size[i];
    return n;
  }
};

// Element strides (0 along broadcast axes), one per axis of some Dims.
struct Strides {
  int64_t s[kMaxRank] = {};
};

// --- fused elementwise programs ------------------------------------------------
// A program computes out[i] from up to kMaxEwInputs inputs broadcast to the
// output's shape: registers 0..inputs-1 hold the inputs' elements, each
// instruction writes one register, `result` is stored. One kernel runs a
// whole chain of elementwise operators (fusion) or a single one. Scalar
// constants are instruction parameters (p0), not inputs; a program of at
// most kEwFewRegs registers keeps them in registers, a longer one in local
// memory (an array indexed at run time).
enum class EwOp : uint8_t {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kPow,
  kMax,
  kNeg,
  kRelu,
  kSigmoid,
  kTanh,
  kAbs,
  kSqrt,
  kExp,
  kLog,
  kErf,
  kRsqrt,
  kLeakyRelu,    // p0 = alpha
  kHardSigmoid,  // p0 = alpha, p1 = beta
  kHardSwish,
  kClip,      // p0 = min, p1 = max
  kSoftplus,  // log(1 + e^a)
  kFloor,
  kCeil,
  kCos,
  kSin,
  kAddConst,   // a + p0 (also a - c, as a + (-c): the same float)
  kMulConst,   // a * p0
  kDivConst,   // a / p0
  kRSubConst,  // p0 - a
  kRDivConst,  // p0 / a
  kPowConst,   // pow(a, p0)
  kGelu,       // a / 2 (1 + erf(a / sqrt 2)): the erf chain exporters emit, as one instruction
  // Comparisons and logic: results 1 or 0 in the program's type (bools are 0/1).
  kEqual,
  kLess,
  kGreater,
  kLessEqual,
  kGreaterEqual,
  kIsNan,
  kNot,      // a == 0
  kNonZero,  // a != 0 (cast to bool)
  kTrunc,    // toward zero (cast float to int64)
  kWhere,    // a != 0 ? b : c
};

inline constexpr int kMaxEwInputs = 8;
inline constexpr int kMaxEwInstrs = 32;
inline constexpr int kMaxEwRegs = 24;
inline constexpr int kEwFewRegs = 6;

struct EwInstr {
  EwOp op = EwOp::kAdd;
  uint8_t dst = 0, a = 0, b = 0, c = 0;  // c: kWhere only
  float p0 = 0, p1 = 0;
};

struct EwInput {
  const void* data = nullptr;
  bool contiguous = false;  // same shape as the output: offset = index
  Strides strides;          // otherwise: per output axis
  bool int64 = false;       // stored as int64 (int64, bool) in a float program: converted on load
  FloatType type = FloatType::kF32;  // otherwise, in a float program: how it is stored
};

struct EwProgram {
  Dims out;
  int inputs = 0;
  EwInput in[kMaxEwInputs];
  int instrs = 0;
  EwInstr code[kMaxEwInstrs];
  int result = 0;
  int registers = kMaxEwRegs;  // registers used: inputs, then one per instruction (simplify_program sets it)
  bool int64_out = false;  // a float program whose result is int64 or bool: stored as int64
  FloatType out_type = FloatType::kF32;  // otherwise, in a float program: how the result is stored
};

// A program computing in float (its int64 and bool inputs converted on load,
// half inputs widened; out is stored as out_type, or int64_t* with
// int64_out) or in int64 (every input and the output int64).
void launch_ew_float(const EwProgram& program, void* out, cudaStream_t stream);
void launch_ew_int64(const EwProgram& program, int64_t* out, cudaStream_t stream);

// --- layout ------------------------------------------------------------------------
// For every index of `iter`: dst[dst_offset + sum idx*dst_strides] =
// src[src_offset + sum idx*src_strides]. Transpose, slice, expand, concat,
// split, pad and enlarge are all such copies.
void launch_strided_copy(const void* src, int64_t src_offset, const Strides& src_strides, void* dst,
                         int64_t dst_offset, const Strides& dst_strides, const Dims& iter, int elem_bytes,
                         cudaStream_t stream);
// concat of up to kMaxConcat inputs in one kernel: the output seen as
// [outer, block] where input k fills columns [begin[k], begin[k+1]).
inline constexpr int kMaxConcat = 64;
struct ConcatArgs {
  int inputs = 0;
  int64_t outer = 1;
  const void* src[kMaxConcat] = {};
  int64_t begin[kMaxConcat + 1] = {};
};
void launch_concat(const ConcatArgs& args, void* dst, int elem_bytes, cudaStream_t stream);
// dst[0..n) = value (as float or int64 by elem_bytes: 4 or 8).
void launch_fill(void* dst, int64_t n, double value, int elem_bytes, cudaStream_t stream);
// dst[0..n) = a 2-byte element's bits (a float16 or bfloat16 value).
void launch_fill_16(void* dst, int64_t n, uint16_t bits, cudaStream_t stream);

// Spins for about `cycles` clock cycles: holds the stream while the host
// enqueues a profile run, so launch gaps do not count as operator time.
void launch_delay(int64_t cycles, cudaStream_t stream);

// --- normalisation and reductions ---------------------------------------------------
// Every float pointer below holds elements of `type` (scale and bias too);
// sums, maxima, means and variances are float32.
void launch_softmax(const void* x, void* out, int64_t outer, int64_t n, int64_t inner, FloatType type,
                    cudaStream_t stream);
void launch_layer_norm(const void* x, const void* scale, const void* bias, void* out, int64_t rows, int64_t n,
                       float epsilon, FloatType type, cudaStream_t stream);
// Where element (b, p, c) of a [batches, positions, channels] tensor is:
// b * batch + p * position + c * channel.
struct RowsLayout {
  int64_t batch = 0, position = 0, channel = 1;
};
// The same over the last axis with strided input or output (runtime/views.h
// ChannelStridedRows: position stride 1, the channels strided; or row-major
// rows) for b < batches, p < positions, c < channels. Reads are coalesced
// along positions, so `in` should have position stride 1.
void launch_layer_norm_strided(const void* x, const void* scale, const void* bias, void* out, int64_t batches,
                               int64_t positions, int64_t channels, const RowsLayout& in, const RowsLayout& out_layout,
                               float epsilon, FloatType type, cudaStream_t stream);
// Sums (means, maxima, minima) over the axes where `reduced` is set (out has
// the kept axes, in order); int64 data, or floats of `type`.
enum class ReduceKind : uint8_t { kSum, kMean, kMax, kMin };
void launch_reduce(const void* x, void* out, const Dims& in_dims, const bool* reduced, ReduceKind kind, bool int64,
                   FloatType type, cudaStream_t stream);

// --- pooling ------------------------------------------------------------------------
struct PoolGeometry {
  int64_t planes = 0;  // N * C
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 0, kernel_w = 0, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0;
  bool include_pad = false;
};
// Each of `rows` contiguous runs of n elements reduced to one (n >= 1).
void launch_reduce_rows(const void* x, void* out, int64_t rows, int64_t n, ReduceKind kind, FloatType type,
                        cudaStream_t stream);
void launch_avgpool(const void* x, void* out, const PoolGeometry& g, FloatType type, cudaStream_t stream);
void launch_maxpool(const void* x, void* out, const PoolGeometry& g, FloatType type, cudaStream_t stream);

// --- convolution --------------------------------------------------------------------
// A depthwise convolution (groups = input channels = output channels, so
// weight [C, 1, K, K]) of NCHW float planes, dilation 1; padding may be
// asymmetric (bottom and right follow from out_h and out_w).
struct DepthwiseGeometry {
  int64_t planes = 0;    // N * C
  int64_t channels = 0;  // C: plane p is channel p % C
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel = 0, stride = 1;  // square
  int64_t pad_top = 0, pad_left = 0;
};
// Whether launch_depthwise_conv takes the geometry: kernel 3, 5 or 7,
// stride 1 or 2, planes within 32-bit indices.
bool depthwise_kernel_fits(const DepthwiseGeometry& g);
// What the depthwise kernel applies last: nothing, relu, clip to [lo, hi]
// (ReLU6), or SiLU x * (1 / (1 + exp(-x))), computed as the interpreter does.
struct ConvActivation {
  enum Kind : int { kNone, kRelu, kClip, kSilu };
  int kind = kNone;
  float lo = 0, hi = 0;  // kClip
};
// y = act(conv(x, weight) [+ bias[c]] [+ residual]); bias and residual may
// be null; every operand of `type`, accumulated in float32.
void launch_depthwise_conv(const void* x, const void* weight, const void* bias, const void* residual, void* y,
                           const DepthwiseGeometry& g, ConvActivation act, FloatType type, cudaStream_t stream);

// --- indexing -----------------------------------------------------------------------
// out[o, k, i] = data[o, wrap(indices[k]), i]; an index out of range reads 0.
void launch_gather(const void* data, const int64_t* indices, void* out, int64_t outer, int64_t axis_size,
                   int64_t count, int64_t inner, int elem_bytes, cudaStream_t stream);
// out[idx] = data[idx with axis replaced by wrap(indices[idx])].
void launch_gather_elements(const void* data, const Dims& data_dims, const int64_t* indices, const Dims& index_dims,
                            int axis, void* out, int elem_bytes, cudaStream_t stream);

// --- attention (kernels_attention.cu) ---------------------------------------------------
// One operand of scaled-dot-product attention, [batch, rows, cols] read
// through strides: batch index b is split row-major over `batch_axes`
// sub-axes (batch_size[i], batch_stride[i]) (runtime/attention.h's AttentionLayout).
inline constexpr int kMaxAttnBatchAxes = 4;
struct AttnOperand {
  const float* data = nullptr;
  int batch_axes = 0;
  int64_t batch_size[kMaxAttnBatchAxes] = {}, batch_stride[kMaxAttnBatchAxes] = {};
  int64_t row_stride = 0, col_stride = 0;
};
// out[b, s, :] = sum_t softmax_t(scale q[b, s, :] . k[b, :, t] + mask[b, s, t]) v[b, t, :], for b < batch,
// s < rows, t < keys: q [batch, rows, head_dim], k [batch, head_dim, keys], v [batch, keys, value_dim],
// mask (data null: none) and out [batch, rows, keys] / [batch, rows, value_dim]. `causal`: key tiles
// entirely past the diagonal (t > s + keys - rows) are skipped (their mask makes them add nothing).
// `nan_guard`: a row whose softmax is undefined (every entry -inf, or NaN) gives 0, as PyTorch's
// where(is_nan(p), 0, p) does; without it, NaN. Float32 throughout, in the flash-attention manner
// (tiles of k and v in shared memory, the softmax online): the scores never reach memory.
struct AttentionArgs {
  AttnOperand q, k, v, mask, out;
  int64_t batch = 0, rows = 0, keys = 0, head_dim = 0, value_dim = 0;
  float scale = 1.f;
  bool causal = false, nan_guard = false;
  int rows_per_warp = 0;  // 1, 2 or 4 query rows per warp (a block has four warps); 0: launch_attention picks
};
// Head dimensions up to kMaxAttnHeadDim.
inline constexpr int64_t kMaxAttnHeadDim = 128;
void launch_attention(const AttentionArgs& args, cudaStream_t stream);

}  // namespace tgr::gpu
