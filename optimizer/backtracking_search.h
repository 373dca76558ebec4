// TASO's cost-guided backtracking search over rule applications.
//
// A priority queue holds graphs ordered by predicted cost. The search pops
// the cheapest, finds every match of every rule in it (in parallel over the
// rules, with TBB), applies each, and keeps a new graph when its structural
// hash was not seen before and its cost is below alpha times the best cost
// found so far; alpha > 1 lets the search pass through graphs that are
// temporarily worse (the only way to some better graphs). Only rewrites whose
// instance at the model's shapes is proved are kept (optimizer/instance.h);
// proofs run only for graphs that pass the cost and hash tests. The search
// stops when the queue is empty, after `budget` graphs were popped, or at the
// timeout. The queue keeps at most `max_queue` graphs (the cheapest).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "optimizer/cost_model.h"
#include "optimizer/instance.h"
#include "optimizer/node_names.h"
#include "optimizer/rule_set.h"
#include "pet/region_check.h"

namespace tgr::optimizer {

struct BacktrackingOptions {
  int budget = 100;           // graphs popped from the queue (on the models of README.md, 300 finds nothing more)
  double alpha = 1.05;        // relaxation: keep graphs costing < alpha * best
  double timeout_s = 8;       // wall clock for the whole search (import and export come on top)
  size_t max_queue = 1000;    // graphs kept in the queue
  size_t matches_per_rule = 32;  // per graph
  bool parallel = true;       // expand matches with TBB
  pet::CheckOptions region_check{4, 1, 1 << 18};  // partial rules: trials, seed, whole-evaluation limit
};

struct RuleUse {
  int64_t id = 0;
  std::string text;  // in the direction applied
  int count = 0;
};
// Counts `times` more applications of rule `id` (direction `text`) in
// `uses`: an entry per rule and direction, in the order first applied.
void count_rule_use(std::vector<RuleUse>& uses, int64_t id, const std::string& text, int times = 1);

struct BacktrackingStats {
  int64_t popped = 0, candidates = 0, duplicates = 0, pruned = 0, unprovable = 0, no_instance = 0, pushed = 0;
  MatchStats matches;
  double seconds = 0;
  bool timed_out = false;
  bool budget_exhausted = false;
};

struct BacktrackingResult {
  Graph best;
  double initial_cost = 0, best_cost = 0;
  std::vector<RuleUse> applied;  // on the path to the best graph, by first use
  std::vector<AppliedRewrite> rewrites;  // on the path to the best graph, in the order applied
  BacktrackingStats stats;
};

// Why the search stopped: "time_limit", "budget" or "queue_empty" (every
// graph worth expanding was expanded).
std::string stop_reason_name(const BacktrackingStats& stats);
// The stats as the report's "search" object (with the options' budget and
// alpha), and as the summary's line ("backtracking" `from` ", stopped ...").
nlohmann::ordered_json stats_json(const BacktrackingStats& stats, const BacktrackingOptions& options);
std::string summary_line(const BacktrackingStats& stats, const BacktrackingOptions& options, const char* from = "");

BacktrackingResult backtracking_search(const Graph& graph, const std::vector<DirectedRule>& rules, CostModel& cost,
                                              InstanceProver& prover, const BacktrackingOptions& options);

// `then`, a search that started from result.best, continues `result`: when
// it found a cheaper graph, that graph, its rule uses and its rewrites join
// result's (the stats are the caller's to combine). Returns whether it did.
bool continue_with(BacktrackingResult& result, BacktrackingResult&& then);

// What `optimize --search backtrack` runs: with a user's database (some
// rules shipped, DirectedRule::shipped, and some not) the search runs in
// two stages, as saturation does (saturation/runner.h, "Stages"): the
// shipped rules alone from `graph`, as without the database, then all the
// rules from the first stage's best graph for the time the first left,
// each stage with the whole budget, so that a generated database's
// thousands of rules do not spend the budget and the time on forms that do
// not pay before the shipped rules' merges. The first stage may take the
// whole timeout (docs/benchmarks.md, "Backtracking with a database in two
// stages"). Otherwise backtracking_search itself. The result's stats add up both stages
// (timed_out when either stopped at its time).
BacktrackingResult staged_backtracking_search(const Graph& graph, const std::vector<DirectedRule>& rules,
                                              CostModel& cost, InstanceProver& prover,
                                              const BacktrackingOptions& options);

}  // namespace tgr::optimizer
