// Helpers for tests: build and evaluate a graph from its text form.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/text.h"
#include "runtime/interpreter.h"

namespace tgr::test {

// Evaluates a one-output expression on the given named inputs.
template <class T>
Tensor<T> eval(const std::string& text, const std::map<std::string, Tensor<T>>& inputs) {
  ShapeMap shapes;
  for (const auto& [name, t] : inputs) shapes[name] = t.shape;
  const Graph g = build_graph(text, shapes);
  return evaluate<T>(g, inputs).at(0);
}

inline Tensor<double> T64(Shape shape, std::vector<double> values) { return Tensor<double>(std::move(shape), std::move(values)); }

// 1, 2, 3, ... in row-major order.
inline Tensor<double> iota(Shape shape, double start = 1) {
  Tensor<double> t(std::move(shape));
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = start + static_cast<double>(i);
  return t;
}

template <class T>
void expect_tensor(const Tensor<T>& actual, const Shape& shape, const std::vector<double>& expected, double tol = 1e-9) {
  ASSERT_EQ(actual.shape, shape) << "shape " << shape_to_string(actual.shape);
  ASSERT_EQ(actual.data.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(static_cast<double>(actual.data[i]), expected[i], tol) << "at flat index " << i;
}

// Values of any element type for mixed-type graphs: a float tensor, or the
// int64 / bool tensors that live in Value<T>::ints.
template <class T = double>
Value<T> Floats(Shape shape, std::vector<double> values) {
  Tensor<double> t(std::move(shape), std::move(values));
  if constexpr (std::is_same_v<T, double>) return Value<T>(std::move(t));
  else return Value<T>(convert<T>(t));  // the field: integers only
}
template <class T = double>
Value<T> I64(Shape shape, std::vector<int64_t> values) {
  return Value<T>(DType::kInt64, Tensor<int64_t>(std::move(shape), std::move(values)));
}
template <class T = double>
Value<T> Bool(Shape shape, std::vector<int64_t> values) {
  return Value<T>(DType::kBool, Tensor<int64_t>(std::move(shape), std::move(values)));
}

// Evaluates a one-output expression on named inputs of any element types
// (int64 and bool inputs are declared with their type).
template <class T>
Value<T> eval_values(const std::string& text, const std::map<std::string, Value<T>>& inputs) {
  ShapeMap shapes;
  DTypeMap dtypes;
  for (const auto& [name, v] : inputs) {
    shapes[name] = v.shape();
    if (!v.is_float()) dtypes[name] = v.dtype;
  }
  const Graph g = build_graph(text, shapes, dtypes);
  std::vector<Value<T>> ordered;
  for (int32_t i : g.inputs()) ordered.push_back(inputs.at(g.node(i).name));
  return evaluate_values<T>(g, std::span<const Value<T>>(ordered)).at(0);
}

// Expects an int64 or bool value of the given shape and elements.
template <class T>
void expect_ints(const Value<T>& actual, DType dtype, const Shape& shape, const std::vector<int64_t>& expected) {
  ASSERT_EQ(actual.dtype, dtype) << "element type " << dtype_name(actual.dtype);
  ASSERT_EQ(actual.ints.shape, shape) << "shape " << shape_to_string(actual.ints.shape);
  EXPECT_EQ(actual.ints.data, expected);
}

// Expects a float value of the given shape and elements.
template <class T>
void expect_floats(const Value<T>& actual, const Shape& shape, const std::vector<double>& expected, double tol = 1e-9) {
  ASSERT_EQ(actual.dtype, DType::kFloat) << "element type " << dtype_name(actual.dtype);
  expect_tensor(actual.real, shape, expected, tol);
}

// Expects `body` to throw E with a message containing `fragment`.
template <class E, class F>
void expect_error(F body, const std::string& fragment) {
  try {
    body();
    ADD_FAILURE() << "expected an error containing '" << fragment << "'";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << "message was: " << e.what();
  }
}

}  // namespace tgr::test
