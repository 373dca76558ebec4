// Dense row-major tensors, element types, and the values the interpreter
// passes between operators.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/field.h"
#include "ir/shape.h"

namespace tgr {

template <class T>
struct Tensor {
  Shape shape;
  std::vector<T> data;

  Tensor() = default;
  explicit Tensor(Shape s) : shape(std::move(s)), data(static_cast<size_t>(num_elements(shape))) {}
  Tensor(Shape s, std::vector<T> values) : shape(std::move(s)), data(std::move(values)) {
    if (static_cast<int64_t>(data.size()) != num_elements(shape))
      throw ShapeError("tensor of shape " + shape_to_string(shape) + " given " +
                       std::to_string(data.size()) + " values");
  }

  int64_t size() const { return static_cast<int64_t>(data.size()); }
  int rank() const { return static_cast<int>(shape.size()); }
};

// The three domains every operator is defined over.
template <class T>
inline constexpr bool kIsField = std::is_same_v<T, Fp>;

// A real number in domain T: itself in float32/float64, field_from_real in
// the field (parameters such as epsilon or a pad value, stored constants).
template <class T>
T from_real(double v) {
  if constexpr (kIsField<T>) return field_from_real(v);
  else return static_cast<T>(v);
}

// Element type of a value in the graph. kFloat is float32; kFloat16 (IEEE
// binary16) and kBFloat16 (bfloat16) are the half types. Floating values are
// computed in the domain of the evaluation (float32, float64 or the field);
// kInt64 and kBool values (indices, masks) are exact integers in every
// domain, bools 0 or 1.
enum class DType : uint8_t { kFloat, kInt64, kBool, kFloat16, kBFloat16 };

// kFloat, kFloat16 or kBFloat16: a value held as reals, not integers.
constexpr bool is_floating(DType t) { return t == DType::kFloat || t == DType::kFloat16 || t == DType::kBFloat16; }

std::string_view dtype_name(DType t);      // "float", "int64", "bool", "float16", "bfloat16"
DType parse_dtype(std::string_view name);  // throws ShapeError

// One value: a domain tensor for the floating types, an integer tensor otherwise.
template <class T>
struct Value {
  DType dtype = DType::kFloat;
  Tensor<T> real;
  Tensor<int64_t> ints;

  Value() = default;
  explicit Value(Tensor<T> t) : real(std::move(t)) {}
  Value(DType type, Tensor<int64_t> t) : dtype(type), ints(std::move(t)) {}

  bool is_float() const { return is_floating(dtype); }
  const Shape& shape() const { return is_float() ? real.shape : ints.shape; }
};

// Constants in a graph (initializers, folded values) keep float32 data; a
// float16 or bfloat16 constant holds float32 numbers that are exactly its
// type's (ir/float_types.h), so it is written back bit for bit.
using ConstantValue = Value<float>;

}  // namespace tgr
