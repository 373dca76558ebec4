#include "generator/composition.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "generator/derivation_run.h"
#include "ir/canonical.h"
#include "ir/op_def.h"
#include "ir/shape.h"
#include "ir/text.h"
#include "rules_db/rules_db.h"

namespace tgr::gen {

namespace {

using Subst = std::map<std::string, Expr>;

// A rule read in one direction, its variables renamed apart: kind letters
// kept, numbered from `base` (x0, k0 -> x100, k101 for base 100).
struct Oriented {
  std::vector<Expr> lhs, rhs;
  ShapeMap shapes;
};

void rename_vars(Expr& e, std::map<std::string, std::string>& names, int base) {
  if (e.kind == Expr::Kind::kVar) {
    auto [it, fresh] = names.try_emplace(e.name);
    if (fresh) it->second = variable_kind(e.name) + std::to_string(base + static_cast<int>(names.size()) - 1);
    e.name = it->second;
    return;
  }
  normalize_params(e);
  for (Expr& a : e.args) rename_vars(a, names, base);
}

Oriented orient(const ComposableRule& r, bool reversed, int base) {
  RuleExpr re = parse_rule_expr(r.text);
  Oriented o{reversed ? re.target : re.source, reversed ? re.source : re.target, {}};
  std::map<std::string, std::string> names;
  for (auto* side : {&o.lhs, &o.rhs})
    for (Expr& e : *side) rename_vars(e, names, base);
  for (const auto& [name, shape] : parse_shape_map(r.shapes))
    if (auto it = names.find(name); it != names.end()) o.shapes[it->second] = shape;
  return o;
}

const Expr& walk(const Expr& e, const Subst& s) {
  const Expr* at = &e;
  while (at->kind == Expr::Kind::kVar) {
    auto it = s.find(at->name);
    if (it == s.end()) break;
    at = &it->second;
  }
  return *at;
}

bool occurs(const std::string& name, const Expr& e, const Subst& s) {
  const Expr& w = walk(e, s);
  if (w.kind == Expr::Kind::kVar) return w.name == name;
  return std::any_of(w.args.begin(), w.args.end(), [&](const Expr& a) { return occurs(name, a, s); });
}

// Every substitution extending `s` that makes `a` (a term of the earlier
// rule, A) and `b` (of the later one, B) equal, both argument orders of a
// commutative operator tried, appended to `out`. Only B's variables are
// bound (A's result is an instance of B's subterm: A's variables stay as
// they are), those numbered from kLaterBase.
constexpr int kEarlierBase = 100, kLaterBase = 200;
bool bindable(const std::string& var) {
  const size_t digits = var.find_first_of("0123456789");
  return digits != std::string::npos && std::stoi(var.substr(digits)) >= kLaterBase;
}
void unify(const Expr& a, const Expr& b, const Subst& s, std::vector<Subst>& out);

void unify_args(const std::vector<const Expr*>& as, const std::vector<const Expr*>& bs, size_t i, const Subst& s,
                std::vector<Subst>& out) {
  if (i == as.size()) {
    out.push_back(s);
    return;
  }
  std::vector<Subst> here;
  unify(*as[i], *bs[i], s, here);
  for (const Subst& t : here) unify_args(as, bs, i + 1, t, out);
}

void unify(const Expr& a0, const Expr& b0, const Subst& s, std::vector<Subst>& out) {
  const Expr& a = walk(a0, s);
  const Expr& b = walk(b0, s);
  if (b.kind == Expr::Kind::kVar || a.kind == Expr::Kind::kVar) {
    const bool bind_b = b.kind == Expr::Kind::kVar && bindable(b.name);
    const Expr& var = bind_b ? b : a;
    const Expr& val = bind_b ? a : b;
    if (val.kind == Expr::Kind::kVar && val.name == var.name) {
      out.push_back(s);
      return;
    }
    if (!bindable(var.name) || occurs(var.name, val, s)) return;
    Subst t = s;
    t[var.name] = val;
    out.push_back(std::move(t));
    return;
  }
  if (a.name != b.name || a.output != b.output || a.params != b.params || a.args.size() != b.args.size()) return;
  std::vector<const Expr*> as, bs;
  for (const Expr& x : a.args) as.push_back(&x);
  for (const Expr& x : b.args) bs.push_back(&x);
  unify_args(as, bs, 0, s, out);
  if (as.size() == 2 && OpTable::instance().get(a.name).commutative) {
    std::swap(bs[0], bs[1]);
    unify_args(as, bs, 0, s, out);
  }
}

Expr substitute(const Expr& e, const Subst& s) {
  const Expr& w = walk(e, s);
  if (w.kind == Expr::Kind::kVar) return w;
  Expr out = w;
  for (Expr& a : out.args) a = substitute(a, s);
  return out;
}

// The call subterms of a tuple, by path (output index, then argument indices).
using Path = std::vector<int>;
void call_paths(const Expr& e, Path& at, std::vector<Path>& out) {
  if (e.kind != Expr::Kind::kCall) return;
  out.push_back(at);
  for (size_t i = 0; i < e.args.size(); ++i) {
    at.push_back(static_cast<int>(i));
    call_paths(e.args[i], at, out);
    at.pop_back();
  }
}

Expr* at_path(std::vector<Expr>& tuple, const Path& p) {
  Expr* e = &tuple[p[0]];
  for (size_t i = 1; i < p.size(); ++i) e = &e->args[p[i]];
  return e;
}
const Expr& at_path(const std::vector<Expr>& tuple, const Path& p) {
  const Expr* e = &tuple[p[0]];
  for (size_t i = 1; i < p.size(); ++i) e = &e->args[p[i]];
  return *e;
}

bool nested(const Path& a, const Path& b) {  // one is a prefix of the other (or equal)
  const size_t n = std::min(a.size(), b.size());
  return std::equal(a.begin(), a.begin() + n, b.begin());
}

int count_calls(const std::vector<Expr>& tuple) {
  std::set<std::string> nodes;
  std::function<void(const Expr&)> walk_calls = [&](const Expr& e) {
    if (e.kind != Expr::Kind::kCall) return;
    nodes.insert(to_text(e));
    for (const Expr& a : e.args) walk_calls(a);
  };
  for (const Expr& e : tuple) walk_calls(e);
  return static_cast<int>(nodes.size());
}

void collect_tuple_vars(const std::vector<Expr>& tuple, std::vector<std::string>& names) {
  for (const Expr& e : tuple) collect_variables(e, names);
}

// The multi-output calls `e` selects an output of, as text without the
// selector (split(z).0 and split(z).1 read one split).
void call_texts(const Expr& e, std::set<std::string>& out) {
  if (e.kind != Expr::Kind::kCall) return;
  if (e.output >= 0) {
    Expr head = e;
    head.output = -1;
    out.insert(to_text(head));
  }
  for (const Expr& a : e.args) call_texts(a, out);
}

// A side whose outputs (two or more) are pieces of one computation: each
// reads an output of one multi-output call common to all of them.
bool shares_a_call(const std::vector<Expr>& side) {
  if (side.size() < 2) return false;
  std::set<std::string> common;
  call_texts(side[0], common);
  for (size_t k = 1; k < side.size() && !common.empty(); ++k) {
    std::set<std::string> here, both;
    call_texts(side[k], here);
    std::set_intersection(common.begin(), common.end(), here.begin(), here.end(), std::inserter(both, both.begin()));
    common = std::move(both);
  }
  return !common.empty();
}

// The composite for one choice of positions and unifier, or nothing when it
// fails a check.
std::optional<ComposedRule> build_composite(const Oriented& a, const Oriented& b, const std::vector<Path>& where,
                                            const Subst& s, int max_ops, uint64_t seed) {
  std::vector<Expr> lhs = b.lhs;
  for (size_t j = 0; j < where.size(); ++j) *at_path(lhs, where[j]) = a.lhs[j];
  for (Expr& e : lhs) e = substitute(e, s);
  std::vector<Expr> rhs;
  for (const Expr& e : b.rhs) rhs.push_back(substitute(e, s));
  if (count_calls(lhs) > max_ops || count_calls(rhs) > max_ops) return std::nullopt;
  if (!shares_a_call(lhs) && !shares_a_call(rhs)) return std::nullopt;  // not a merge
  std::vector<std::string> lv, rv;
  collect_tuple_vars(lhs, lv);
  collect_tuple_vars(rhs, rv);
  if (std::set<std::string>(lv.begin(), lv.end()) != std::set<std::string>(rv.begin(), rv.end())) return std::nullopt;
  ShapeMap shapes;
  std::string shape_text;
  for (const std::string& v : lv) {
    const ShapeMap& from = a.shapes.count(v) ? a.shapes : b.shapes;
    auto it = from.find(v);
    if (it == from.end()) return std::nullopt;
    shapes[v] = it->second;
    shape_text += (shape_text.empty() ? "" : ",") + v + "=" + shape_to_string(it->second);
  }
  const std::string text = to_text(lhs) + " => " + to_text(rhs);
  try {
    const Rule rule = build_rule(text, shapes);
    if (!rule_sides_agree(rule, seed)) return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;  // does not type-check at these shapes
  }
  return ComposedRule{text, shape_text, ""};
}

// Every choice of distinct, non-nested positions of `b.lhs`, one per output
// of `a.rhs`, at which they unify; the composites of each.
void compose_at(const Oriented& a, const Oriented& b, const std::vector<Path>& paths, std::vector<Path>& where,
                const Subst& s, int max_ops, uint64_t seed, std::vector<ComposedRule>& out) {
  const size_t j = where.size();
  if (j == a.rhs.size()) {
    if (auto c = build_composite(a, b, where, s, max_ops, seed)) out.push_back(std::move(*c));
    return;
  }
  for (const Path& p : paths) {
    if (std::any_of(where.begin(), where.end(), [&](const Path& w) { return nested(w, p); })) continue;
    std::vector<Subst> unifiers;
    unify(a.rhs[j], at_path(b.lhs, p), s, unifiers);
    for (const Subst& t : unifiers) {
      where.push_back(p);
      compose_at(a, b, paths, where, t, max_ops, seed, out);
      where.pop_back();
    }
  }
}

}  // namespace

bool is_merge_rule(const std::string& text) {
  const RuleExpr r = parse_rule_expr(text);
  return shares_a_call(r.source) || shares_a_call(r.target);
}

std::vector<ComposedRule> compose_pair(const ComposableRule& ra, const ComposableRule& rb, int max_ops, uint64_t seed) {
  std::vector<ComposedRule> out;
  for (bool a_rev : {false, true})
    for (bool b_rev : {false, true}) {
      const Oriented a = orient(ra, a_rev, kEarlierBase);
      const Oriented b = orient(rb, b_rev, kLaterBase);
      std::vector<Path> paths;
      for (size_t k = 0; k < b.lhs.size(); ++k) {
        Path at{static_cast<int>(k)};
        call_paths(b.lhs[k], at, paths);
      }
      std::vector<Path> where;
      const size_t before = out.size();
      compose_at(a, b, paths, where, {}, max_ops, seed, out);
      const auto name = [](const ComposableRule& r, bool rev) {
        std::string n = "(";
        n.append(r.how).append(")");
        if (r.id) {
          n = "#";
          n.append(std::to_string(r.id));
        }
        if (rev) n.append(" (right to left)");
        return n;
      };
      for (size_t i = before; i < out.size(); ++i) out[i].how = name(ra, a_rev) + " then " + name(rb, b_rev);
    }
  return out;
}

std::set<std::string> split_activations(const std::vector<ComposableRule>& merges) {
  std::set<std::string> out;
  for (const ComposableRule& m : merges) {
    const RuleExpr r = parse_rule_expr(m.text);
    for (const std::vector<Expr>* side : {&r.source, &r.target}) {
      const Expr& first = side->front();
      const auto is_activation_of_a_piece = [&](const Expr& e) {
        return e.kind == Expr::Kind::kCall && e.name == first.name && e.params.empty() && e.args.size() == 1 &&
               e.output < 0 && e.args[0].kind == Expr::Kind::kCall && e.args[0].output >= 0;
      };
      if (side->size() >= 2 && std::all_of(side->begin(), side->end(), is_activation_of_a_piece))
        out.insert(first.name);
    }
  }
  return out;
}

std::vector<ComposedRule> with_activation_on_one_output(const ComposableRule& rule,
                                                        const std::set<std::string>& activations, int max_ops,
                                                        uint64_t seed) {
  std::vector<ComposedRule> out;
  const RuleExpr r = parse_rule_expr(rule.text);
  const ShapeMap shapes = parse_shape_map(rule.shapes);
  for (const std::string& act : activations)
    for (size_t j = 0; j < r.source.size() && r.source.size() >= 2; ++j) {
      RuleExpr c = r;
      for (std::vector<Expr>* side : {&c.source, &c.target}) {
        Expr call;
        call.kind = Expr::Kind::kCall;
        call.name = act;
        call.args.push_back(std::move((*side)[j]));
        (*side)[j] = std::move(call);
      }
      if (count_calls(c.source) > max_ops || count_calls(c.target) > max_ops) continue;
      const std::string text = to_text(c.source) + " => " + to_text(c.target);
      try {
        if (!rule_sides_agree(build_rule(text, shapes), seed)) continue;
      } catch (const std::exception&) {
        continue;  // the activation does not apply to this output
      }
      std::string how = "(";
      how.append(rule.how.empty() ? "#" + std::to_string(rule.id) : rule.how)
          .append(") with ")
          .append(act)
          .append(" on output ")
          .append(std::to_string(j));
      out.push_back({text, rule.shapes, how});
    }
  return out;
}

namespace {

// Whether `r` was stored by an earlier `generate --compose` (its constraints
// name the chain). Composites are not composed again by a later run: how
// deep composition goes is `--rounds`' to say, and a second run adds nothing.
bool is_composite(const rules_db::RuleRecord& r) {
  const nlohmann::json c = nlohmann::json::parse(r.constraints, nullptr, false);
  return c.is_object() && c.contains("composition");
}

}  // namespace

CompositionReport generate_compositions(const CompositionOptions& options, const std::atomic<bool>& stop) {
  const auto start = std::chrono::steady_clock::now();
  rules_db::RulesDb db = rules_db::RulesDb::open(options.db, true);
  const nlohmann::json settings{
      {"compose", true}, {"rounds", options.rounds}, {"max_ops", options.max_ops}, {"seed", options.seed}};
  CompositionReport report;
  report.run = db.claim_run("generate", settings.dump(), {"generate"}).run.id;
  std::vector<ComposableRule> proved;
  std::set<std::string> known;
  for (const rules_db::RuleRecord& r : db.list_rules()) {
    known.insert(r.canonical);
    if (r.status == "proved" && r.kind == "full" && !is_composite(r) && is_merge_rule(r.rule_text()))
      proved.push_back({r.id, r.rule_text(), r.variables, ""});
  }
  report.proved_rules = static_cast<int64_t>(proved.size());
  const std::set<std::string> activations = split_activations(proved);
  std::vector<ComposableRule> fresh = proved;  // what this round composes with the proved rules
  for (int round = 0; round < options.rounds && !fresh.empty() && !stop; ++round) {
    std::vector<ComposableRule> next;
    const uint64_t seed = options.seed ^ static_cast<uint64_t>(round);
    const auto store = [&](const ComposedRule& c) {
      rules_db::RuleRecord r = rules_db::rule_record_from_text(c.text, c.shapes);
      if (r.source == r.target || !known.insert(r.canonical).second) return false;
      ++report.composites;
      r.constraints =
          nlohmann::json{{"generalizes", false}, {"reason", "composed at its rules' shapes"}, {"composition", c.how}}
              .dump();
      r.note = "composition: " + c.how;
      r.generator_run = report.run;
      report.inserted += db.insert_rules({r});
      return true;
    };
    const auto compose = [&](const ComposableRule& a, const ComposableRule& b) {
      ++report.pairs;
      for (ComposedRule& c : compose_pair(a, b, options.max_ops, seed)) {
        if (!store(c)) continue;
        next.push_back({0, c.text, c.shapes, c.how});
        // The composite with an activation of the merge rules over one of
        // its outputs, both sides (a branch that ends in relu beside one
        // that does not: ResNet's first convolution and its downsampling).
        for (const ComposedRule& one : with_activation_on_one_output(next.back(), activations, options.max_ops, seed))
          store(one);
      }
    };
    for (const ComposableRule& a : fresh) {
      if (stop) break;
      for (const ComposableRule& b : proved) {
        compose(a, b);
        if (round > 0) compose(b, a);
      }
    }
    if (options.progress)
      std::fprintf(stderr, "generate --compose: round %d: %zu rules composed with %zu proved, %zu composites\n",
                   round + 1, fresh.size(), proved.size(), next.size());
    fresh = std::move(next);
  }
  report.interrupted = stop;
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const nlohmann::json stats{{"proved_rules", report.proved_rules},
                             {"pairs", report.pairs},
                             {"composites", report.composites},
                             {"inserted", report.inserted}};
  db.finish_run(report.run, stop ? "interrupted" : "finished", stats.dump());
  return report;
}

}  // namespace tgr::gen
