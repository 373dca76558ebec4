// Whether a rule follows from other rules by a chain of them (issue 45,
// "Composition"): `rules derive` and `rules check --derive`.
//
// Bounded equality saturation from both sides of the queried rule: the
// e-graph (saturation/egraph.h) starts with the rule's source and target
// built at the rule's own shapes (one class per variable, shared by the two
// sides), and the database's rules run on it in both directions
// (saturation/runner.h, cycles not filtered: no graph is extracted). Every
// application is an instance proved by Z3 at the e-classes' shapes
// (optimizer::InstanceProver), as in `optimize`, so a rule stored at the
// generator's small shapes applies soundly at the query's. The rule is
// derived when each output of its source is in one e-class with the same
// output of its target; the run stops then, or at its iteration, node or
// time limit, or when the rules reach nothing new (saturated).
//
// The chain. The e-graph logs its unions (EGraph::log_unions: a spanning
// forest over the ids of e-nodes, egg's proof forest); a rule application's
// union joins its source's and its target's e-nodes, and its premises say
// which ids it took for its operands (saturation/rewrite.h). The path of
// unions between the two sides' outputs is explained in turn: a rule
// application by its premises' paths, a congruence by the paths between the
// two e-nodes' children. The applications met are the chain, in the order
// they were applied, each with the instance it proved. The chain's rules
// are then run alone from the query again: `confirmed` says they derive it
// by themselves, and the chain reported is that second run's. The chain
// need not be the shortest.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/text.h"
#include "optimizer/instance.h"
#include "optimizer/rule_set.h"
#include "saturation/runner.h"

namespace tgr::saturation {

struct DeriveOptions {
  int iteration_limit = 8;
  size_t node_limit = 20000;  // e-nodes
  double time_limit_s = 10;   // the search's wall clock (the confirming run has as much again)
  bool parallel = true;
};

// One rule application of a chain.
struct ChainStep {
  int64_t rule_id = 0;    // optimizer::DirectedRule::id
  bool reversed = false;  // applied right to left
  std::string rule;       // the rule as applied ("source => target", DirectedRule::text)
  std::string instance;   // what was proved: "source => target | shapes" at the e-classes' shapes
};

struct Derivation {
  bool derived = false;
  // The search's stop: kGoal when derived, else the limit that stopped it
  // or kSaturated (the rules reach no more forms).
  StopReason stop = StopReason::kSaturated;
  RunnerStats stats;                // the search's
  size_t enodes = 0, eclasses = 0;  // the search's e-graph at its end
  std::vector<ChainStep> chain;     // derived: the applications, in order applied
  int congruences = 0;              // derived: congruence steps the chain's explanation went through
  bool confirmed = false;           // derived: the chain's rules alone derived it again
  double seconds = 0;               // both runs
};

// Whether `query` (both sides built at its own shapes: ir/text.h build_rule)
// follows from `rules` (optimizer::load_rules: proved rules, both
// directions), each instance proved by `prover`. Throws std::invalid_argument
// when the sides have different numbers of outputs.
Derivation derive_rule(const Rule& query, const std::vector<optimizer::DirectedRule>& rules,
                       optimizer::InstanceProver& prover, const DeriveOptions& options);

// Why a derivation was not found, "saturated after 3 iterations (41 e-nodes)"
// or "within 8 iterations (iteration limit; 812 e-nodes, 1.2 s)".
std::string not_derived_reason(const Derivation& d);

}  // namespace tgr::saturation
