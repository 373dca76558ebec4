// Operators over mixed element types: comparisons (-> bool), is_nan,
// logical_not, cast, and where (select by a bool mask). Comparisons of
// field elements have no semantics (the field has no order); integer and
// bool values are exact in every domain, so those comparisons are defined.
#include <cmath>
#include <limits>
#include <stdexcept>

#include "ir/ops/families.h"
#include "ir/ops/op_helpers.h"

namespace tgr {
namespace {

std::string type_name(DType t) { return std::string(dtype_name(t)); }

std::vector<DType> comparison_dtypes(const OpCall& call) {
  const DType a = call.input_dtypes[0], b = call.input_dtypes[1];
  if (a != b)
    throw ShapeError(call.op.name + ": both inputs must have one element type, got " + type_name(a) + " and " + type_name(b));
  if (a == DType::kBool && call.op.name != "equal")
    throw ShapeError(call.op.name + ": bool values have no order");
  return {DType::kBool};
}

template <class T, class Cmp>
void compare(const OpCall& call, std::span<const Value<T>* const> in, std::span<Value<T>> out, Cmp cmp) {
  const Value<T>& a = *in[0];
  const Value<T>& b = *in[1];
  if (!a.is_float()) {
    ops::map_broadcast(a.ints, b.ints, out[0].ints, [&](int64_t x, int64_t y) -> int64_t { return cmp(x, y); });
  } else if constexpr (kIsField<T>) {
    throw UndefinedSemantics(call.op.name + ": comparing field elements has no meaning (the field has no order)");
  } else {
    ops::map_broadcast(a.real, b.real, out[0].ints, [&](T x, T y) -> int64_t { return cmp(x, y); });
  }
}

#define TGR_COMPARISON(name, op)                                                                              \
  template <class T>                                                                                          \
  void name##_kernel(const OpCall& call, std::span<const Value<T>* const> in, std::span<Value<T>> out) {       \
    compare(call, in, out, [](auto x, auto y) { return x op y; });                                            \
  }
TGR_COMPARISON(equal, ==)
TGR_COMPARISON(less, <)
TGR_COMPARISON(greater, >)
TGR_COMPARISON(less_equal, <=)
TGR_COMPARISON(greater_equal, >=)
#undef TGR_COMPARISON

OpDef comparison(std::string name, std::string summary, MixedKernelSet kernels) {
  return OpDef{.name = std::move(name),
               .summary = std::move(summary),
               .inputs = {"a", "b"},
               .infer_shapes =
                   [](const OpCall& call) {
                     return std::vector<Shape>{ops::broadcast_shapes(call.op.name, call.input_shapes[0], call.input_shapes[1])};
                   },
               .infer_dtypes = comparison_dtypes,
               .mixed_kernels = kernels,
               .field = FieldSemantics::kUndefined,
               .multilinear = {false, false},
               .traits = ops::elementwise_traits(),
               .cost = ops::per_output_element_cost()};
}

// No field element is NaN.
template <class T>
void is_nan_kernel(const OpCall&, std::span<const Value<T>* const> in, std::span<Value<T>> out) {
  const auto& x = in[0]->real.data;
  auto& o = out[0].ints.data;
  for (size_t i = 0; i < x.size(); ++i) {
    if constexpr (kIsField<T>) o[i] = 0;
    else o[i] = std::isnan(x[i]) ? 1 : 0;
  }
}

template <class T>
void logical_not_kernel(const OpCall&, std::span<const Value<T>* const> in, std::span<Value<T>> out) {
  const auto& x = in[0]->ints.data;
  auto& o = out[0].ints.data;
  for (size_t i = 0; i < x.size(); ++i) o[i] = x[i] ? 0 : 1;
}

// Float to integer truncates toward zero (as C and ONNX Runtime); to bool is
// "not zero". A float that does not fit int64 is an error, not a wrap.
template <class T>
void cast_kernel(const OpCall& call, std::span<const Value<T>* const> in, std::span<Value<T>> out) {
  const Value<T>& x = *in[0];
  Value<T>& o = out[0];
  if (x.is_float() && o.is_float()) {
    o.real = x.real;
  } else if (!x.is_float() && o.is_float()) {
    for (size_t i = 0; i < x.ints.data.size(); ++i) {
      if constexpr (kIsField<T>) o.real.data[i] = Fp(x.ints.data[i]);
      else o.real.data[i] = static_cast<T>(x.ints.data[i]);
    }
  } else if (!x.is_float()) {
    const bool to_bool = o.dtype == DType::kBool;
    for (size_t i = 0; i < x.ints.data.size(); ++i) o.ints.data[i] = to_bool ? (x.ints.data[i] != 0) : x.ints.data[i];
  } else if constexpr (kIsField<T>) {
    throw UndefinedSemantics(call.op.name + ": a field element has no integer or truth value");
  } else {
    const bool to_bool = o.dtype == DType::kBool;
    for (size_t i = 0; i < x.real.data.size(); ++i) {
      const T v = x.real.data[i];
      if (to_bool) {
        o.ints.data[i] = v != T(0);
      } else {
        // [-2^63, 2^63): both bounds are exact in float and double.
        if (!(v >= T(-9223372036854775808.0) && v < T(9223372036854775808.0)))
          throw std::domain_error("cast: " + std::to_string(v) + " does not fit int64");
        o.ints.data[i] = static_cast<int64_t>(v);
      }
    }
  }
}

template <class T>
void where_kernel(const OpCall&, std::span<const Value<T>* const> in, std::span<Value<T>> out) {
  const Tensor<int64_t>& cond = in[0]->ints;
  const Value<T>& x = *in[1];
  const Value<T>& y = *in[2];
  Value<T>& o = out[0];
  const std::array<const Shape*, 3> shapes{&cond.shape, &x.shape(), &y.shape()};
  if (o.is_float())
    ops::for_each_broadcast<3>(o.real.shape, shapes, [&](int64_t i, const std::array<int64_t, 3>& at) {
      o.real.data[i] = cond.data[at[0]] ? x.real.data[at[1]] : y.real.data[at[2]];
    });
  else
    ops::for_each_broadcast<3>(o.ints.shape, shapes, [&](int64_t i, const std::array<int64_t, 3>& at) {
      o.ints.data[i] = cond.data[at[0]] ? x.ints.data[at[1]] : y.ints.data[at[2]];
    });
}

}  // namespace

