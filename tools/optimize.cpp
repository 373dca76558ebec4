// `optimize`: optimizes an ONNX model with verified rules (README.md,
// "Optimizing a model"). The work is pipeline::optimize_model
// (pipeline/pipeline.h); this file parses the arguments, whose options are
// the rows of pipeline/option_table.h, and prints.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/defaults.h"
#include "pipeline/html_report.h"
#include "pipeline/option_table.h"
#include "pipeline/pipeline.h"
#include "tools/cli_app.h"
#include "tools/cli_common.h"
#include "tools/data_paths.h"
#include "tools/input_shapes.h"
#include "tools/stdout_data.h"
#include "tools/unverified_rules.h"
#include "util/output_file.h"

namespace {

using tgr::pipeline::OptimizeOptions;
using tgr::pipeline::OptionCheck;
using tgr::pipeline::OptionRow;
using tgr::pipeline::OptionType;
using tgr::pipeline::OptionValue;

void write_report(const std::string& path, const tgr::pipeline::OptimizeReport& report,
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

// A row's check in the words of the command-line convention (tools/cli_app.h).
CLI::Validator validator(const OptionCheck& check) {
  switch (check.kind) {
    case OptionCheck::kAtLeastOne:
      return tgr::cli::at_least(int64_t{1});
    case OptionCheck::kNotNegative:
      return tgr::cli::at_least(0.0);
    case OptionCheck::kPositive:
      return tgr::cli::positive();
    case OptionCheck::kWithin:
      return tgr::cli::within(check.min, check.max);
    case OptionCheck::kSeconds:
      return tgr::cli::seconds();
    case OptionCheck::kSecondsOrZero:
      return tgr::cli::seconds(true);
    case OptionCheck::kOneOf:
      return CLI::IsMember(check.names);
    case OptionCheck::kNone:
      break;
  }
  return CLI::Validator();
}

// The option of a row, bound to `value` (which holds the row's default, or its type's).
CLI::Option* add_row(CLI::App& app, const OptionRow& row, OptionValue& value) {
  const std::string name = "--" + row.name;
  CLI::Option* option = nullptr;
  switch (row.type) {
    case OptionType::kFlag:
      option = app.add_flag(name, std::get<bool>(value), row.help);
      break;
    case OptionType::kInt:
      option = app.add_option(name, std::get<int64_t>(value), row.help);
      break;
    case OptionType::kUnsigned:
      option = app.add_option(name, std::get<uint64_t>(value), row.help);
      break;
    case OptionType::kReal:
      option = app.add_option(name, std::get<double>(value), row.help);
      break;
    case OptionType::kText:
      option = app.add_option(name, std::get<std::string>(value), row.help);
      break;
  }
  if (row.check.kind != OptionCheck::kNone) option->check(validator(row.check));
  if (!row.default_value) option->default_str("");  // none, or the target's, named in the help
  return option;
}

OptionValue initial_value(const OptionRow& row, const OptimizeOptions& defaults) {
  if (row.default_value) return row.default_value(defaults);
  switch (row.type) {
    case OptionType::kFlag:
      return false;
    case OptionType::kInt:
      return int64_t{0};
    case OptionType::kUnsigned:
      return uint64_t{0};
    case OptionType::kReal:
      return 0.0;
    case OptionType::kText:
      break;
  }
  return std::string();
}

// Every row of the option table as an option of `app`; `values` holds what was parsed.
std::vector<CLI::Option*> add_table(CLI::App& app, const OptimizeOptions& defaults, std::vector<OptionValue>& values) {
  const std::vector<OptionRow>& rows = tgr::pipeline::option_table();
  values.clear();
  for (const OptionRow& row : rows) values.push_back(initial_value(row, defaults));
  std::vector<CLI::Option*> options;
  for (size_t i = 0; i < rows.size(); ++i) options.push_back(add_row(app, rows[i], values[i]));
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].excludes.empty()) options[i]->excludes("--" + rows[i].excludes);
    if (!rows[i].needs.empty()) options[i]->needs("--" + rows[i].needs);
  }
  return options;
}

// The options given set `o`, row by row.
void set_given(const std::vector<CLI::Option*>& options, const std::vector<OptionValue>& values, OptimizeOptions& o) {
  const std::vector<OptionRow>& rows = tgr::pipeline::option_table();
  for (size_t i = 0; i < rows.size(); ++i)
    if (options[i]->count() > 0) rows[i].set(o, values[i]);
}

