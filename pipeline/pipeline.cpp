#include "pipeline/pipeline.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"
#include "onnx/onnx_proto.h"
#include "optimizer/cost_model.h"
#include "optimizer/onnxruntime_cost_model.h"
#include "pipeline/defaults.h"
#include "util/output_file.h"
#include "verifier/axioms.h"

namespace tgr::pipeline {

namespace {

using Clock = std::chrono::steady_clock;
using optimizer::CostModel;
using optimizer::DirectedRule;
using optimizer::InstanceProver;

double seconds_since(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

// Whether two paths name one file (the default database given as --rules).
bool same_file(const std::string& a, const std::string& b) {
  std::error_code error;
  return a == b || std::filesystem::equivalent(a, b, error);
}

// --- import ---------------------------------------------------------------

// The rule directions of both rule sets (optimizer::kUserRuleSet,
// kShippedRuleSet), each text once.
struct RuleDirections {
  std::vector<optimizer::RuleDirectionText> directions;
  std::map<std::string, size_t> index_of;  // direction text -> its index in `directions`
  std::array<optimizer::RuleLoadStats, 2> stats_by_set;
};

// Read before the model (a missing database is the cheapest error to
// report), built once the model is known (import_rules_and_model).
RuleDirections read_directions(const OptimizeOptions& o, OptimizeReport& report) {
  RuleDirections r;
  r.directions = optimizer::read_rule_directions(o.rules_db, &r.stats_by_set[optimizer::kUserRuleSet]);
  for (size_t i = 0; i < r.directions.size(); ++i) r.index_of.emplace(r.directions[i].text, i);
  if (same_file(o.default_rules_db, o.rules_db)) {
    for (optimizer::RuleDirectionText& d : r.directions) d.shipped = true;
    return r;
  }
  if (o.default_rules_db.empty()) return r;
  // The shipped rules join the user's; a direction both hold is kept once
  // (the user's, so reports cite the user's ids), marked shipped.
  for (optimizer::RuleDirectionText& d :
       optimizer::read_rule_directions(o.default_rules_db, &r.stats_by_set[optimizer::kShippedRuleSet])) {
    d.shipped = true;
    if (auto [it, added] = r.index_of.emplace(d.text, r.directions.size()); !added) {
      r.directions[it->second].shipped = true;
      continue;
    }
    d.rule_set = optimizer::kShippedRuleSet;
    r.directions.push_back(std::move(d));
  }
  report.default_rules_added = true;
  return r;
}

struct Imported {
  RuleDirections directions;
  onnx_io::ImportedModel model;
  // Only the directions that can ever match the model (most of a large
  // generated database cannot).
  std::vector<DirectedRule> rules;
};

// How the optimized graph of `model` is exported (its opset, functions and
// initializers the caller may override, as the input had them).
onnx_io::ExportOptions export_options_of(const onnx_io::ImportedModel& model) {
  onnx_io::ExportOptions options;
  options.opset = std::clamp<int64_t>(model.opset, onnx_io::kMinExportOpset, 18);
  options.producer_name = "tgr optimize";
  options.functions = model.functions;
  options.domain_opsets = model.domain_opsets;
  options.overridable_initializers = model.overridable_initializers;
  return options;
}

// --convert-to: the model in a half type from here on, and the relative
// error that costs (optimizer/convert_precision.h). Valid ONNX at the opset
// it is written at: an operator ONNX does not define in the type there
// stays float32.
void convert_model(optimizer::PrecisionConversion conversion, onnx_io::ImportedModel& model, OptimizeReport& report) {
  conversion.onnx_opset = export_options_of(model).opset;
  Graph converted = optimizer::convert_precision(model.graph, conversion, &report.conversion.emplace());
  report.conversion_errors = optimizer::conversion_error(model.graph, converted);
  model.graph = std::move(converted);
}

Imported import_rules_and_model(const OptimizeOptions& o, OptimizeReport& report) {
  const auto start = Clock::now();
  Imported in;
  in.directions = read_directions(o, report);
  onnx_io::ImportOptions import_options;
  import_options.keep_unsupported = true;  // opaque operators pass through untouched
  import_options.input_shapes = o.input_shapes;
  import_options.limits = o.import_limits;
  in.model = onnx_io::import_model_file(o.model, import_options);
  report.opaque_nodes = in.model.opaque_nodes;
  if (o.convert) convert_model(*o.convert, in.model, report);
  // Built jointly: a shipped rule may introduce an operator a user rule needs.
  in.rules = optimizer::build_directed_rules(in.directions.directions, in.directions.stats_by_set, &in.model.graph,
                                             &report.rule_filter);
  report.rules = in.directions.stats_by_set[optimizer::kUserRuleSet];
  report.default_rules = in.directions.stats_by_set[optimizer::kShippedRuleSet];
  report.import_seconds = seconds_since(start);
  return in;
}

// --- search ---------------------------------------------------------------

// What the searches share: the target's cost model and the prover of rule
// instances at the model's shapes.
struct SearchContext {
  const Graph& model;
  const std::vector<DirectedRule>& rules;
  CostModel& cost;
  InstanceProver& instances;
};

// `r` without its graph and rule uses, for the report.
SearchResult stats_of(const SearchResult& r) {
  SearchResult out;
  out.initial_cost = r.initial_cost;
  out.best_cost = r.best_cost;
  out.stop_reason = r.stop_reason;
  out.summary = r.summary;
  out.report = r.report;
  return out;
}

SearchResult run_backtracking(const OptimizeOptions& o, const SearchContext& c) {
  return backtracking_result(
      optimizer::staged_backtracking_search(c.model, c.rules, c.cost, c.instances, o.backtracking), o.backtracking);
}

SearchResult run_saturation(const OptimizeOptions& o, const SearchContext& c) {
  return saturation_result(saturation::saturate_and_extract(c.model, c.rules, c.cost, c.instances, o.saturation));
}

// --search both: saturation, then backtracking from its graph, and
// backtracking from the input model; the cheapest of the three graphs.
SearchResult run_both(const OptimizeOptions& o, const SearchContext& c, OptimizeReport& report) {
  SearchResult sat = run_saturation(o, c);
  report.searches.push_back({"saturation", "search:", stats_of(sat)});
  optimizer::BacktrackingResult result;
  move_outcome(result, std::move(sat));
  optimizer::BacktrackingResult then =
      optimizer::backtracking_search(result.best, c.rules, c.cost, c.instances, o.backtracking);
  report.searches.push_back({"backtracking", "then:", backtracking_stats(then.stats, o.backtracking)});
  report.kept = "saturation";
  if (optimizer::continue_with(result, std::move(then))) report.kept = "saturation, then backtracking";
  optimizer::BacktrackingResult direct =
      optimizer::staged_backtracking_search(c.model, c.rules, c.cost, c.instances, o.backtracking);
  report.searches.push_back(
      {"backtracking_from_input", "and:", backtracking_stats(direct.stats, o.backtracking, " from the input")});
  if (direct.best_cost < result.best_cost) {
    result.best = std::move(direct.best);
    result.best_cost = direct.best_cost;
    result.applied = std::move(direct.applied);
    result.rewrites = std::move(direct.rewrites);
    report.kept = "backtracking from the input";
  }
  SearchResult out;
  move_outcome(out, std::move(result));
  return out;
}

// The search asked for (OptimizeOptions::search, resolved); each ran is in report.searches.
SearchResult run_search(const OptimizeOptions& o, const SearchContext& c, OptimizeReport& report) {
  const auto start = Clock::now();
  SearchResult found;
  switch (*o.search) {
    case Search::kBacktrack:
      found = run_backtracking(o, c);
      report.searches.push_back({"backtracking", "search:", stats_of(found)});
      break;
    case Search::kSaturate:
      found = run_saturation(o, c);
      report.searches.push_back({"saturation", "search:", stats_of(found)});
      break;
    case Search::kBoth:
      found = run_both(o, c, report);
      break;
  }
  report.search_seconds = seconds_since(start);
  return found;
}

// --- decide ---------------------------------------------------------------

// The model as it came (after any conversion) instead of the search's graph, as if no rule applied.
void keep_the_model(const Graph& model, SearchResult& found) {
  found.best = model;
  found.best_cost = found.initial_cost;
  found.applied.clear();
  found.rewrites.clear();
}

// The best graph is written only when its predicted gain reaches min_gain;
// else the model as it came.
void keep_if_it_pays(const OptimizeOptions& o, const Graph& model, SearchResult& found, OptimizeReport& report) {
  if (found.applied.empty() || found.best_cost < found.initial_cost * (1 - o.min_gain)) return;
  report.below_min_gain = true;
  report.below_min_gain_cost_us = found.best_cost;
  keep_the_model(model, found);
}

// Never slower by measurement (optimizer/measured_check.h): a rewrite that
// pays by prediction (keep_if_it_pays) is timed against the input file in
// the target's runtime, and dropped as one below min_gain is when it does
// not measure faster. With OptimizeOptions::measure enabled only.
void keep_if_it_measures_faster(const OptimizeOptions& o, const onnx_io::ImportedModel& model, SearchResult& found,
                                OptimizeReport& report) {
  if (!o.measure.enabled || found.applied.empty()) return;
  std::shared_ptr<optimizer::ModelTimer> timer =
      o.timer ? o.timer : std::shared_ptr<optimizer::ModelTimer>(optimizer::make_timer(o.target.target));
  report.measured = optimizer::measure_rewrite(o.model, found.best, export_options_of(model), timer.get(), o.measure);
  report.measured->predicted_ratio = found.initial_cost > 0 ? found.best_cost / found.initial_cost : 1.0;
  for (const optimizer::RuleUse& u : found.applied) report.measured->rewrites += u.count;
  if (!report.measured->keeps_rewrite()) keep_the_model(model.graph, found);
}

void report_search(const OptimizeOptions& o, const RuleDirections& directions, const SearchResult& found,
                   OptimizeReport& report) {
  report.cost_before_us = found.initial_cost;
  report.cost_after_us = found.best_cost;
  report.rules_applied = found.applied;
  for (const optimizer::RuleUse& u : found.applied)
    report.rules_applied_db.push_back(directions.directions[directions.index_of.at(u.text)].rule_set ==
                                              optimizer::kShippedRuleSet
                                          ? o.default_rules_db
                                          : o.rules_db);
}

// --- export ---------------------------------------------------------------

CostedGraph costed(const Graph& graph, CostModel& cost) { return CostedGraph{graph, cost.node_costs_us(graph)}; }

// Nothing to gain: the model is written as it came, so that an optimized
// model is never a re-export that merely orders the same operators
// differently. A model whose weights live in external files is only copied
// into the folder those files are in (their locations are relative);
// elsewhere it is re-exported, weights inside. Returns whether it copied.
bool copy_unchanged(const OptimizeOptions& o, const onnx_io::ImportedModel& model) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool finds_external_data = !model.external_data || fs::equivalent(fs::absolute(o.model).parent_path(),
                                                                          fs::absolute(o.output).parent_path(), ec);
  if (!finds_external_data) return false;
  util::copy_to_output(o.model, o.output);  // as every output: a device written in place, a link through
  return true;
}

void export_model(const OptimizeOptions& o, const onnx_io::ImportedModel& model, const SearchResult& found,
                  CostModel& cost, OptimizeReport& report) {
  const auto start = Clock::now();
  const Graph before = optimizer::fold_constants(model.graph);
  const Graph after = optimizer::fold_constants(found.best, &report.fold);
  report.operators_before = before.num_ops();
  report.operators_after = after.num_ops();
  report.rewrites = found.rewrites;
  if (o.keep_graphs) {
    report.before = costed(before, cost);
    report.after = costed(after, cost);
  }
  // A converted model is never the input file.
  if (found.applied.empty() && o.output != o.model && !o.convert) report.unchanged = copy_unchanged(o, model);
  if (!report.unchanged) onnx_io::save_graph(after, export_options_of(model), o.output);
  report.export_seconds = seconds_since(start);
}

// --- report ---------------------------------------------------------------

// One ONNX model per signature the cost model had to estimate, and their
// list (OptimizeOptions::calibration_dir).
int write_calibration_models(const std::string& dir, const optimizer::OnnxRuntimeCostModel& cost) {
  std::filesystem::create_directories(dir);
  std::string list;
  int count = 0;
  onnx_io::ExportOptions options;
  options.producer_name = "tgr optimize --calibration-dir";
  for (const auto& [signature, graph] : cost.asked()) {
    const std::string file = "op" + std::to_string(count++) + ".onnx";
    onnx_io::save_model(onnx_io::export_graph(graph, options), (std::filesystem::path(dir) / file).string());
    list += file + '\t' + signature + '\n';
  }
  util::write_text_file((std::filesystem::path(dir) / "signatures.tsv").string(), list);
  return count;
}

void report_cost_model(const OptimizeOptions& o, const CostModel& cost, OptimizeReport& report) {
  report.cost_model = cost.describe();
  if (const auto* ort = dynamic_cast<const optimizer::OnnxRuntimeCostModel*>(&cost); ort && !o.calibration_dir.empty())
    report.calibration_models = write_calibration_models(o.calibration_dir, *ort);
}

}  // namespace

OptimizeReport optimize_model(const OptimizeOptions& asked) {
  const OptimizeOptions o = resolve_defaults(asked);
  OptimizeReport report;
  report.options = o;
  if (!o.calibration_dir.empty() && o.target.target != optimizer::Target::kOnnxRuntimeCpu)
    throw std::invalid_argument("--calibration-dir measures for --target onnxruntime-cpu only");
  Imported in = import_rules_and_model(o, report);

  std::unique_ptr<CostModel> cost = optimizer::make_cost_model(o.target);
  verifier::Prover prover(axioms::load_axioms(o.specs_dir));
  verifier::ProofOptions proof_options;
  proof_options.timeout_ms = o.proof_timeout_ms;
  proof_options.refute_trials = 0;  // a failed proof is enough to skip a rewrite
  InstanceProver instances(prover, proof_options);

  SearchResult found = run_search(o, SearchContext{in.model.graph, in.rules, *cost, instances}, report);
  keep_if_it_pays(o, in.model.graph, found, report);
  keep_if_it_measures_faster(o, in.model, found, report);
  // The rules are not needed past the search: released before the export,
  // so that the peak memory is the larger of the two, not their sum.
  std::vector<DirectedRule>().swap(in.rules);
  report.proofs = instances.stats();
  report_search(o, in.directions, found, report);

  export_model(o, in.model, found, *cost, report);
  report_cost_model(o, *cost, report);
  return report;
}

}  // namespace tgr::pipeline
