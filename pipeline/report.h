// What the pipeline reports (pipeline/pipeline.h): the summary `optimize`
// prints and the JSON of `optimize --report` (README.md, "Optimizing a
// model"; scripts read its keys, whose names and order are its interface).
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "optimizer/fold_constants.h"
#include "optimizer/instance.h"
#include "optimizer/rule_set.h"
#include "pipeline/options.h"
#include "pipeline/search.h"

namespace tgr::pipeline {

// A graph with the cost model's prediction for each of its nodes.
struct CostedGraph {
  Graph graph;
  std::vector<double> node_costs_us;  // per node: CostModel::op_cost_us; 0 for inputs, weights and folded nodes
};

// One search that ran, its graph not kept.
struct SearchRun {
  std::string key;    // its object's key in the report's "search" when several ran ("saturation", ...)
  std::string label;  // before its summary line ("search:", "then:", "and:")
  SearchResult result;
};

// Everything the summary and the JSON report show.
struct OptimizeReport {
  OptimizeOptions options;                        // what was asked, defaults resolved (resolve_defaults)
  std::string cost_model;                         // the cost model's own description
  int calibration_models = 0;                     // written to options.calibration_dir
  int operators_before = 0, operators_after = 0;  // after weight folding, both
  double cost_before_us = 0, cost_after_us = 0;   // predicted
  optimizer::RuleLoadStats rules;                 // of rules_db
  optimizer::RuleLoadStats default_rules;  // of default_rules_db, when added (duplicates of rules_db's not counted)
  bool default_rules_added = false;
  optimizer::RuleFilterStats rule_filter;  // directions that can match this model (build_directed_rules)
  optimizer::InstanceProofStats proofs;
  std::vector<optimizer::RuleUse> rules_applied;    // on the path to the best graph, by first use
  std::vector<std::string> rules_applied_db;        // per entry of rules_applied: the database it came from
  std::vector<optimizer::AppliedRewrite> rewrites;  // each application, where it was (node names)
  // With OptimizeOptions::keep_graphs: the model and the optimized graph,
  // weights folded (what the exported models hold).
  std::optional<CostedGraph> before, after;
  // The searches in the order they ran: one, or with --search both the
  // saturation, the backtracking from its graph and the backtracking from
  // the input model.
  std::vector<SearchRun> searches;
  std::string kept;  // with several searches: whose graph was kept ("saturation, then backtracking", ...)
  optimizer::FoldStats fold;
  int opaque_nodes = 0;    // ONNX nodes outside the operator table, kept as they are
  bool unchanged = false;  // no rule applied: the input file was copied
  // The best graph found gained less than options.min_gain (its predicted
  // cost: below_min_gain_cost_us); the input was kept, as if no rule applied.
  bool below_min_gain = false;
  double below_min_gain_cost_us = 0;
  double import_seconds = 0, search_seconds = 0, export_seconds = 0;
  // With OptimizeOptions::convert: what the conversion did, and per output
  // the relative L2 error of the converted model against the float32 one
  // (optimizer::conversion_error, on random inputs; NaN where it has NaN).
  std::optional<optimizer::ConversionStats> conversion;
  std::vector<double> conversion_errors;
  // With OptimizeOptions::measure enabled and a rewrite chosen: what was
  // measured and whether the rewrite or the input was written.
  std::optional<optimizer::MeasuredDecision> measured;

  double cost_ratio() const { return cost_before_us > 0 ? cost_after_us / cost_before_us : 1.0; }
  // Why the search stopped (SearchResult::stop_reason): the one search's,
  // or with several the second's (the backtracking from saturation's graph).
  std::string stop_reason() const;
  // The report of `optimize --report` (keys in the order they are printed).
  nlohmann::ordered_json to_json() const;
  // The human-readable summary `optimize` prints.
  void print_summary(std::FILE* out) const;
};

}  // namespace tgr::pipeline