void register_comparison_ops(OpTable& table) {
  using namespace ops;
  table.add(comparison("equal", "a == b -> bool, with broadcasting", TGR_MIXED_KERNELS(equal_kernel)));
  table.add(comparison("less", "a < b -> bool, with broadcasting", TGR_MIXED_KERNELS(less_kernel)));
  table.add(comparison("greater", "a > b -> bool, with broadcasting", TGR_MIXED_KERNELS(greater_kernel)));
  table.add(comparison("less_equal", "a <= b -> bool, with broadcasting", TGR_MIXED_KERNELS(less_equal_kernel)));
  table.add(comparison("greater_equal", "a >= b -> bool, with broadcasting", TGR_MIXED_KERNELS(greater_equal_kernel)));
  table.add({.name = "is_nan",
             .summary = "x is NaN -> bool (never, in the field)",
             .inputs = {"x"},
             .infer_shapes = [](const OpCall& call) { return std::vector<Shape>{call.input_shapes[0]}; },
             .infer_dtypes =
                 [](const OpCall& call) {
                   if (!is_floating(call.input_dtypes[0]))
                     throw ShapeError("is_nan: defined on float values, got " + type_name(call.input_dtypes[0]));
                   return std::vector<DType>{DType::kBool};
                 },
             .mixed_kernels = TGR_MIXED_KERNELS(is_nan_kernel),
             .multilinear = {false},
             .traits = elementwise_traits(),
             .cost = per_output_element_cost()});
  table.add({.name = "logical_not",
             .summary = "not x, for bool x",
             .inputs = {"x"},
             .infer_shapes = [](const OpCall& call) { return std::vector<Shape>{call.input_shapes[0]}; },
             .infer_dtypes =
                 [](const OpCall& call) {
                   if (call.input_dtypes[0] != DType::kBool)
                     throw ShapeError("logical_not: defined on bool values, got " + type_name(call.input_dtypes[0]));
                   return std::vector<DType>{DType::kBool};
                 },
             .mixed_kernels = TGR_MIXED_KERNELS(logical_not_kernel),
             .multilinear = {false},
             .traits = elementwise_traits(),
             .cost = per_output_element_cost()});
  table.add(
      {.name = "cast",
       .summary = "convert to another element type (float to int64 truncates; to a half type rounds to nearest even)",
       .inputs = {"x"},
       .params = {enum_param("to", "float", {"float", "int64", "bool", "float16", "bfloat16"}, "target element type")},
       .infer_shapes = [](const OpCall& call) { return std::vector<Shape>{call.input_shapes[0]}; },
       .infer_dtypes = [](const OpCall& call) { return std::vector<DType>{parse_dtype(call.params.get_word("to"))}; },
       .mixed_kernels = TGR_MIXED_KERNELS(cast_kernel),
       .field = FieldSemantics::kExact,  // integers to field; field to integers is undefined
       .multilinear = {false},
       .traits = elementwise_traits(),
       // Read in the input's type, written in the target's.
       .cost = {.flops = output_elements, .bytes = [](const OpCall& call) {
                  const double n = static_cast<double>(num_elements(call.input_shapes[0]));
                  return n * (cost_element_bytes(call.input_dtypes[0]) +
                              cost_element_bytes(parse_dtype(call.params.get_word("to"))));
                }}});
  table.add({.name = "where",
             .summary = "cond ? x : y, elementwise with broadcasting (cond is bool)",
             .inputs = {"cond", "x", "y"},
             .infer_shapes =
                 [](const OpCall& call) {
                   const Shape xy = broadcast_shapes("where", call.input_shapes[1], call.input_shapes[2]);
                   return std::vector<Shape>{broadcast_shapes("where", call.input_shapes[0], xy)};
                 },
             .infer_dtypes =
                 [](const OpCall& call) {
                   if (call.input_dtypes[0] != DType::kBool)
                     throw ShapeError("where: cond must be bool, got " + type_name(call.input_dtypes[0]));
                   if (call.input_dtypes[1] != call.input_dtypes[2])
                     throw ShapeError("where: x and y must have one element type, got " + type_name(call.input_dtypes[1]) +
                                      " and " + type_name(call.input_dtypes[2]));
                   return std::vector<DType>{call.input_dtypes[1]};
                 },
             .mixed_kernels = TGR_MIXED_KERNELS(where_kernel),
             .multilinear = {false, true, true},
             .traits = elementwise_traits(),
             .cost = per_output_element_cost()});
}

}  // namespace tgr
