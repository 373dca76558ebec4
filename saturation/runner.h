// Equality saturation: rules applied to an e-graph until nothing changes or
// a limit is reached (egg's Runner, with Tensat's cycle filtering).
//
// Directed rules that differ only in the names of their variables (and,
// where a side has a shape-dependent parameter, not in the generator's
// shapes either) are matched once: they would give the same instances.
//
// One iteration:
//  1. search: every rule that is not banned is matched in the rebuilt
//     e-graph (in parallel over rules, TBB). A match that was already
//     tried (same rule, classes and matched operators; remembered across
//     iterations and re-canonicalised after each rebuild) is skipped and not
//     counted: instantiating and proving are what cost here, not matching.
//     A match whose outputs are all constant classes is skipped too: it
//     rewrites a computation on weights only (concat(k0, k1) into
//     concat(enlarge(k0), ...)), which export folds whatever its form, so
//     it can change no cost.
//  2. schedule (egg's BackoffScheduler): a rule with more new matches than
//     its limit (match_limit << times banned) is banned for
//     ban_length << times banned iterations, so commutativity and
//     associativity cannot flood the e-graph; its first `limit` matches are
//     kept (egg drops them all).
//  3. prove: every kept match is instantiated at the classes' shapes
//     (saturation/rewrite.h); an instance that would add nothing (its
//     target already in the matched classes: the reverse of a rewrite
//     applied there) is dropped unproved; the others are proved in order of
//     their local cost change (target minus source: cheapening rewrites
//     first), in parallel, for at most a share of the time left; the others
//     wait for a later iteration. Proofs are what saturation spends its
//     time on (a Z3 proof per new rule instance and shapes), so this order
//     decides what a time-limited run finds, and the share lets rewrites
//     that need earlier ones (a merge after a stacking) come in time.
//  4. apply: proved instances add their targets and union their outputs,
//     in rule order (deterministic); stops early at the node limit. With
//     cycle filtering (Tensat), a union that would make a class reachable
//     from itself is skipped: merging two products where one reads the
//     other's result (a multi-pattern rule) gives nothing to extract, and
//     neither does x = concat(split(x).0, split(x).1) (a rule that removes
//     an identity, whose target is a bare variable: in an e-graph the
//     identity's class is already the variable's as far as extraction is
//     concerned only once merged, and merging closes a cycle).
//  5. rebuild (congruence closure); then, with cycle filtering, Tensat's
//     cycle removal: congruence can close a cycle no single union did
//     (x = g(y) and y = f(a), then a = b with x = f(b)); e-nodes are
//     filtered until the e-graph is acyclic, never the greedy extraction's
//     choice (EGraph::break_cycles).
// Stages: with RunnerOptions::shipped_rules_first, the rules shipped with
// tgr (DirectedRule::shipped: few, picked because they pay) run alone
// first, until they saturate or their share of the time is spent; then the
// database's rules of at most kSmallRuleOps operators a side join them;
// then all. Each stage runs on the e-graph the one before left, so the
// thousands of a generated database's rules (mostly equivalent forms:
// commutativity, associativity, weight layouts) add to what the shipped
// rules reached instead of taking the time their merges need. Each stage
// before the last runs until it saturates or has had lead_time_share of the
// time left when it started. Why, measured: docs/benchmarks.md, "The
// saturation runner's settings".
//
// With RunnerOptions::goal (saturation/derive.h), it also stops as soon as
// the goal holds, checked before the first iteration and after each rebuild.
//
// It stops when an iteration changed nothing while no rule was banned
// (saturated; when rules were banned, their bans are lifted first, as egg
// does), or at the iteration, node or time limit.
//
// In runner.cpp, Runner::run is egg's loop around run_one (steps 1 to 5,
// one function each); the backoff scheduler (step 2) and the queue of
// matches waiting for a proof (steps 1 and 3) are small classes of their own.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "optimizer/cost_model.h"
#include "optimizer/instance.h"
#include "optimizer/node_names.h"
#include "optimizer/rule_set.h"
#include "pet/region_check.h"
#include "saturation/egraph.h"

