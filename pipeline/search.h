// The searches a model can go through (`optimize --search`), and the one
// result every search gives the pipeline (pipeline/pipeline.h).
//
//   backtrack  TASO's cost-guided backtracking (optimizer/backtracking_search.h)
//   saturate   equality saturation and extraction (saturation/saturation.h)
//   both       saturate, then backtrack from its graph, and backtrack from
//              the model; the cheapest of the three graphs is kept
//
// Adding a search: a row of searches() (search.cpp) and its case in the
// pipeline's run_search (pipeline.cpp).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "optimizer/backtracking_search.h"
#include "optimizer/node_names.h"
#include "saturation/saturation.h"

namespace tgr::pipeline {

enum class Search { kBacktrack, kSaturate, kBoth };

struct SearchInfo {
  Search search;
  std::string_view name;  // what --search takes
  std::string_view help;  // for --help
};
const std::vector<SearchInfo>& searches();
std::string_view search_name(Search search);
// Throws std::invalid_argument naming the searches for an unknown name.
Search parse_search(std::string_view name);

// What one search gives, whichever it was.
struct SearchResult {
  Graph best;                                       // empty once the report keeps the result (SearchRun)
  double initial_cost = 0, best_cost = 0;           // CostModel::graph_cost
  std::vector<optimizer::RuleUse> applied;          // on the path to the best graph, by first use
  std::vector<optimizer::AppliedRewrite> rewrites;  // where each application of `applied` was (node names)
  std::string stop_reason;        // why it stopped: "time_limit", "budget", "queue_empty", "saturated", ...
  std::string summary;            // the summary's line after its label ("backtracking, stopped ...")
  nlohmann::ordered_json report;  // the report's "search" object (or its part, with --search both)
};

// Moves the outcome every search's result holds (the best graph, the initial
// and best costs, the rules applied and where) from one result type to
// another (optimizer::BacktrackingResult, saturation::SaturationResult,
// SearchResult).
template <class To, class From>
void move_outcome(To& to, From&& from) {
  to.best = std::move(from.best);
  to.initial_cost = from.initial_cost;
  to.best_cost = from.best_cost;
  to.applied = std::move(from.applied);
  to.rewrites = std::move(from.rewrites);
}

// A backtracking search's result; `from` follows "backtracking" in the
// summary (" from the input" for the third search of --search both).
SearchResult backtracking_result(optimizer::BacktrackingResult&& result, const optimizer::BacktrackingOptions& options,
                                 const char* from = "");
// Only what a backtracking search's stats say (stop_reason, summary, report).
SearchResult backtracking_stats(const optimizer::BacktrackingStats& stats,
                                const optimizer::BacktrackingOptions& options, const char* from = "");
SearchResult saturation_result(saturation::SaturationResult&& result);

}  // namespace tgr::pipeline
