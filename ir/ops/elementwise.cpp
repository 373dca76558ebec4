// Elementwise operators with NumPy/ONNX broadcasting (add, sub, mul, div,
// pow), scalar_mul, and the unary operators. Those whose results overflow a
// half type's range for moderate inputs (exp, pow, softplus) or lose its
// precision near 0 (log) need float32 (OpTraits::needs_float32). Non-linear unary operators are
// a fixed pseudo-random function in the field (ops::unary_kernel).
#include <cmath>
#include <limits>
#include <stdexcept>

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

// --- binary -----------------------------------------------------------------

template <class T>
void add_kernel(const OpCall&, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  map_broadcast(*in[0], *in[1], out[0], [](T a, T b) { return a + b; });
}

template <class T>
void sub_kernel(const OpCall&, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  map_broadcast(*in[0], *in[1], out[0], [](T a, T b) { return a - b; });
}

template <class T>
void mul_kernel(const OpCall&, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  map_broadcast(*in[0], *in[1], out[0], [](T a, T b) { return a * b; });
}

// Floats: IEEE division. Integers: truncation toward zero. Field: times the inverse.
template <class T>
void div_kernel(const OpCall&, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  if constexpr (std::is_integral_v<T>) {
    for (T b : in[1]->data)
      if (b == 0) throw std::domain_error("div: integer division by zero");
    const bool min_present = std::find(in[0]->data.begin(), in[0]->data.end(), std::numeric_limits<T>::min()) != in[0]->data.end();
    if (min_present && std::find(in[1]->data.begin(), in[1]->data.end(), T(-1)) != in[1]->data.end())
      throw std::domain_error("div: integer overflow (the smallest int64 divided by -1)");
  }
  map_broadcast(*in[0], *in[1], out[0], [](T a, T b) { return a / b; });
}

template <class T>
void pow_kernel(const OpCall& call, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  if constexpr (kIsField<T>) {
    const uint64_t salt = call_salt(call), inner = salt ^ 0x51ed270b27a1f3c5ULL;
    map_broadcast(*in[0], *in[1], out[0],
                  [=](T a, T b) { return field_random_function(salt, field_random_function(inner, a) + b); });
  } else {
    map_broadcast(*in[0], *in[1], out[0], [](T a, T b) { return static_cast<T>(std::pow(a, b)); });
  }
}

template <class T>
void scalar_mul_kernel(const OpCall&, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  const T s = in[1]->data[0];
  map_elements(*in[0], out[0], [s](T x) { return x * s; });
}

// --- unary ------------------------------------------------------------------

template <class T>
void neg_kernel(const OpCall&, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  map_elements(*in[0], out[0], [](T x) { return -x; });
}

template <class T>
void relu_kernel(const OpCall&, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  map_elements(*in[0], out[0], [](T x) { return relu_value(x); });
}

// A non-linear unary operator: `expr` of x (and parameters p) on real
// numbers and integers, the pseudo-random function in the field.
#define TGR_UNARY(name, expr)                                                                              \
  template <class T>                                                                                       \
  void name##_kernel(const OpCall& call, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) { \
    if constexpr (kIsField<T>) {                                                                           \
      field_unary(call, *in[0], out[0]);                                                                   \
    } else {                                                                                               \
      [[maybe_unused]] const Params& p = call.params;                                                      \
      map_elements(*in[0], out[0], [&](T x) -> T { return expr; });                                        \
    }                                                                                                      \
  }

TGR_UNARY(abs, x < T(0) ? -x : x)
TGR_UNARY(sigmoid, T(1) / (T(1) + std::exp(-x)))
TGR_UNARY(tanh, std::tanh(x))
TGR_UNARY(sqrt, std::sqrt(x))
TGR_UNARY(exp, std::exp(x))
TGR_UNARY(log, std::log(x))
TGR_UNARY(erf, std::erf(x))
TGR_UNARY(cos, std::cos(x))
TGR_UNARY(sin, std::sin(x))
TGR_UNARY(leaky_relu, x >= T(0) ? x : static_cast<T>(p.get_float("alpha")) * x)
TGR_UNARY(hard_sigmoid, std::max(T(0), std::min(T(1), static_cast<T>(p.get_float("alpha")) * x +
                                                          static_cast<T>(p.get_float("beta")))))
TGR_UNARY(hard_swish, x * std::max(T(0), std::min(T(1), x / T(6) + T(0.5))))
TGR_UNARY(clip, std::min(std::max(x, static_cast<T>(p.get_float("min"))), static_cast<T>(p.get_float("max"))))
// log(1 + e^x) without overflow: x + log1p(e^-x) for x > 0 (ONNX Runtime's form).
TGR_UNARY(softplus, x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)))
TGR_UNARY(floor, std::floor(x))
TGR_UNARY(ceil, std::ceil(x))
#undef TGR_UNARY

