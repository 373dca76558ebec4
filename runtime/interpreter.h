// The CPU reference interpreter: evaluates any graph in float32, float64 or
// the prime field, using the kernels of the operator table. It is the ground
// truth for tests; intermediates are freed after their last use.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace tgr {

// Values for the graph's inputs, in declaration order (Graph::inputs()), of
// any element types. Raises std::invalid_argument when a count, type or
// shape does not match, and UndefinedSemantics when an operator has no
// semantics in the domain (comparisons in the field).
template <class T>
std::vector<Value<T>> evaluate_values(const Graph& graph, std::span<const Value<T>> inputs);

// For graphs whose inputs and outputs are all kFloat.
template <class T>
std::vector<Tensor<T>> evaluate(const Graph& graph, std::span<const Tensor<T>> inputs);
template <class T>
std::vector<Tensor<T>> evaluate(const Graph& graph, const std::map<std::string, Tensor<T>>& inputs);

// A stored constant in domain T (float32 data; in the field via field_from_real).
template <class T>
Value<T> constant_in_domain(const ConstantValue& c);

// Independent random values: floats uniform in [-1, 1), field elements
// uniform in F_p. Deterministic for a seed.
template <class T>
Tensor<T> random_tensor(const Shape& shape, uint64_t seed);
template <class T>
std::vector<Tensor<T>> random_inputs(const Graph& graph, uint64_t seed);
// random_tensor<float>'s values rounded to floating type `dtype`, as a constant of that type.
ConstantValue random_constant(DType dtype, const Shape& shape, uint64_t seed);

// Converts between domains (integers map to their field residues).
template <class To, class From>
Tensor<To> convert(const Tensor<From>& t);

}  // namespace tgr
