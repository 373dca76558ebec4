// The rules the optimizer may apply, read from a rules database.
//
// Only rules whose equivalence is established are loaded: status 'proved'
// and kind 'full', and partial rules (PET: kind and status 'partial') that
// carry a checked correction. A partial rule applies left to right only: at
// a model's shapes the region checker finds the target's wrong boxes, the
// correction recomputes them, and the corrected target must check `full`
// against the source before it replaces it (optimizer/partial_instance.h).
// A full rule is an equivalence, so each one gives two
// directed rewrites (left to right and right to left); a direction whose
// source has a bare variable as an output (it would match every value) or
// whose target reads a variable its source does not bind is dropped.
//
// Every rule was proved at the small shapes of its `variables` column; the
// optimizer proves each instance again at the model's shapes before
// applying it (optimizer/instance.h), so loading a rule here only makes it a
// candidate.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/text.h"

namespace tgr::optimizer {

// The rule sets the pipeline builds (DirectedRule::rule_set,
// pipeline/pipeline.cpp): the rules of the database given, and the shipped
// rules added to them.
inline constexpr size_t kUserRuleSet = 0;
inline constexpr size_t kShippedRuleSet = 1;

struct DirectedRule {
  int64_t id = 0;       // the rule's id in the database
  bool reversed = false;  // applied right to left
  std::string text;       // "source => target" in the applied direction
  Rule graphs;          // both sides built at the generator's shapes
  ShapeMap shapes;      // the generator's shapes of the variables
  DTypeMap dtypes;
  bool partial = false;  // a PET rule: applied with its correction (region-checked, not proved)
  size_t rule_set = 0;   // RuleDirectionText::rule_set of the direction it was built from
  bool shipped = false;  // RuleDirectionText::shipped
  std::string proof_axioms;  // RuleDirectionText::proof_axioms
};

struct RuleLoadStats {
  int proved = 0;            // rules read
  int directions = 0;        // directed rewrites kept
  int dropped_directions = 0;
  int partial = 0;           // partial rules read (applied with their corrections)
  int skipped_partial = 0;   // partial rules without a correction
  int skipped_unparsable = 0;  // rules this build cannot parse (unknown operator, ...)
};

struct RuleFilterStats {
  int kept = 0;            // directions that may match the model or a graph the rules can reach from it
  int unreachable = 0;     // directions dropped: their source needs an operator nothing can produce
};

// One direction of a rule as read from a database, before it is parsed and
// its graphs are built (building is most of the cost of loading a large
// database, so it happens only for the directions that are kept).
struct RuleDirectionText {
  int64_t id = 0;
  bool reversed = false;
  bool partial = false;   // a PET rule, left to right only
  std::string text;       // "source => target" in this direction
  std::string variables;  // the generator's shapes, "x0=2x4,w0=4x4"
  size_t rule_set = 0;    // which of the caller's rule sets it belongs to: where build_directed_rules counts it
  // One of the rules shipped with tgr (whichever set it is counted in):
  // saturation runs these first.
  bool shipped = false;
  // The axioms of the rule's proof (the database's `axioms` column, a JSON
  // array of names; "" when none is stored): an instance's proof replays
  // them first (InstanceProver). Initialised so that the brace
  // initialisations that leave it out need not name it.
  std::string proof_axioms{};
};

// The directions of the partial rules that carry a correction (left to right)
// and of the proved full rules (both ways) of the database at `path`, in
// that order. Counts rules read and skipped in `stats`. Throws
// rules_db::DbError for a missing or invalid database.
std::vector<RuleDirectionText> read_rule_directions(const std::string& path, RuleLoadStats* stats = nullptr);

// Parses the directions, drops those that cannot be applied (a bare variable
// as a source output, a target variable the source does not bind) and those
// this build cannot parse, and builds the rest, in parallel, in the given
// order. Counts each direction in stats_by_set[direction.rule_set] (none
// when empty).
//
// With `model`, the directions that cannot ever match in it or in a graph
// the rules reach from it are dropped before their graphs are built. A
// direction's source matches only where every operator it names exists; an
// operator exists in the model, or appears once a direction whose target
// introduces it has matched. So the operators that can ever exist are a
// least fixpoint: start from the model's operators, add the target operators
// of every direction whose source operators all exist, repeat. Directions
// whose source needs an operator outside that set cannot match, whatever the
// search does: dropping them changes no result, and spares the search from
// trying them on every graph (a generated database holds thousands of rules
// about operators a given model never uses). Constant operators without
// inputs (ones, eye, ...) count as existing only when the model or a kept
// target contains them, like any other.
std::vector<DirectedRule> build_directed_rules(const std::vector<RuleDirectionText>& directions,
                                               std::span<RuleLoadStats> stats_by_set = {}, const Graph* model = nullptr,
                                               RuleFilterStats* filter = nullptr);

// read_rule_directions then build_directed_rules, without a model.
std::vector<DirectedRule> load_rules(const std::string& path, RuleLoadStats* stats = nullptr);

}  // namespace tgr::optimizer
