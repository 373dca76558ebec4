#include "verifier/conditions.h"

#include <limits>

namespace tgr::axioms {

namespace {

// Kept out of line: GCC 12 reports a false -Wrestrict on the inlined concatenation.
[[noreturn, gnu::noinline]] void unknown_symbol(const Axiom& ax, std::string_view name, const char* what) {
  std::string message = "axiom '";
  message += ax.name;
  message += "': '";
  message.append(name);
  message += "' is not a ";
  message += what;
  throw AxiomError(ax.file, ax.line, 1, message);
}

}  // namespace

int ConditionEvaluator::var_index(std::string_view name) const {
  for (size_t i = 0; i < ax_.variables.size(); ++i)
    if (ax_.variables[i].name == name) return static_cast<int>(i);
  unknown_symbol(ax_, name, "variable");
}

int ConditionEvaluator::param_index(std::string_view name) const {
  for (size_t i = 0; i < ax_.params.size(); ++i)
    if (ax_.params[i].name == name) return static_cast<int>(i);
  unknown_symbol(ax_, name, "parameter");
}

std::optional<ParamValue> ConditionEvaluator::eval(const Term& t, const Condition& c) const {
  auto as_int = [&](const std::optional<ParamValue>& v) -> std::optional<int64_t> {
    if (!v) return std::nullopt;
    if (const auto* i = std::get_if<int64_t>(&*v)) return *i;
    throw AxiomError(ax_.file, c.line, c.column,
                     "axiom '" + ax_.name + "': " + param_value_to_string(*v) + " is not an integer in '" + to_text(c) + "'");
  };
  switch (t.op) {
    case Term::Op::kInt: return ParamValue(t.value);
    case Term::Op::kWord: return ParamValue(t.name);
    case Term::Op::kParam: return param_value_[param_index(t.name)];
    case Term::Op::kRank: return ParamValue(static_cast<int64_t>(var_shape_[var_index(t.name)].size()));
    case Term::Op::kShape: return ParamValue(var_shape_[var_index(t.name)]);
    case Term::Op::kDim: {
      const Shape& s = var_shape_[var_index(t.name)];
      auto axis = as_int(eval(t.args[0], c));
      if (!axis || *axis < 0 || *axis >= static_cast<int64_t>(s.size())) return std::nullopt;
      return ParamValue(s[*axis]);
    }
    case Term::Op::kPick: {
      auto index = as_int(eval(t.args[0], c));
      if (!index || *index < 0 || *index + 1 >= static_cast<int64_t>(t.args.size())) return std::nullopt;
      return eval(t.args[*index + 1], c);
    }
    case Term::Op::kNeg: {
      auto a = as_int(eval(t.args[0], c));
      if (!a) return std::nullopt;
      if (*a == std::numeric_limits<int64_t>::min()) overflow(c);
      return ParamValue(-*a);
    }
    default: break;
  }
  auto a = as_int(eval(t.args[0], c)), b = as_int(eval(t.args[1], c));
  if (!a || !b) return std::nullopt;
  int64_t v = 0;
  switch (t.op) {
    case Term::Op::kAdd:
      if (__builtin_add_overflow(*a, *b, &v)) overflow(c);
      return ParamValue(v);
    case Term::Op::kSub:
      if (__builtin_sub_overflow(*a, *b, &v)) overflow(c);
      return ParamValue(v);
    case Term::Op::kMul:
      if (__builtin_mul_overflow(*a, *b, &v)) overflow(c);
      return ParamValue(v);
    case Term::Op::kDiv:
    case Term::Op::kMod:
      if (*b == 0) return std::nullopt;
      if (*a == std::numeric_limits<int64_t>::min() && *b == -1) overflow(c);  // the one quotient beyond int64 (SIGFPE)
      return ParamValue(t.op == Term::Op::kDiv ? *a / *b : *a % *b);
    default: return std::nullopt;
  }
}

void ConditionEvaluator::overflow(const Condition& c) const {
  throw AxiomError(ax_.file, c.line, c.column,
                   "axiom '" + ax_.name + "': '" + to_text(c) + "' computes a value beyond int64 (overflow)");
}

bool ConditionEvaluator::holds(const Condition& c) const {
  auto l = eval(c.lhs, c), r = eval(c.rhs, c);
  if (!l || !r) return false;  // an axis out of range, a division by zero: not admitted
  if (l->index() != r->index())
    throw AxiomError(ax_.file, c.line, c.column,
                     "axiom '" + ax_.name + "': '" + to_text(c) + "' compares " + param_value_to_string(*l) + " with " +
                         param_value_to_string(*r));
  using C = Condition::Cmp;
  if (const auto* a = std::get_if<int64_t>(&*l)) {
    const int64_t b = std::get<int64_t>(*r);
    switch (c.cmp) {
      case C::kEq: return *a == b;
      case C::kNe: return *a != b;
      case C::kLt: return *a < b;
      case C::kLe: return *a <= b;
      case C::kGt: return *a > b;
      case C::kGe: return *a >= b;
    }
  }
  if (c.cmp == C::kEq) return *l == *r;
  if (c.cmp == C::kNe) return *l != *r;
  throw AxiomError(ax_.file, c.line, c.column, "axiom '" + ax_.name + "': '" + to_text(c) + "' orders lists or words");
}

std::optional<ParamValue> ConditionEvaluator::definition_value(int p) const {
  const Condition& c = ax_.conditions[ax_.params[p].definition];
  return eval(c.rhs, c);
}

}  // namespace tgr::axioms
