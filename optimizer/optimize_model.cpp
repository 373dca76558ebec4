#include "optimizer/optimize_model.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"
#include "onnx/onnx_proto.h"
#include "optimizer/cost_model.h"
#include "optimizer/onnxruntime_cost_model.h"
#include "util/output_file.h"
#include "verifier/axioms.h"

namespace tgr::optimizer {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

// One ONNX model per signature the cost model had to estimate, and their
// list (OptimizeOptions::calibration_dir).
int write_calibration_models(const std::string& dir, const OnnxRuntimeCostModel& cost) {
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

// Whether two paths name one file (the default database given as --rules).
bool same_file(const std::string& a, const std::string& b) {
  std::error_code error;
  return a == b || std::filesystem::equivalent(a, b, error);
}

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

CostedGraph costed(const Graph& graph, CostModel& cost) { return CostedGraph{graph, cost.node_costs_us(graph)}; }

// The summary's line for a backtracking search ("search:", or "then:" and
// "and:" with --search both).
void print_backtracking(std::FILE* out, const OptimizeReport& report, const BacktrackingStats& st, const char* label,
                        const char* from) {
  const OptimizeOptions& o = report.options;
  char stopped[96];
  if (st.timed_out)
    std::snprintf(stopped, sizeof stopped, "stopped at the %g s time limit (more time may find more)",
                  o.backtracking.timeout_s);
  else
    std::snprintf(stopped, sizeof stopped, "%s",
                  st.budget_exhausted ? "stopped at the budget" : "stopped with every graph within alpha expanded");
  std::fprintf(out,
               "  %-16sbacktracking%s, %s: %lld graphs popped (budget %d, alpha %.3g), %lld rewrites tried, "
               "%lld kept, %lld duplicates, %lld pruned by cost\n",
               label, from, stopped, static_cast<long long>(st.popped), o.backtracking.budget, o.backtracking.alpha,
               static_cast<long long>(st.candidates), static_cast<long long>(st.pushed),
               static_cast<long long>(st.duplicates), static_cast<long long>(st.pruned));
}

// Why a backtracking search stopped (OptimizeReport::stop_reason's words).
std::string backtracking_stop_reason(const BacktrackingStats& st) {
  if (st.timed_out) return "time_limit";
  if (st.budget_exhausted) return "budget";
  return "queue_empty";
}

}  // namespace

double six_digits(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return std::strtod(buf, nullptr);
}

std::string OptimizeReport::stop_reason() const {
  if (other_search && !backtracked_after) return other_search->stop_reason;
  return backtracking_stop_reason(search);
}

nlohmann::ordered_json OptimizeReport::to_json() const {
  nlohmann::ordered_json applied = nlohmann::ordered_json::array();
  for (size_t i = 0; i < rules_applied.size(); ++i) {
    const RuleUse& u = rules_applied[i];
    applied.push_back({{"id", u.id},
                       {"count", u.count},
                       {"rule", u.text},
                       {"rules_db", i < rules_applied_db.size() ? rules_applied_db[i] : options.rules_db}});
  }
  nlohmann::ordered_json rewrites_json = nlohmann::ordered_json::array();
  for (const AppliedRewrite& r : rewrites)
    rewrites_json.push_back({{"rule", r.tag}, {"id", r.rule_id}, {"removed", r.removed}, {"added", r.added}});
  nlohmann::ordered_json rule_sets = nlohmann::ordered_json::array();
  rule_sets.push_back({{"path", options.rules_db}, {"proved", rules.proved}, {"directions", rules.directions}});
  if (default_rules_added)
    rule_sets.push_back({{"path", options.default_rules_db},
                         {"proved", default_rules.proved},
                         {"directions", default_rules.directions}});
  auto backtracking_json = [&](const BacktrackingStats& st, const std::string& stopped) {
    return nlohmann::ordered_json{{"popped", st.popped},
                                  {"candidates", st.candidates},
                                  {"pushed", st.pushed},
                                  {"duplicates", st.duplicates},
                                  {"pruned_by_cost", st.pruned},
                                  {"unproved_instances", st.unprovable},
                                  {"matches_rejected_used_outside", st.matches.used_outside},
                                  {"matches_rejected_cycle", st.matches.cycles},
                                  {"budget", options.backtracking.budget},
                                  {"alpha", six_digits(options.backtracking.alpha)},
                                  {"timed_out", st.timed_out},
                                  {"stop_reason", stopped},
                                  {"seconds", six_digits(st.seconds)}};
  };
  nlohmann::ordered_json backtracking = backtracking_json(search, stop_reason());
  nlohmann::ordered_json both;
  if (other_search && backtracked_after) {
    both = {{"saturation", other_search->report}, {"backtracking", std::move(backtracking)}};
    if (from_input)
      both["backtracking_from_input"] = backtracking_json(*from_input, backtracking_stop_reason(*from_input));
    both["kept"] = kept;
  }
  nlohmann::ordered_json json = {
      {"model", options.model},
      {"output", options.output},
      {"rules_db", options.rules_db},
      {"rule_sets", std::move(rule_sets)},
      {"directions_that_can_match", rule_filter.kept},
      {"directions_unreachable", rule_filter.unreachable},
      {"target", std::string(target_name(options.target.target))},
      {"cost_model", cost_model},
      {"operators_before", operators_before},
      {"operators_after", operators_after},
      {"cost_before_us", six_digits(cost_before_us)},
      {"cost_after_us", six_digits(cost_after_us)},
      {"cost_ratio", six_digits(cost_ratio())},
      {"min_gain", six_digits(options.min_gain)},
      {"below_min_gain", below_min_gain},
      {"measured", measured ? measured->to_json() : nlohmann::ordered_json(nullptr)},
      {"rules_applied", std::move(applied)},
      {"rewrites", std::move(rewrites_json)},
      {"search", !other_search       ? std::move(backtracking)
                 : backtracked_after ? std::move(both)
                                     : other_search->report},
      {"proofs",
       {{"proved", proofs.proved},
        {"failed", proofs.failed},
        {"cache_hits", proofs.cache_hits},
        {"replayed", proofs.replayed},
        {"corrected_partial", proofs.corrected},
        {"ms", six_digits(proofs.proof_ms)}}},
      {"folded_constant_nodes", fold.folded_nodes},
      {"opaque_nodes", opaque_nodes},
      {"seconds",
       {{"import", six_digits(import_seconds)},
        {"search", six_digits(search_seconds)},
        {"export", six_digits(export_seconds)}}},
  };
  if (conversion) {
    nlohmann::ordered_json errors = nlohmann::ordered_json::array();
    for (double e : conversion_errors) errors.push_back(std::isnan(e) ? nlohmann::ordered_json() : nlohmann::ordered_json(six_digits(e)));
    json["conversion"] = {{"to", std::string(dtype_name(options.convert->to))},
                          {"convert_io", options.convert->convert_io},
                          {"weights", conversion->weights},
                          {"weight_elements", conversion->weight_elements},
                          {"casts", conversion->casts},
                          {"kept_float32", conversion->kept_float32},
                          {"relative_l2_vs_float32", std::move(errors)}};
  }
  return json;
}

namespace {

double worst_of(const std::vector<double>& errors) {
  double worst = 0;
  for (double e : errors) worst = std::isnan(e) || std::isnan(worst) ? NAN : std::max(worst, e);
  return worst;
}

void print_conversion(std::FILE* out, const OptimizeReport& r) {
  const PrecisionConversion& c = *r.options.convert;
  std::fprintf(out,
               "  converted:      to %s: %d weights (%lld elements) rounded, %d casts added, %d operators kept in "
               "float32; inputs and outputs %s\n",
               std::string(dtype_name(c.to)).c_str(), r.conversion->weights,
               static_cast<long long>(r.conversion->weight_elements), r.conversion->casts, r.conversion->kept_float32,
               c.convert_io ? std::string(dtype_name(c.to)).c_str() : "float32");
  std::fprintf(out, "                  relative L2 error against the float32 model %.2e (worst output, random inputs)\n",
               worst_of(r.conversion_errors));
}

}  // namespace

void OptimizeReport::print_summary(std::FILE* out) const {
  const OptimizeOptions& o = options;
  std::fprintf(out, "optimize: %s -> %s\n", o.model.c_str(), o.output.c_str());
  std::fprintf(out, "  rules:          %d proved rules (%d directions) from %s", rules.proved, rules.directions,
               o.rules_db.c_str());
  if (rules.partial) std::fprintf(out, ", %d partial rules (applied with their corrections)", rules.partial);
  if (rules.skipped_partial)
    std::fprintf(out, "; %d partial rules without a correction skipped", rules.skipped_partial);
  if (default_rules_added)
    std::fprintf(out, "\n                  + %d proved rules (%d directions) shipped with tgr, from %s",
                 default_rules.proved, default_rules.directions, o.default_rules_db.c_str());
  std::fprintf(out, "\n                  %d directions can match this model (%d need an operator it cannot reach)",
               rule_filter.kept, rule_filter.unreachable);
  std::fprintf(out, "\n  operators:      %d -> %d", operators_before, operators_after);
  if (opaque_nodes) std::fprintf(out, " (%d opaque ONNX nodes kept as they are)", opaque_nodes);
  std::fprintf(out, "\n");
  std::fprintf(out, "  predicted cost: %.1f us -> %.1f us (x%.3f), target %s: %s\n", cost_before_us, cost_after_us,
               cost_ratio(), std::string(target_name(o.target.target)).c_str(), cost_model.c_str());
  std::fprintf(out, "  rules applied:  %zu distinct\n", rules_applied.size());
  for (size_t i = 0; i < rules_applied.size(); ++i) {
    const RuleUse& u = rules_applied[i];
    const bool shipped = i < rules_applied_db.size() && rules_applied_db[i] != o.rules_db;
    std::fprintf(out, "    %s#%-6lld x%-3d %s\n", shipped ? "default" : "", static_cast<long long>(u.id), u.count,
                 u.text.c_str());
  }
  if (other_search) std::fprintf(out, "  search:         %s\n", other_search->summary.c_str());
  if (!other_search || backtracked_after)
    print_backtracking(out, *this, search, backtracked_after ? "then:" : "search:", "");
  if (from_input) print_backtracking(out, *this, *from_input, "and:", " from the input");
  if (!kept.empty()) std::fprintf(out, "  kept:           the graph of %s (the cheapest)\n", kept.c_str());
  std::fprintf(out,
               "  proofs:         %lld instances proved at model shapes, %lld not proved (not applied), %lld cached, "
               "%.0f ms",
               static_cast<long long>(proofs.proved), static_cast<long long>(proofs.failed),
               static_cast<long long>(proofs.cache_hits), proofs.proof_ms);
  if (proofs.corrected)
    std::fprintf(out, "; %lld partial-rule instances corrected and region-checked",
                 static_cast<long long>(proofs.corrected));
  std::fprintf(out, "\n");
  if (measured) std::fprintf(out, "  measured:       %s\n", measured->summary().c_str());
  if (measured && !measured->keeps_rewrite())
    std::fprintf(out, "  output:         %s\n", measured->output_line().c_str());
  else if (below_min_gain)
    std::fprintf(out,
                 "  output:         the best graph found, predicted x%.3f, gains less than --min-gain %g; the model is "
                 "written unchanged\n",
                 cost_before_us > 0 ? below_min_gain_cost_us / cost_before_us : 1.0, o.min_gain);
  else if (unchanged) std::fprintf(out, "  output:         no rule applied; the model is written unchanged\n");
  if (conversion) print_conversion(out, *this);
  else std::fprintf(out, "  weights folded: %d constant operators\n", fold.folded_nodes);
  if (!o.calibration_dir.empty())
    std::fprintf(out, "  calibration:    %d one-node models of unmeasured signatures written to %s\n",
                 calibration_models, o.calibration_dir.c_str());
  std::fprintf(out, "  time:           import %.2f s, search %.2f s, export %.2f s\n", import_seconds, search_seconds,
               export_seconds);
}

OptimizeReport optimize_model(const OptimizeOptions& o) {
  OptimizeReport report;
  report.options = o;
  if (!o.calibration_dir.empty() && o.target.target != Target::kOnnxRuntimeCpu)
    throw std::invalid_argument("--calibration-dir measures for --target onnxruntime-cpu only");
  auto t = Clock::now();
  // The rules are read first (a missing database is the cheapest error to
  // report) and built once the model is known: only the directions that can
  // ever match it (most of a large generated database cannot).
  std::array<RuleLoadStats, 2> stats_by_set;  // by rule set: kUserRuleSet, kShippedRuleSet
  std::vector<RuleDirectionText> directions = read_rule_directions(o.rules_db, &stats_by_set[kUserRuleSet]);
  std::map<std::string, size_t> index_of_direction;  // direction text -> its index in `directions`
  for (size_t i = 0; i < directions.size(); ++i) index_of_direction.emplace(directions[i].text, i);
  if (same_file(o.default_rules_db, o.rules_db)) {
    for (RuleDirectionText& d : directions) d.shipped = true;
  } else if (!o.default_rules_db.empty()) {
    // The shipped rules join the user's; a direction both hold is kept once
    // (the user's, so reports cite the user's ids), marked shipped.
    for (RuleDirectionText& d : read_rule_directions(o.default_rules_db, &stats_by_set[kShippedRuleSet])) {
      d.shipped = true;
      if (auto [it, added] = index_of_direction.emplace(d.text, directions.size()); !added) {
        directions[it->second].shipped = true;
        continue;
      }
      d.rule_set = kShippedRuleSet;
      directions.push_back(std::move(d));
    }
    report.default_rules_added = true;
  }
  onnx_io::ImportOptions import_options;
  import_options.keep_unsupported = true;  // opaque operators pass through untouched
  import_options.input_shapes = o.input_shapes;
  import_options.limits = o.import_limits;
  onnx_io::ImportedModel model = onnx_io::import_model_file(o.model, import_options);
  report.opaque_nodes = model.opaque_nodes;
  if (o.convert) {
    PrecisionConversion conversion = *o.convert;
    conversion.onnx_opset = export_options_of(model).opset;  // written valid at the opset it is written at
    Graph converted = convert_precision(model.graph, conversion, &report.conversion.emplace());
    report.conversion_errors = conversion_error(model.graph, converted);
    model.graph = std::move(converted);
  }
  // Built jointly: a shipped rule may introduce an operator a user rule needs.
  std::vector<DirectedRule> rules = build_directed_rules(directions, stats_by_set, &model.graph, &report.rule_filter);
  report.rules = stats_by_set[kUserRuleSet];
  report.default_rules = stats_by_set[kShippedRuleSet];
  report.import_seconds = seconds_since(t);

  std::unique_ptr<CostModel> cost = make_cost_model(o.target);
  verifier::Prover prover(axioms::load_axioms(o.specs_dir));
  verifier::ProofOptions proof_options;
  proof_options.timeout_ms = o.proof_timeout_ms;
  proof_options.refute_trials = 0;  // a failed proof is enough to skip a rewrite
  InstanceProver instances(prover, proof_options);

  t = Clock::now();
  BacktrackingResult result;
  if (o.search) {
    SearchOutcome outcome = o.search(model.graph, rules, *cost, instances);
    result.best = std::move(outcome.best);
    result.initial_cost = outcome.initial_cost;
    result.best_cost = outcome.best_cost;
    result.applied = std::move(outcome.applied);
    result.rewrites = std::move(outcome.rewrites);
    report.other_search = std::move(outcome);
    if (o.backtrack_after_search) {
      BacktrackingResult then = backtracking_search(result.best, rules, *cost, instances, o.backtracking);
      report.backtracked_after = true;
      report.kept = "saturation";
      result.stats = then.stats;
      if (continue_with(result, std::move(then))) report.kept = "saturation, then backtracking";
      BacktrackingResult direct = staged_backtracking_search(model.graph, rules, *cost, instances, o.backtracking);
      report.from_input = direct.stats;
      if (direct.best_cost < result.best_cost) {
        result.best = std::move(direct.best);
        result.best_cost = direct.best_cost;
        result.applied = std::move(direct.applied);
        result.rewrites = std::move(direct.rewrites);
        report.kept = "backtracking from the input";
      }
    }
  } else {
    result = staged_backtracking_search(model.graph, rules, *cost, instances, o.backtracking);
  }
  report.search_seconds = seconds_since(t);
  if (!result.applied.empty() && !(result.best_cost < result.initial_cost * (1 - o.min_gain))) {
    report.below_min_gain = true;
    report.below_min_gain_cost_us = result.best_cost;
    result.best = model.graph;
    result.best_cost = result.initial_cost;
    result.applied.clear();
    result.rewrites.clear();
  }
  // Never slower by measurement (measured_check.h): the rewrite is timed
  // against the input in the target's runtime, and dropped as a rewrite
  // below --min-gain is when it does not measure faster.
  if (o.measure.enabled && !result.applied.empty()) {
    std::shared_ptr<ModelTimer> timer = o.timer ? o.timer : std::shared_ptr<ModelTimer>(make_timer(o.target.target));
    report.measured = measure_rewrite(o.model, result.best, export_options_of(model), timer.get(), o.measure);
    report.measured->predicted_ratio = result.initial_cost > 0 ? result.best_cost / result.initial_cost : 1.0;
    for (const RuleUse& u : result.applied) report.measured->rewrites += u.count;
    if (!report.measured->keeps_rewrite()) {
      result.best = model.graph;
      result.best_cost = result.initial_cost;
      result.applied.clear();
      result.rewrites.clear();
    }
  }
  // The rules are not needed past the search: released before the export,
  // so that the peak is the larger of the two, not their sum (a --max-ops 4
  // database's rules take 3 GB; with BERT-base's export on top, when it still
  // copied the weights into a ModelProto, the peak was 4.4 GB).
  std::vector<DirectedRule>().swap(rules);
  report.proofs = instances.stats();
  report.cost_before_us = result.initial_cost;
  report.cost_after_us = result.best_cost;
  report.rules_applied = result.applied;
  for (const RuleUse& u : result.applied)
    report.rules_applied_db.push_back(
        directions[index_of_direction.at(u.text)].rule_set == kShippedRuleSet ? o.default_rules_db : o.rules_db);
  report.search = result.stats;

  t = Clock::now();
  const Graph before = fold_constants(model.graph);
  const Graph after = fold_constants(result.best, &report.fold);
  report.operators_before = before.num_ops();
  report.operators_after = after.num_ops();
  report.rewrites = result.rewrites;
  if (o.keep_graphs) {
    report.before = costed(before, *cost);
    report.after = costed(after, *cost);
  }
  const onnx_io::ExportOptions export_options = export_options_of(model);
  if (result.applied.empty() && o.output != o.model && !o.convert) {
    // Nothing to gain: the model is written as it came, so that an
    // optimized model is never a re-export that merely orders the same
    // operators differently (on the H100 that alone moved BERT-base by 5%).
    // A model whose weights live in external files is only copied into the
    // folder those files are in (their locations are relative); elsewhere it
    // is re-exported, weights inside.
    namespace fs = std::filesystem;
    std::error_code ec;
    const bool finds_external_data = !model.external_data || fs::equivalent(fs::absolute(o.model).parent_path(),
                                                                            fs::absolute(o.output).parent_path(), ec);
    if (finds_external_data) {
      util::copy_to_output(o.model, o.output);  // as every output: a device written in place, a link through
      report.unchanged = true;
    }
  }
  if (!report.unchanged) onnx_io::save_graph(after, export_options, o.output);
  report.export_seconds = seconds_since(t);
  report.cost_model = cost->describe();
  if (const auto* ort = dynamic_cast<const OnnxRuntimeCostModel*>(cost.get()); ort && !o.calibration_dir.empty())
    report.calibration_models = write_calibration_models(o.calibration_dir, *ort);
  return report;
}

}  // namespace tgr::optimizer
