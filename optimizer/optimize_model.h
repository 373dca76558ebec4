// Optimizing an ONNX model file end to end (README.md, "Optimizing a model"):
// import, the backtracking search (optimizer/backtracking_search.h) with rules
// whose every application is proved at the model's shapes, weight folding,
// export. The `optimize` tool is this function plus argument parsing; other
// programs (benchmarks, services) call it the same way.
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "onnx/onnx_import.h"
#include "optimizer/backtracking_search.h"
#include "optimizer/convert_precision.h"
#include "optimizer/cost_model.h"
#include "optimizer/fold_constants.h"
#include "optimizer/instance.h"
#include "optimizer/measured_check.h"
#include "optimizer/rule_set.h"
#include "optimizer/target.h"

namespace tgr::optimizer {

// The rule sets optimize_model builds (DirectedRule::rule_set): the rules
// of OptimizeOptions::rules_db, and the shipped rules added to them.
inline constexpr size_t kUserRuleSet = 0;
inline constexpr size_t kShippedRuleSet = 1;

// What a search other than the backtracking one returns (equality
// saturation: saturation::saturation_search, saturation/saturation.h). A
// caller that links such a search sets OptimizeOptions::search; this
// library does not depend on it.
struct SearchOutcome {
  Graph best;
  double initial_cost = 0, best_cost = 0;  // CostModel::graph_cost
  std::vector<RuleUse> applied;
  std::vector<AppliedRewrite> rewrites;  // where each application of `applied` was (node names)
  std::string stop_reason;        // why it stopped (the report's stop_reason)
  std::string summary;            // the summary's search line, after "search:"
  nlohmann::ordered_json report;  // the report's "search" object
};
using SearchFunction = std::function<SearchOutcome(const Graph& model, const std::vector<DirectedRule>& rules,
                                                   CostModel& cost, InstanceProver& prover)>;

struct OptimizeOptions {
  std::string model;     // the ONNX model to read
  std::map<std::string, Shape> input_shapes;  // graph inputs' shapes, for symbolic dimensions
  std::string output;    // where the optimized model is written
  std::string rules_db;  // the proved rules
  // The rules shipped with tgr (rules/default.rules and
  // rules/generated.rules, generated and proved at build time). When it names another file
  // than rules_db, its rules are added to rules_db's, so that a database of
  // generated rules never means fewer rules than the default. Empty: none.
  std::string default_rules_db;
  TargetOptions target;  // where the model will run: the cost model (optimizer/target.h)
  // onnxruntime-cpu: write a one-node ONNX model of each operator signature
  // the cost model had no measurement of into this folder, listed in its
  // signatures.tsv (FILE<TAB>SIGNATURE), for tools/calibrate_ort.py. Empty: none.
  std::string calibration_dir;
  std::string specs_dir;        // the axioms the instance proofs use
  onnx_io::ImportLimits import_limits;  // what the model may ask the importer for
  BacktrackingOptions backtracking;
  // The predicted gain below which the model is written unchanged: a
  // prediction is off by a few percent (measurement noise; what a runtime
  // fuses in the original file but not in a re-export), and a rewrite that
  // gains less risks a slower model.
  double min_gain = 0.02;
  SearchFunction search;             // another search instead of the backtracking one; empty: backtracking
  // With `search`: then the backtracking search (options `backtracking`)
  // from the graph it found, and also from the input model; the cheapest of
  // the three graphs is kept (`optimize --search both`). Saturation
  // extracts by per-operator costs, blind to the plan's fusion: on the H100
  // it found ResNet-50's merged and split convolutions (1.46x measured,
  // against backtracking's 1.28x) but less than backtracking from the input
  // on GoogLeNet and DenseNet-121. Each search has its own time limit.
  bool backtrack_after_search = false;
  unsigned proof_timeout_ms = 1000;  // per instance proof
  // Keep the graphs before and after, with each node's cost, in the report
  // (OptimizeReport::before, after; what optimize --report-html draws).
  bool keep_graphs = false;
  // Convert a float32 model to float16 or bfloat16 before the search
  // (optimize --convert-to, optimizer/convert_precision.h). Unset: the model
  // keeps the types it came in.
  std::optional<PrecisionConversion> convert;
  // Time a rewrite against the input in the target's runtime before writing
  // it; the input is written when it does not measure faster
  // (optimizer/measured_check.h). `timer`: null, the target's (make_timer).
  // Not with `convert` (the input is the float32 model, not a baseline of
  // the converted one).
  MeasureOptions measure;
  std::shared_ptr<ModelTimer> timer;
};

// A graph with the cost model's prediction for each of its nodes.
struct CostedGraph {
  Graph graph;
  std::vector<double> node_costs_us;  // per node: CostModel::op_cost_us; 0 for inputs, weights and folded nodes
};

// Everything the summary and the JSON report show.
struct OptimizeReport {
  OptimizeOptions options;                        // what was asked
  std::string cost_model;                         // the cost model's own description
  int calibration_models = 0;                     // written to options.calibration_dir
  int operators_before = 0, operators_after = 0;  // after weight folding, both
  double cost_before_us = 0, cost_after_us = 0;   // predicted
  RuleLoadStats rules;               // of rules_db
  RuleLoadStats default_rules;       // of default_rules_db, when added (duplicates of rules_db's not counted)
  bool default_rules_added = false;
  RuleFilterStats rule_filter;  // directions that can match this model (build_directed_rules)
  InstanceProofStats proofs;
  std::vector<RuleUse> rules_applied;  // on the path to the best graph, by first use
  std::vector<std::string> rules_applied_db;  // per entry of rules_applied: the database it came from
  std::vector<AppliedRewrite> rewrites;       // each application, where it was (node names)
  // With OptimizeOptions::keep_graphs: the model and the optimized graph,
  // weights folded (what the exported models hold).
  std::optional<CostedGraph> before, after;
  BacktrackingStats search;
  std::optional<SearchOutcome> other_search;  // with OptimizeOptions::search (its graph not kept)
  bool backtracked_after = false;             // and then backtracking (`search` holds its stats)
  // With backtracked_after: the backtracking search from the input model,
  // and which of the three graphs was kept ("saturation", "saturation, then
  // backtracking" or "backtracking from the input").
  std::optional<BacktrackingStats> from_input;
  std::string kept;
  FoldStats fold;
  // With OptimizeOptions::convert: what the conversion did, and per output
  // the relative L2 error of the converted model against the float32 one
  // (conversion_error, on random inputs).
  std::optional<ConversionStats> conversion;
  std::vector<double> conversion_errors;
  int opaque_nodes = 0;    // ONNX nodes outside the operator table, kept as they are
  bool unchanged = false;  // no rule applied: the input file was copied
  // The best graph found gained less than options.min_gain (its predicted
  // cost: below_min_gain_cost_us); the input was kept, as if no rule applied.
  bool below_min_gain = false;
  double below_min_gain_cost_us = 0;
  double import_seconds = 0, search_seconds = 0, export_seconds = 0;
  // With OptimizeOptions::measure enabled and a rewrite chosen: what was
  // measured and whether the rewrite or the input was written.
  std::optional<MeasuredDecision> measured;

  double cost_ratio() const { return cost_before_us > 0 ? cost_after_us / cost_before_us : 1.0; }
  // Why the search stopped: "time_limit", "budget" or "queue_empty" (every
  // graph worth expanding was expanded).
  std::string stop_reason() const;
  // The report of `optimize --report` (keys in the order they are printed).
  nlohmann::ordered_json to_json() const;
  // The human-readable summary `optimize` prints.
  void print_summary(std::FILE* out) const;
};

// A real number of the report, rounded to the six significant digits the
// report has always printed ("%.6g"), so its values stay what they were
// while the JSON library does the printing.
double six_digits(double v);

// Reads options.model, writes options.output; throws on any error (missing
// rules database, a model the importer rejects, a file it cannot write).
OptimizeReport optimize_model(const OptimizeOptions& options);

}  // namespace tgr::optimizer
