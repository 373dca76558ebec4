// matmul and batch_matmul on cuBLAS (row-major C = A B computed as the
// column-major C^T = B^T A^T) in the operands' storage type, accumulating in
// float32 (runtime/precision.h): float32 with default math (no TF32) at fp32,
// CUBLAS_COMPUTE_32F_FAST_TF32 at tf32, float16 or bfloat16 operands on
// tensor cores at fp16 and bf16 (cublasGemmEx). A and B may be
// strided views (runtime/views.h): rows with unit stride are read through the
// leading dimension, columns with unit stride (a transposed view: BERT's keys
// after transpose(0, 2, 3, 1)) through CUBLAS_OP_T, and the batch axis
// through the batch stride. The output C is written with its own leading
// dimension and batch stride (cublas_output): attention's head merge places
// a batch_matmul's [H, S, D] output so that the merged [S, H*D] is
// row-major (runtime/views.h): ldc = H*D, batch stride D.
//
// Product tasks (Task::Kind::kProduct: matmul [+ scale] + bias per column
// [+ residual] [+ relu]) run as one cuBLASLt matmul: the scale is its alpha,
// the bias and relu are its epilogue (CUBLASLT_EPILOGUE_BIAS / RELU_BIAS /
// RELU), the residual its C matrix (beta = 1); batch_matmul + scale (the
// attention scores) is the strided-batched call with that alpha. cuBLASLt's
// GELU epilogue is the tanh approximation, not ONNX's erf GELU, so it is not
// used: a GELU after a product stays an elementwise program. The algorithm
// is the heuristic's first: timing the heuristic's first eight at load and
// keeping the fastest made ViT-B/16 and ConvNeXt-tiny slower on the H100
// (likely because a product timed alone finds its weights in L2, and in the
// model it does not).
#include <memory>

#include "runtime/cuda/lower.h"

