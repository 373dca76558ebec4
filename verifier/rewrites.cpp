#include "verifier/rewrites.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <set>

#include "verifier/conditions.h"

namespace tgr::verifier {

using axioms::Axiom;
using axioms::Condition;
using axioms::Term;

namespace {

void collect_symbols(const Expr& e, std::set<std::string>& out) {
  if (e.kind == Expr::Kind::kVar) return;
  for (const auto& [key, value] : e.params)
    for (const std::string& s : axioms::symbols_of(value)) out.insert(s);
  for (const Expr& a : e.args) collect_symbols(a, out);
}

void collect_term_params(const Term& t, std::set<std::string>& out) {
  if (t.op == Term::Op::kParam) out.insert(t.name);
  for (const Term& a : t.args) collect_term_params(a, out);
}

// Whether a variable of `kind` was validated at `rank` (axioms::kind_shapes).
// Asked at every variable of every match: the ranks of each kind are
// gathered once, as a bit per rank.
bool validated_rank(axioms::Kind kind, size_t rank) {
  static const std::array<uint64_t, 6> kRanks = [] {
    std::array<uint64_t, 6> ranks{};
    for (size_t k = 0; k < ranks.size(); ++k)
      for (const Shape& s : axioms::kind_shapes(static_cast<axioms::Kind>(k))) ranks[k] |= uint64_t{1} << s.size();
    return ranks;
  }();
  return rank < 64 && (kRanks.at(static_cast<size_t>(kind)) >> rank & 1);
}

// What a match has bound so far, indexed like the axiom's variables and parameters.
struct Match {
  explicit Match(const Axiom& ax)
      : vars(ax.variables.size()), var_shape(ax.variables.size()), param(ax.params.size()),
        param_bound(ax.params.size(), false) {}
  std::vector<std::optional<ValueRef>> vars;
  std::vector<Shape> var_shape;
  std::vector<ParamValue> param;
  std::vector<bool> param_bound;
};

int index_of_var(const Axiom& ax, std::string_view name) {
  for (size_t i = 0; i < ax.variables.size(); ++i)
    if (ax.variables[i].name == name) return static_cast<int>(i);
  return -1;
}

int index_of_param(const Axiom& ax, std::string_view name) {
  for (size_t i = 0; i < ax.params.size(); ++i)
    if (ax.params[i].name == name) return static_cast<int>(i);
  return -1;
}

bool bind_param(const Axiom& ax, Match& m, std::string_view name, ParamValue value) {
  const int p = index_of_param(ax, name);
  if (p < 0) return false;
  if (m.param_bound[p]) return m.param[p] == value;
  m.param[p] = std::move(value);
  m.param_bound[p] = true;
  return true;
}

// Binds the parameters named in a symbolic value ("A", "S1xS2", "KHxKW") to
// the pieces of a term's concrete value.
bool bind_symbols(const Axiom& ax, Match& m, const std::string& raw, const ParamValue& value) {
  const std::vector<std::string_view> tokens = axioms::value_tokens(raw);
  if (tokens.size() == 1) return bind_param(ax, m, tokens[0], value);
  const auto* list = std::get_if<std::vector<int64_t>>(&value);
  if (!list || list->size() != tokens.size()) return false;
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string_view t = tokens[i];
    if (axioms::is_param_name(t)) {
      if (!bind_param(ax, m, t, (*list)[i])) return false;
    } else {
      int64_t literal = 0;
      auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), literal);
      if (ec != std::errc() || ptr != t.data() + t.size() || literal != (*list)[i]) return false;
    }
  }
  return true;
}

// Structural match of `e` at `v`: operators, output selectors, arities,
// repeated variables, symbolic parameters. Concrete parameters are checked
// afterwards, when the pattern is rebuilt from the bindings.
bool match(const Axiom& ax, const Expr& e, const Graph& g, ValueRef v, Match& m) {
  if (e.kind == Expr::Kind::kVar) {
    const int i = index_of_var(ax, e.name);
    if (m.vars[i]) return *m.vars[i] == v;
    // The axioms are validated on real tensors only; they hold for values of
    // every floating type, whose semantics is real arithmetic rounded at each
    // operator's output (docs/design.md, "Element types").
    if (!is_floating(g.dtype(v))) return false;
    const Shape& shape = g.shape(v);
    if (!validated_rank(ax.variables[i].kind, shape.size())) return false;
    m.vars[i] = v;
    m.var_shape[i] = shape;
    return true;
  }
  const Node& node = g.node(v.node);
  if (!node.is_op() || node.op->name != e.name || node.inputs.size() != e.args.size()) return false;
  if (e.output < 0 ? (node.output_shapes.size() != 1) : (v.output != e.output)) return false;
  for (const auto& [key, value] : e.params) {
    if (!axioms::is_symbolic(value)) continue;
    if (!bind_symbols(ax, m, std::get<std::string>(value), node.params.get(key))) return false;
  }
  for (size_t i = 0; i < e.args.size(); ++i)
    if (!match(ax, e.args[i], g, node.inputs[i], m)) return false;
  return true;
}

