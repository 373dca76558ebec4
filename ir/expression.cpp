#include "ir/expression.h"

#include "ir/op_def.h"
#include "util/strings.h"

#include <stdexcept>
#include <string_view>

namespace tgr::expr {

namespace {
using util::cat;
}  // namespace

Shape TensorExpr::output_shape() const {
  Shape s;
  for (int i = 0; i < num_out; ++i) s.push_back(iterators[static_cast<size_t>(i)].range);
  return s;
}

Index iter_index(int iterator, int64_t coef, int64_t offset) {
  Index idx;
  if (coef != 0) idx.terms.push_back(IndexTerm{.coefs = {{iterator, coef}}});
  idx.offset = offset;
  return idx;
}

Index const_index(int64_t value) { return Index{.terms = {}, .offset = value}; }

std::vector<Index> broadcast_index(const Shape& shape, const Shape& out) {
  std::vector<Index> idx;
  const size_t lead = out.size() - shape.size();
  for (size_t a = 0; a < shape.size(); ++a)
    idx.push_back(shape[a] == 1 && out[a + lead] != 1 ? const_index(0) : iter_index(static_cast<int>(a + lead)));
  return idx;
}

namespace {

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0); }

int64_t floor_mod(int64_t a, int64_t m) {
  const int64_t r = a % m;
  return r < 0 ? r + m : r;
}

}  // namespace

int64_t element_position(const Access& a, const Shape& shape, const std::vector<int64_t>& at) {
  int64_t pos = 0;
  for (size_t k = 0; k < shape.size(); ++k) {
    const int64_t v = evaluate_index(a.index[k], at);
    if (v < 0 || v >= shape[k]) return -1;
    pos = pos * shape[k] + v;
  }
  return pos;
}

namespace {

// Advances `at` (the iterators first..last-1) like an odometer; false when done.
bool next(std::vector<int64_t>& at, const std::vector<Iterator>& its, size_t first, size_t last) {
  for (size_t k = last; k-- > first;) {
    if (++at[k] < its[k].range) return true;
    at[k] = 0;
  }
  return false;
}

std::string index_text(const Index& idx, const TensorExpr& e) {
  std::string s;
  for (const IndexTerm& t : idx.terms) {
    std::string inner;
    for (const auto& [it, c] : t.coefs) {
      if (!inner.empty()) inner += '+';
      if (c != 1) inner.append(std::to_string(c)).append("*");
      inner += e.iterators[static_cast<size_t>(it)].name;
    }
    if (t.inner != 0) {
      if (!inner.empty()) inner += '+';
      inner += std::to_string(t.inner);
    }
    std::string term;
    if (t.scale != 1) term.append(std::to_string(t.scale)).append("*");
    if (t.mod != 0) term += '(';
    if (!t.affine() || t.scale != 1) term.append("(").append(inner).append(")");
    else term += inner;
    if (t.div != 1) term.append("/").append(std::to_string(t.div));
    if (t.mod != 0) term.append(")%").append(std::to_string(t.mod));
    if (!s.empty()) s += '+';
    s += term;
  }
  if (idx.offset != 0 || s.empty()) {
    if (!s.empty() && idx.offset > 0) s += '+';
    s += std::to_string(idx.offset);
  }
  return s;
}

}  // namespace

int64_t evaluate_index(const Index& index, const std::vector<int64_t>& at) {
  int64_t v = index.offset;
  for (const IndexTerm& t : index.terms) {
    int64_t x = t.inner;
    for (const auto& [it, c] : t.coefs) x += c * at[static_cast<size_t>(it)];
    if (t.div != 1) x = floor_div(x, t.div);
    if (t.mod != 0) x = floor_mod(x, t.mod);
    v += t.scale * x;
  }
  return v;
}

Tensor<double> evaluate(const TensorExpr& e, const std::vector<const Tensor<double>*>& inputs) {
  if (inputs.size() != e.inputs.size()) throw std::invalid_argument("expression: wrong number of inputs");
  for (size_t k = 0; k < inputs.size(); ++k)
    if (inputs[k]->shape != e.inputs[k]) throw std::invalid_argument("expression: input shape differs");
  Tensor<double> out(e.output_shape());
  std::vector<int64_t> at(e.iterators.size(), 0);
  for (const Iterator& it : e.iterators)
    if (it.range <= 0) return out;
  int64_t flat = 0;
  do {
    double sum = 0;
    do {
      for (const Term& term : e.terms) {
        double product = 1;
        for (const Access& a : term.factors) {
          const int64_t pos = element_position(a, e.inputs[static_cast<size_t>(a.tensor)], at);
          product *= pos < 0 ? 0.0 : inputs[static_cast<size_t>(a.tensor)]->data[static_cast<size_t>(pos)];
        }
        sum += product;
      }
    } while (next(at, e.iterators, static_cast<size_t>(e.num_out), e.iterators.size()));
    out.data[static_cast<size_t>(flat++)] = sum;
  } while (next(at, e.iterators, 0, static_cast<size_t>(e.num_out)));
  if (!e.unary) return out;
  // The operator's own float64 kernel, elementwise over the sums.
  const Params params = e.unary->make_params();
  const std::vector<Shape> shapes{out.shape};
  const std::vector<DType> floats{DType::kFloat};
  Tensor<double> applied(out.shape);
  const Tensor<double>* const args[] = {&out};
  e.unary->kernels.f64(OpCall{*e.unary, params, shapes, floats, shapes}, std::span<const Tensor<double>* const>(args),
                       std::span<Tensor<double>>(&applied, 1));
  return applied;
}

std::string to_string(const TensorExpr& e) {
  std::string s = "L_{";
  for (size_t i = 0; i < e.iterators.size(); ++i) {
    if (static_cast<int>(i) == e.num_out) s += "} S_{";
    else if (i > 0) s += ",";
    s += cat(e.iterators[i].name, ":", std::to_string(e.iterators[i].range));
  }
  s += "}";
  s += e.unary ? cat(" ", e.unary->name, "(") : std::string(" ");
  for (size_t t = 0; t < e.terms.size(); ++t) {
    if (t > 0) s += " + ";
    for (size_t f = 0; f < e.terms[t].factors.size(); ++f) {
      const Access& a = e.terms[t].factors[f];
      s += cat(f > 0 ? "*" : "", "X", std::to_string(a.tensor), "[");
      for (size_t k = 0; k < a.index.size(); ++k) s += cat(k > 0 ? "," : "", index_text(a.index[k], e));
      s += "]";
    }
  }
  if (e.unary) s += ")";
  return s;
}

}  // namespace tgr::expr
