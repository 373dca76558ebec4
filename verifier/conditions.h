// The terms and conditions of an axiom evaluated for one assignment of
// variable shapes and parameter values: what instantiation (every small
// assignment) and the prover (the assignment a match gives) both decide.
#pragma once

#include <optional>
#include <vector>

#include "verifier/axioms.h"

namespace tgr::axioms {

class ConditionEvaluator {
 public:
  // Reads the shapes and values through these vectors (indexed like
  // axiom.variables and axiom.params); the caller fills them in.
  ConditionEvaluator(const Axiom& axiom, const std::vector<Shape>& var_shape,
                     const std::vector<ParamValue>& param_value)
      : ax_(axiom), var_shape_(var_shape), param_value_(param_value) {}

  // Index of a variable or parameter by name; an unknown name is an AxiomError.
  int var_index(std::string_view name) const;
  int param_index(std::string_view name) const;

  // A term's value, or nothing when it is undefined (an axis out of range, a
  // division by zero). A type error in the axiom (a list where an integer
  // belongs), or a value beyond int64 (INT64_MIN / -1, an overflowing
  // product), is an AxiomError naming the condition `c`.
  std::optional<ParamValue> eval(const Term& t, const Condition& c) const;
  // Whether a comparison condition holds; an undefined side: false.
  bool holds(const Condition& c) const;
  // The value of parameter `p` from its defining condition `P = TERM`.
  std::optional<ParamValue> definition_value(int p) const;

 private:
  [[noreturn]] void overflow(const Condition& c) const;

  const Axiom& ax_;
  const std::vector<Shape>& var_shape_;
  const std::vector<ParamValue>& param_value_;
};

}  // namespace tgr::axioms