namespace tgr::gpu {
namespace {

// One operand as cuBLAS's column-major view of it: our row-major X (rows x
// cols) is, column-major, X^T (cols x rows) with op N; a column-major
// (transposed) X is read with op T.
struct Operand {
  cublasOperation_t op = CUBLAS_OP_N;
  int ld = 0;
  long long batch_stride = 0;
  const void* data = nullptr;
};

Operand operand(const LowerCtx& ctx, ValueRef v, bool batched, const Where& where) {
  const Shape& s = ctx.shape(v);
  const Strides st = ctx.strides(v);
  const std::vector<int64_t> strides(st.s, st.s + s.size());
  const std::optional<CublasMatrix> m = cublas_matrix(s, strides);
  if (!m) fail(where, "an operand's layout is not a matrix cuBLAS reads (the plan should have copied it)");
  if (m->ld > INT32_MAX) fail(where, "leading dimension above 2^31");
  Operand o;
  o.op = m->column_major ? CUBLAS_OP_T : CUBLAS_OP_N;
  o.ld = static_cast<int>(m->ld);
  const size_t r = s.size();
  o.batch_stride = batched ? strides[0] : s[r - 2] * s[r - 1];
  o.data = ctx.ptr(v);
  return o;
}

// cuBLASLt descriptors of one product, destroyed with the step.
struct LtProduct {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  LtProduct() = default;
  LtProduct(const LtProduct&) = delete;
  LtProduct& operator=(const LtProduct&) = delete;
  ~LtProduct() {
    for (cublasLtMatrixLayout_t l : {a, b, c, d})
      if (l) cublasLtMatrixLayoutDestroy(l);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

// The value of a product task's scale (a constant the plan computed at
// load), or 1 without one: cuBLAS's alpha.
float alpha_of(const LowerCtx& ctx, const Task& task, const Where& where) {
  if (!task.scale) return 1.f;
  const ValueSlot& slot = ctx.plan.slot(*task.scale);
  if (slot.home != ValueSlot::Home::kConstant || slot.constant < 0)
    fail(where, "the product's scale is not a constant computed at load");
  const ConstantValue& c = ctx.plan.constants.at(static_cast<size_t>(slot.constant));
  if (!c.is_float() || c.real.data.size() != 1) fail(where, "the product's scale is not one float");
  return c.real.data[0];
}

// matmul or batch_matmul `node` through cublasGemmEx (GemmStridedBatchedEx), C =
// alpha A B written to `out` (the node's own output, or the output of the
// task it heads).
std::function<void()> lower_gemm(const LowerCtx& ctx, int32_t node, ValueRef out, float alpha, const Where& where) {
  const Node& n = ctx.graph.node(node);
  const Shape& a = ctx.shape(n.inputs[0]);
  const Shape& b = ctx.shape(n.inputs[1]);
  const bool batched = op_is(n.op, OpKind::kBatchMatmul);
  const int64_t batch = batched ? a[0] : 1;
  const int64_t M = a[a.size() - 2], K = a.back(), N = b.back();
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX) fail(where, "matrix dimension above 2^31");
  const Operand oa = operand(ctx, n.inputs[0], batched, where);
  const Operand ob = operand(ctx, n.inputs[1], batched, where);
  // C, row-major (rows with unit stride, row stride ldc) is column-major C^T
  // (N x M) with leading dimension ldc: usually N, larger when written in place.
  const Strides cs = ctx.strides(out);
  const std::optional<CublasOutput> oc =
      cublas_output(ctx.shape(out), std::vector<int64_t>(cs.s, cs.s + ctx.shape(out).size()));
  if (!oc) fail(where, "the output's layout is not one cuBLAS writes (the plan should not have placed it so)");
  if (oc->ld > INT32_MAX) fail(where, "leading dimension above 2^31");
  const int ldc = static_cast<int>(oc->ld);
  const long long stride_c = batched ? oc->batch_stride : M * N;
  void* pc = ctx.ptr(out);
  const cudaDataType_t ta = cuda_data_type(ctx.float_type(n.inputs[0])),
                       tb = cuda_data_type(ctx.float_type(n.inputs[1]));
  const cudaDataType_t tc = cuda_data_type(ctx.float_type(out));
  if (ta != tb || ta != tc) fail(where, "the product's operands are stored in different types");
  const cublasComputeType_t compute = cublas_compute_type(ctx.precision());
  GpuContext* gpu = &ctx.gpu;
  const int m = static_cast<int>(M), k = static_cast<int>(K), nn = static_cast<int>(N);
  return [=] {
    const float zero = 0.f;
    if (batch == 1)
      TGR_GPU_CHECK(cublasGemmEx(gpu->cublas, ob.op, oa.op, nn, m, k, &alpha, ob.data, tb, ob.ld, oa.data, ta, oa.ld,
                                 &zero, pc, tc, ldc, compute, CUBLAS_GEMM_DEFAULT),
                    where);
    else
      TGR_GPU_CHECK(cublasGemmStridedBatchedEx(gpu->cublas, ob.op, oa.op, nn, m, k, &alpha, ob.data, tb, ob.ld,
                                               ob.batch_stride, oa.data, ta, oa.ld, oa.batch_stride, &zero, pc, tc, ldc,
                                               stride_c, static_cast<int>(batch), compute, CUBLAS_GEMM_DEFAULT),
                    where);
  };
}

}  // namespace

std::function<void()> lower_matmul(const LowerCtx& ctx, int32_t node) {
  return lower_gemm(ctx, node, {node, 0}, 1.f, ctx.where(node));
}

std::function<void()> lower_product(const LowerCtx& ctx, const Task& task) {
  const Node& n = ctx.graph.node(task.nodes.front());
  const Where where = ctx.where(task.root());
  const float alpha = alpha_of(ctx, task, where);
  // batch_matmul + scale: no epilogue, so the strided-batched call with alpha.
  if (op_is(n.op, OpKind::kBatchMatmul)) return lower_gemm(ctx, task.nodes.front(), {task.root(), 0}, alpha, where);
  const Shape& a = ctx.shape(n.inputs[0]);
  const Shape& b = ctx.shape(n.inputs[1]);
  const int64_t M = a[0], K = a[1], N = b[1];
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX) fail(where, "matrix dimension above 2^31");
  const Operand oa = operand(ctx, n.inputs[0], false, where);
  const Operand ob = operand(ctx, n.inputs[1], false, where);
  void* pd = ctx.ptr({task.root(), 0});
  const void* pc = task.residual ? ctx.ptr(*task.residual) : pd;
  const float beta = task.residual ? 1.f : 0.f;
  GpuContext* gpu = &ctx.gpu;
  const cudaDataType_t type = cuda_data_type(ctx.float_type({task.root(), 0}));
  for (ValueRef v : {n.inputs[0], n.inputs[1]})
    if (cuda_data_type(ctx.float_type(v)) != type) fail(where, "the product's operands are stored in different types");

