#include "generator/derivation_match.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <string_view>

#include "ir/op_def.h"
#include "ir/text.h"
#include "runtime/interpreter.h"
#include "util/strings.h"

namespace tgr::gen {

using expr::Access;
using expr::TensorExpr;

namespace {

using util::cat;

// Points beyond which a stage is not matched (the derivations run at small shapes).
constexpr int64_t kMaxPoints = 4'000'000;

std::string dims(const Shape& s) {
  std::string out;
  for (int64_t d : s) out += cat(out.empty() ? "" : "x", std::to_string(d));
  return out;
}

using TextOf = std::function<std::string(const std::string& x)>;

bool power_of_two(int64_t n) { return n >= 2 && (n & (n - 1)) == 0; }

// Piece `index` of `count` (a power of two) equal pieces of x along `axis`
// (of size `size`), as a half of a half...: the form the axioms about
// halves (conv2d_split_channels, ...) prove.
std::string nested_piece(const std::string& x, size_t axis, int64_t size, int64_t count, int64_t index) {
  std::string t = x;
  for (; count > 1; count /= 2) {
    size /= 2;
    const int64_t second = index >= count / 2 ? 1 : 0;
    const std::string half = std::to_string(size);
    t = cat("split[axis=", std::to_string(axis), ", sizes=", half, "x", half, "](", t, ").", std::to_string(second));
    index -= second * (count / 2);
  }
  return t;
}

// Pieces lo..hi-1 concatenated along `axis` in a balanced tree of pairs.
std::string nested_concat(const std::function<std::string(int64_t)>& piece, size_t axis, int64_t lo, int64_t hi) {
  if (hi - lo == 1) return piece(lo);
  const int64_t mid = lo + (hi - lo) / 2;
  return cat("concat[axis=", std::to_string(axis), "](", nested_concat(piece, axis, lo, mid), ", ",
             nested_concat(piece, axis, mid, hi), ")");
}

// A piece of x along `a`: halves of halves where the piece is one of a
// power of two, then as one split of up to three pieces.
void add_pieces(std::vector<TextOf>& out, const Shape& from, const Shape& to, size_t a) {
  const int64_t count = to[a] > 0 && from[a] % to[a] == 0 ? from[a] / to[a] : 0;
  if (power_of_two(count))
    for (int64_t k = 0; k < count; ++k)
      out.push_back([a, size = from[a], count, k](const std::string& x) { return nested_piece(x, a, size, count, k); });
  for (int64_t off = 0; off + to[a] <= from[a]; ++off) {
    Shape sizes;
    for (int64_t s : {off, to[a], from[a] - off - to[a]})
      if (s > 0) sizes.push_back(s);
    const int piece = off > 0 ? 1 : 0;
    out.push_back([a, sizes, piece](const std::string& x) {
      return cat("split[axis=", std::to_string(a), ", sizes=", dims(sizes), "](", x, ").", std::to_string(piece));
    });
  }
}

// x's pieces along b stacked along a: in a tree of halves for a power of
// two, then as one concat of one split's pieces.
void add_restacks(std::vector<TextOf>& out, const Shape& from, const Shape& to, size_t a, size_t b) {
  if (b == a || from[a] == 0 || to[a] % from[a] != 0) return;
  const int64_t parts = to[a] / from[a];
  Shape moved = from;
  moved[a] *= parts;
  if (parts < 2 || from[b] != to[b] * parts) return;
  moved[b] = to[b];
  if (moved != to) return;
  if (power_of_two(parts) && parts > 2)
    out.push_back([a, b, parts, size = from[b]](const std::string& x) {
      return nested_concat([&](int64_t k) { return nested_piece(x, b, size, parts, k); }, a, 0, parts);
    });
  out.push_back([a, b, parts, piece = to[b]](const std::string& x) {
    const std::string split =
        cat("split[axis=", std::to_string(b), ", sizes=", dims(Shape(static_cast<size_t>(parts), piece)), "](", x, ")");
    std::string args;
    for (int64_t k = 0; k < parts; ++k) args += cat(k ? ", " : "", split, ".", std::to_string(k));
    return cat("concat[axis=", std::to_string(a), "](", args, ")");
  });
}

// Layout chains that turn a tensor of shape `from` into one of shape `to`.
std::vector<TextOf> layout_candidates(const Shape& from, const Shape& to) {
  std::vector<TextOf> out;
  const size_t rank = from.size();
  if (num_elements(from) == num_elements(to) && from != to)
    out.push_back([to](const std::string& x) { return cat("reshape[shape=", dims(to), "](", x, ")"); });
  if (rank == to.size() && rank >= 2) {
    std::vector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    while (std::next_permutation(perm.begin(), perm.end())) {
      Shape permuted;
      for (int64_t a : perm) permuted.push_back(from[static_cast<size_t>(a)]);
      if (permuted != to) continue;
      if (std::is_sorted(perm.rbegin(), perm.rend()))  // the reversal: the default, as canonical text writes it
        out.push_back([](const std::string& x) { return cat("transpose(", x, ")"); });
      else out.push_back([perm](const std::string& x) { return cat("transpose[perm=", dims(perm), "](", x, ")"); });
    }
  }
  if (rank != to.size()) return out;
  for (size_t a = 0; a < rank; ++a) {
    Shape rest_from = from, rest_to = to;
    rest_from[a] = rest_to[a] = 0;
    if (rest_from == rest_to && from[a] > to[a]) add_pieces(out, from, to, a);
    for (size_t b = 0; b < rank; ++b) add_restacks(out, from, to, a, b);
  }
  return out;
}

// Whether the chain's element i is x's element map[i], read off the
// interpreter on x numbered 1.. (0 marks a zero).
bool agrees(const std::vector<int64_t>& map, const Shape& from, const Shape& to, const std::string& text) {
  try {
    const Graph g = build_graph(text, ShapeMap{{"x", from}});
    Tensor<double> x(from);
    for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = static_cast<double>(i + 1);
    const std::vector<Tensor<double>> y = evaluate<double>(g, std::span<const Tensor<double>>(&x, 1));
    if (y.size() != 1 || y[0].shape != to) return false;
    for (size_t i = 0; i < map.size(); ++i)
      if (map[i] != -2 && y[0].data[i] != static_cast<double>(map[i] + 1)) return false;
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// Calls f(at) for every point of the iteration space; false when it is too large or f says stop.
bool for_each_point(const std::vector<expr::Iterator>& its, const std::function<bool(const std::vector<int64_t>&)>& f) {
  int64_t points = 1;
  for (const expr::Iterator& it : its) {
    if (it.range <= 0) return true;
    points *= it.range;
    if (points > kMaxPoints) return false;
  }
  std::vector<int64_t> at(its.size(), 0);
  for (;;) {
    if (!f(at)) return false;
    size_t k = its.size();
    while (k > 0 && ++at[k - 1] == its[k - 1].range) at[--k] = 0;
    if (k == 0) return true;
  }
}

struct Operand {
  int read = -1;             // the stage's input that the operand re-lays out
  std::vector<int64_t> map;  // operand element -> that input's element (-1 zero, -2 never read)
};

// Pairs (template term, factor) -> (stage term, factor): every permutation of terms and of factors within them.
void pairings(const TensorExpr& t, const TensorExpr& s, size_t term, std::vector<std::vector<std::pair<int, int>>>& cur,
              std::vector<int>& used, std::vector<std::vector<std::vector<std::pair<int, int>>>>& out) {
  if (term == t.terms.size()) {
    out.push_back(cur);
    return;
  }
  for (size_t st = 0; st < s.terms.size(); ++st) {
    if (used[st] || s.terms[st].factors.size() != t.terms[term].factors.size()) continue;
    std::vector<int> perm(s.terms[st].factors.size());
    std::iota(perm.begin(), perm.end(), 0);
    used[st] = 1;
    do {
      cur.push_back({});
      for (int f : perm) cur.back().push_back({static_cast<int>(st), f});
      pairings(t, s, term + 1, cur, used, out);
      cur.pop_back();
    } while (std::next_permutation(perm.begin(), perm.end()));
    used[st] = 0;
  }
}

// The operands' index maps when the template (iterator x = stage iterator
// sigma[x], factors paired as given) reads what the stage reads; none when
// no operand can make them agree.
std::optional<std::vector<Operand>> operands(const TensorExpr& s, const TensorExpr& t, const std::vector<int>& sigma,
                                             const std::vector<std::vector<std::pair<int, int>>>& pairing) {
  std::vector<Operand> ops(t.inputs.size());
  for (size_t q = 0; q < ops.size(); ++q) ops[q].map.assign(static_cast<size_t>(num_elements(t.inputs[q])), -2);
  std::vector<int64_t> at_s(s.iterators.size(), 0);
  const bool ok = for_each_point(t.iterators, [&](const std::vector<int64_t>& at_t) {
    for (size_t x = 0; x < at_t.size(); ++x) at_s[static_cast<size_t>(sigma[x])] = at_t[x];
    for (size_t term = 0; term < t.terms.size(); ++term)
      for (size_t f = 0; f < t.terms[term].factors.size(); ++f) {
        const Access& at = t.terms[term].factors[f];
        const auto [st, sf] = pairing[term][f];
        const Access& as = s.terms[static_cast<size_t>(st)].factors[static_cast<size_t>(sf)];
        Operand& op = ops[static_cast<size_t>(at.tensor)];
        if (op.read >= 0 && op.read != as.tensor) return false;
        op.read = as.tensor;
        const int64_t pt = expr::element_position(at, t.inputs[static_cast<size_t>(at.tensor)], at_t);
        const int64_t ps = expr::element_position(as, s.inputs[static_cast<size_t>(as.tensor)], at_s);
        if (pt < 0) {
          if (ps >= 0) return false;
          continue;
        }
        int64_t& m = op.map[static_cast<size_t>(pt)];
        if (m == -2) m = ps;
        else if (m != ps) return false;
      }
    return true;
  });
  if (!ok) return std::nullopt;
  return ops;
}

std::string call_text(const OpDef& op, const Params& params, const std::vector<std::string>& args) {
  std::string text = op.name, shown;
  for (const ParamSpec& spec : op.params)
    if (!spec.default_value || !(*spec.default_value == params.get(spec.name)))
      shown += cat(shown.empty() ? "" : ", ", spec.name, "=", param_value_to_string(params.get(spec.name)));
  if (!shown.empty()) text += cat("[", shown, "]");
  text += "(";
  for (size_t k = 0; k < args.size(); ++k) text += cat(k ? ", " : "", args[k]);
  return text + ")";
}

struct Matcher {
  const Program& p;
  const std::vector<std::string>& input_names;
  const Params* like;
  std::map<int, std::optional<std::string>> memo;

  std::optional<std::string> text_of(int tensor) {
    if (tensor < 0) return input_names[static_cast<size_t>(-1 - tensor)];
    if (auto it = memo.find(tensor); it != memo.end()) return it->second;
    return memo[tensor] = stage_text(tensor);
  }

  std::optional<std::string> stage_text(int stage) {
    const Stage& st = p.stages[static_cast<size_t>(stage)];
    const TensorExpr& e = st.expr;
    if (e.num_out == static_cast<int>(e.iterators.size()) && e.terms.size() == 1 && e.terms[0].factors.size() == 1 &&
        !e.unary)
      return layout_text(st);
    return compute_text(st);
  }

  std::optional<std::string> layout_text(const Stage& st) {
    const TensorExpr& e = st.expr;
    const Access& a = e.terms[0].factors[0];
    std::vector<int64_t> map;
    if (!for_each_point(e.iterators, [&](const std::vector<int64_t>& at) {
          map.push_back(expr::element_position(a, e.inputs[static_cast<size_t>(a.tensor)], at));
          return true;
        }))
      return std::nullopt;
    const std::optional<std::string> x = text_of(st.reads[static_cast<size_t>(a.tensor)]);
    if (!x) return std::nullopt;
    return match_layout(map, e.inputs[static_cast<size_t>(a.tensor)], e.output_shape(), *x);
  }

  std::optional<std::string> compute_text(const Stage& st) {
    const TensorExpr& e = st.expr;
    expr::InstanceQuery query{.out_ranges = e.output_shape(), .sum_ranges = {}, .read_shapes = e.inputs, .like = like};
    for (size_t x = static_cast<size_t>(e.num_out); x < e.iterators.size(); ++x)
      query.sum_ranges.push_back(e.iterators[x].range);
    for (const OpDef* op : OpTable::instance().all()) {
      const expr::ExpressionHooks* hooks = expr::expression_hooks(*op);
      if (!hooks || !hooks->instances) continue;
      for (const expr::Instance& inst : hooks->instances(query))
        if (auto text = instance_text(st, *op, *hooks, inst)) return text;
    }
    return std::nullopt;
  }

  std::optional<std::string> instance_text(const Stage& st, const OpDef& op, const expr::ExpressionHooks& hooks,
                                           const expr::Instance& inst) {
    const TensorExpr& e = st.expr;
    std::vector<Shape> out_shapes;
    try {
      out_shapes = op.output_shapes(inst.params, inst.inputs);
    } catch (const std::exception&) {
      return std::nullopt;
    }
    const std::vector<DType> floats(inst.inputs.size(), DType::kFloat);
    const TensorExpr t = hooks.expression(OpCall{op, inst.params, inst.inputs, floats, out_shapes}, 0);
    if (t.output_shape() != e.output_shape() || t.unary != e.unary || t.terms.size() != e.terms.size() ||
        t.iterators.size() != e.iterators.size())
      return std::nullopt;
    std::vector<int> sigma(e.iterators.size());
    std::iota(sigma.begin(), sigma.end(), 0);
    std::vector<std::vector<std::vector<std::pair<int, int>>>> all;
    std::vector<std::vector<std::pair<int, int>>> cur;
    std::vector<int> used(e.terms.size(), 0);
    pairings(t, e, 0, cur, used, all);
    do {  // summation iterators: every bijection of equal ranges
      bool ranges = true;
      for (size_t x = 0; x < sigma.size(); ++x)
        ranges = ranges && t.iterators[x].range == e.iterators[static_cast<size_t>(sigma[x])].range;
      if (!ranges) continue;
      for (const auto& pairing : all)
        if (auto ops = operands(e, t, sigma, pairing))
          if (auto text = call_with(st, op, inst, *ops)) return text;
    } while (std::next_permutation(sigma.begin() + e.num_out, sigma.end()));
    return std::nullopt;
  }

  std::optional<std::string> call_with(const Stage& st, const OpDef& op, const expr::Instance& inst,
                                       const std::vector<Operand>& ops) {
    std::vector<std::string> args;
    for (size_t q = 0; q < ops.size(); ++q) {
      if (ops[q].read < 0) return std::nullopt;
      const std::optional<std::string> x = text_of(st.reads[static_cast<size_t>(ops[q].read)]);
      if (!x) return std::nullopt;
      auto arg = match_layout(ops[q].map, st.expr.inputs[static_cast<size_t>(ops[q].read)], inst.inputs[q], *x);
      if (!arg) return std::nullopt;
      args.push_back(*arg);
    }
    return call_text(op, inst.params, args);
  }
};

}  // namespace

std::optional<std::string> match_layout(const std::vector<int64_t>& map, const Shape& from, const Shape& to,
                                        const std::string& x) {
  if (static_cast<int64_t>(map.size()) != num_elements(to)) return std::nullopt;
  if (from == to) {
    bool same = true;
    for (size_t i = 0; i < map.size() && same; ++i) same = map[i] == -2 || map[i] == static_cast<int64_t>(i);
    if (same) return x;
  }
  for (const TextOf& make : layout_candidates(from, to))
    if (agrees(map, from, to, make("x"))) return make(x);
  return std::nullopt;
}

std::optional<std::string> match_program(const Program& p, const std::vector<std::string>& input_names,
                                         const Params* like) {
  Matcher m{p, input_names, like, {}};
  return m.text_of(p.output);
}

}  // namespace tgr::gen
