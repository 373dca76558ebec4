#include "generator/derivation.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "generator/derivation_program.h"

namespace tgr::gen {

using expr::Access;
using expr::Index;
using expr::IndexTerm;
using expr::iter_index;
using expr::Iterator;
using expr::TensorExpr;
using namespace detail;

std::vector<Program> split_summation(const Program& p, int stage) {
  const Stage& base = p.stages[static_cast<size_t>(stage)];
  std::vector<Program> out;
  if (!is_compute(base.expr) || base.expr.unary) return out;
  for (int it = base.expr.num_out; it < static_cast<int>(base.expr.iterators.size()); ++it) {
    const int64_t range = base.expr.iterators[static_cast<size_t>(it)].range;
    for (int64_t parts : {2, 4}) {
      if (range < parts || range % parts != 0) continue;
      Program q = p;
      std::vector<std::pair<int, std::vector<Index>>> reads;
      bool ok = true;
      for (int64_t j = 0; j < parts && ok; ++j) {
        Stage piece = base;
        piece.expr.iterators[static_cast<size_t>(it)].range = range / parts;
        std::vector<Index> repl = identity(static_cast<int>(base.expr.iterators.size()));
        repl[static_cast<size_t>(it)].offset = j * (range / parts);
        ok = substitute_all(piece.expr, repl);
        q.stages.push_back(piece);
        reads.push_back({static_cast<int>(q.stages.size()) - 1, identity(base.expr.num_out)});
      }
      if (!ok) continue;
      q.stages[static_cast<size_t>(stage)] = sum_tree(q, out_iterators(base.expr), reads);
      q.steps.push_back(
          cat("split-summation(", base.expr.iterators[static_cast<size_t>(it)].name, ",", std::to_string(parts), ")"));
      out.push_back(std::move(q));
    }
  }
  return out;
}

namespace {

// The leaf stages of a tree of sums rooted at `stage` (read at identity
// indices), left to right; false when the tree has another shape.
bool sum_leaves(const Program& p, int stage, std::vector<int>& leaves) {
  const Stage& st = p.stages[static_cast<size_t>(stage)];
  for (const expr::Term& t : st.expr.terms) {
    const Access& a = t.factors[0];
    const int r = st.reads[static_cast<size_t>(a.tensor)];
    if (r < 0 || a.index != identity(st.expr.num_out)) return false;
    if (is_sum_of_reads(p.stages[static_cast<size_t>(r)].expr)) {
      if (!sum_leaves(p, r, leaves)) return false;
    } else {
      leaves.push_back(r);
    }
  }
  return true;
}

// The numbers of an expression's indices that a merge may make depend on a
// new iterator: each index's offset and each floordiv/mod term's inner constant.
struct Slot {
  Index* index;
  int term;  // -1: the offset
  int64_t& value() const { return term < 0 ? index->offset : index->terms[static_cast<size_t>(term)].inner; }
};

std::vector<Slot> slots(TensorExpr& e) {
  std::vector<Slot> out;
  for (expr::Term& t : e.terms)
    for (Access& a : t.factors)
      for (Index& i : a.index) {
        out.push_back({&i, -1});
        for (size_t k = 0; k < i.terms.size(); ++k)
          if (!i.terms[k].affine()) out.push_back({&i, static_cast<int>(k)});
      }
  return out;
}

// The leaves' expressions with a traversal iterator inserted at `at`, or
// none when they differ otherwise than in slots linear in their position.
std::optional<TensorExpr> merged_leaves(const Program& p, const std::vector<int>& leaves, int at) {
  std::vector<TensorExpr> exprs;
  for (int l : leaves) {
    TensorExpr e = p.stages[static_cast<size_t>(l)].expr;
    std::vector<Index> repl;
    for (int x = 0; x < static_cast<int>(e.iterators.size()); ++x) repl.push_back(iter_index(x < at ? x : x + 1));
    if (!substitute_all(e, repl)) return std::nullopt;
    e.iterators.insert(e.iterators.begin() + at, Iterator{"g", static_cast<int64_t>(leaves.size())});
    ++e.num_out;
    exprs.push_back(std::move(e));
  }
  std::vector<std::vector<Slot>> s;
  for (TensorExpr& e : exprs) s.push_back(slots(e));
  for (size_t j = 1; j < exprs.size(); ++j) {
    if (s[j].size() != s[0].size()) return std::nullopt;
    TensorExpr a = exprs[0], b = exprs[j];
    for (const Slot& x : slots(a)) x.value() = 0;
    for (const Slot& x : slots(b)) x.value() = 0;
    if (!(a == b)) return std::nullopt;
  }
  for (size_t k = 0; k < s[0].size(); ++k) {
    const int64_t delta = exprs.size() > 1 ? s[1][k].value() - s[0][k].value() : 0;
    for (size_t j = 2; j < exprs.size(); ++j)
      if (s[j][k].value() - s[0][k].value() != static_cast<int64_t>(j) * delta) return std::nullopt;
    if (delta == 0) continue;
    const Slot& x = s[0][k];
    if (x.term < 0) {
      x.index->terms.push_back(IndexTerm{.coefs = {{at, delta}}});
    } else {
      auto& coefs = x.index->terms[static_cast<size_t>(x.term)].coefs;
      coefs.push_back({at, delta});
      std::sort(coefs.begin(), coefs.end());
    }
  }
  for (expr::Term& t : exprs[0].terms)
    for (Access& a : t.factors)
      for (Index& i : a.index) i = normalize(i);
  return exprs[0];
}

}  // namespace

std::vector<Program> merge_stages(const Program& p, int stage) {
  std::vector<Program> out;
  const Stage& root = p.stages[static_cast<size_t>(stage)];
  std::vector<int> leaves;
  if (!is_sum_of_reads(root.expr) || !sum_leaves(p, stage, leaves)) return out;
  if (std::set<int>(leaves.begin(), leaves.end()).size() != leaves.size()) return out;
  const std::vector<int>& reads = p.stages[static_cast<size_t>(leaves[0])].reads;
  for (int l : leaves)
    if (p.stages[static_cast<size_t>(l)].reads != reads || !is_compute(p.stages[static_cast<size_t>(l)].expr))
      return out;
  for (int at = 0; at <= root.expr.num_out; ++at) {
    std::optional<TensorExpr> merged = merged_leaves(p, leaves, at);
    if (!merged) continue;
    Program q = p;
    q.stages[static_cast<size_t>(leaves[0])].expr = *merged;
    std::vector<std::pair<int, std::vector<Index>>> parts;
    for (size_t j = 0; j < leaves.size(); ++j) {
      std::vector<Index> idx = identity(root.expr.num_out);
      idx.insert(idx.begin() + at, expr::const_index(static_cast<int64_t>(j)));
      parts.push_back({leaves[0], idx});
    }
    q.stages[static_cast<size_t>(stage)] = sum_tree(q, out_iterators(root.expr), parts);
    compact(q);
    q.steps.push_back(cat("merge-stages(g@", std::to_string(at), ")"));
    out.push_back(std::move(q));
  }
  return out;
}

std::vector<Program> merge_iterators(const Program& p, int stage) {
  std::vector<Program> out;
  const TensorExpr& e = p.stages[static_cast<size_t>(stage)].expr;
  if (!is_reduction(e)) return out;
  for (int a = 0; a + 1 < e.num_out; ++a) {
    const int b = a + 1;
    const int64_t range_b = e.iterators[static_cast<size_t>(b)].range;
    if (e.iterators[static_cast<size_t>(a)].range == 1 || range_b == 1) continue;
    TensorExpr m = e;
    std::vector<Index> repl;
    for (int x = 0; x < static_cast<int>(e.iterators.size()); ++x) {
      if (x == a) repl.push_back(Index{.terms = {IndexTerm{.coefs = {{a, 1}}, .div = range_b}}});
      else if (x == b) repl.push_back(Index{.terms = {IndexTerm{.coefs = {{a, 1}}, .mod = range_b}}});
      else repl.push_back(iter_index(x < b ? x : x - 1));
    }
    if (!substitute_all(m, repl)) continue;
    m.iterators[static_cast<size_t>(a)] = {
        e.iterators[static_cast<size_t>(a)].name + e.iterators[static_cast<size_t>(b)].name,
        e.iterators[static_cast<size_t>(a)].range * range_b};
    m.iterators.erase(m.iterators.begin() + b);
    --m.num_out;
    Program q = p;
    keep_output_axes(q, stage);
    q.stages[static_cast<size_t>(stage)].expr = m;
    reindex_readers(q, stage, m.output_shape(), [&](const std::vector<Index>& idx) {
      Index merged;
      for (IndexTerm t : idx[static_cast<size_t>(a)].terms) {
        t.scale *= range_b;
        merged.terms.push_back(t);
      }
      for (const IndexTerm& t : idx[static_cast<size_t>(b)].terms) merged.terms.push_back(t);
      merged.offset = idx[static_cast<size_t>(a)].offset * range_b + idx[static_cast<size_t>(b)].offset;
      std::vector<Index> r = idx;
      r[static_cast<size_t>(a)] = normalize(merged);
      r.erase(r.begin() + b);
      return r;
    });
    q.steps.push_back(cat("merge-iterators(", e.iterators[static_cast<size_t>(a)].name, ",",
                          e.iterators[static_cast<size_t>(b)].name, ")"));
    out.push_back(std::move(q));
  }
  return out;
}

std::vector<Program> drop_unit_iterators(const Program& p, int stage) {
  const TensorExpr& e = p.stages[static_cast<size_t>(stage)].expr;
  if (!is_reduction(e)) return {};
  TensorExpr d = e;
  d.iterators.clear();
  d.num_out = 0;
  std::vector<Index> repl;
  std::vector<char> dropped_axis;
  for (int x = 0; x < static_cast<int>(e.iterators.size()); ++x) {
    const Iterator& it = e.iterators[static_cast<size_t>(x)];
    if (x < e.num_out) dropped_axis.push_back(it.range == 1);
    if (it.range == 1) {
      repl.push_back(expr::const_index(0));
      continue;
    }
    repl.push_back(iter_index(static_cast<int>(d.iterators.size())));
    d.iterators.push_back(it);
    if (x < e.num_out) ++d.num_out;
  }
  if (d.iterators.size() == e.iterators.size() || !substitute_all(d, repl)) return {};
  Program q = p;
  keep_output_axes(q, stage);
  q.stages[static_cast<size_t>(stage)].expr = d;
  reindex_readers(q, stage, d.output_shape(), [&](const std::vector<Index>& idx) {
    std::vector<Index> r;
    for (size_t k = 0; k < idx.size(); ++k)
      if (!dropped_axis[k]) r.push_back(idx[k]);
    return r;
  });
  q.steps.push_back("drop-units");
  return {q};
}

namespace {

// Whether every access of `reader` to its input `slot` falls inside that input.
bool reads_inside(const TensorExpr& reader, int slot) {
  int64_t points = 1;
  for (const Iterator& it : reader.iterators) points *= std::max<int64_t>(it.range, 1);
  if (points > 4'000'000) return false;
  std::vector<int64_t> at(reader.iterators.size(), 0);
  for (int64_t n = 0; n < points; ++n) {
    for (const expr::Term& t : reader.terms)
      for (const Access& a : t.factors)
        if (a.tensor == slot && expr::element_position(a, reader.inputs[static_cast<size_t>(slot)], at) < 0)
          return false;
    for (size_t k = at.size(); k-- > 0;)
      if (++at[k] < reader.iterators[k].range) break;
      else at[k] = 0;
  }
  return true;
}

// The producer's expression read at `index` (over the reader's traversal
// iterators, `reader_out` of them): its traversal iterators substituted, its
// summation iterators appended after the reader's.
std::optional<TensorExpr> producer_at(const TensorExpr& producer, const std::vector<Index>& index,
                                      const std::vector<Iterator>& reader_out) {
  TensorExpr e = producer;
  std::vector<Index> repl = index;
  for (size_t x = static_cast<size_t>(producer.num_out); x < producer.iterators.size(); ++x)
    repl.push_back(iter_index(static_cast<int>(reader_out.size() + x) - producer.num_out));
  if (!substitute_all(e, repl)) return std::nullopt;
  e.iterators = reader_out;
  e.iterators.insert(e.iterators.end(), producer.iterators.begin() + producer.num_out, producer.iterators.end());
  e.num_out = static_cast<int>(reader_out.size());
  return e;
}

// The reader with the producer (its input `slot`) substituted: the
// producer's body read at the reader's index when the reader only moves
// elements, else (the producer only moves elements) the producer's source
// read through both indices.
std::optional<Stage> inlined(const Stage& reader, int slot, const Stage& producer) {
  const TensorExpr& r = reader.expr;
  if (is_layout(r)) {
    std::optional<TensorExpr> e = producer_at(producer.expr, r.terms[0].factors[0].index, out_iterators(r));
    if (!e) return std::nullopt;
    return Stage{*e, producer.reads};
  }
  if (!is_layout(producer.expr)) return std::nullopt;
  Stage out = reader;
  const Access& moved = producer.expr.terms[0].factors[0];
  out.expr.inputs[static_cast<size_t>(slot)] = producer.expr.inputs[static_cast<size_t>(moved.tensor)];
  out.reads[static_cast<size_t>(slot)] = producer.reads[static_cast<size_t>(moved.tensor)];
  for (expr::Term& t : out.expr.terms)
    for (Access& a : t.factors) {
      if (a.tensor != slot) continue;
      std::vector<Index> idx;
      for (const Index& i : moved.index) {
        std::optional<Index> s = substitute(i, a.index);
        if (!s) return std::nullopt;
        idx.push_back(*s);
      }
      a.index = idx;
    }
  return out;
}

}  // namespace

std::vector<Program> inline_stage(const Program& p, int stage) {
  if (stage == p.output) return {};
  int reader = -1;
  for (int s = 0; s < static_cast<int>(p.stages.size()); ++s)
    for (int r : p.stages[static_cast<size_t>(s)].reads)
      if (r == stage) {
        if (reader >= 0 && reader != s) return {};  // read by two stages: kept
        reader = s;
      }
  if (reader < 0) return {};
  const Stage& c = p.stages[static_cast<size_t>(reader)];
  const Stage& producer = p.stages[static_cast<size_t>(stage)];
  // The same slot on every access, and always inside the producer (outside, the reader reads zeros).
  int slot = -1;
  for (size_t k = 0; k < c.reads.size(); ++k)
    if (c.reads[k] == stage) {
      if (slot >= 0) return {};
      slot = static_cast<int>(k);
    }
  if (!reads_inside(c.expr, slot)) return {};
  std::optional<Stage> merged = inlined(c, slot, producer);
  if (!merged) return {};
  Program q = p;
  q.stages[static_cast<size_t>(reader)] = *merged;
  compact(q);
  q.steps.push_back("inline");
  return {q};
}

namespace {

// The permutation an access reads its input's axes in, when each index
// component is one distinct traversal iterator: sigma[k] = the iterator of
// axis k. Empty otherwise.
std::vector<int> access_permutation(const Access& a, int num_out) {
  std::vector<int> sigma;
  std::vector<char> used(static_cast<size_t>(num_out), 0);
  if (static_cast<int>(a.index.size()) != num_out) return {};
  for (const Index& i : a.index) {
    if (i.offset != 0 || i.terms.size() != 1 || !i.terms[0].affine() || i.terms[0].coefs.size() != 1) return {};
    const auto [x, c] = i.terms[0].coefs[0];
    if (c != 1 || i.terms[0].scale != 1 || i.terms[0].inner != 0 || x >= num_out || used[static_cast<size_t>(x)])
      return {};
    used[static_cast<size_t>(x)] = 1;
    sigma.push_back(x);
  }
  return sigma;
}

}  // namespace

std::vector<Program> permute_iterators(const Program& p, int stage) {
  const TensorExpr& e = p.stages[static_cast<size_t>(stage)].expr;
  std::vector<Program> out;
  if (!is_compute(e) || e.num_out < 2) return out;
  std::set<std::vector<int>> tried;
  for (const expr::Term& t : e.terms)
    for (const Access& a : t.factors) {
      const std::vector<int> sigma = access_permutation(a, e.num_out);
      if (sigma.empty() || std::is_sorted(sigma.begin(), sigma.end()) || !tried.insert(sigma).second) continue;
      TensorExpr m = e;  // new iterator k is old iterator sigma[k]
      std::vector<Index> repl(e.iterators.size());
      for (int k = 0; k < e.num_out; ++k) {
        repl[static_cast<size_t>(sigma[static_cast<size_t>(k)])] = iter_index(k);
        m.iterators[static_cast<size_t>(k)] = e.iterators[static_cast<size_t>(sigma[static_cast<size_t>(k)])];
      }
      for (int x = e.num_out; x < static_cast<int>(e.iterators.size()); ++x)
        repl[static_cast<size_t>(x)] = iter_index(x);
      if (!substitute_all(m, repl)) continue;
      Program q = p;
      keep_output_axes(q, stage);
      q.stages[static_cast<size_t>(stage)].expr = m;
      reindex_readers(q, stage, m.output_shape(), [&](const std::vector<Index>& idx) {
        std::vector<Index> r;
        for (int k = 0; k < e.num_out; ++k) r.push_back(idx[static_cast<size_t>(sigma[static_cast<size_t>(k)])]);
        return r;
      });
      std::string order;
      for (int x : sigma) order += e.iterators[static_cast<size_t>(x)].name;
      q.steps.push_back(cat("permute-iterators(", order, ")"));
      out.push_back(std::move(q));
    }
  return out;
}

std::vector<Program> derive(const Program& start, const DerivationOptions& options, DerivationStats& stats) {
  using Rule = std::vector<Program> (*)(const Program&, int);
  const Rule rules[] = {split_summation,     merge_stages, merge_iterators,
                        drop_unit_iterators, inline_stage, permute_iterators};
  std::vector<Program> all{start};
  std::set<std::string> seen{program_key(start)};
  size_t level_begin = 0;
  for (int depth = 0; depth < options.max_depth && !stats.bounded; ++depth) {
    const size_t level_end = all.size();
    for (size_t i = level_begin; i < level_end && !stats.bounded; ++i)
      for (int s = 0; s < static_cast<int>(all[i].stages.size()); ++s)
        for (Rule rule : rules)
          for (Program& q : rule(all[i], s)) {
            if (!seen.insert(program_key(q)).second) {
              ++stats.duplicates;
              continue;
            }
            if (all.size() >= options.max_programs) {
              stats.bounded = true;
              break;
            }
            all.push_back(std::move(q));
          }
    level_begin = level_end;
  }
  stats.programs = all.size();
  return all;
}

}  // namespace tgr::gen
