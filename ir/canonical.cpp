#include "ir/canonical.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

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
// is copied): each kind counts on from 0. A rule has a handful of
// variables, so they are kept in a short list, not a map.
class FirstAppearance {
 public:
  const std::string& operator()(const std::string& name) {
    for (const auto& [from, to] : names_)
      if (from == name) return to;
    const std::string kind = variable_kind(name);
    int count = 0;
    for (const auto& [from, to] : names_)
      if (to.size() > kind.size() && to.compare(0, kind.size(), kind) == 0 &&
          !std::isalpha(static_cast<unsigned char>(to[kind.size()])))
        ++count;
    names_.emplace_back(name, kind + std::to_string(count));
    return names_.back().second;
  }
  std::map<std::string, std::string> names() const { return {names_.begin(), names_.end()}; }
  // The same variables named alike (whatever order they were met in).
  bool same_as(const FirstAppearance& other) const {
    if (names_.size() != other.names_.size()) return false;
    for (const auto& entry : names_)
      if (std::find(other.names_.begin(), other.names_.end(), entry) == other.names_.end()) return false;
    return true;
  }

 private:
  // Old name, new name; a reference returned stays valid until the next call.
  std::vector<std::pair<std::string, std::string>> names_;
};

// Applies (or, applied again, undoes) the argument swaps that `mask` selects
// among `nodes`. Swapping a node's arguments moves its subtrees to other
// addresses, so swaps go children first (reverse pre-order) and are undone
// parents first: every pointer in `nodes` is valid when it is used.
void swap_arguments(const std::vector<Expr*>& nodes, uint64_t mask) {
  for (size_t i = nodes.size(); i-- > 0;)
    if ((mask >> i & 1) != 0) std::swap(nodes[i]->args[0], nodes[i]->args[1]);
}
void unswap_arguments(const std::vector<Expr*>& nodes, uint64_t mask) {
  for (size_t i = 0; i < nodes.size(); ++i)
    if ((mask >> i & 1) != 0) std::swap(nodes[i]->args[0], nodes[i]->args[1]);
}

// The smallest renamed text of a rule's two sides over all argument orders
// of their commutative nodes, as the plain search over every combined mask
// finds it (smallest_text), in fewer renderings: the source side's text
// comes first in the rule's, so only the source orders giving the smallest
// source text need to be tried with each target order. That holds when the
// smallest source text is no proper prefix of another (then the source
// texts alone decide between those that differ); std::nullopt when it is.
// Of equal texts the one of the smallest combined mask (source bits low)
// gives `renaming`, as in the plain search.
std::optional<std::string> smallest_rule_text(std::vector<Expr>& source, std::vector<Expr>& target,
                                              std::map<std::string, std::string>* renaming) {
  std::vector<Expr*> source_nodes, target_nodes;
  collect_commutative(source, source_nodes);
  collect_commutative(target, target_nodes);
  if (source_nodes.size() + target_nodes.size() > 16) return std::nullopt;  // the plain search caps the nodes
  struct SourceOrder {
    uint64_t mask;
    FirstAppearance renamer;  // after the source side
  };
  std::vector<SourceOrder> best_sources;
  std::string best_source;
  std::vector<std::string> source_texts;
  for (uint64_t mask = 0; mask < (uint64_t{1} << source_nodes.size()); ++mask) {
    swap_arguments(source_nodes, mask);
    FirstAppearance renamer;
    std::string text;
    append_text(source, text, std::ref(renamer));
    unswap_arguments(source_nodes, mask);
    if (best_sources.empty() || text < best_source) {
      best_sources.clear();
      best_source = text;
    }
    // Orders that name the variables alike give the same target texts: the
    // first (smallest mask) stands for them.
    if (text == best_source && std::none_of(best_sources.begin(), best_sources.end(),
                                            [&](const SourceOrder& o) { return o.renamer.same_as(renamer); }))
      best_sources.push_back({mask, std::move(renamer)});
    source_texts.push_back(std::move(text));
  }
  for (const std::string& text : source_texts)
    if (text.size() > best_source.size() && text.compare(0, best_source.size(), best_source) == 0) return std::nullopt;
  std::string best_target;
  bool found = false;
  // Combined masks in increasing order: target bits high, source bits low.
  for (uint64_t mask = 0; mask < (uint64_t{1} << target_nodes.size()); ++mask) {
    swap_arguments(target_nodes, mask);
    for (const SourceOrder& order : best_sources) {
      FirstAppearance renamer = order.renamer;
      std::string text;
      append_text(target, text, std::ref(renamer));
      if (!found || text < best_target) {
        found = true;
        best_target = std::move(text);
        if (renaming) *renaming = renamer.names();
      }
    }
    unswap_arguments(target_nodes, mask);
  }
  return best_source + " => " + best_target;
}

