// `optimize`: optimizes an ONNX model with verified rules (README.md,
// "Optimizing a model"). The work is optimizer::optimize_model
// (optimizer/optimize_model.h); this file parses the arguments and prints.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "optimizer/html_report.h"
#include "optimizer/optimize_model.h"
#include "optimizer/plan_cost_model.h"
#include "saturation/saturation.h"
#include "tools/cli_app.h"
#include "tools/cli_common.h"
#include "tools/data_paths.h"
#include "tools/input_shapes.h"
#include "tools/stdout_data.h"
#include "tools/unverified_rules.h"
#include "util/output_file.h"

namespace {

void write_report(const std::string& path, const tgr::optimizer::OptimizeReport& report,
                  const std::vector<std::string>& warnings) {
  nlohmann::ordered_json json = report.to_json();
  json["warnings"] = warnings;
  tgr::util::write_text_file(path, json.dump(2) + "\n");
}

// The names --calibration-dir writes (op0.onnx, op1.onnx, ..., signatures.tsv).
bool calibration_file_name(const std::string& name) {
  if (name == "signatures.tsv") return true;
  const size_t digits = name.size() > 7 ? name.size() - 7 : 0;  // "op" DIGITS ".onnx"
  return digits > 0 && name.rfind("op", 0) == 0 && name.substr(name.size() - 5) == ".onnx" &&
         name.find_first_not_of("0123456789", 2) == 2 + digits;
}

// Refuses (UsageError) a file of the command, read or written, that lies in
// --calibration-dir under a name written there, before anything is written.
void refuse_calibration_overwrite(const std::string& dir, const std::vector<tgr::cli::FileRole>& files) {
  if (dir.empty()) return;
  for (const tgr::cli::FileRole& f : files) {
    if (f.path.empty() || tgr::cli::is_stdout(f.path)) continue;
    const std::filesystem::path p(f.path);
    const std::string folder = p.has_parent_path() ? p.parent_path().string() : ".";
    if (calibration_file_name(p.filename().string()) && tgr::cli::same_file(folder, dir))
      throw tgr::cli::UsageError(f.what + " '" + f.path + "' lies in --calibration-dir '" + dir +
                                 "', where optimize writes op0.onnx, op1.onnx, ... and signatures.tsv: refusing to "
                                 "overwrite it");
  }
}

}  // namespace

