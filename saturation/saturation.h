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
//   saturate_and_extract        all of it, for the optimizer's callers
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "optimizer/backtracking_search.h"
#include "optimizer/cost_model.h"
#include "optimizer/instance.h"
#include "optimizer/optimize_model.h"
#include "optimizer/rule_set.h"
#include "saturation/context_costs.h"
#include "saturation/extract.h"
#include "saturation/refine.h"
#include "saturation/runner.h"

namespace tgr::saturation {

struct SaturationOptions {
  RunnerOptions runner;
  // runner.growth_limit is to be the target's (optimizer::default_node_growth),
  // set by use_search: optimize was given neither --node-growth nor
  // --node-limit (node_growth= and node_limit= in Python).
  bool target_growth_limit = false;
  // runner.iteration_limit is to be the target's (optimizer::default_iterations),
  // set by use_search: optimize was given no --iterations (iterations= in Python).
  bool target_iteration_limit = false;
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

// The options `optimize` and the Python package start from before their
// arguments: the struct's defaults with the target's growth limit
// (target_growth_limit; the struct itself leaves it off, node_limit alone).
SaturationOptions optimize_defaults();

// The stats as the report's "search" object, and as the summary's search line.
nlohmann::ordered_json stats_json(const SaturationStats& stats);
std::string summary_line(const SaturationStats& stats);

// saturate_and_extract as optimize_model's search (OptimizeOptions::search,
// optimizer/optimize_model.h): what `optimize --search saturate` runs.
optimizer::SearchFunction saturation_search(const SaturationOptions& options);
// The same with the program's settings, as `optimize --search saturate` and
// the Python package take them: `timeout_s` (--timeout) limits saturation
// and extraction together, as it limits the whole backtracking search (the
// saturation gets saturation_time_limit of it), `parallel` as --sequential,
// and an ILP time limit of 0 means greedy extraction only.
optimizer::SearchFunction saturation_search(SaturationOptions options, double timeout_s, bool parallel);
// optimize's --search set on `o`, for the tool and the Python package alike:
// "backtrack", "saturate" or "both"; empty: the target's
// (optimizer::TargetInfo::default_search; o.target.target must be set).
// The search's timeout is o.backtracking.timeout_s (--timeout, given or
// not), divided as saturation_search says. With
// saturation.target_growth_limit, the growth limit becomes the target's.
// Throws std::invalid_argument naming the searches for another name.
void use_search(optimizer::OptimizeOptions& o, std::string search, SaturationOptions saturation);
// The saturation's share of such a timeout: kSaturationShare of it, at most
// the timeout less the ILP's time limit when the ILP runs, at least half.
// The rest is the extraction's, which under a target that fuses operators is
// mostly the refinement by graph cost: when the saturation took the timeout
// less the ILP's limit, a larger --timeout left the refinement nothing and
// gave a worse graph (DenseNet-121 under an H200's table: x0.923 at the
// default 8 s, x0.951 at --timeout 20, with 0.02 s of refinement).
inline constexpr double kSaturationShare = 0.625;  // 5 s of the default 8
double saturation_time_limit(double timeout_s, const SaturationOptions& options);

}  // namespace tgr::saturation