// The smallest renamed text over all argument orders of commutative nodes of
// `sides` (one side for a graph, two for a rule, renamed together; left as
// they were). `renaming`, when given, receives the renaming of the smallest
// text.
std::string smallest_text(std::vector<std::vector<Expr>>& sides, bool commutative = true,
                          std::map<std::string, std::string>* renaming = nullptr) {
  if (commutative && sides.size() == 2)
    if (auto text = smallest_rule_text(sides[0], sides[1], renaming)) return *std::move(text);
  std::vector<Expr*> nodes;
  if (commutative)
    for (auto& side : sides) collect_commutative(side, nodes);
  // 2^k orders; rules from the generator have few commutative nodes. Past
  // 16, fall back to one order (still a deterministic, valid form).
  nodes.resize(std::min<size_t>(nodes.size(), 16));
  std::string best;
  for (uint64_t mask = 0; mask < (uint64_t{1} << nodes.size()); ++mask) {
    swap_arguments(nodes, mask);
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
    unswap_arguments(nodes, mask);
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
    std::vector<std::vector<Expr>> sides;
    sides.push_back(reordered(outputs, order));
    std::string text = smallest_text(sides);
    if (best.empty() || text < best) best = std::move(text);
  });
  return best;
}

std::string canonical_rule_text(RuleExpr rule, bool allow_swap, bool commutative,
                                std::map<std::string, std::string>* renaming) {
  for (Expr& e : rule.source) normalize_params(e);
  for (Expr& e : rule.target) normalize_params(e);
  std::string best;
  // One order of the outputs: the sides as they are (most rules, and the
  // generator's hot path: no copies).
  auto consider = [&](std::vector<std::vector<Expr>>& sides) {
    std::map<std::string, std::string> names, swapped_names;
    std::string text = smallest_text(sides, commutative, renaming ? &names : nullptr);
    if (allow_swap) {
      std::swap(sides[0], sides[1]);
      std::string swapped = smallest_text(sides, commutative, renaming ? &swapped_names : nullptr);
      std::swap(sides[0], sides[1]);
      if (swapped < text) {
        text = std::move(swapped);
        names = std::move(swapped_names);
      }
    }
    if (best.empty() || text < best) {
      best = std::move(text);
      if (renaming) *renaming = std::move(names);
    }
  };
  if (rule.source.size() <= 1) {
    std::vector<std::vector<Expr>> sides;
    sides.push_back(std::move(rule.source));
    sides.push_back(std::move(rule.target));
    consider(sides);
    return best;
  }
  // Outputs are matched by position, so permuting both tuples alike is the
  // same rule.
  for_each_output_order(rule.source.size(), [&](const std::vector<size_t>& order) {
    std::vector<std::vector<Expr>> sides;
    sides.push_back(reordered(rule.source, order));
    sides.push_back(reordered(rule.target, order));
    consider(sides);
  });
  return best;
}

std::string canonical_rule_text(std::string_view text, bool allow_swap) {
  return canonical_rule_text(parse_rule_expr(text), allow_swap);
}

}  // namespace tgr
