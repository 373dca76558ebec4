// Fused elementwise programs (EwProgram): arithmetic, activations, and comparisons, is_nan, casts and where.
#include <cmath>

#include "runtime/cuda/dependent_launch.cuh"
#include "runtime/cuda/float_types.cuh"
#include "runtime/cuda/launch_util.cuh"

namespace tgr::gpu {
namespace {

template <class T>
__device__ T apply(const EwInstr& ins, T a, T b) {
  switch (ins.op) {
    case EwOp::kAdd: return a + b;
    case EwOp::kSub: return a - b;
    case EwOp::kMul: return a * b;
    case EwOp::kDiv: return b == T(0) && !std::is_floating_point_v<T> ? T(0) : a / b;
    case EwOp::kMax: return a > b ? a : b;
    case EwOp::kNeg: return -a;
    case EwOp::kAbs: return a < T(0) ? -a : a;
    case EwOp::kEqual:
      return a == b ? T(1) : T(0);
    case EwOp::kLess:
      return a < b ? T(1) : T(0);
    case EwOp::kGreater:
      return a > b ? T(1) : T(0);
    case EwOp::kLessEqual:
      return a <= b ? T(1) : T(0);
    case EwOp::kGreaterEqual:
      return a >= b ? T(1) : T(0);
    case EwOp::kNot:
      return a == T(0) ? T(1) : T(0);
    case EwOp::kNonZero:
      return a != T(0) ? T(1) : T(0);
    default: break;
  }
  if constexpr (std::is_same_v<T, float>) {
    switch (ins.op) {
      case EwOp::kPow: return powf(a, b);
      case EwOp::kRelu: return a > 0.f ? a : 0.f;
      case EwOp::kSigmoid: return 1.f / (1.f + expf(-a));
      case EwOp::kTanh: return tanhf(a);
      case EwOp::kSqrt: return sqrtf(a);
      case EwOp::kExp: return expf(a);
      case EwOp::kLog: return logf(a);
      case EwOp::kErf: return erff(a);
      case EwOp::kRsqrt: return 1.f / sqrtf(a);
      case EwOp::kLeakyRelu: return a >= 0.f ? a : ins.p0 * a;
      case EwOp::kHardSigmoid: return fmaxf(0.f, fminf(1.f, ins.p0 * a + ins.p1));
      case EwOp::kHardSwish: return a * fmaxf(0.f, fminf(1.f, a / 6.f + 0.5f));
      case EwOp::kClip: return fminf(fmaxf(a, ins.p0), ins.p1);
      case EwOp::kSoftplus:
        return a > 0.f ? a + log1pf(expf(-a)) : log1pf(expf(a));
      case EwOp::kFloor:
        return floorf(a);
      case EwOp::kCeil:
        return ceilf(a);
      case EwOp::kCos:
        return cosf(a);
      case EwOp::kSin:
        return sinf(a);
      case EwOp::kIsNan:
        return isnan(a) ? 1.f : 0.f;
      case EwOp::kTrunc:
        return truncf(a);
      case EwOp::kAddConst: return a + ins.p0;
      case EwOp::kMulConst: return a * ins.p0;
      case EwOp::kDivConst:
        return a / ins.p0;
      case EwOp::kRSubConst:
        return ins.p0 - a;
      case EwOp::kRDivConst:
        return ins.p0 / a;
      case EwOp::kPowConst:
        return powf(a, ins.p0);
      case EwOp::kGelu:
        return 0.5f * a * (1.f + erff(a * 0.70710678118654752f));
      default: break;
    }
  } else {
    if (ins.op == EwOp::kTrunc) return a;  // integers: already whole
  }
  return T(0);  // kIsNan of an integer: never
}

// Register k of r[], for k known only at run time. With kRegs <= kEwFewRegs
// the array is read through a chain of selects, so it stays in registers; a
// longer one is indexed directly (local memory, through L1).
template <int kRegs, class T>
__device__ inline T read_reg(const T (&r)[kRegs], int k) {
  if constexpr (kRegs > kEwFewRegs) {
    return r[k];
  } else {
    T v = r[0];
#pragma unroll
    for (int j = 1; j < kRegs; ++j) v = k == j ? r[j] : v;
    return v;
  }
}

template <int kRegs, class T>
__device__ inline void write_reg(T (&r)[kRegs], int k, T v) {
  if constexpr (kRegs > kEwFewRegs) {
    r[k] = v;
  } else {
#pragma unroll
    for (int j = 0; j < kRegs; ++j)
      if (k == j) r[j] = v;
  }
}

template <class T, class I>
__device__ inline T load_input(const EwProgram& p, int k, I i) {
  const I at = input_offset<I>(i, p.out, p.in[k]);
  if (p.in[k].int64) return static_cast<T>(static_cast<const int64_t*>(p.in[k].data)[at]);
  if constexpr (std::is_same_v<T, float>) {
    if (p.in[k].type == FloatType::kF16) return to_f32(static_cast<const __half*>(p.in[k].data)[at]);
    if (p.in[k].type == FloatType::kBF16) return to_f32(static_cast<const __nv_bfloat16*>(p.in[k].data)[at]);
  }
  return static_cast<const T*>(p.in[k].data)[at];
}

// Stores a float program's result as out_type (an int64 program's as itself).
template <class T, class I>
__device__ inline void store_result(const EwProgram& p, void* out, I i, T result) {
  if constexpr (std::is_same_v<T, float>) {
    if (p.out_type == FloatType::kF16) {
      static_cast<__half*>(out)[i] = from_f32<__half>(result);
      return;
    }
    if (p.out_type == FloatType::kBF16) {
      static_cast<__nv_bfloat16*>(out)[i] = from_f32<__nv_bfloat16>(result);
      return;
    }
  }
  static_cast<T*>(out)[i] = result;
}

template <class T, class I, int kRegs>
__global__ void ew_kernel(const EwProgram p, void* out) {
  await_previous_grid();
  const int64_t n = p.out.count();
  TGR_GRID_STRIDE_T(I, i, n) {
    T r[kRegs];
#pragma unroll
    for (int k = 0; k < kMaxEwInputs && k < kRegs; ++k)
      if (k < p.inputs) r[k] = load_input<T, I>(p, k, i);
    for (int c = 0; c < p.instrs; ++c) {
      const EwInstr& ins = p.code[c];
      const T a = read_reg<kRegs>(r, ins.a), b = read_reg<kRegs>(r, ins.b);
      write_reg<kRegs>(r, ins.dst,
                       ins.op == EwOp::kWhere ? (a != T(0) ? b : read_reg<kRegs>(r, ins.c)) : apply<T>(ins, a, b));
    }
    const T result = read_reg<kRegs>(r, p.result);
    if (p.int64_out) static_cast<int64_t*>(out)[i] = static_cast<int64_t>(result);
    else store_result<T, I>(p, out, i, result);
  }
}

}  // namespace

namespace {
template <class T>
void launch_ew(const EwProgram& program, void* out, cudaStream_t stream) {
  EwProgram p = program;
  collapse_inputs(p.out, p.in, p.inputs);
  const int64_t n = p.out.count();
  const bool few = p.registers <= kEwFewRegs;
  if (fits_32_bits(n) && few) launch_kernel(ew_kernel<T, int32_t, kEwFewRegs>, grid_for(n), kBlock, 0, stream, p, out);
  else if (fits_32_bits(n)) launch_kernel(ew_kernel<T, int32_t, kMaxEwRegs>, grid_for(n), kBlock, 0, stream, p, out);
  else launch_kernel(ew_kernel<T, int64_t, kMaxEwRegs>, grid_for(n), kBlock, 0, stream, p, out);
}
}  // namespace

void launch_ew_float(const EwProgram& program, void* out, cudaStream_t stream) {
  launch_ew<float>(program, out, stream);
}

void launch_ew_int64(const EwProgram& program, int64_t* out, cudaStream_t stream) {
  launch_ew<int64_t>(program, out, stream);
}

}  // namespace tgr::gpu
