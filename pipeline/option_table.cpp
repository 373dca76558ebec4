#include "pipeline/option_table.h"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "optimizer/plan_cost_model.h"
#include "pipeline/defaults.h"
#include "util/limits.h"

namespace tgr::pipeline {

namespace {

using Check = OptionCheck;

Check check(Check::Kind kind) {
  Check c;
  c.kind = kind;
  return c;
}

Check within(double min, double max) {
  Check c = check(Check::kWithin);
  c.min = min;
  c.max = max;
  return c;
}

Check one_of(std::vector<std::string> names) {
  Check c = check(Check::kOneOf);
  c.names = std::move(names);
  return c;
}

// "\n(default: the target's: onnxruntime-cpu X, ...)" for an option whose default each target sets.
template <class DefaultOf>
std::string targets_defaults(DefaultOf default_of) {
  std::ostringstream text;
  text << "\n(default: the target's:";
  for (const TargetDefaults& d : target_defaults())
    text << (&d == &target_defaults().front() ? " " : ", ") << optimizer::target_name(d.target) << " " << default_of(d);
  text << ")";
  return text.str();
}

std::string search_help() {
  std::string help;
  for (const SearchInfo& s : searches())
    help += (help.empty() ? "" : " | ") + std::string(s.name) + " (" + std::string(s.help) + ")";
  return help + targets_defaults([](const TargetDefaults& d) { return search_name(d.search); });
}

std::vector<std::string> search_names() {
  std::vector<std::string> names;
  for (const SearchInfo& s : searches()) names.emplace_back(s.name);
  return names;
}

std::string target_help() {
  std::string help = "where the model will run, which decides what the search minimises:";
  for (const auto& t : optimizer::targets()) help += "\n  " + std::string(t.name) + ": " + std::string(t.help);
  return help +
         "\n(default onnxruntime-cpu: the exported model is an ONNX model, and ONNX Runtime is the runtime "
         "measured out of the box)";
}

std::vector<std::string> target_names() {
  std::vector<std::string> names;
  for (const auto& t : optimizer::targets()) names.emplace_back(t.name);
  return names;
}

std::string unmeasured_margin_help() {
  char margin[16];
  std::snprintf(margin, sizeof margin, "%.2f", optimizer::PlanCostModel::kUnmeasuredMargin);
  return "tgr-gpu: what a step the table lacks costs over its fitted guess (default " + std::string(margin) +
         ": a guess must win by a margin; below 1 the search explores, and calibrating its graph measures the steps "
         "it reached)";
}

int64_t as_int(const OptionValue& v) { return std::get<int64_t>(v); }
uint64_t as_unsigned(const OptionValue& v) { return std::get<uint64_t>(v); }
double as_real(const OptionValue& v) { return std::get<double>(v); }
const std::string& as_text(const OptionValue& v) { return std::get<std::string>(v); }
bool as_flag(const OptionValue& v) { return std::get<bool>(v); }

std::vector<OptionRow> make_table() {
  using T = OptionType;
  const saturation::RunnerOptions runner;
  std::vector<OptionRow> rows = {
      {"rules",
       "the rules database (default: the rules shipped with tgr, which are also added to a database given here "
       "unless --no-default-rules)",
       T::kText, check(Check::kNone), [](const OptimizeOptions& o) -> OptionValue { return o.data.shipped_rules_db; },
       "", false, [](OptimizeOptions& o, const OptionValue& v) { o.rules_db = as_text(v); }},
      {"no-default-rules", "with --rules: use that database's rules only", T::kFlag, check(Check::kNone),
       [](const OptimizeOptions&) -> OptionValue { return false; }, "", true,
       [](OptimizeOptions& o, const OptionValue& v) { o.add_shipped_rules = !as_flag(v); }},
      {"budget", "graphs the search pops from its queue", T::kInt, check(Check::kAtLeastOne),
       [](const OptimizeOptions& o) -> OptionValue { return int64_t{o.backtracking.budget}; }, "", true,
       [](OptimizeOptions& o, const OptionValue& v) { o.backtracking.budget = static_cast<int>(as_int(v)); }},
      {"alpha", "keep graphs costing less than alpha times the best", T::kReal, within(1.0, 10.0),
       [](const OptimizeOptions& o) -> OptionValue { return o.backtracking.alpha; }, "", true,
       [](OptimizeOptions& o, const OptionValue& v) { o.backtracking.alpha = as_real(v); }},
      {"timeout", "seconds the search may take", T::kReal, check(Check::kSeconds),
       [](const OptimizeOptions& o) -> OptionValue { return o.backtracking.timeout_s; }, "", true,
       [](OptimizeOptions& o, const OptionValue& v) { o.backtracking.timeout_s = as_real(v); }},
      {"search", search_help(), T::kText, one_of(search_names()), nullptr, "", true,
       [](OptimizeOptions& o, const OptionValue& v) { o.search = parse_search(as_text(v)); }},
      {"node-limit", "saturate: e-nodes (given: this limit alone, instead of --node-growth's)", T::kUnsigned,
       check(Check::kAtLeastOne),
       [](const OptimizeOptions& o) -> OptionValue { return uint64_t{o.saturation.runner.node_limit}; }, "node-growth",
       true, [](OptimizeOptions& o, const OptionValue& v) { o.node_limit = as_unsigned(v); }},
      {"node-growth",
       "saturate: the e-graph grows to at most this many times the model's e-nodes (at least " +
           std::to_string(runner.min_node_limit) + ", at most --node-limit; 0: --node-limit alone)" +
           targets_defaults([](const TargetDefaults& d) { return d.node_growth; }),
       T::kReal, check(Check::kNotNegative), nullptr, "", true,
       [](OptimizeOptions& o, const OptionValue& v) { o.node_growth = as_real(v); }},
      {"iterations", "saturate: iterations" + targets_defaults([](const TargetDefaults& d) { return d.iterations; }),
       T::kInt, check(Check::kAtLeastOne), nullptr, "", true,
       [](OptimizeOptions& o, const OptionValue& v) { o.iterations = static_cast<int>(as_int(v)); }},
      {"ilp-timeout", "saturate: seconds for the extraction ILP (0: greedy)", T::kReal, check(Check::kSecondsOrZero),
       [](const OptimizeOptions& o) -> OptionValue { return o.saturation.ilp.time_limit_s; }, "", true,
       [](OptimizeOptions& o, const OptionValue& v) { o.saturation.ilp.time_limit_s = as_real(v); }},
      {"refine-window",
       "saturate, under a target that fuses operators: each refinement move is first costed on the operators "
       "within this many steps of what it changes, and built whole only where that is cheaper (0: every move "
       "built whole)",
       T::kUnsigned, check(Check::kNone),
       [](const OptimizeOptions& o) -> OptionValue { return uint64_t{o.saturation.refine_window}; }, "", true,
       [](OptimizeOptions& o, const OptionValue& v) { o.saturation.refine_window = as_unsigned(v); }},
      {"target", target_help(), T::kText, one_of(target_names()),
       [](const OptimizeOptions& o) -> OptionValue { return std::string(optimizer::target_name(o.target.target)); }, "",
       false, [](OptimizeOptions& o, const OptionValue& v) { o.target.target = optimizer::parse_target(as_text(v)); }},
      {"costs",
       "the database whose op_costs the measured targets read (default: onnxruntime-cpu the shipped table in the "
       "default rules database, tgr-gpu the rules database)",
       T::kText, check(Check::kNone), [](const OptimizeOptions& o) -> OptionValue { return o.target.costs_db; }, "",
       false, [](OptimizeOptions& o, const OptionValue& v) { o.target.costs_db = as_text(v); }},
      {"device", "tgr-gpu: the GPU whose costs calibrate stored (default H100)", T::kText, check(Check::kNone),
       [](const OptimizeOptions& o) -> OptionValue { return o.target.gpu_device; }, "", true,
       [](OptimizeOptions& o, const OptionValue& v) { o.target.gpu_device = as_text(v); }},
      {"unmeasured-margin", unmeasured_margin_help(), T::kReal, check(Check::kPositive), nullptr, "", true,
       [](OptimizeOptions& o, const OptionValue& v) { o.target.unmeasured_margin = as_real(v); }},
      {"precision",
       "tgr-gpu: what the model will run at (bench, calibrate and tgr.Session take the same --precision): "
       "fp32, tf32, bf16 or fp16; each step costs what calibrate --precision timed at it",
       T::kText, one_of({"fp32", "tf32", "bf16", "fp16"}),
       [](const OptimizeOptions& o) -> OptionValue { return std::string(precision_name(o.target.precision)); }, "",
       true,
       [](OptimizeOptions& o, const OptionValue& v) {
         o.target.precision = parse_precision(as_text(v)).value_or(Precision::kFp32);
       }},
      {"calibration-dir",
       "onnxruntime-cpu: write a one-node ONNX model of each signature the table lacked here "
       "(tools/calibrate_ort.py times them)",
       T::kText, check(Check::kNone), [](const OptimizeOptions& o) -> OptionValue { return o.calibration_dir; }, "",
       false, [](OptimizeOptions& o, const OptionValue& v) { o.calibration_dir = as_text(v); }},
      {"min-gain", "write the model unchanged unless the predicted cost drops by at least this fraction (default 0.02)",
       T::kReal, within(0.0, 1.0), [](const OptimizeOptions& o) -> OptionValue { return o.min_gain; }, "", false,
       [](OptimizeOptions& o, const OptionValue& v) { o.min_gain = as_real(v); }},
      {"no-measure",
       "write the rewrite the search chose without first timing it against the model in the target's runtime "
       "(onnxruntime-cpu: ONNX Runtime through python3; tgr-gpu: bench, where a GPU is)",
       T::kFlag, check(Check::kNone), nullptr, "", false,
       [](OptimizeOptions& o, const OptionValue& v) { o.no_measure = as_flag(v); }},
      {"measure-time",
       "seconds the timing of a rewrite against the model may take, loads included; it stops there and says so",
       T::kReal, check(Check::kSeconds), [](const OptimizeOptions& o) -> OptionValue { return o.measure.time_limit_s; },
       "", false, [](OptimizeOptions& o, const OptionValue& v) { o.measure.time_limit_s = as_real(v); }},
      {"measure-threshold",
       "write a rewrite only when it measures at least this fraction faster than the model (the median of the "
       "paired ratios of interleaved rounds); otherwise the model is written unchanged",
       T::kReal, within(0.0, 0.5), [](const OptimizeOptions& o) -> OptionValue { return o.measure.min_speedup; }, "",
       false, [](OptimizeOptions& o, const OptionValue& v) { o.measure.min_speedup = as_real(v); }},
      {"specs", "the axioms the instance proofs use", T::kText, check(Check::kNone),
       [](const OptimizeOptions& o) -> OptionValue { return o.data.specs_dir; }, "", false,
       [](OptimizeOptions& o, const OptionValue& v) { o.specs_dir = as_text(v); }},
      {"proof-timeout-ms", "per instance proof", T::kUnsigned, check(Check::kAtLeastOne),
       [](const OptimizeOptions& o) -> OptionValue { return uint64_t{o.proof_timeout_ms}; }, "", true,
       [](OptimizeOptions& o, const OptionValue& v) { o.proof_timeout_ms = static_cast<unsigned>(as_unsigned(v)); }},
      {"sequential", "expand on one thread", T::kFlag, check(Check::kNone), nullptr, "", true,
       [](OptimizeOptions& o, const OptionValue& v) { o.backtracking.parallel = !as_flag(v); }},
      {"max-elements", "largest tensor, in elements, the model may ask for (default 2^28)", T::kInt,
       check(Check::kAtLeastOne),
       [](const OptimizeOptions& o) -> OptionValue { return int64_t{o.import_limits.max_elements}; }, "", true,
       [](OptimizeOptions& o, const OptionValue& v) { o.import_limits.max_elements = as_int(v); }},
      {"max-bytes", "total bytes of the constants the import may compute (default 4 GiB)", T::kInt,
       check(Check::kAtLeastOne),
       [](const OptimizeOptions& o) -> OptionValue { return int64_t{o.import_limits.max_bytes}; }, "", true,
       [](OptimizeOptions& o, const OptionValue& v) { o.import_limits.max_bytes = as_int(v); }},
      {"convert-to",
       "convert a float32 model to this type before optimizing: weights and activations; exp, softmax, layer norm, "
       "sums and means stay float32 (casts around them); the relative L2 error against the float32 model is "
       "reported",
       T::kText, one_of({"float16", "bfloat16"}), nullptr, "", true,
       [](OptimizeOptions& o, const OptionValue& v) {
         o.convert = optimizer::PrecisionConversion{.to = parse_dtype(as_text(v)), .convert_io = false};
       }},
      {"convert-io",
       "with --convert-to: the model's float inputs and outputs take the type too (default: they stay float32, "
       "cast at the boundary)",
       T::kFlag, check(Check::kNone), nullptr, "", true,
       [](OptimizeOptions& o, const OptionValue& v) { o.convert->convert_io = as_flag(v); }, "convert-to"},
  };
  return rows;
}

// "'a', 'b' or 'c'"
std::string quoted_choice(const std::vector<std::string>& names) {
  std::string text;
  for (size_t i = 0; i < names.size(); ++i)
    text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + ("'" + names[i] + "'");
  return text;
}

std::string number_words(const OptionCheck& check, double x) {
  std::ostringstream words;
  switch (check.kind) {
    case Check::kAtLeastOne:
      return x >= 1 ? "" : "must be positive";
    case Check::kNotNegative:
      return x >= 0 ? "" : "must not be negative";
    case Check::kPositive:
      return x > 0 && std::isfinite(x) ? "" : "must be positive";
    case Check::kWithin:
      if (x >= check.min && x <= check.max) return "";
      words << "must be in [" << check.min << ", " << check.max << "]";
      return words.str();
    case Check::kSeconds:
      return x > 0 && x <= util::kMaxSeconds ? "" : "must be a number of seconds above 0, at most 31536000 (a year)";
    case Check::kSecondsOrZero:
      return x >= 0 && x <= util::kMaxSeconds ? "" : "must be a number of seconds from 0 to 31536000 (a year)";
    case Check::kNone:
    case Check::kOneOf:
      return "";
  }
  return "";
}

}  // namespace

const std::vector<OptionRow>& option_table() {
  static const std::vector<OptionRow> rows = make_table();
  return rows;
}

const OptionRow* find_option(const std::string& name) {
  for (const OptionRow& row : option_table())
    if (row.name == name) return &row;
  throw std::logic_error("no option --" + name + " in the option table");
}

std::string keyword_name(const OptionRow& row) {
  std::string name = row.name;
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
}

std::string check_words(const OptionRow& row, const OptionValue& value) {
  if (row.check.kind == Check::kOneOf) {
    const auto* text = std::get_if<std::string>(&value);
    for (const std::string& name : row.check.names)
      if (text && *text == name) return "";
    return "expected " + quoted_choice(row.check.names);
  }
  if (const auto* i = std::get_if<int64_t>(&value)) return number_words(row.check, static_cast<double>(*i));
  if (const auto* u = std::get_if<uint64_t>(&value)) return number_words(row.check, static_cast<double>(*u));
  if (const auto* x = std::get_if<double>(&value)) return number_words(row.check, *x);
  return "";
}

}  // namespace tgr::pipeline
