// Proofs of rules from the operator axioms (specs/).
//
// A rule `source => target` (concrete shapes) is
//   refuted  when the float64 interpreter finds inputs on which the sides
//            differ (the counterexample is those inputs and the element);
//   proved   when Z3 finds "every axiom instance used holds, and some output
//            of the source differs from the target's" unsatisfiable; the
//            axioms of its unsat core are recorded;
//   unknown  otherwise (no proof within the budget, or Z3 gave up).
//
// The instances come from a bidirectional breadth-first search over rewrites
// (verifier/rewrites.h): from each side, every axiom that matches a subterm,
// with its shape conditions decided on the concrete shapes by the operator
// table, replaces that subterm; when the two searches reach a common term,
// the instances along both paths go to Z3. When they do not meet within the
// budget, every instance found goes to Z3, which may still combine them,
// unless their congruence closure shows they cannot (z3_check.h).
// Z3 never sees an instance the table's shape rules do not admit, which is
// what keeps shape-dependent axioms (concat, split, enlarge) sound.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/text.h"
#include "verifier/axioms.h"

namespace tgr::verifier {

enum class ProofStatus { kProved, kRefuted, kUnknown };
std::string_view status_name(ProofStatus status);  // "proved", "refuted", "unknown"

struct ProofOptions {
  unsigned timeout_ms = 2000;  // the whole attempt: refutation, search and Z3
  size_t max_states = 20000;   // rewritten forms of the two sides the search may visit
  size_t extra_ops = 3;        // forms may have this many more operators than the larger side
  int refute_trials = 3;       // random float64 inputs tried before searching
  uint64_t seed = 1;
  bool smt2 = false;           // keep the SMT-LIB 2 text of the final Z3 query in ProofResult::smt2
  // When not empty: the search rewrites with these axioms only (by name).
  // A replay: an instance of a stored rule at a model's shapes is first
  // tried with the axioms of the rule's own proof, whose search is a small
  // part of the full one (a merge of two convolutions: 5 axioms of 150).
  // Z3 decides as always; a replay that fails says nothing, and the caller
  // tries the full search.
  std::vector<std::string> only_axioms;
};

struct ProofResult {
  ProofStatus status = ProofStatus::kUnknown;
  std::vector<std::string> axioms;     // proved: names of the axioms in Z3's unsat core, sorted
  std::vector<std::string> instances;  // proved: the instances of the core ("concat_associative[A=1]")
  std::string counterexample;          // refuted: inputs and the differing element
  std::string reason;                  // unknown: why
  size_t states = 0;                   // forms visited by the search
  size_t instances_found = 0;          // axiom instances the search produced
  double ms = 0;
  std::string smt2;                    // with ProofOptions::smt2: the last query given to Z3
};

// A rule re-evaluated in float64 on random inputs drawn from `seed`: the
// counterexample text when the sides differ (relative error above 1e-6).
// What the prover tries before searching, and what `verify --recheck-proved`
// runs on every proved rule with other seeds.
std::optional<std::string> find_counterexample(const Rule& rule, int trials, uint64_t seed);

class Prover {
 public:
  explicit Prover(std::vector<axioms::Axiom> axioms);
  ~Prover();
  Prover(Prover&&) noexcept;
  Prover& operator=(Prover&&) noexcept;

  // Thread-safe: each calling thread uses its own Z3 context.
  ProofResult prove(const Rule& rule, const ProofOptions& options) const;

  const std::vector<axioms::Axiom>& axioms() const;
  size_t rewrite_count() const;
  // Axioms that cannot serve as rewrites, and why.
  std::vector<std::pair<std::string, std::string>> unused_axioms() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tgr::verifier
