// Fused elementwise programs (EwProgram), comparisons, casts and where.
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
      case EwOp::kAddConst: return a + ins.p0;
      case EwOp::kMulConst: return a * ins.p0;
      default: break;
    }
  }
  return T(0);
}

template <class T, class I>
__global__ void ew_kernel(const EwProgram p, T* out) {
  const int64_t n = p.out.count();
  TGR_GRID_STRIDE_T(I, i, n) {
    T r[kMaxEwRegs];
    for (int k = 0; k < p.inputs; ++k)
      r[k] = static_cast<const T*>(p.in[k].data)[input_offset<I>(i, p.out, p.in[k])];
    for (int c = 0; c < p.instrs; ++c) {
      const EwInstr& ins = p.code[c];
      r[ins.dst] = apply<T>(ins, r[ins.a], r[ins.b]);
    }
    out[i] = r[p.result];
  }
}

template <class T>
__global__ void compare_kernel(CompareOp op, const EwInput a, const EwInput b, const Dims dims, int64_t* out) {
  TGR_GRID_STRIDE_T(int32_t, i, dims.count()) {
    const T x = static_cast<const T*>(a.data)[input_offset<int32_t>(i, dims, a)];
    const T y = static_cast<const T*>(b.data)[input_offset<int32_t>(i, dims, b)];
    bool v = false;
    switch (op) {
      case CompareOp::kEqual: v = x == y; break;
      case CompareOp::kLess: v = x < y; break;
      case CompareOp::kGreater: v = x > y; break;
      case CompareOp::kLessEqual: v = x <= y; break;
      case CompareOp::kGreaterEqual: v = x >= y; break;
    }
    out[i] = v ? 1 : 0;
  }
}

__global__ void cast_kernel(CastKind kind, const void* in, void* out, int64_t n) {
  const float* f = static_cast<const float*>(in);
  const int64_t* q = static_cast<const int64_t*>(in);
  TGR_GRID_STRIDE(i, n) {
    switch (kind) {
      case CastKind::kFloatToInt: static_cast<int64_t*>(out)[i] = static_cast<int64_t>(f[i]); break;
      case CastKind::kFloatToBool: static_cast<int64_t*>(out)[i] = f[i] != 0.f; break;
      case CastKind::kIntToFloat: static_cast<float*>(out)[i] = static_cast<float>(q[i]); break;
      case CastKind::kIntToBool: static_cast<int64_t*>(out)[i] = q[i] != 0; break;
      case CastKind::kIsNan: static_cast<int64_t*>(out)[i] = isnan(f[i]) ? 1 : 0; break;
      case CastKind::kLogicalNot: static_cast<int64_t*>(out)[i] = q[i] ? 0 : 1; break;
    }
  }
}

template <class T>
__global__ void where_kernel(const EwInput c, const EwInput x, const EwInput y, const Dims dims, T* out) {
  TGR_GRID_STRIDE_T(int32_t, i, dims.count()) {
    const bool pick = static_cast<const int64_t*>(c.data)[input_offset<int32_t>(i, dims, c)] != 0;
    out[i] = pick ? static_cast<const T*>(x.data)[input_offset<int32_t>(i, dims, x)]
                  : static_cast<const T*>(y.data)[input_offset<int32_t>(i, dims, y)];
  }
}

}  // namespace

namespace {
template <class T>
void launch_ew(const EwProgram& program, T* out, cudaStream_t stream) {
  EwProgram p = program;
  collapse_inputs(p.out, p.in, p.inputs);
  const int64_t n = p.out.count();
  if (fits_32_bits(n)) ew_kernel<T, int32_t><<<grid_for(n), kBlock, 0, stream>>>(p, out);
  else ew_kernel<T, int64_t><<<grid_for(n), kBlock, 0, stream>>>(p, out);
}
}  // namespace

void launch_ew_float(const EwProgram& program, float* out, cudaStream_t stream) { launch_ew(program, out, stream); }

void launch_ew_int64(const EwProgram& program, int64_t* out, cudaStream_t stream) { launch_ew(program, out, stream); }

void launch_compare(CompareOp op, bool int_inputs, const EwInput& a, const EwInput& b, const Dims& out_dims,
                    int64_t* out, cudaStream_t stream) {
  EwInput in[2] = {a, b};
  Dims dims = out_dims;
  collapse_inputs(dims, in, 2);
  if (int_inputs) compare_kernel<int64_t><<<grid_for(dims.count()), kBlock, 0, stream>>>(op, in[0], in[1], dims, out);
  else compare_kernel<float><<<grid_for(dims.count()), kBlock, 0, stream>>>(op, in[0], in[1], dims, out);
}

void launch_cast(CastKind kind, const void* in, void* out, int64_t n, cudaStream_t stream) {
  cast_kernel<<<grid_for(n), kBlock, 0, stream>>>(kind, in, out, n);
}

void launch_where(const EwInput& cond, const EwInput& x, const EwInput& y, const Dims& out_dims, int elem_bytes,
                  void* out, cudaStream_t stream) {
  EwInput in[3] = {cond, x, y};
  Dims dims = out_dims;
  collapse_inputs(dims, in, 3);
  if (elem_bytes == 4)
    where_kernel<float><<<grid_for(dims.count()), kBlock, 0, stream>>>(in[0], in[1], in[2], dims, static_cast<float*>(out));
  else
    where_kernel<int64_t><<<grid_for(dims.count()), kBlock, 0, stream>>>(in[0], in[1], in[2], dims, static_cast<int64_t*>(out));
}

}  // namespace tgr::gpu