// Options that belong to one target, refused with another; the measurement's
// settings without a measurement.
void refuse_options_of_other_targets(const CLI::App& app, const OptimizeOptions& o) {
  using tgr::optimizer::Target;
  if (app.count("--device") && o.target.target != Target::kTgrGpu)
    throw tgr::cli::UsageError("--device names the GPU of --target tgr-gpu");
  if (app.count("--unmeasured-margin") && o.target.target != Target::kTgrGpu)
    throw tgr::cli::UsageError("--unmeasured-margin prices the steps --target tgr-gpu has not measured");
  if (app.count("--precision") && o.target.target != Target::kTgrGpu)
    throw tgr::cli::UsageError("--precision costs the steps of --target tgr-gpu at that precision");
  if (app.count("--costs") && o.target.target == Target::kRoofline)
    throw tgr::cli::UsageError("--target roofline reads no measured costs (--costs)");
  if (!o.calibration_dir.empty() && o.target.target != Target::kOnnxRuntimeCpu)
    throw tgr::cli::UsageError("--calibration-dir measures for --target onnxruntime-cpu only");
  if ((app.count("--measure-time") || app.count("--measure-threshold")) &&
      (o.no_measure || o.target.target == Target::kRoofline || o.convert))
    throw tgr::cli::UsageError(o.no_measure ? "--measure-time and --measure-threshold time a rewrite; --no-measure "
                                              "turns that off"
                               : o.convert  ? "--convert-to writes the converted model without timing it: nothing to "
                                              "measure (--measure-time, --measure-threshold)"
                                            : "--target roofline runs on no runtime: nothing to measure "
                                              "(--measure-time, --measure-threshold)");
}

// The files the command reads and writes: none twice, none in
// --calibration-dir, every output writable, before the work (the model is
// not written when the report then cannot be).
void check_files(const OptimizeOptions& o, const std::string& report_path, const std::string& html_path) {
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
  for (const std::string* out : {&o.output, &report_path, &html_path})
    if (!out->empty() && !tgr::cli::is_stdout(*out)) tgr::util::check_output_path(*out);
}

// The summary (stderr with -o -) and the warnings: in the summary, with -q on stderr.
void print_summary(const tgr::pipeline::OptimizeReport& report, const std::vector<std::string>& warnings, bool quiet) {
  if (!quiet) report.print_summary(stdout);
  for (const std::string& w : warnings)
    std::fprintf(quiet ? stderr : stdout, quiet ? "optimize: warning: %s\n" : "  warning:        %s\n", w.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  OptimizeOptions o;
  o.data = {tgr::cli::default_rules_db(), tgr::cli::default_specs_dir(), tgr::cli::measure_ort_script(),
            tgr::cli::sibling_program("bench")};
  std::string report_path, html_path;
  bool quiet = false;
  CLI::App app{"optimize: rewrite an ONNX model with verified rules so that it runs faster and computes the same",
               "optimize"};
  tgr::cli::setup(app);
  app.add_option("model", o.model, "the ONNX model")->required();
  app.add_option("-o,--output", o.output, "where to write the optimized model (-: stdout, and the summary to stderr)")
      ->required();
  std::vector<OptionValue> values;
  const std::vector<CLI::Option*> table = add_table(app, o, values);
  app.add_option("--report", report_path, "write a JSON report here");
  app.add_option("--report-html", html_path,
                 "write an HTML page here: both graphs drawn (Graphviz), the rewrites located, costs, proofs");
  app.add_flag("-q,--quiet", quiet, "no summary");
  std::vector<std::string> input_shapes;
  tgr::cli::add_input_shape_option(app, input_shapes);
  if (auto rc = tgr::cli::parse(app, argc, argv)) return *rc;
  set_given(table, values, o);
  return tgr::cli::guarded("optimize", [&] {
    refuse_options_of_other_targets(app, o);
    o.input_shapes = tgr::cli::parse_input_shapes(input_shapes);
    o = tgr::pipeline::resolve_defaults(o);
    check_files(o, report_path, html_path);
    std::optional<tgr::cli::DataToStdout> to_stdout;  // -o -
    if (tgr::cli::is_stdout(o.output)) o.output = to_stdout.emplace(".onnx").path();
    const std::string dot = html_path.empty() ? "" : tgr::pipeline::find_graphviz_dot();  // before the work
    o.keep_graphs = !html_path.empty();
    tgr::pipeline::OptimizeReport report = tgr::pipeline::optimize_model(o);
    if (to_stdout) report.options.output = "-";
    const std::vector<std::string> warnings = tgr::cli::unverified_rule_warnings({o.rules_db, o.default_rules_db});
    if (!report_path.empty()) write_report(report_path, report, warnings);
    if (!html_path.empty()) tgr::pipeline::write_html_report(report, html_path, dot);
    print_summary(report, warnings, quiet);
    if (to_stdout) to_stdout->send();
    return 0;
  });
}
