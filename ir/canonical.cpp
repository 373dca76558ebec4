#include "ir/canonical.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace tgr {

void normalize_params(Expr& e) {
  if (e.kind != Expr::Kind::kCall) return;
  const OpDef& op = OpTable::instance().get(e.name);
  const Params full = op.make_params(e.params);
  e.params.clear();
  for (const auto& [key, value] : full.entries()) {
    const ParamSpec* spec = op.find_param(key);
    if (!(spec->default_value && *spec->default_value == value)) e.params.emplace_back(key, value);
  }
  for (Expr& a : e.args) normalize_params(a);
}

namespace {

// The commutative nodes of a tuple, in a fixed traversal order.
void collect_commutative(std::vector<Expr>& exprs, std::vector<Expr*>& out) {
  for (Expr& e : exprs) {
    if (e.kind != Expr::Kind::kCall) continue;
    const OpDef& op = OpTable::instance().get(e.name);
    if (op.commutative && e.args.size() == 2) out.push_back(&e);
    collect_commutative(e.args, out);
  }
}

}  // namespace

std::string variable_kind(std::string_view name) {
  size_t n = 0;
  while (n < name.size() && std::isalpha(static_cast<unsigned char>(name[n]))) ++n;
  return std::string(name.substr(0, n));
}

namespace {

// Renames variables by order of first appearance while printing (no tree
// is copied): each kind counts on from 0.
class FirstAppearance {
 public:
  const std::string& operator()(const std::string& name) {
    auto it = names_.find(name);
    if (it == names_.end()) {
      const std::string kind = variable_kind(name);
      it = names_.emplace(name, kind + std::to_string(counters_[kind]++)).first;
    }
    return it->second;
  }
  const std::map<std::string, std::string>& names() const { return names_; }

 private:
  std::map<std::string, std::string> names_;
  std::map<std::string, int> counters_;
};

// The smallest renamed text over all argument orders of commutative nodes of
// `sides` (one side for a graph, two for a rule, renamed together).
// `renaming`, when given, receives the renaming of the smallest text.
std::string smallest_text(std::vector<std::vector<Expr>> sides, bool commutative = true,
                          std::map<std::string, std::string>* renaming = nullptr) {
  std::vector<Expr*> nodes;
  if (commutative)
    for (auto& side : sides) collect_commutative(side, nodes);
  // 2^k orders; rules from the generator have few commutative nodes. Past
  // 16, fall back to one order (still a deterministic, valid form).
  const size_t k = std::min<size_t>(nodes.size(), 16);
  std::string best;
  // Swapping a node's arguments moves its subtrees to other addresses, so
  // swaps go children first (reverse pre-order) and are undone parents first:
  // every pointer in `nodes` is valid when it is used.
  for (uint64_t mask = 0; mask < (uint64_t{1} << k); ++mask) {
    for (size_t i = k; i-- > 0;)
      if ((mask >> i & 1) != 0) std::swap(nodes[i]->args[0], nodes[i]->args[1]);
    FirstAppearance renamer;
    const VariableRenamer rename = std::ref(renamer);
    std::string text;
    append_text(sides[0], text, rename);
    if (sides.size() > 1) {
      text += " => ";
      append_text(sides[1], text, rename);
    }
    if (best.empty() || text < best) {
      best = text;
      if (renaming) *renaming = renamer.names();
    }
    for (size_t i = 0; i < k; ++i)  // undo
      if ((mask >> i & 1) != 0) std::swap(nodes[i]->args[0], nodes[i]->args[1]);
  }
  return best;
}

}  // namespace

// Calls f(order) for every order of n outputs (one order past 5 outputs).
template <class F>
void for_each_output_order(size_t n, F f) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  if (n > 5) {
    f(order);
    return;
  }
  do f(order);
  while (std::next_permutation(order.begin(), order.end()));
}

std::vector<Expr> reordered(const std::vector<Expr>& exprs, const std::vector<size_t>& order) {
  std::vector<Expr> out;
  for (size_t i : order) out.push_back(exprs[i]);
  return out;
}

std::string canonical_text(std::vector<Expr> outputs) {
  for (Expr& e : outputs) normalize_params(e);
  // The outputs of a graph are a set: any order is the same graph.
  std::string best;
  for_each_output_order(outputs.size(), [&](const std::vector<size_t>& order) {
    std::string text = smallest_text({reordered(outputs, order)});
    if (best.empty() || text < best) best = std::move(text);
  });
  return best;
}

std::string canonical_rule_text(RuleExpr rule, bool allow_swap, bool commutative,
                                std::map<std::string, std::string>* renaming) {
  for (Expr& e : rule.source) normalize_params(e);
  for (Expr& e : rule.target) normalize_params(e);
  // Outputs are matched by position, so permuting both tuples alike is the
  // same rule.
  std::string best;
  for_each_output_order(rule.source.size(), [&](const std::vector<size_t>& order) {
    const std::vector<Expr> source = reordered(rule.source, order), target = reordered(rule.target, order);
    std::map<std::string, std::string> names, swapped_names;
    std::string text = smallest_text({source, target}, commutative, &names);
    if (allow_swap) {
      std::string swapped = smallest_text({target, source}, commutative, &swapped_names);
      if (swapped < text) {
        text = std::move(swapped);
        names = std::move(swapped_names);
      }
    }
    if (best.empty() || text < best) {
      best = std::move(text);
      if (renaming) *renaming = std::move(names);
    }
  });
  return best;
}

std::string canonical_rule_text(std::string_view text, bool allow_swap) {
  return canonical_rule_text(parse_rule_expr(text), allow_swap);
}

}  // namespace tgr
