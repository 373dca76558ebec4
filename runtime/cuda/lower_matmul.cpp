// matmul and batch_matmul on cuBLAS (row-major C = A B computed as the
// column-major C^T = B^T A^T; float32, default math: no TF32). A and B may be
// strided views (runtime/views.h: unit inner stride), read through the
// leading dimension and the batch stride.
#include "runtime/cuda/lower.h"

namespace tgr::gpu {

std::function<void()> lower_matmul(const LowerCtx& ctx, int32_t node) {
  const Node& n = ctx.graph.node(node);
  const Where where = ctx.where(node);
  const Shape& a = ctx.shape(n.inputs[0]);
  const Shape& b = ctx.shape(n.inputs[1]);
  const bool batched = n.op == &known_ops::batch_matmul();
  const int64_t batch = batched ? a[0] : 1;
  const int64_t M = a[a.size() - 2], K = a.back(), N = b.back();
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX) fail(where, "matrix dimension above 2^31");
  // Leading dimension (row stride) and batch stride of an operand of `rows` x `cols`.
  auto layout = [&](ValueRef v, int64_t rows, int64_t cols) {
    const Strides s = ctx.strides(v);
    const size_t r = ctx.shape(v).size();
    const int64_t ld = rows == 1 ? cols : s.s[r - 2];
    const int64_t batch_stride = batched ? s.s[0] : rows * cols;
    if (ld > INT32_MAX) fail(where, "leading dimension above 2^31");
    return std::pair<int, long long>{static_cast<int>(ld), batch_stride};
  };
  const auto [lda, stride_a] = layout(n.inputs[0], M, K);
  const auto [ldb, stride_b] = layout(n.inputs[1], K, N);
  const float* pa = static_cast<const float*>(ctx.ptr(n.inputs[0]));
  const float* pb = static_cast<const float*>(ctx.ptr(n.inputs[1]));
  float* pc = static_cast<float*>(ctx.ptr({node, 0}));
  GpuContext* gpu = &ctx.gpu;
  const int m = static_cast<int>(M), k = static_cast<int>(K), nn = static_cast<int>(N);
  return [=] {
    const float one = 1.f, zero = 0.f;
    if (batch == 1)
      TGR_GPU_CHECK(cublasSgemm(gpu->cublas, CUBLAS_OP_N, CUBLAS_OP_N, nn, m, k, &one, pb, ldb, pa, lda, &zero, pc, nn),
                    where);
    else
      TGR_GPU_CHECK(cublasSgemmStridedBatched(gpu->cublas, CUBLAS_OP_N, CUBLAS_OP_N, nn, m, k, &one, pb, ldb, stride_b,
                                              pa, lda, stride_a, &zero, pc, nn, M * N, static_cast<int>(batch)),
                    where);
  };
}

}  // namespace tgr::gpu
