// Fused elementwise programs (EwProgram): arithmetic, activations, and comparisons, is_nan, casts and where.
#include <cmath>

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
      case EwOp::kIsNan:
        return isnan(a) ? 1.f : 0.f;
      case EwOp::kTrunc:
        return truncf(a);
      case EwOp::kAddConst: return a + ins.p0;
      case EwOp::kMulConst: return a * ins.p0;
      default: break;
    }
  } else {
    if (ins.op == EwOp::kTrunc) return a;  // integers: already whole
  }
  return T(0);  // kIsNan of an integer: never
}

template <class T, class I>
__global__ void ew_kernel(const EwProgram p, void* out) {
  const int64_t n = p.out.count();
  TGR_GRID_STRIDE_T(I, i, n) {
    T r[kMaxEwRegs];
    for (int k = 0; k < p.inputs; ++k) {
      const I at = input_offset<I>(i, p.out, p.in[k]);
      r[k] = p.in[k].int64 ? static_cast<T>(static_cast<const int64_t*>(p.in[k].data)[at])
                           : static_cast<const T*>(p.in[k].data)[at];
    }
    for (int c = 0; c < p.instrs; ++c) {
      const EwInstr& ins = p.code[c];
      r[ins.dst] =
          ins.op == EwOp::kWhere ? (r[ins.a] != T(0) ? r[ins.b] : r[ins.c]) : apply<T>(ins, r[ins.a], r[ins.b]);
    }
    if (p.int64_out) static_cast<int64_t*>(out)[i] = static_cast<int64_t>(r[p.result]);
    else static_cast<T*>(out)[i] = r[p.result];
  }
}

}  // namespace

namespace {
template <class T>
void launch_ew(const EwProgram& program, void* out, cudaStream_t stream) {
  EwProgram p = program;
  collapse_inputs(p.out, p.in, p.inputs);
  const int64_t n = p.out.count();
  if (fits_32_bits(n)) ew_kernel<T, int32_t><<<grid_for(n), kBlock, 0, stream>>>(p, out);
  else ew_kernel<T, int64_t><<<grid_for(n), kBlock, 0, stream>>>(p, out);
}
}  // namespace

void launch_ew_float(const EwProgram& program, void* out, cudaStream_t stream) {
  launch_ew<float>(program, out, stream);
}

void launch_ew_int64(const EwProgram& program, int64_t* out, cudaStream_t stream) {
  launch_ew<int64_t>(program, out, stream);
}

}  // namespace tgr::gpu