namespace tgr::saturation {

enum class StopReason { kSaturated, kNodeLimit, kIterationLimit, kTimeLimit, kGoal };
std::string_view stop_reason_name(StopReason reason);  // "saturated", "node_limit", ...

// Rules of at most this many operators on either side form the stage after
// the shipped rules' (see "Stages").
inline constexpr int kSmallRuleOps = 3;

// The measurements behind each default: docs/benchmarks.md, "The
// saturation runner's settings".
struct RunnerOptions {
  int iteration_limit = 20;
  size_t node_limit = 50000;  // e-nodes; room for the split-K forms of a large model's merged branches
  // The e-graph's size relative to the model's, when set (> 0): at most
  // growth_limit times the e-nodes it starts with (the model's operators,
  // inputs and weights), but at least min_node_limit, and never more than
  // node_limit (effective_node_limit): a small model saturates its useful
  // rewrites long before node_limit, and the rest of the time would go to
  // variants of no use. In a staged run (shipped_rules_first) each stage
  // before the last may add that many e-nodes beyond where it started (a
  // stage at its limit hands on to the next), and the last (a database's
  // rules) keeps to node_limit: its thousands of rules need the room.
  // 0: node_limit alone.
  double growth_limit = 0;
  size_t min_node_limit = 5000;
  double time_limit_s = 5;  // wall clock for the whole saturation (extraction comes on top)
  // New matches per rule and iteration before it is banned (egg's default
  // is 1,000), for a generated database's rules: their variants must leave
  // an e-graph the extraction solves in its time.
  size_t match_limit = 256;
  // The same for the shipped rules (DirectedRule::shipped): few, chosen
  // because they pay, and their merges multiply with the forms other rules
  // add (a convolution's enlarged and 'valid'-padded kernels match its
  // merge too), so a lower limit bans a merge rule before its three-way
  // merges come.
  size_t shipped_match_limit = 1024;
  int ban_length = 2;  // iterations
  // Proofs per iteration: at most this share of the time left (at least
  // min_prove_slice_s), so that iterations go on while most matches wait.
  double prove_share = 0.3;
  double min_prove_slice_s = 0.25;
  bool filter_cycles = true;
  bool parallel = true;
  // The shipped rules (DirectedRule::shipped) alone first, then all; only
  // staged when some rules are shipped and some are not.
  bool shipped_rules_first = false;
  // At most, of the time left at its start, for a stage before the last:
  // the shipped rules pay on the large models a time limit stops, and a
  // small model's shipped stage saturates long before its share is spent.
  double lead_time_share = 0.9;
  pet::CheckOptions region_check{4, 1, 1 << 18};  // partial rules, as optimizer::BacktrackingOptions
  // When set, the run stops (StopReason::kGoal) once it returns true; called
  // on the rebuilt e-graph before the first iteration and after each rebuild.
  std::function<bool()> goal;
  // Keep every application's instance text and shapes (Runner::instance_of).
  bool record_instances = false;
};

struct IterationStats {
  size_t nodes = 0, classes = 0;  // after the iteration's rebuild
  int64_t matches = 0, applied = 0, unions = 0, deferred = 0;
  int banned = 0;  // rules banned at the end of the iteration
  double search_s = 0, instantiate_s = 0, prove_s = 0, apply_s = 0, rebuild_s = 0;  // prove_s includes instantiate_s
};

// The node limit a run starting from `start_nodes` e-nodes keeps to (RunnerOptions::growth_limit).
size_t effective_node_limit(const RunnerOptions& options, size_t start_nodes);

struct RunnerStats {
  StopReason stop = StopReason::kSaturated;
  size_t node_limit = 0;  // the limit in force when the run stopped (effective_node_limit; per stage, see growth_limit)
  int iteration_limit = 0;  // RunnerOptions::iteration_limit of the run
  int iterations = 0;
  int lead_iterations = 0;       // of them, with the shipped rules alone (RunnerOptions::shipped_rules_first)
  int small_rule_iterations = 0;  // of them, without the rules of more than kSmallRuleOps operators a side
  double setup_s = 0;             // before the first iteration (duplicate rules found)
  int64_t renamed_rules = 0;     // directed rules not matched: the same as an earlier one up to variable names
  int64_t matches = 0;           // new matches kept for proving
  int64_t repeated_matches = 0;  // skipped: tried in an earlier iteration
  int64_t weight_only_matches = 0;  // skipped: every output in a constant class (folded at export)
  int64_t mirrored_matches = 0;     // skipped: a symmetric two-output rule's pair in the other order
  int64_t dropped_matches = 0;   // beyond a banned rule's limit
  int64_t deferred_matches =
      0;  // instantiated, left for a later iteration by the proof time share (counted per iteration)
  int64_t bans = 0;
  int64_t no_instance = 0, not_proved = 0, proved = 0;
  int64_t already_holding = 0;  // instances that would change nothing (saturation/rewrite.h, already_holds): not proved
  int64_t renamed_proof_hits = 0;           // instances decided by an earlier one up to variable names (ProofCache)
  int64_t unions = 0, cycles_filtered = 0;  // cycles_filtered: unions skipped
  int64_t cycle_nodes_removed = 0;          // e-nodes filtered by cycle removal
  double search_s = 0, instantiate_s = 0, prove_s = 0, apply_s = 0, rebuild_s = 0, seconds = 0;
  std::vector<IterationStats> per_iteration;
};

class Runner {
 public:
  // `cost` (may be null: unit costs) orders the proofs and decides which
  // e-nodes cycle removal keeps (the greedy extraction's choice).
  Runner(EGraph& egraph, const std::vector<optimizer::DirectedRule>& rules, optimizer::InstanceProver& prover,
         RunnerOptions options, optimizer::CostModel* cost = nullptr);
  // The runner keeps a reference to the rules (and to the patterns' graphs in them).
  Runner(EGraph&, std::vector<optimizer::DirectedRule>&&, optimizer::InstanceProver&, RunnerOptions,
         optimizer::CostModel* = nullptr) = delete;
  RunnerStats run();
  // Rule application `origin` (an ENode::origin > 0) applied rules[rule_of(origin)].
  size_t rule_of(uint32_t origin) const { return applications_.at(origin - 1); }
  // Where application `origin` applied: the names of the e-nodes it matched and made.
  const optimizer::AppliedRewrite& rewrite_of(uint32_t origin) const { return rewrites_.at(origin - 1); }
  // What application `origin` proved, "source => target | shapes" at the
  // e-classes' shapes (RunnerOptions::record_instances; else empty).
  const std::string& instance_of(uint32_t origin) const { return instances_.at(origin - 1); }

 private:
  EGraph& egraph_;
  const std::vector<optimizer::DirectedRule>& rules_;
  optimizer::InstanceProver& prover_;
  RunnerOptions options_;
  optimizer::CostModel* cost_;
  std::vector<size_t> applications_;
  std::vector<optimizer::AppliedRewrite> rewrites_;  // per application, as applications_
  std::vector<std::string> instances_;               // per application, with record_instances
  optimizer::InstanceCache instance_cache_;          // both directions' matches, every iteration
};

}  // namespace tgr::saturation
