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

// Values for the graph's inputs, in declaration order (Graph::inputs()).
// Raises std::invalid_argument when a count or shape does not match.
template <class T>
std::vector<Tensor<T>> evaluate(const Graph& graph, std::span<const Tensor<T>> inputs);

// Inputs by variable name.
template <class T>
std::vector<Tensor<T>> evaluate(const Graph& graph, const std::map<std::string, Tensor<T>>& inputs);

// Independent random values: floats uniform in [-1, 1), field elements
// uniform in F_p. Deterministic for a seed.
template <class T>
Tensor<T> random_tensor(const Shape& shape, uint64_t seed);
template <class T>
std::vector<Tensor<T>> random_inputs(const Graph& graph, uint64_t seed);

// Converts between domains (integers map to their field residues).
template <class To, class From>
Tensor<To> convert(const Tensor<From>& t);

}  // namespace tgr