OpDef unary(std::string name, std::string summary, KernelSet kernels, std::vector<ParamSpec> params = {}) {
  OpDef def{.name = std::move(name),
            .summary = std::move(summary),
            .inputs = {"x"},
            .params = std::move(params),
            .infer_shapes = same_as_first_input,
            .kernels = kernels,
            .field = FieldSemantics::kPseudoRandom,
            .multilinear = {false},
            .traits = elementwise_traits(),
            .cost = per_output_element_cost()};
  return def;
}

OpDef needing_float32(OpDef def) {
  def.traits.needs_float32 = true;
  return def;
}

OpDef binary(std::string name, std::string summary, KernelSet kernels, std::vector<bool> multilinear,
             FieldSemantics field = FieldSemantics::kExact, bool commutative = false) {
  return OpDef{.name = std::move(name),
               .summary = std::move(summary),
               .inputs = {"a", "b"},
               .infer_shapes = broadcast_inference,
               .kernels = kernels,
               .field = field,
               .multilinear = std::move(multilinear),
               .commutative = commutative,
               .traits = elementwise_traits(),
               .cost = per_output_element_cost()};
}

}  // namespace
}  // namespace ops

void register_elementwise_ops(OpTable& table) {
  using namespace ops;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  table.add(binary("add", "a + b, elementwise with broadcasting", TGR_KERNELS_AND_INT64(add_kernel), {true, true},
                   FieldSemantics::kExact, true));
  table.add(binary("sub", "a - b, elementwise with broadcasting", TGR_KERNELS_AND_INT64(sub_kernel), {true, true}));
  table.add(binary("mul", "a * b, elementwise with broadcasting", TGR_KERNELS_AND_INT64(mul_kernel), {true, true},
                   FieldSemantics::kExact, true));
  table.add(binary("div", "a / b, elementwise with broadcasting (integers truncate)", TGR_KERNELS_AND_INT64(div_kernel),
                   {true, false}, FieldSemantics::kInverse));
  table.add(needing_float32(binary("pow", "a ^ b, elementwise with broadcasting", TGR_KERNELS(pow_kernel),
                                   {false, false}, FieldSemantics::kPseudoRandom)));
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
             .multilinear = {true, true},
             .traits = elementwise_traits(),
             .cost = per_output_element_cost()});
  OpDef neg = unary("neg", "-x", TGR_KERNELS_AND_INT64(neg_kernel));
  neg.field = FieldSemantics::kExact;
  neg.multilinear = {true};
  table.add(std::move(neg));
  table.add(unary("relu", "max(x, 0)", TGR_KERNELS(relu_kernel)));
  table.add(unary("sigmoid", "1 / (1 + exp(-x))", TGR_KERNELS(sigmoid_kernel)));
  table.add(unary("tanh", "tanh(x)", TGR_KERNELS(tanh_kernel)));
  table.add(unary("abs", "|x|", TGR_KERNELS_AND_INT64(abs_kernel)));
  table.add(unary("sqrt", "square root", TGR_KERNELS(sqrt_kernel)));
  table.add(needing_float32(unary("exp", "e^x", TGR_KERNELS(exp_kernel))));
  table.add(needing_float32(unary("log", "natural logarithm", TGR_KERNELS(log_kernel))));
  table.add(unary("erf", "the error function", TGR_KERNELS(erf_kernel)));
  table.add(unary("cos", "cosine (radians)", TGR_KERNELS(cos_kernel)));
  table.add(unary("sin", "sine (radians)", TGR_KERNELS(sin_kernel)));
  table.add(unary("leaky_relu", "x if x >= 0, else alpha * x", TGR_KERNELS(leaky_relu_kernel),
                  {float_param("alpha", 0.01, -kInf, kInf, "slope for x < 0")}));
  table.add(unary("hard_sigmoid", "max(0, min(1, alpha * x + beta))", TGR_KERNELS(hard_sigmoid_kernel),
                  {float_param("alpha", 0.2, -kInf, kInf, "slope"), float_param("beta", 0.5, -kInf, kInf, "offset")}));
  table.add(unary("hard_swish", "x * max(0, min(1, x / 6 + 1 / 2))", TGR_KERNELS(hard_swish_kernel)));
  table.add(needing_float32(unary("softplus", "log(1 + e^x)", TGR_KERNELS(softplus_kernel))));
  table.add(unary("floor", "the largest integer <= x", TGR_KERNELS(floor_kernel)));
  table.add(unary("ceil", "the smallest integer >= x", TGR_KERNELS(ceil_kernel)));
  table.add(unary("clip", "min(max(x, min), max)", TGR_KERNELS(clip_kernel),
                  {float_param("min", -kInf, -kInf, kInf, "lower bound"),
                   float_param("max", kInf, -kInf, kInf, "upper bound")}));
}

}  // namespace tgr
