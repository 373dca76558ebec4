// Elementwise operators: add, mul (with NumPy/ONNX broadcasting), scalar_mul,
// and the non-linear activations relu, sigmoid, tanh.
#include <cmath>

#include "ir/ops/families.h"
#include "ir/ops/op_helpers.h"

namespace tgr {
namespace ops {

Shape broadcast_shapes(std::string_view op, const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      throw ShapeError(std::string(op) + ": shapes " + shape_to_string(a) + " and " + shape_to_string(b) +
                       " do not broadcast (axis " + std::to_string(i) + ": " + std::to_string(da) +
                       " vs " + std::to_string(db) + ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

namespace {

std::vector<Shape> broadcast_inference(const OpCall& call) {
  return {broadcast_shapes(call.op.name, call.input_shapes[0], call.input_shapes[1])};
}

std::vector<Shape> same_as_first_input(const OpCall& call) { return {call.input_shapes[0]}; }

template <class T>
void add_kernel(const OpCall&, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  map_broadcast(*in[0], *in[1], out[0], [](T a, T b) { return a + b; });
}

template <class T>
void mul_kernel(const OpCall&, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  map_broadcast(*in[0], *in[1], out[0], [](T a, T b) { return a * b; });
}

template <class T>
void scalar_mul_kernel(const OpCall&, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  const T s = in[1]->data[0];
  map_elements(*in[0], out[0], [s](T x) { return x * s; });
}

template <class T>
void relu_kernel(const OpCall&, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  map_elements(*in[0], out[0], [](T x) { return relu_value(x); });
}

template <class T>
void sigmoid_kernel(const OpCall&, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  if constexpr (kIsField<T>) {
    static const uint64_t salt = field_salt("sigmoid");
    map_elements(*in[0], out[0], [](T x) { return field_random_function(salt, x); });
  } else {
    map_elements(*in[0], out[0], [](T x) { return T(1) / (T(1) + std::exp(-x)); });
  }
}

template <class T>
void tanh_kernel(const OpCall&, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  if constexpr (kIsField<T>) {
    static const uint64_t salt = field_salt("tanh");
    map_elements(*in[0], out[0], [](T x) { return field_random_function(salt, x); });
  } else {
    map_elements(*in[0], out[0], [](T x) { return std::tanh(x); });
  }
}

OpDef unary_activation(std::string name, std::string summary, KernelSet kernels) {
  return OpDef{.name = std::move(name),
               .summary = std::move(summary),
               .inputs = {"x"},
               .infer_shapes = same_as_first_input,
               .kernels = kernels,
               .field = FieldSemantics::kPseudoRandom,
               .multilinear = {false}};
}

}  // namespace
}  // namespace ops

void register_elementwise_ops(OpTable& table) {
  using namespace ops;
  table.add({.name = "add",
             .summary = "a + b, elementwise with broadcasting",
             .inputs = {"a", "b"},
             .infer_shapes = broadcast_inference,
             .kernels = TGR_KERNELS_AND_INT64(add_kernel),
             .multilinear = {true, true},
             .commutative = true});
  table.add({.name = "mul",
             .summary = "a * b, elementwise with broadcasting",
             .inputs = {"a", "b"},
             .infer_shapes = broadcast_inference,
             .kernels = TGR_KERNELS_AND_INT64(mul_kernel),
             .multilinear = {true, true},
             .commutative = true});
  table.add({.name = "scalar_mul",
             .summary = "x * s for a scalar (rank-0) s",
             .inputs = {"x", "s"},
             .infer_shapes =
                 [](const OpCall& call) {
                   if (!call.input_shapes[1].empty())
                     throw ShapeError("scalar_mul: s must be a scalar, got " +
                                      shape_to_string(call.input_shapes[1]));
                   return std::vector<Shape>{call.input_shapes[0]};
                 },
             .kernels = TGR_KERNELS(scalar_mul_kernel),
             .multilinear = {true, true}});
  table.add(unary_activation("relu", "max(x, 0)", TGR_KERNELS(relu_kernel)));
  table.add(unary_activation("sigmoid", "1 / (1 + exp(-x))", TGR_KERNELS(sigmoid_kernel)));
  table.add(unary_activation("tanh", "tanh(x)", TGR_KERNELS(tanh_kernel)));
}

}  // namespace tgr
