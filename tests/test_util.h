// Helpers for tests: build and evaluate a graph from its text form.
#pragma once

#include <gtest/gtest.h>

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
