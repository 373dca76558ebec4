// The one place the prover talks to Z3. Tensors are an uninterpreted sort;
// each operator output is an uninterpreted function of the operator's
// parameters (integers) and its input tensors; graph inputs and constants are
// tensor constants. Each axiom instance is asserted under its own tracking
// literal, so an unsat answer comes with the instances it used (the core).
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "verifier/rewrites.h"

namespace tgr::verifier {

struct Z3Answer {
  enum class Result { kUnsat, kSat, kUnknown };
  Result result = Result::kUnknown;
  std::vector<size_t> core;  // kUnsat: indices into the instances given
  std::string reason;        // kUnknown: Z3's reason (timeout, ...)
};

// Is "every instance holds, and some source output differs from the target
// output at its position" unsatisfiable? `terms` holds every term mentioned.
// Uses one Z3 context per calling thread. timeout_ms 0: no time limit, for
// queries Z3 decides at once (Z3 starts a timer thread for a limit, and
// waits for it after the check: on a busy machine, longer than the query).
Z3Answer z3_check_equal(const Graph& terms, const std::vector<ValueRef>& source, const std::vector<ValueRef>& target,
                        const std::vector<const AxiomInstance*>& instances, unsigned timeout_ms);

// Whether the instances make every source output equal to the target output
// at its position by congruence closure (union-find over the equations, and
// equal functions of equal arguments are equal), on the terms as
// z3_check_equal encodes them. Ground equalities with uninterpreted
// functions are decided by congruence closure, so when this is false
// z3_check_equal would answer sat: the prover then skips Z3, which takes
// seconds on the thousands of instances of a search that found no proof.
// When true, only Z3's unsat answer makes a proof.
bool outputs_congruent(const Graph& terms, const std::vector<ValueRef>& source, const std::vector<ValueRef>& target,
                       const std::vector<const AxiomInstance*>& instances);

// The SMT-LIB 2 text of the same query (for `verify --smt2`, and for reading).
std::string z3_query_text(const Graph& terms, const std::vector<ValueRef>& source, const std::vector<ValueRef>& target,
                          const std::vector<const AxiomInstance*>& instances);

}  // namespace tgr::verifier
