// The meaning of an operator as a tensor-algebra expression (after EinNet,
// OSDI'23): traversal iterators (the output's axes), summation iterators,
// and a body that is a sum of products of input elements, each input
// indexed by expressions of the iterators. An index outside an input's
// shape reads zero (padding; the pieces of a concatenation).
//
//   matmul:  L_{i,j} Σ_k A[i,k]·B[k,j]
//   conv2d:  L_{n,o,h,w} Σ_{c,r,s} X[n, (o / Og)·Cg + c, h·sh + r·dh − pt, w·sw + s·dw − pl]·W[o,c,r,s]
//   reshape: L_{o...} X[(p / stride_j) mod dim_j ...] with p the flat offset of o
//
// Built by the operator table's expression hooks (expression_hooks below,
// ir/ops/expressions.cpp) for given parameters and input shapes; evaluated
// directly here (the tests compare it with the
// interpreter); rewritten by the derivation rules of generator/derivation.h.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ir/params.h"
#include "ir/shape.h"
#include "ir/tensor.h"

namespace tgr {
struct OpCall;
struct OpDef;
}  // namespace tgr

namespace tgr::expr {

struct Iterator {
  std::string name;
  int64_t range = 1;  // values 0 .. range-1
  friend bool operator==(const Iterator&, const Iterator&) = default;
};

// scale · (((Σ coef·iterator) + inner) floordiv div) mod mod; mod 0: none.
// A term with div 1 and mod 0 is affine.
struct IndexTerm {
  std::vector<std::pair<int, int64_t>> coefs;  // (iterator id, coefficient), ids ascending, no zero coefficient
  int64_t inner = 0, div = 1, mod = 0, scale = 1;
  bool affine() const { return div == 1 && mod == 0; }
  friend bool operator==(const IndexTerm&, const IndexTerm&) = default;
};

// One index component: a sum of terms plus an offset.
struct Index {
  std::vector<IndexTerm> terms;
  int64_t offset = 0;
  friend bool operator==(const Index&, const Index&) = default;
};

// An input element: input `tensor` (position among the expression's inputs)
// at one index per axis.
struct Access {
  int tensor = 0;
  std::vector<Index> index;
  friend bool operator==(const Access&, const Access&) = default;
};

struct Term {
  std::vector<Access> factors;  // their product
  friend bool operator==(const Term&, const Term&) = default;
};

struct TensorExpr {
  std::vector<Iterator> iterators;  // the traversal iterators (output axes, in order), then the summation ones
  int num_out = 0;
  std::vector<Shape> inputs;  // shapes of the inputs the accesses read
  std::vector<Term> terms;    // the body: Σ_terms Π_factors
  // An elementwise operator of one input and no parameters applied to the
  // sum (relu, erf, sigmoid, ...; conv2d's fused relu), or null.
  const OpDef* unary = nullptr;

  Shape output_shape() const;
  bool is_summation(int iterator) const { return iterator >= num_out; }
  friend bool operator==(const TensorExpr&, const TensorExpr&) = default;
};

// Builders of the common index forms.
Index iter_index(int iterator, int64_t coef = 1, int64_t offset = 0);  // coef·iterator + offset
Index const_index(int64_t value);
// Index components that read `shape` with the traversal iterators 0.. of a
// `out_rank`-axis output under numpy broadcasting (trailing axes aligned;
// an axis of 1 reads 0).
std::vector<Index> broadcast_index(const Shape& shape, const Shape& out);

// The value of one index component at iterator values `at`.
int64_t evaluate_index(const Index& index, const std::vector<int64_t>& at);

// Evaluates the expression on `inputs` (their shapes must equal `inputs`):
// the reference meaning, independent of the operator kernels.
Tensor<double> evaluate(const TensorExpr& e, const std::vector<const Tensor<double>*>& inputs);

// "L_{n:1,o:3,...} Σ_{c:4,...} X0[n, o/3*2+c, ...]·X1[...]" (one line; for
// reports, tests and pruning by text).
std::string to_string(const TensorExpr& e);

// What OpDef::expression_instances is asked: the iterator ranges of an
// expression that an operator might compute, and the shapes of the tensors
// that expression reads (for sizes the ranges leave open, as a
// convolution's padded input). `like` gives parameters to try first (those
// of the operator a derivation started from), or null.
struct InstanceQuery {
  Shape out_ranges, sum_ranges;
  std::vector<Shape> read_shapes;
  const Params* like = nullptr;
};
// An operator application that may have given ranges: parameters and input shapes.
struct Instance {
  Params params;
  std::vector<Shape> inputs;
};

// The table's expression entries, one per operator that has one, beside
// its kernels (keyed by the OpDef of ir/op_def.h).
struct ExpressionHooks {
  // The expression of output `output` of a call whose output shapes are inferred.
  std::function<TensorExpr(const OpCall& call, int output)> expression;
  // For kernel matching (generator/derivation_match.h): the applications of
  // the operator whose expression has the queried iterator ranges; null for
  // operators not matched as computing kernels (layout operators are matched
  // by their index maps instead).
  std::function<std::vector<Instance>(const InstanceQuery& query)> instances;
};
// Null for an operator without an expression.
const ExpressionHooks* expression_hooks(const OpDef& op);

// Position of `a`'s element in a row-major tensor of `shape` at iterator
// values `at`, or -1 when the index falls outside it (the element reads 0).
int64_t element_position(const Access& a, const Shape& shape, const std::vector<int64_t>& at);

}  // namespace tgr::expr
