#include "generator/implication.h"

#include <algorithm>
#include <array>
#include <functional>
#include <numeric>
#include <set>

#include "ir/canonical.h"

namespace tgr {

namespace {

// A root's operator, parameters and output selector; "*" for a variable.
std::string label(const Expr& e) {
  if (e.kind == Expr::Kind::kVar) return "*";
  Expr head = e;
  head.args.clear();
  return to_text(head);
}

bool commutative(const Expr& e) {
  const OpDef* op = OpTable::instance().find(e.name);
  return op && op->commutative && e.args.size() == 2;
}

// Index keys of a side whose first output is `e`: the number of outputs, the
// root's label and its arguments' labels. A query looks up every key with
// some argument labels replaced by "*" (a pattern's variable there).
std::string key(size_t outputs, const std::string& root, const std::vector<std::string>& args) {
  std::string k = std::to_string(outputs) + "|" + root + "(";
  for (const auto& a : args) k += a + ",";
  return k + ")";
}

std::string pattern_key(size_t outputs, const Expr& e) {
  std::vector<std::string> args;
  for (const Expr& a : e.args) args.push_back(label(a));
  return key(outputs, label(e), e.kind == Expr::Kind::kVar ? std::vector<std::string>{} : args);
}

// Every key a pattern side matching `e` (output of a tuple of `outputs`) can have.
std::vector<std::string> query_keys(size_t outputs, const Expr& e) {
  std::vector<std::string> out{key(outputs, "*", {})};
  if (e.kind == Expr::Kind::kVar) return out;
  std::vector<std::vector<std::string>> orders;
  std::vector<std::string> args;
  for (const Expr& a : e.args) args.push_back(label(a));
  orders.push_back(args);
  if (commutative(e)) orders.push_back({args[1], args[0]});
  for (const auto& order : orders)
    for (uint32_t mask = 0; mask < (1u << order.size()); ++mask) {
      std::vector<std::string> a = order;
      bool useless = false;
      for (size_t i = 0; i < a.size(); ++i)
        if (mask >> i & 1) {
          useless = useless || a[i] == "*";
          a[i] = "*";
        }
      if (!useless) out.push_back(key(outputs, label(e), a));
    }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Expr substitute(const Expr& e, const std::vector<std::pair<std::string, const Expr*>>& bindings, bool& complete) {
  if (e.kind == Expr::Kind::kVar) {
    for (const auto& [name, value] : bindings)
      if (name == e.name) return *value;
    complete = false;
    return e;
  }
  Expr out = e;
  for (Expr& a : out.args) a = substitute(a, bindings, complete);
  return out;
}

// The shape of `e` over variables of `shapes`; empty optional when it does not type-check.
std::optional<Shape> shape_of(const Expr& e, const ShapeMap& shapes) {
  try {
    const Graph g = build_graph(to_text(e), shapes);
    const ValueRef v = g.outputs().at(0);
    return g.node(v.node).output_shapes.at(v.output);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// One-way matching of a stored rule's expressions (patterns) against a
// query's (terms): variables bind to subterms, consistently; commutative
// operators try both argument orders; backtracking over all choices.
class Matcher {
 public:
  using Pair = std::pair<const Expr*, const Expr*>;
  Matcher(const ShapeMap& pattern_shapes, const ShapeMap& term_shapes, bool renaming_only)
      : pattern_shapes_(pattern_shapes), term_shapes_(term_shapes), renaming_only_(renaming_only) {}

  bool solve(std::vector<Pair> work) {
    if (work.empty()) return shapes_agree();
    const auto [p, t] = work.back();
    work.pop_back();
    if (p->kind == Expr::Kind::kVar) {
      for (const auto& [name, value] : bindings_)
        if (name == p->name) return (value == t || text(value) == text(t)) && solve(std::move(work));
      if (renaming_only_) {
        if (t->kind != Expr::Kind::kVar || variable_kind(t->name) != variable_kind(p->name)) return false;
        for (const auto& [name, value] : bindings_)
          if (value->name == t->name) return false;  // injective
      }
      bindings_.emplace_back(p->name, t);
      if (solve(std::move(work))) return true;
      bindings_.pop_back();
      return false;
    }
    if (t->kind != Expr::Kind::kCall || p->name != t->name || p->output != t->output ||
        p->args.size() != t->args.size() || p->params != t->params)
      return false;
    const size_t n = p->args.size();
    for (int swap = 0; swap < (commutative(*p) ? 2 : 1); ++swap) {
      std::vector<Pair> w = work;
      for (size_t i = 0; i < n; ++i) w.emplace_back(&p->args[i], &t->args[swap ? n - 1 - i : i]);
      if (solve(std::move(w))) return true;
    }
    return false;
  }

  const std::vector<std::pair<std::string, const Expr*>>& bindings() const { return bindings_; }

  // The text of a term's subexpression, computed once per match.
  const std::string& text(const Expr* e) {
    auto it = texts_.find(e);
    if (it == texts_.end()) it = texts_.emplace(e, to_text(*e)).first;
    return it->second;
  }

  std::string describe() const {
    std::string out;
    for (const auto& [name, value] : bindings_) {
      const std::string text = to_text(*value);
      if (text == name) continue;
      out += (out.empty() ? "" : ", ") + name + " := " + text;
    }
    return out;
  }

 private:
  // Each variable's value has the variable's shape: the stored rule holds
  // at its shapes, not necessarily at others.
  bool shapes_agree() const {
    for (const auto& [name, value] : bindings_) {
      const auto want = pattern_shapes_.find(name);
      if (want == pattern_shapes_.end()) return false;
      const std::optional<Shape> have = shape_of(*value, term_shapes_);
      if (!have || *have != want->second) return false;
    }
    return true;
  }

  const ShapeMap& pattern_shapes_;
  const ShapeMap& term_shapes_;
  bool renaming_only_;
  std::vector<std::pair<std::string, const Expr*>> bindings_;
  std::unordered_map<const Expr*, std::string> texts_;
};

// Permutations of 0..n-1 that start with `first`.
std::vector<std::vector<size_t>> permutations_from(size_t n, size_t first) {
  std::vector<size_t> rest;
  for (size_t i = 0; i < n; ++i)
    if (i != first) rest.push_back(i);
  std::vector<std::vector<size_t>> out;
  do {
    std::vector<size_t> p{first};
    p.insert(p.end(), rest.begin(), rest.end());
    out.push_back(std::move(p));
  } while (std::next_permutation(rest.begin(), rest.end()));
  return out;
}

// A rule's canonical text and its variables' shapes under the canonical names.
struct Canonical {
  std::string text;
  ShapeMap shapes;
};

Canonical canonicalize(const RuleExpr& rule, const ShapeMap& shapes) {
  std::map<std::string, std::string> renaming;
  Canonical c{canonical_rule_text(rule, true, true, &renaming), {}};
  for (const auto& [from, to] : renaming)
    if (auto it = shapes.find(from); it != shapes.end()) c.shapes[to] = it->second;
  return c;
}

}  // namespace

// How often each operator (label) occurs in a rule's trees, sorted by label
// id: a rule's instance has every operator at least as often as the rule.
using OpCounts = std::vector<std::pair<int, int>>;

struct ImplicationIndex::Impl {
  struct Entry {
    int64_t id;
    std::string canonical;
    RuleExpr rule;
    ShapeMap shapes;
    std::array<OpCounts, 2> ops;  // of the source, of the target
  };
  std::unordered_map<std::string, int> label_ids;

  // With `add`, unseen labels get ids; without, they are left out (no
  // indexed rule has them).
  OpCounts op_counts(const std::vector<Expr>& side, bool add) {
    std::map<int, int> counts;
    std::function<void(const Expr&)> walk = [&](const Expr& e) {
      if (e.kind == Expr::Kind::kVar) return;
      const std::string l = label(e);
      auto it = label_ids.find(l);
      if (it == label_ids.end()) {
        if (!add) return;
        it = label_ids.emplace(l, static_cast<int>(label_ids.size())).first;
      }
      ++counts[it->second];
      for (const Expr& a : e.args) walk(a);
    };
    for (const Expr& e : side) walk(e);
    return OpCounts(counts.begin(), counts.end());
  }
  OpCounts op_counts(const std::vector<Expr>& side) const { return const_cast<Impl*>(this)->op_counts(side, false); }

  static bool within(const OpCounts& pattern, const OpCounts& term) {
    size_t j = 0;
    for (const auto& [label, n] : pattern) {
      while (j < term.size() && term[j].first < label) ++j;
      if (j == term.size() || term[j].first != label || term[j].second < n) return false;
    }
    return true;
  }
  std::vector<Entry> entries;
  std::unordered_map<std::string, int64_t> by_canonical;
  std::unordered_map<std::string, std::vector<std::pair<uint32_t, uint8_t>>> by_key;  // -> (entry, side)
  std::map<std::string, std::set<Shape>> kind_shapes;

  // Calls f(entry, A, B, k) for each indexed side A (with other side B)
  // whose first output may match X[k], for each k; stops when f returns
  // true. A side that is a variable matches anything: such sides are
  // indexed by their other side instead, which must match Y.
  template <class F>
  bool candidates(const std::vector<Expr>& x, const std::vector<Expr>& y, F f) const {
    for (size_t k = 0; k < x.size(); ++k) {
      std::vector<std::string> keys;
      for (const std::string& q : query_keys(x.size(), x[k]))
        if (q != key(x.size(), "*", {})) keys.push_back(q);
      if (!y.empty())
        for (const std::string& q : query_keys(y.size(), y[k])) keys.push_back("V|" + q);
      for (const std::string& q : keys) {
        auto it = by_key.find(q);
        if (it == by_key.end()) continue;
        for (const auto& [index, side] : it->second) {
          const Entry& e = entries[index];
          const auto& a = side ? e.rule.target : e.rule.source;
          const auto& b = side ? e.rule.source : e.rule.target;
          if (f(e, a, b, k)) return true;
        }
      }
    }
    return false;
  }

  std::optional<Implication> substitution(const RuleExpr& q, const Canonical& c) const {
    const std::array<OpCounts, 2> q_ops{op_counts(q.source), op_counts(q.target)};
    std::optional<Implication> found;
    for (int side = 0; side < 2 && !found; ++side) {
      const auto& x = side ? q.target : q.source;
      const auto& y = side ? q.source : q.target;
      candidates(x, y, [&](const Entry& e, const std::vector<Expr>& a, const std::vector<Expr>& b, size_t k) {
        const bool a_is_target = &a == &e.rule.target;
        if (e.canonical == c.text || !within(e.ops[a_is_target], q_ops[side]) ||
            !within(e.ops[!a_is_target], q_ops[!side]))
          return false;
        for (const auto& perm : permutations_from(x.size(), k)) {
          std::vector<Matcher::Pair> work;
          for (size_t j = a.size(); j-- > 0;) {
            work.emplace_back(&b[j], &y[perm[j]]);
            work.emplace_back(&a[j], &x[perm[j]]);  // the indexed root first
          }
          Matcher m(e.shapes, c.shapes, false);
          if (m.solve(std::move(work))) {
            found = Implication{{e.id}, "substitution", m.describe()};
            return true;
          }
        }
        return false;
      });
    }
    return found;
  }

  std::optional<Implication> transitivity(const RuleExpr& q, const Canonical& c) const {
    std::optional<Implication> found;
    for (int side = 0; side < 2 && !found; ++side) {
      const auto& x = side ? q.target : q.source;
      const auto& y = side ? q.source : q.target;
      const OpCounts x_ops = op_counts(x);
      candidates(x, {}, [&](const Entry& e, const std::vector<Expr>& a, const std::vector<Expr>& b, size_t k) {
        if (e.canonical == c.text || e.ops[&a == &e.rule.target] != x_ops) return false;  // A is X renamed
        for (const auto& perm : permutations_from(x.size(), k)) {
          std::vector<Matcher::Pair> work;
          for (size_t j = a.size(); j-- > 0;) work.emplace_back(&a[j], &x[perm[j]]);
          Matcher m(e.shapes, c.shapes, true);
          if (!m.solve(std::move(work))) continue;
          bool complete = true;
          RuleExpr second;  // M => Y, M the other side of the stored rule, renamed like Q
          second.source.resize(b.size());
          for (size_t j = 0; j < b.size(); ++j) second.source[perm[j]] = substitute(b[j], m.bindings(), complete);
          second.target = y;
          if (!complete) continue;
          const std::string text = canonical_rule_text(second);
          auto it = by_canonical.find(text);
          if (it != by_canonical.end() && it->second != e.id && text != c.text) {
            found = Implication{{e.id, it->second}, "transitivity", ""};
            return true;
          }
        }
        return false;
      });
    }
    return found;
  }

  // The rule with a shared output or a shared context removed, if it has one.
  static std::optional<RuleExpr> strip_context(const RuleExpr& q) {
    if (q.source.size() > 1) {
      for (size_t k = 0; k < q.source.size(); ++k)
        if (to_text(q.source[k]) == to_text(q.target[k])) {
          RuleExpr r = q;
          r.source.erase(r.source.begin() + static_cast<long>(k));
          r.target.erase(r.target.begin() + static_cast<long>(k));
          return r;
        }
      return std::nullopt;
    }
    const Expr& s = q.source[0];
    const Expr& t = q.target[0];
    if (s.kind != Expr::Kind::kCall || t.kind != Expr::Kind::kCall || label(s) != label(t) ||
        s.args.size() != t.args.size())
      return std::nullopt;
    int differing = -1;
    for (size_t i = 0; i < s.args.size(); ++i)
      if (to_text(s.args[i]) != to_text(t.args[i])) {
        if (differing >= 0) return std::nullopt;
        differing = static_cast<int>(i);
      }
    if (differing < 0) return std::nullopt;
    return RuleExpr{{s.args[differing]}, {t.args[differing]}};
  }
};

ImplicationIndex::ImplicationIndex() : impl_(std::make_unique<Impl>()) {}
ImplicationIndex::~ImplicationIndex() = default;
ImplicationIndex::ImplicationIndex(ImplicationIndex&&) noexcept = default;
ImplicationIndex& ImplicationIndex::operator=(ImplicationIndex&&) noexcept = default;

bool ImplicationIndex::add(int64_t id, const std::string& canonical, const std::string& variables) {
  Impl::Entry e{id, canonical, {}, {}, {}};
  try {
    e.rule = parse_rule_expr(canonical);
    e.shapes = parse_shape_map(variables);
  } catch (const std::exception&) {
    return false;
  }
  if (e.rule.source.size() != e.rule.target.size() || e.rule.source.empty()) return false;
  for (const auto& [name, shape] : e.shapes) impl_->kind_shapes[variable_kind(name)].insert(shape);
  e.ops = {impl_->op_counts(e.rule.source, true), impl_->op_counts(e.rule.target, true)};
  const auto index = static_cast<uint32_t>(impl_->entries.size());
  impl_->by_canonical.emplace(canonical, id);
  for (uint8_t side = 0; side < 2; ++side) {
    const auto& a = side ? e.rule.target : e.rule.source;
    const auto& b = side ? e.rule.source : e.rule.target;
    if (a[0].kind == Expr::Kind::kVar) impl_->by_key["V|" + pattern_key(b.size(), b[0])].emplace_back(index, side);
    else impl_->by_key[pattern_key(a.size(), a[0])].emplace_back(index, side);
  }
  impl_->entries.push_back(std::move(e));
  return true;
}

size_t ImplicationIndex::size() const { return impl_->entries.size(); }

std::optional<int64_t> ImplicationIndex::find(const std::string& canonical) const {
  auto it = impl_->by_canonical.find(canonical);
  if (it == impl_->by_canonical.end()) return std::nullopt;
  return it->second;
}

ShapeMap ImplicationIndex::shapes_by_kind() const {
  ShapeMap out;
  for (const auto& [kind, shapes] : impl_->kind_shapes)
    if (shapes.size() == 1) out[kind] = *shapes.begin();
  return out;
}

std::optional<Implication> ImplicationIndex::explain(const std::string& canonical, const ShapeMap& shapes,
                                                     const std::vector<std::string>& passes) const {
  auto use = [&](const char* pass) { return passes.empty() || std::count(passes.begin(), passes.end(), pass) > 0; };
  RuleExpr rule;
  try {
    rule = parse_rule_expr(canonical);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (rule.source.size() != rule.target.size() || rule.source.empty()) return std::nullopt;
  const Canonical c = canonicalize(rule, shapes);
  rule = parse_rule_expr(c.text);  // the names `c.shapes` uses
  if (use("substitution"))
    if (auto found = impl_->substitution(rule, c)) return found;
  if (use("common supergraph")) {
    // Remove shared context step by step; each smaller rule may be stored
    // or follow by substitution.
    RuleExpr smaller = rule;
    ShapeMap smaller_shapes = c.shapes;
    while (auto stripped = Impl::strip_context(smaller)) {
      const Canonical s = canonicalize(*stripped, smaller_shapes);
      if (s.text == c.text) break;
      if (auto id = find(s.text); id && s.text != canonical)
        return Implication{{*id}, "common supergraph", "the context around " + s.text};
      smaller = parse_rule_expr(s.text);
      smaller_shapes = s.shapes;
      if (use("substitution"))
        if (auto found = impl_->substitution(smaller, s)) {
          found->pass = "common supergraph + substitution";
          found->detail = "the context around " + s.text + (found->detail.empty() ? "" : "; " + found->detail);
          return found;
        }
    }
  }
  if (use("transitivity"))
    if (auto found = impl_->transitivity(rule, c)) return found;
  return std::nullopt;
}

std::optional<ShapeMap> shapes_from_kinds(const std::string& canonical, const ShapeMap& by_kind) {
  const RuleExpr rule = parse_rule_expr(canonical);
  std::vector<std::string> names;
  for (const Expr& e : rule.source) collect_variables(e, names);
  for (const Expr& e : rule.target) collect_variables(e, names);
  ShapeMap out;
  for (const auto& n : names) {
    auto it = by_kind.find(variable_kind(n));
    if (it == by_kind.end()) return std::nullopt;
    out[n] = it->second;
  }
  return out;
}

}  // namespace tgr
