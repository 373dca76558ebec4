#include "generator/derivation_program.h"

#include <algorithm>
#include <map>

namespace tgr::gen {

using expr::Access;
using expr::Index;
using expr::IndexTerm;
using expr::iter_index;
using expr::Iterator;
using expr::TensorExpr;

namespace detail {

Index normalize(const Index& idx) {
  Index out;
  out.offset = idx.offset;
  std::map<int, int64_t> affine;
  for (const IndexTerm& t : idx.terms) {
    if (t.coefs.empty()) {
      out.offset += expr::evaluate_index(Index{.terms = {t}}, {});
    } else if (t.affine()) {
      out.offset += t.scale * t.inner;
      for (const auto& [x, c] : t.coefs) affine[x] += t.scale * c;
    } else {
      out.terms.push_back(t);
    }
  }
  IndexTerm a;
  for (const auto& [x, c] : affine)
    if (c != 0) a.coefs.push_back({x, c});
  if (!a.coefs.empty()) out.terms.insert(out.terms.begin(), a);
  return out;
}

// `idx` with old iterator x replaced by repl[x]; none when a replacement
// that is not affine lands inside a floordiv or mod.
std::optional<Index> substitute(const Index& idx, const std::vector<Index>& repl) {
  Index out;
  out.offset = idx.offset;
  for (const IndexTerm& t : idx.terms) {
    if (t.affine()) {
      out.offset += t.scale * t.inner;
      for (const auto& [x, c] : t.coefs) {
        const Index& r = repl[static_cast<size_t>(x)];
        for (IndexTerm u : r.terms) {
          u.scale *= t.scale * c;
          out.terms.push_back(u);
        }
        out.offset += t.scale * c * r.offset;
      }
      continue;
    }
    IndexTerm nt = t;
    nt.coefs.clear();
    std::map<int, int64_t> coefs;
    for (const auto& [x, c] : t.coefs) {
      const Index& r = repl[static_cast<size_t>(x)];
      if (r.terms.size() > 1 || (r.terms.size() == 1 && !r.terms[0].affine())) return std::nullopt;
      nt.inner += c * r.offset;
      if (r.terms.empty()) continue;
      const IndexTerm& u = r.terms[0];
      nt.inner += c * u.scale * u.inner;
      for (const auto& [y, k] : u.coefs) coefs[y] += c * u.scale * k;
    }
    for (const auto& [y, k] : coefs)
      if (k != 0) nt.coefs.push_back({y, k});
    out.terms.push_back(nt);
  }
  return normalize(out);
}

bool substitute_all(TensorExpr& e, const std::vector<Index>& repl) {
  for (expr::Term& t : e.terms)
    for (Access& a : t.factors)
      for (Index& i : a.index) {
        std::optional<Index> s = substitute(i, repl);
        if (!s) return false;
        i = *s;
      }
  return true;
}

std::vector<Index> identity(int rank) {
  std::vector<Index> idx;
  for (int a = 0; a < rank; ++a) idx.push_back(iter_index(a));
  return idx;
}

bool is_layout(const TensorExpr& e) {
  return e.num_out == static_cast<int>(e.iterators.size()) && e.terms.size() == 1 && e.terms[0].factors.size() == 1 &&
         !e.unary;
}

bool is_sum_of_reads(const TensorExpr& e) {
  if (e.num_out != static_cast<int>(e.iterators.size()) || e.terms.size() < 2 || e.unary) return false;
  return std::all_of(e.terms.begin(), e.terms.end(), [](const expr::Term& t) { return t.factors.size() == 1; });
}

bool is_compute(const TensorExpr& e) { return !is_layout(e) && !is_sum_of_reads(e); }

// A stage with a summation: what merging and dropping iterators reshape
// toward a product's form (elementwise stages reshaped save nothing).
bool is_reduction(const TensorExpr& e) { return e.num_out < static_cast<int>(e.iterators.size()); }

std::vector<Iterator> out_iterators(const TensorExpr& e) {
  return {e.iterators.begin(), e.iterators.begin() + e.num_out};
}

// A stage that adds the given reads (tensor, index) over `out`.
Stage sum_stage(const Program& p, const std::vector<Iterator>& out,
                const std::vector<std::pair<int, std::vector<Index>>>& reads) {
  Stage st;
  st.expr.iterators = out;
  st.expr.num_out = static_cast<int>(out.size());
  for (const auto& [tensor, idx] : reads) {
    st.expr.terms.push_back({{Access{static_cast<int>(st.reads.size()), idx}}});
    st.expr.inputs.push_back(tensor_shape(p, tensor));
    st.reads.push_back(tensor);
  }
  return st;
}

// The same as a balanced tree of two-term sums (the table's add); the
// inner sums become new stages, the top one is returned.
Stage sum_tree(Program& p, const std::vector<Iterator>& out, std::vector<std::pair<int, std::vector<Index>>> reads) {
  if (reads.size() <= 2) return sum_stage(p, out, reads);
  const auto half = static_cast<long>(reads.size() / 2);
  std::vector<std::pair<int, std::vector<Index>>> pair;
  for (auto [from, to] :
       {std::pair{reads.begin(), reads.begin() + half}, std::pair{reads.begin() + half, reads.end()}}) {
    p.stages.push_back(sum_tree(p, out, {from, to}));
    pair.push_back({static_cast<int>(p.stages.size()) - 1, identity(static_cast<int>(out.size()))});
  }
  return sum_stage(p, out, pair);
}

// Stages no longer reachable from the output are removed; reads renumbered.
void compact(Program& p) {
  std::vector<char> reached(p.stages.size(), 0);
  std::vector<int> todo{p.output};
  while (!todo.empty()) {
    const int s = todo.back();
    todo.pop_back();
    if (reached[static_cast<size_t>(s)]) continue;
    reached[static_cast<size_t>(s)] = 1;
    for (int r : p.stages[static_cast<size_t>(s)].reads)
      if (r >= 0) todo.push_back(r);
  }
  std::vector<int> id(p.stages.size(), -1);
  std::vector<Stage> kept;
  for (size_t s = 0; s < p.stages.size(); ++s)
    if (reached[s]) {
      id[s] = static_cast<int>(kept.size());
      kept.push_back(std::move(p.stages[s]));
    }
  for (Stage& st : kept)
    for (int& r : st.reads)
      if (r >= 0) r = id[static_cast<size_t>(r)];
  p.output = id[static_cast<size_t>(p.output)];
  p.stages = std::move(kept);
}

// When `stage` is the output, a layout stage reading it with its present
// axes becomes the output (re-indexed with the other readers afterwards).
void keep_output_axes(Program& p, int stage) {
  if (p.output != stage) return;
  const TensorExpr e = p.stages[static_cast<size_t>(stage)].expr;
  Stage layout;
  layout.expr.iterators = out_iterators(e);
  layout.expr.num_out = e.num_out;
  layout.expr.inputs = {e.output_shape()};
  layout.expr.terms = {{{Access{0, identity(e.num_out)}}}};
  layout.reads = {stage};
  p.stages.push_back(layout);
  p.output = static_cast<int>(p.stages.size()) - 1;
}

// Every access to `stage` re-indexed by `reindex`; the readers see `shape`.
void reindex_readers(Program& p, int stage, const Shape& shape,
                     const std::function<std::vector<Index>(const std::vector<Index>&)>& reindex) {
  for (Stage& s : p.stages)
    for (size_t k = 0; k < s.reads.size(); ++k) {
      if (s.reads[k] != stage) continue;
      s.expr.inputs[k] = shape;
      for (expr::Term& t : s.expr.terms)
        for (Access& a : t.factors)
          if (a.tensor == static_cast<int>(k)) a.index = reindex(a.index);
    }
}

}  // namespace detail

using namespace detail;

Program initial_program(const TensorExpr& e) {
  Program p;
  p.inputs = e.inputs;
  Stage st{e, {}};
  for (size_t k = 0; k < e.inputs.size(); ++k) st.reads.push_back(-1 - static_cast<int>(k));
  p.stages.push_back(st);
  return p;
}

Shape tensor_shape(const Program& p, int tensor) {
  return tensor >= 0 ? p.stages[static_cast<size_t>(tensor)].expr.output_shape()
                     : p.inputs[static_cast<size_t>(-1 - tensor)];
}

std::string program_key(const Program& p) {
  std::map<int, int> number;
  std::vector<int> order;
  std::function<void(int)> visit = [&](int s) {
    if (number.count(s)) return;
    number[s] = static_cast<int>(order.size());
    order.push_back(s);
    for (int r : p.stages[static_cast<size_t>(s)].reads)
      if (r >= 0) visit(r);
  };
  visit(p.output);
  std::string key;
  for (int s : order) {
    const Stage& st = p.stages[static_cast<size_t>(s)];
    key += expr::to_string(st.expr) + " <-";
    for (int r : st.reads) key += r >= 0 ? cat(" t", std::to_string(number[r])) : cat(" in", std::to_string(-1 - r));
    key += "; ";
  }
  return key;
}

Tensor<double> evaluate(const Program& p, const std::vector<Tensor<double>>& inputs) {
  std::map<int, Tensor<double>> values;
  std::function<const Tensor<double>&(int)> value = [&](int tensor) -> const Tensor<double>& {
    if (tensor < 0) return inputs.at(static_cast<size_t>(-1 - tensor));
    if (auto it = values.find(tensor); it != values.end()) return it->second;
    const Stage& st = p.stages.at(static_cast<size_t>(tensor));
    std::vector<const Tensor<double>*> args;
    for (int r : st.reads) args.push_back(&value(r));
    return values[tensor] = expr::evaluate(st.expr, args);
  };
  return value(p.output);
}

std::string derivation_kind(const Program& p) {
  std::string kind;
  for (const std::string& step : p.steps) kind += cat(kind.empty() ? "" : "+", step.substr(0, step.find('(')));
  return kind.empty() ? "none" : kind;
}

}  // namespace tgr::gen