  auto lt = std::make_shared<LtProduct>();
  // Float32 accumulation and scale (alpha, beta); TF32 only at tf32. The
  // bias vector is of the output's type.
  TGR_GPU_CHECK(cublasLtMatmulDescCreate(&lt->desc, cublas_compute_type(ctx.precision()), CUDA_R_32F), where);
  // Column-major: D^T (N x M) = op(B-side) (N x K) * op(A-side) (K x M).
  auto set = [&](cublasLtMatmulDescAttributes_t attr, const void* value, size_t bytes) {
    TGR_GPU_CHECK(cublasLtMatmulDescSetAttribute(lt->desc, attr, value, bytes), where);
  };
  set(CUBLASLT_MATMUL_DESC_TRANSA, &ob.op, sizeof(ob.op));
  set(CUBLASLT_MATMUL_DESC_TRANSB, &oa.op, sizeof(oa.op));
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  if (task.bias) epilogue = task.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  else if (task.relu) epilogue = CUBLASLT_EPILOGUE_RELU;
  set(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue));
  if (task.bias) {
    // Per column of our row-major D = per row of cuBLAS's column-major D^T: the epilogue's bias vector.
    const void* bias = ctx.ptr(*task.bias);
    set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
    if (cuda_data_type(ctx.float_type(*task.bias)) != type) fail(where, "the bias is stored in another type than D");
    set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &type, sizeof(type));
  }
  // A stored matrix: rows x cols column-major with leading dimension ld.
  auto layout = [&](cublasLtMatrixLayout_t* l, int64_t rows, int64_t cols, int64_t ld) {
    TGR_GPU_CHECK(cublasLtMatrixLayoutCreate(l, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld),
                  where);
  };
  const bool tb = ob.op == CUBLAS_OP_T, ta = oa.op == CUBLAS_OP_T;
  layout(&lt->a, tb ? K : N, tb ? N : K, ob.ld);
  layout(&lt->b, ta ? M : K, ta ? K : M, oa.ld);
  layout(&lt->c, N, M, N);
  layout(&lt->d, N, M, N);

  cublasLtMatmulPreference_t pref = nullptr;
  TGR_GPU_CHECK(cublasLtMatmulPreferenceCreate(&pref), where);
  const size_t workspace_bytes = gpu->cublas_workspace.bytes();
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t pref_status = cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes, sizeof(workspace_bytes));
  const cublasStatus_t status = pref_status != CUBLAS_STATUS_SUCCESS
                                    ? pref_status
                                    : cublasLtMatmulAlgoGetHeuristic(gpu->cublaslt, lt->desc, lt->a, lt->b, lt->c,
                                                                     lt->d, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  TGR_GPU_CHECK(status, where);
  if (found == 0) fail(where, "cuBLASLt has no algorithm for this product and epilogue");
  lt->algo = result.algo;
  void* workspace = gpu->cublas_workspace.data();
  const void* pa = oa.data;
  const void* pb = ob.data;
  return [=] {
    TGR_GPU_CHECK(cublasLtMatmul(gpu->cublaslt, lt->desc, &alpha, pb, lt->a, pa, lt->b, &beta, pc, lt->c, pd, lt->d,
                                 &lt->algo, workspace, workspace_bytes, gpu->stream),
                  where);
  };
}

}  // namespace tgr::gpu