int main(int argc, char** argv) {
  tgr::optimizer::OptimizeOptions o;
  o.rules_db = tgr::cli::default_rules_db();
  o.default_rules_db = o.rules_db;
  bool no_default_rules = false;
  o.specs_dir = tgr::cli::default_specs_dir();
  std::string report_path;
  std::string target = "onnxruntime-cpu";
  bool quiet = false;
  double unmeasured_margin = 0;  // --unmeasured-margin, when given
  CLI::App app{"optimize: rewrite an ONNX model with verified rules so that it runs faster and computes the same",
               "optimize"};
  tgr::cli::setup(app);
  app.add_option("model", o.model, "the ONNX model")->required();
  app.add_option("-o,--output", o.output, "where to write the optimized model (-: stdout, and the summary to stderr)")
      ->required();
  app.add_option("--rules", o.rules_db,
                 "the rules database (default: the rules shipped with tgr, which are also added to a database "
                 "given here unless --no-default-rules)");
  app.add_flag("--no-default-rules", no_default_rules, "with --rules: use that database's rules only");
  app.add_option("--report", report_path, "write a JSON report here");
  std::string html_path;
  app.add_option("--report-html", html_path,
                 "write an HTML page here: both graphs drawn (Graphviz), the rewrites located, costs, proofs");
  app.add_option("--budget", o.backtracking.budget, "graphs the search pops from its queue")
      ->check(tgr::cli::at_least(int64_t{1}));
  app.add_option("--alpha", o.backtracking.alpha, "keep graphs costing less than alpha times the best")
      ->check(tgr::cli::within(1.0, 10.0));
  app.add_option("--timeout", o.backtracking.timeout_s, "seconds the search may take")->check(tgr::cli::seconds());
  std::string search;  // empty: the target's (TargetInfo::default_search)
  tgr::saturation::SaturationOptions saturation = tgr::saturation::optimize_defaults();
  // "\n(default: the target's: onnxruntime-cpu X, ...)" for an option whose default each target sets.
  auto targets_defaults = [](auto default_of) {
    std::ostringstream text;
    text << "\n(default: the target's:";
    for (const auto& t : tgr::optimizer::targets())
      text << (&t == &tgr::optimizer::targets().front() ? " " : ", ") << t.name << " " << default_of(t);
    text << ")";
    return text.str();
  };
  app.add_option("--search", search,
                 "backtrack (TASO) | saturate (equality saturation, ILP extraction) | both (saturate, then backtrack "
                 "from its graph, and backtrack from the model; the cheapest kept; each with --timeout)" +
                     targets_defaults([](const auto& t) { return t.default_search; }))
      ->check(CLI::IsMember({"backtrack", "saturate", "both"}));
  auto* node_limit = app.add_option("--node-limit", saturation.runner.node_limit,
                                    "saturate: e-nodes (given: this limit alone, instead of --node-growth's)")
                         ->check(tgr::cli::at_least(int64_t{1}));
  auto* node_growth =
      app.add_option("--node-growth", saturation.runner.growth_limit,
                     "saturate: the e-graph grows to at most this many times the model's e-nodes (at least " +
                         std::to_string(saturation.runner.min_node_limit) +
                         ", at most --node-limit; 0: --node-limit alone)" +
                         targets_defaults([](const auto& t) { return t.default_node_growth; }))
          ->default_str("")  // no one default: the target's, named in the help
          ->check(tgr::cli::at_least(0.0));
  node_limit->excludes(node_growth);
  auto* iterations =
      app.add_option("--iterations", saturation.runner.iteration_limit,
                     "saturate: iterations" + targets_defaults([](const auto& t) { return t.default_iterations; }))
          ->default_str("")  // no one default: the target's, named in the help
          ->check(tgr::cli::at_least(int64_t{1}));
  app.add_option("--ilp-timeout", saturation.ilp.time_limit_s, "saturate: seconds for the extraction ILP (0: greedy)")
      ->check(tgr::cli::seconds(true));
  app.add_option("--refine-window", saturation.refine_window,
                 "saturate, under a target that fuses operators: each refinement move is first costed on the "
                 "operators within this many steps of what it changes, and built whole only where that is cheaper "
                 "(0: every move built whole)")
      ->capture_default_str();
  std::string target_help = "where the model will run, which decides what the search minimises:";
  std::vector<std::string> target_names;
  for (const auto& t : tgr::optimizer::targets()) {
    target_help += "\n  " + std::string(t.name) + ": " + std::string(t.help);
    target_names.emplace_back(t.name);
  }
  target_help +=
      "\n(default onnxruntime-cpu: the exported model is an ONNX model, and ONNX Runtime is the runtime "
      "measured out of the box)";
  app.add_option("--target", target, target_help)->check(CLI::IsMember(target_names));
  app.add_option("--costs", o.target.costs_db,
                 "the database whose op_costs the measured targets read (default: onnxruntime-cpu the shipped table "
                 "in the default rules database, tgr-gpu the rules database)");
  app.add_option("--device", o.target.gpu_device, "tgr-gpu: the GPU whose costs calibrate stored (default H100)");
  char margin_default[16];
  std::snprintf(margin_default, sizeof margin_default, "%.2f", tgr::optimizer::PlanCostModel::kUnmeasuredMargin);
  app.add_option("--unmeasured-margin", unmeasured_margin,
                 "tgr-gpu: what a step the table lacks costs over its fitted guess (default " +
                     std::string(margin_default) +
                     ": a guess must win by a margin; below 1 the search explores, and calibrating its graph "
                     "measures the steps it reached)")
      ->default_str("")  // the default is the cost model's, named in the help
      ->check(tgr::cli::positive());
  app.add_option("--calibration-dir", o.calibration_dir,
                 "onnxruntime-cpu: write a one-node ONNX model of each signature the table lacked here "
                 "(tools/calibrate_ort.py times them)");
  app.add_option("--min-gain", o.min_gain,
                 "write the model unchanged unless the predicted cost drops by at least this fraction (default 0.02)")
      ->check(tgr::cli::within(0.0, 1.0));
  bool no_measure = false;
  app.add_flag("--no-measure", no_measure,
               "write the rewrite the search chose without first timing it against the model in the target's runtime "
               "(onnxruntime-cpu: ONNX Runtime through python3; tgr-gpu: bench, where a GPU is)");
  auto* measure_time =
      app.add_option("--measure-time", o.measure.time_limit_s,
                     "seconds the timing of a rewrite against the model may take, loads included; it stops there and "
                     "says so")
          ->capture_default_str()
          ->check(tgr::cli::seconds());
  auto* measure_threshold =
      app.add_option("--measure-threshold", o.measure.min_speedup,
                     "write a rewrite only when it measures at least this fraction faster than the model (the median "
                     "of the paired ratios of interleaved rounds); otherwise the model is written unchanged")
          ->capture_default_str()
          ->check(tgr::cli::within(0.0, 0.5));
  app.add_option("--specs", o.specs_dir, "the axioms the instance proofs use");
  app.add_option("--proof-timeout-ms", o.proof_timeout_ms, "per instance proof");
  app.add_flag(
      "--sequential", [&](int64_t) { o.backtracking.parallel = false; }, "expand on one thread");
  app.add_option("--max-elements", o.import_limits.max_elements,
                 "largest tensor, in elements, the model may ask for (default 2^28)")
      ->check(tgr::cli::at_least(int64_t{1}));
  app.add_option("--max-bytes", o.import_limits.max_bytes,
                 "total bytes of the constants the import may compute (default 4 GiB)")
      ->check(tgr::cli::at_least(int64_t{1}));
  std::string convert_to;
  bool convert_io = false;
  auto* convert_opt =
      app.add_option("--convert-to", convert_to,
                     "convert a float32 model to this type before optimizing: weights and activations; exp, softmax, "
                     "layer norm, sums and means stay float32 (casts around them); the relative L2 error against "
                     "the float32 model is reported")
          ->check(CLI::IsMember({"float16", "bfloat16"}));
  app.add_flag("--convert-io", convert_io,
               "with --convert-to: the model's float inputs and outputs take the type too (default: they stay "
               "float32, cast at the boundary)")
      ->needs(convert_opt);
  app.add_flag("-q,--quiet", quiet, "no summary");
  std::vector<std::string> input_shapes;
  tgr::cli::add_input_shape_option(app, input_shapes);
  if (auto rc = tgr::cli::parse(app, argc, argv)) return *rc;
  if (no_default_rules) o.default_rules_db.clear();
  if (app.count("--unmeasured-margin")) o.target.unmeasured_margin = unmeasured_margin;
  if (node_limit->count() > 0) saturation.runner.growth_limit = 0;  // the limit given, alone
  if (node_limit->count() > 0 || node_growth->count() > 0) saturation.target_growth_limit = false;
  if (iterations->count() > 0) saturation.target_iteration_limit = false;
  o.target.target = tgr::optimizer::parse_target(target);
  if (!convert_to.empty())
    o.convert = tgr::optimizer::PrecisionConversion{.to = tgr::parse_dtype(convert_to), .convert_io = convert_io};
  o.measure.enabled = !no_measure && o.target.target != tgr::optimizer::Target::kRoofline && !o.convert;
  o.measure.ort_script = tgr::cli::measure_ort_script();
  o.measure.bench_program = tgr::cli::sibling_program("bench");
  tgr::saturation::use_search(o, search, saturation);
  if (o.target.costs_db.empty())
    o.target.costs_db = o.target.target == tgr::optimizer::Target::kTgrGpu ? o.rules_db : TGR_DEFAULT_RULES;
  return tgr::cli::guarded("optimize", [&] {
    using tgr::optimizer::Target;
    if (app.count("--device") && o.target.target != Target::kTgrGpu)
      throw tgr::cli::UsageError("--device names the GPU of --target tgr-gpu");
    if (app.count("--unmeasured-margin") && o.target.target != Target::kTgrGpu)
      throw tgr::cli::UsageError("--unmeasured-margin prices the steps --target tgr-gpu has not measured");
    if (app.count("--costs") && o.target.target == Target::kRoofline)
      throw tgr::cli::UsageError("--target roofline reads no measured costs (--costs)");
    if (!o.calibration_dir.empty() && o.target.target != Target::kOnnxRuntimeCpu)
      throw tgr::cli::UsageError("--calibration-dir measures for --target onnxruntime-cpu only");
    if ((measure_time->count() || measure_threshold->count()) && !o.measure.enabled)
      throw tgr::cli::UsageError(no_measure ? "--measure-time and --measure-threshold time a rewrite; --no-measure "
                                              "turns that off"
                                            : "--target roofline runs on no runtime: nothing to measure "
                                              "(--measure-time, --measure-threshold)");
    o.input_shapes = tgr::cli::parse_input_shapes(input_shapes);
    o.measure.input_shapes = o.input_shapes;
    o.measure.gpu_costs_db = o.target.costs_db;
    const std::vector<tgr::cli::FileRole> files = {{"the model", o.model},
                                                   {"-o", o.output, true},
                                                   {"--report", report_path, true},
                                                   {"--report-html", html_path, true},
                                                   {"the rules database", o.rules_db},
                                                   {"the default rules database", o.default_rules_db},
                                                   {"--costs", o.target.costs_db},
                                                   {"--specs", o.specs_dir}};
    tgr::cli::refuse_same_files(files);
    refuse_calibration_overwrite(o.calibration_dir, files);
    // Every output can be written, checked before the work: the model is
    // not written when the report then cannot be.
    for (const std::string* out : {&o.output, &report_path, &html_path})
      if (!out->empty() && !tgr::cli::is_stdout(*out)) tgr::util::check_output_path(*out);
    std::optional<tgr::cli::DataToStdout> to_stdout;  // -o -
    if (tgr::cli::is_stdout(o.output)) o.output = to_stdout.emplace(".onnx").path();
    const std::string dot = html_path.empty() ? "" : tgr::optimizer::find_graphviz_dot();  // before the work
    o.keep_graphs = !html_path.empty();
    tgr::optimizer::OptimizeReport report = tgr::optimizer::optimize_model(o);
    if (to_stdout) report.options.output = "-";
    const std::vector<std::string> warnings = tgr::cli::unverified_rule_warnings({o.rules_db, o.default_rules_db});
    if (!report_path.empty()) write_report(report_path, report, warnings);
    if (!html_path.empty()) tgr::optimizer::write_html_report(report, html_path, dot);
    if (!quiet) report.print_summary(stdout);  // stderr with -o -
    for (const std::string& w : warnings)      // in the summary; with -q on stderr
      std::fprintf(quiet ? stderr : stdout, quiet ? "optimize: warning: %s\n" : "  warning:        %s\n", w.c_str());
    if (to_stdout) to_stdout->send();
    return 0;
  });
}