ValueRef build(Graph& g, const Expr& e, const std::vector<std::optional<ValueRef>>& vars, const Axiom& ax) {
  if (e.kind == Expr::Kind::kVar) return *vars[index_of_var(ax, e.name)];
  std::vector<ValueRef> args;
  for (const Expr& a : e.args) args.push_back(build(g, a, vars, ax));
  const OpDef& op = OpTable::instance().get(e.name);
  std::vector<ValueRef> outs = g.find_or_add_op(op, op.make_params(e.params), std::move(args));
  const int k = std::max(e.output, 0);
  if (k >= static_cast<int>(outs.size())) throw ShapeError(e.name + " has no output " + std::to_string(k));
  return outs[k];
}

}  // namespace

RewriteSet::RewriteSet(const std::vector<Axiom>& axioms) {
  for (const Axiom& ax : axioms) {
    bool value_condition = false;
    for (const Condition& c : ax.conditions) value_condition |= c.kind != Condition::Kind::kCompare;
    if (value_condition) {
      unused_.emplace_back(ax.name, "has a condition on values, which terms cannot decide");
      continue;
    }
    size_t made = 0;
    for (int side = 0; side < 2; ++side) {
      const std::vector<Expr>& exprs = side == 0 ? ax.lhs : ax.rhs;
      for (size_t el = 0; el < exprs.size(); ++el) {
        const Expr& pattern = exprs[el];
        if (pattern.kind != Expr::Kind::kCall) continue;
        std::vector<std::string> vars;
        std::set<std::string> bound;
        collect_variables(pattern, vars);
        if (vars.size() != ax.variables.size()) continue;  // the other side would need a term invented
        collect_symbols(pattern, bound);
        // Parameters the definitions give once the pattern's are known.
        Rewrite rw;
        for (bool changed = true; changed;) {
          changed = false;
          for (size_t p = 0; p < ax.params.size(); ++p) {
            const axioms::ParamVar& param = ax.params[p];
            if (bound.count(param.name) || param.definition < 0) continue;
            std::set<std::string> needs;
            collect_term_params(ax.conditions[param.definition].rhs, needs);
            if (std::includes(bound.begin(), bound.end(), needs.begin(), needs.end())) {
              bound.insert(param.name);
              rw.derived.push_back(static_cast<int>(p));
              changed = true;
            }
          }
        }
        if (bound.size() != ax.params.size()) continue;  // a parameter value would have to be invented
        rw.axiom = &ax;
        rw.side = side;
        rw.element = static_cast<int>(el);
        auto it = std::find_if(by_root_.begin(), by_root_.end(), [&](const auto& p) { return p.first == pattern.name; });
        if (it == by_root_.end()) it = by_root_.insert(by_root_.end(), {pattern.name, {}});
        it->second.push_back(rw);
        ++made;
        ++count_;
      }
    }
    if (made == 0) unused_.emplace_back(ax.name, "no side determines every variable and parameter");
  }
}

const std::vector<Rewrite>& RewriteSet::rooted_at(const std::string& op_name) const {
  static const std::vector<Rewrite> kNone;
  for (const auto& [name, list] : by_root_)
    if (name == op_name) return list;
  return kNone;
}

std::optional<AxiomInstance> apply_rewrite(const Rewrite& rw, Graph& graph, ValueRef value) {
  const Axiom& ax = *rw.axiom;
  Match m(ax);
  if (!match(ax, rw.pattern(), graph, value, m)) return std::nullopt;

  // Parameters from definitions, then every condition.
  axioms::ConditionEvaluator conditions(ax, m.var_shape, m.param);
  for (int p : rw.derived) {
    auto v = conditions.definition_value(p);
    if (!v) return std::nullopt;
    m.param[p] = std::move(*v);
    m.param_bound[p] = true;
  }
  for (const Condition& c : ax.conditions)
    if (!conditions.holds(c)) return std::nullopt;

  AxiomInstance inst;
  inst.axiom = &ax;
  for (size_t p = 0; p < ax.params.size(); ++p) inst.params[ax.params[p].name] = m.param[p];
  try {
    for (size_t i = 0; i < ax.lhs.size(); ++i) {
      const ValueRef l = build(graph, axioms::substitute(ax.lhs[i], inst.params), m.vars, ax);
      const ValueRef r = build(graph, axioms::substitute(ax.rhs[i], inst.params), m.vars, ax);
      inst.equations.push_back(rw.side == 0 ? Equation{l, r} : Equation{r, l});
    }
  } catch (const ShapeError&) {
    return std::nullopt;
  } catch (const ParamError&) {
    return std::nullopt;
  }
  // The pattern rebuilt from the bindings must be the matched term: this
  // checks the parameters the match did not bind (defaults included).
  inst.matched = rw.element;
  if (!(inst.equations[rw.element].from == value)) return std::nullopt;
  return inst;
}

std::string instance_text(const AxiomInstance& instance) {
  std::string s = instance.axiom->name;
  if (!instance.params.empty()) {
    s += "[";
    bool first = true;
    for (const axioms::ParamVar& p : instance.axiom->params) {
      s += first ? "" : ", ";
      first = false;
      s += p.name + "=" + param_value_to_string(instance.params.at(p.name));
    }
    s += "]";
  }
  return s;
}

}  // namespace tgr::verifier
