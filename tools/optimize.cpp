// `optimize`: optimizes an ONNX model with verified rules (README.md,
// "Optimizing a model"): import, search (optimizer/backtracking_search.h) with rules
// whose every application is proved at the model's shapes, weight folding,
// export.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "optimizer/cost_model.h"
#include "optimizer/fold_constants.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"
#include "optimizer/backtracking_search.h"
#include "rules_db/rules_db.h"
#include "tools/cli_common.h"
#include "verifier/axioms.h"

#ifndef TGR_SPECS_DIR
#define TGR_SPECS_DIR "specs"
#endif
#ifndef TGR_DEFAULT_RULES
#define TGR_DEFAULT_RULES "default_rules.db"
#endif

namespace tgr {
namespace {

using namespace optimizer;
using Clock = std::chrono::steady_clock;

struct Settings {
  std::string rules = TGR_DEFAULT_RULES;
  std::string model, output, report;
  std::string cost_model = "analytic", device = "H100";
  std::string specs = TGR_SPECS_DIR;
  BacktrackingOptions search;
  unsigned proof_timeout_ms = 1000;
  bool quiet = false;
};

double seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

std::string json_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

struct Summary {
  int ops_before = 0, ops_after = 0;
  double cost_before = 0, cost_after = 0;
  double import_s = 0, search_s = 0, export_s = 0;
  RuleLoadStats rules;
  InstanceProofStats proofs;
  bool unchanged = false;  // no rule applied: the input file was copied
  FoldStats fold;
  int opaque = 0;
  std::string cost_model;
};

void write_report(const std::string& path, const Settings& s, const Summary& sum, const BacktrackingResult& r) {
  std::string j = "{\n  \"model\": ";
  j += rules_db::json_quote(s.model);
  j += ",\n  \"output\": ";
  j += rules_db::json_quote(s.output);
  j += ",\n  \"rules_db\": ";
  j += rules_db::json_quote(s.rules);
  j += ",\n  \"cost_model\": ";
  j += rules_db::json_quote(sum.cost_model);
  j += ",\n  \"operators_before\": " + std::to_string(sum.ops_before);
  j += ",\n  \"operators_after\": " + std::to_string(sum.ops_after);
  j += ",\n  \"cost_before_us\": ";
  j += json_number(sum.cost_before);
  j += ",\n  \"cost_after_us\": ";
  j += json_number(sum.cost_after);
  j += ",\n  \"cost_ratio\": ";
  j += json_number(sum.cost_before > 0 ? sum.cost_after / sum.cost_before : 1.0);
  j += ",\n  \"rules_applied\": [";
  for (size_t i = 0; i < r.applied.size(); ++i) {
    j += i ? ",\n    " : "\n    ";
    j += "{\"id\": " + std::to_string(r.applied[i].id);
    j += ", \"count\": " + std::to_string(r.applied[i].count);
    j += ", \"rule\": ";
    j += rules_db::json_quote(r.applied[i].text);
    j += "}";
  }
  j += r.applied.empty() ? "]" : "\n  ]";
  const BacktrackingStats& st = r.stats;
  j += ",\n  \"search\": {\"popped\": " + std::to_string(st.popped);
  j += ", \"candidates\": " + std::to_string(st.candidates);
  j += ", \"pushed\": " + std::to_string(st.pushed);
  j += ", \"duplicates\": " + std::to_string(st.duplicates);
  j += ", \"pruned_by_cost\": " + std::to_string(st.pruned);
  j += ", \"unproved_instances\": " + std::to_string(st.unprovable);
  j += ", \"matches_rejected_used_outside\": " + std::to_string(st.matches.used_outside);
  j += ", \"matches_rejected_cycle\": " + std::to_string(st.matches.cycles);
  j += ", \"budget\": " + std::to_string(s.search.budget);
  j += ", \"alpha\": ";
  j += json_number(s.search.alpha);
  j += ", \"timed_out\": ";
  j += st.timed_out ? "true" : "false";
  j += ", \"seconds\": ";
  j += json_number(st.seconds);
  j += "}";
  j += ",\n  \"proofs\": {\"proved\": " + std::to_string(sum.proofs.proved);
  j += ", \"failed\": " + std::to_string(sum.proofs.failed);
  j += ", \"cache_hits\": " + std::to_string(sum.proofs.cache_hits);
  j += ", \"corrected_partial\": " + std::to_string(sum.proofs.corrected);
  j += ", \"ms\": ";
  j += json_number(sum.proofs.proof_ms);
  j += "}";
  j += ",\n  \"folded_constant_nodes\": " + std::to_string(sum.fold.folded_nodes);
  j += ",\n  \"opaque_nodes\": " + std::to_string(sum.opaque);
  j += ",\n  \"seconds\": {\"import\": ";
  j += json_number(sum.import_s);
  j += ", \"search\": ";
  j += json_number(sum.search_s);
  j += ", \"export\": ";
  j += json_number(sum.export_s);
  j += "}\n}\n";
  std::ofstream out(path);
  if (!(out << j)) throw std::runtime_error("cannot write the report '" + path + "'");
}

void print_summary(const Settings& s, const Summary& sum, const BacktrackingResult& r) {
  std::printf("optimize: %s -> %s\n", s.model.c_str(), s.output.c_str());
  std::printf("  rules:          %d proved rules (%d directions) from %s", sum.rules.proved, sum.rules.directions,
              s.rules.c_str());
  if (sum.rules.partial) std::printf(", %d partial rules (applied with their corrections)", sum.rules.partial);
  if (sum.rules.skipped_partial) std::printf("; %d partial rules without a correction skipped", sum.rules.skipped_partial);
  std::printf("\n  operators:      %d -> %d", sum.ops_before, sum.ops_after);
  if (sum.opaque) std::printf(" (%d opaque ONNX nodes kept as they are)", sum.opaque);
  std::printf("\n");
  std::printf("  predicted cost: %.1f us -> %.1f us (x%.3f), %s\n", sum.cost_before, sum.cost_after,
              sum.cost_before > 0 ? sum.cost_after / sum.cost_before : 1.0, sum.cost_model.c_str());
  std::printf("  rules applied:  %zu distinct\n", r.applied.size());
  for (const RuleUse& u : r.applied) std::printf("    #%-6lld x%-3d %s\n", static_cast<long long>(u.id), u.count, u.text.c_str());
  const BacktrackingStats& st = r.stats;
  std::printf("  search:         %lld graphs popped (budget %d, alpha %.3g%s), %lld rewrites tried, %lld kept, "
              "%lld duplicates, %lld pruned by cost\n",
              static_cast<long long>(st.popped), s.search.budget, s.search.alpha, st.timed_out ? ", timed out" : "",
              static_cast<long long>(st.candidates), static_cast<long long>(st.pushed),
              static_cast<long long>(st.duplicates), static_cast<long long>(st.pruned));
  std::printf("  proofs:         %lld instances proved at model shapes, %lld not proved (not applied), %lld cached, %.0f ms",
              static_cast<long long>(sum.proofs.proved), static_cast<long long>(sum.proofs.failed),
              static_cast<long long>(sum.proofs.cache_hits), sum.proofs.proof_ms);
  if (sum.proofs.corrected)
    std::printf("; %lld partial-rule instances corrected and region-checked", static_cast<long long>(sum.proofs.corrected));
  std::printf("\n");
  if (sum.unchanged) std::printf("  output:         no rule applied; the model is written unchanged\n");
  else std::printf("  weights folded: %d constant operators\n", sum.fold.folded_nodes);
  std::printf("  time:           import %.2f s, search %.2f s, export %.2f s\n", sum.import_s, sum.search_s, sum.export_s);
}

std::unique_ptr<CostModel> make_cost_model(const Settings& s) {
  if (s.cost_model == "analytic") return std::make_unique<AnalyticCostModel>();
  return MeasuredCostModel::from_db(s.rules, s.device);
}

int run(const Settings& s) {
  Summary sum;
  auto t = Clock::now();
  // The rules first: a missing database is the cheapest error to report.
  std::vector<DirectedRule> rules = load_rules(s.rules, &sum.rules);
  onnx_io::ImportOptions import_options;
  import_options.keep_unsupported = true;  // opaque operators pass through untouched
  onnx_io::ImportedModel model = onnx_io::import_model_file(s.model, import_options);
  sum.opaque = model.opaque_nodes;
  sum.import_s = seconds(t);

  std::unique_ptr<CostModel> cost = make_cost_model(s);
  if (auto* measured = dynamic_cast<MeasuredCostModel*>(cost.get())) measured->scale_fallback_to(model.graph);
  verifier::Prover prover(axioms::load_axioms(s.specs));
  verifier::ProofOptions proof_options;
  proof_options.timeout_ms = s.proof_timeout_ms;
  proof_options.refute_trials = 0;  // a failed proof is enough to skip a rewrite
  InstanceProver instances(prover, proof_options);

  t = Clock::now();
  BacktrackingResult result = search(model.graph, rules, *cost, instances, s.search);
  sum.search_s = seconds(t);
  sum.proofs = instances.stats();
  sum.cost_before = result.initial_cost;
  sum.cost_after = result.best_cost;

  t = Clock::now();
  const Graph before = fold_constants(model.graph);
  const Graph after = fold_constants(result.best, &sum.fold);
  sum.ops_before = before.num_ops();
  sum.ops_after = after.num_ops();
  onnx_io::ExportOptions export_options;
  export_options.opset = std::clamp<int64_t>(model.opset, onnx_io::kMinExportOpset, 18);
  export_options.producer_name = "tgr optimize";
  if (result.applied.empty() && s.output != s.model) {
    // Nothing to gain: the model is written as it came, so that an
    // optimized model is never a re-export that merely orders the same
    // operators differently (on the H100 that alone moved BERT-base by 5%).
    // A model whose weights live in external files is only copied where
    // those files are found from the copy too (it loads); else re-exported.
    std::filesystem::copy_file(s.model, s.output, std::filesystem::copy_options::overwrite_existing);
    sum.unchanged = true;
    try {
      (void)onnx_io::load_model(s.output);
    } catch (const std::exception&) {
      sum.unchanged = false;
    }
  }
  if (!sum.unchanged) {
    onnx_io::save_model(onnx_io::export_graph(after, export_options), s.output);
  }
  sum.export_s = seconds(t);
  sum.cost_model = cost->describe();
  if (!s.report.empty()) write_report(s.report, s, sum, result);
  if (!s.quiet) print_summary(s, sum, result);
  return 0;
}

}  // namespace
}  // namespace tgr

