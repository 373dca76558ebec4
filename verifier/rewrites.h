// Axioms as rewrites over a hash-consed term graph: the prover's only way of
// producing equations. One Rewrite per (axiom, side, element): its pattern is
// that element of that side; a match binds every variable and parameter of
// the axiom, and the instance it yields is every equation of the axiom
// (element i of the left side = element i of the right side) with the
// bindings substituted.
//
// An instance is only produced when it is a true instance of the axiom as
// specs/ states it: each variable's rank is one its kind admits, every
// variable is a float tensor, every shape condition holds for the concrete
// shapes of the matched terms, and both sides type-check in the operator
// table (the pattern side rebuilt from the bindings must be the matched term
// itself). Conditions on values (positive, nonnegative) cannot be decided on
// terms, so axioms with them are not used as rewrites.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "verifier/axioms.h"

namespace tgr::verifier {

struct Rewrite {
  const axioms::Axiom* axiom = nullptr;
  int side = 0;     // 0: the pattern is on the left, 1: on the right
  int element = 0;  // which element of that side's tuple
  // The parameters the pattern does not bind, computed from their
  // definitions `P = TERM`, in an order where each reads only known ones.
  std::vector<int> derived;
  const Expr& pattern() const { return side == 0 ? axiom->lhs[element] : axiom->rhs[element]; }
};

struct Equation {
  ValueRef from, to;  // from: on the pattern's side
};

struct AxiomInstance {
  const axioms::Axiom* axiom = nullptr;
  axioms::Bindings params;
  std::vector<Equation> equations;  // one per element of the sides
  int matched = 0;                  // the equation whose `from` is the matched term
};

class RewriteSet {
 public:
  // Every usable (axiom, side, element): the pattern is an operator
  // application that mentions every variable and determines every parameter
  // (directly, or through the axiom's definitions `P = TERM`).
  explicit RewriteSet(const std::vector<axioms::Axiom>& axioms);

  // The rewrites whose pattern's root is `op_name`.
  const std::vector<Rewrite>& rooted_at(const std::string& op_name) const;
  size_t size() const { return count_; }
  // Axioms that give no rewrite, with the reason (for `verify --list-rewrites`).
  const std::vector<std::pair<std::string, std::string>>& unused() const { return unused_; }

 private:
  std::vector<std::pair<std::string, std::vector<Rewrite>>> by_root_;
  std::vector<std::pair<std::string, std::string>> unused_;
  size_t count_ = 0;
};

// Tries `rewrite` at `value` of `graph`. On a match, adds the terms of both
// sides to `graph` (find_or_add_op: existing terms are shared) and returns
// the instance.
std::optional<AxiomInstance> apply_rewrite(const Rewrite& rewrite, Graph& graph, ValueRef value);

// "concat_associative[A=1](a=x0, b=w0, c=w1)"-style text of an instance.
std::string instance_text(const AxiomInstance& instance);

}  // namespace tgr::verifier
