// Matrix products: matmul (2-D) and batch_matmul (3-D, one product per batch).
#include "ir/kernels/gemm.h"
#include "ir/ops/families.h"
#include "ir/ops/op_helpers.h"

namespace tgr {
namespace {

std::vector<Shape> matmul_shapes(const OpCall& call) {
  const Shape& a = call.input_shapes[0];
  const Shape& b = call.input_shapes[1];
  if (a.size() != 2 || b.size() != 2)
    throw ShapeError("matmul: inputs must be 2-D, got " + shape_to_string(a) + " and " + shape_to_string(b));
  if (a[1] != b[0])
    throw ShapeError("matmul: inner dimensions differ (" + shape_to_string(a) + " times " +
                     shape_to_string(b) + ")");
  return {{a[0], b[1]}};
}

std::vector<Shape> batch_matmul_shapes(const OpCall& call) {
  const Shape& a = call.input_shapes[0];
  const Shape& b = call.input_shapes[1];
  if (a.size() != 3 || b.size() != 3)
    throw ShapeError("batch_matmul: inputs must be 3-D, got " + shape_to_string(a) + " and " +
                     shape_to_string(b));
  if (a[0] != b[0])
    throw ShapeError("batch_matmul: batch sizes differ (" + std::to_string(a[0]) + " vs " +
                     std::to_string(b[0]) + ")");
  if (a[2] != b[1])
    throw ShapeError("batch_matmul: inner dimensions differ (" + shape_to_string(a) + " times " +
                     shape_to_string(b) + ")");
  return {{a[0], a[1], b[2]}};
}

template <class T>
void matmul_kernel(const OpCall&, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  const Tensor<T>& a = *in[0];
  const Tensor<T>& b = *in[1];
  const int64_t M = a.shape[0], K = a.shape[1], N = b.shape[1];
  gemm<T>(M, N, K, a.data.data(), K, b.data.data(), N, out[0].data.data(), N);
}

template <class T>
void batch_matmul_kernel(const OpCall&, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  const Tensor<T>& a = *in[0];
  const Tensor<T>& b = *in[1];
  const int64_t B = a.shape[0], M = a.shape[1], K = a.shape[2], N = b.shape[2];
  tbb::parallel_for(int64_t{0}, B, [&](int64_t i) {
    gemm<T>(M, N, K, a.data.data() + i * M * K, K, b.data.data() + i * K * N, N,
            out[0].data.data() + i * M * N, N);
  });
}

}  // namespace

namespace {

// A multiply-add per element of the shared dimension K, for each output.
OpCost matmul_cost() {
  return OpCost{.flops =
                    [](const OpCall& call) {
                      return 2.0 * ops::output_elements(call) * static_cast<double>(call.input_shapes[0].back());
                    },
                .bytes = ops::operand_bytes};
}

}  // namespace

void register_linear_algebra_ops(OpTable& table) {
  table.add({.name = "matmul",
             .summary = "matrix product: [M,K] x [K,N] -> [M,N]",
             .inputs = {"a", "b"},
             .infer_shapes = matmul_shapes,
             .kernels = TGR_KERNELS(matmul_kernel),
             .multilinear = {true, true},
             .cost = matmul_cost()});
  table.add({.name = "batch_matmul",
             .summary = "batched matrix product: [B,M,K] x [B,K,N] -> [B,M,N]",
             .inputs = {"a", "b"},
             .infer_shapes = batch_matmul_shapes,
             .kernels = TGR_KERNELS(batch_matmul_kernel),
             .multilinear = {true, true},
             .cost = matmul_cost()});
}

}  // namespace tgr