int main(int argc, char** argv) {
  tgr::Settings s;
  CLI::App app{"optimize: rewrite an ONNX model with verified rules so that it runs faster and computes the same"};
  app.add_option("model", s.model, "the ONNX model")->required();
  app.add_option("-o,--output", s.output, "where to write the optimized model")->required();
  app.add_option("--rules", s.rules, "the rules database (default: the rules shipped with tgr)");
  app.add_option("--report", s.report, "write a JSON report here");
  app.add_option("--budget", s.search.budget, "graphs the search pops from its queue")->check(CLI::PositiveNumber);
  app.add_option("--alpha", s.search.alpha, "keep graphs costing less than alpha times the best")->check(CLI::Range(1.0, 10.0));
  app.add_option("--timeout", s.search.timeout_s, "seconds the search may take")->check(CLI::PositiveNumber);
  app.add_option("--cost-model", s.cost_model, "analytic | measured (op_costs of the rules database)")
      ->check(CLI::IsMember({"analytic", "measured"}));
  app.add_option("--device", s.device, "the device of measured costs");
  app.add_option("--specs", s.specs, "the axioms the instance proofs use");
  app.add_option("--proof-timeout-ms", s.proof_timeout_ms, "per instance proof");
  app.add_flag("--sequential", [&](int64_t) { s.search.parallel = false; }, "expand on one thread");
  app.add_flag("-q,--quiet", s.quiet, "no summary");
  CLI11_PARSE(app, argc, argv);
  return tgr::cli::guarded("optimize", [&] { return tgr::run(s); });
}
