// Equality saturation for `optimize` (Tensat, Yang et al. MLSys'21): the
// model goes into an e-graph (saturation/egraph.h), proved rule instances
// add every equivalent form they reach (saturation/runner.h), and the
// cheapest graph is extracted (saturation/extract.h), instead of TASO's
// backtracking over one graph at a time (optimizer/backtracking_search.h).
//
// Soundness is the backtracking search's: every union is a rule instance
// proved at the e-classes' shapes (or, for partial rules, corrected and
// region-checked), so every graph the e-graph holds computes what the model
// does.
//
// The API, in the order things happen:
//   EGraph        e-classes of equivalent e-nodes, hash-consed, rebuilt egg-style
//   Pattern       a rule's source side, e-matched (multi-patterns joined)
//   prove_match / apply_proved   a match instantiated, proved, added and unioned
//   Runner        the iterations, the backoff scheduler, the limits; StopReason
//   greedy_extract / ilp_extract / selection_graph   the cheapest graph
//   saturate_and_extract        all of it, for the pipeline (pipeline/pipeline.h)
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "optimizer/backtracking_search.h"
#include "optimizer/cost_model.h"
#include "optimizer/instance.h"
#include "optimizer/rule_set.h"
#include "saturation/context_costs.h"
#include "saturation/extract.h"
#include "saturation/refine.h"
#include "saturation/runner.h"

namespace tgr::saturation {

struct SaturationOptions {
  // The pipeline sets the limits a target decides (pipeline/defaults.h).
  RunnerOptions runner;
  bool use_ilp = true;  // else greedy extraction only
  IlpOptions ilp;
  // The whole search's time (saturation and extraction), when limited:
  // refinement by graph cost (a cost model that fuses operators) runs on
  // until it, past the extraction's --ilp-timeout, when saturation stopped
  // early or the refinement is not done.
  std::optional<double> timeout_s;
  // Refinement's moves are screened by the cost of the region they change,
  // this many steps around it (window.h); 0: every move costed whole.
  size_t refine_window = SelectionWindows::kDefaultRadius;
};

struct SaturationStats {
  RunnerStats runner;  // iterations, stop reason, matches, proofs, unions, seconds per phase
  size_t enodes = 0, eclasses = 0;
  double greedy_cost = 0;      // sum of the e-node costs of the (tree) greedy choice (us)
  double greedy_dag_cost = 0;  // the same of the DAG greedy choice
  double shared_cost = 0;      // the better of the two after share_tuples (the ILP's warm start)
  ContextCostStats context;    // pricing in context (a model that fuses operators; else all zero)
  RefineStats refine;          // the refinement by graph_cost (the same models)
  IlpResult ilp;               // status, objective, bound, gap, size (selection cleared)
  // What gave the result: "ilp", "shared_tuples", "greedy_dag", "greedy" (priced
  // alone), the last three "_in_context" (priced in context), "refined"
  // (refine_by_graph_cost), or "input".
  std::string extractor;
  // Each extractor's graph by CostModel::graph_cost (us), in the order considered.
  std::vector<std::pair<std::string, double>> candidate_costs;
  double saturate_s = 0, extract_s = 0, seconds = 0;
};

struct SaturationResult {
  Graph best;
  double initial_cost = 0, best_cost = 0;  // CostModel::graph_cost, comparable with optimizer::BacktrackingResult
  // The rules whose e-nodes the extracted graph uses; count: their
  // applications that contributed e-nodes. By first application.
  std::vector<optimizer::RuleUse> applied;
  std::vector<optimizer::AppliedRewrite> rewrites;  // those applications, by origin
  SaturationStats stats;
};

SaturationResult saturate_and_extract(const Graph& graph, const std::vector<optimizer::DirectedRule>& rules,
                                      optimizer::CostModel& cost, optimizer::InstanceProver& prover,
                                      const SaturationOptions& options);

// The stats as the report's "search" object, and as the summary's search line.
nlohmann::ordered_json stats_json(const SaturationStats& stats);
std::string summary_line(const SaturationStats& stats);

// The saturation's share of the whole search's timeout (`optimize
// --timeout`, SaturationOptions::timeout_s): kSaturationShare of it, at most
// the timeout less the ILP's time limit when the ILP runs, at least half.
// The rest is the extraction's, which under a target that fuses operators is
// mostly the refinement by graph cost, so a larger timeout leaves it more
// (docs/benchmarks.md, "A larger `--timeout` no longer gives a worse graph").
inline constexpr double kSaturationShare = 0.625;  // 5 s of the default 8
double saturation_time_limit(double timeout_s, const SaturationOptions& options);

}  // namespace tgr::saturation
