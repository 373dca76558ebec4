#include "pipeline/defaults.h"

#include <stdexcept>

namespace tgr::pipeline {

using optimizer::Target;

const std::vector<TargetDefaults>& target_defaults() {
  // Saturation found graphs as cheap or cheaper on every target's models.
  // The growth limit scales the e-graph to the model for onnxruntime-cpu and
  // the roofline; tgr-gpu keeps the fixed node limit, which its split-K forms
  // fill before the merges that pay, and more iterations, since its time and
  // node limits decide.
  static const std::vector<TargetDefaults> all = {
      {Target::kOnnxRuntimeCpu, Search::kSaturate, 120, 20},
      {Target::kTgrGpu, Search::kSaturate, 0, 100},
      {Target::kRoofline, Search::kSaturate, 120, 20},
  };
  return all;
}

const TargetDefaults& target_defaults(Target target) {
  for (const TargetDefaults& d : target_defaults())
    if (d.target == target) return d;
  throw std::logic_error("a target missing from target_defaults()");
}

OptimizeOptions resolve_defaults(OptimizeOptions o) {
  const TargetDefaults& d = target_defaults(o.target.target);
  if (o.rules_db.empty()) o.rules_db = o.data.shipped_rules_db;
  o.default_rules_db = o.add_shipped_rules ? o.data.shipped_rules_db : "";
  if (o.specs_dir.empty()) o.specs_dir = o.data.specs_dir;
  if (o.target.costs_db.empty())
    o.target.costs_db = o.target.target == Target::kTgrGpu ? o.rules_db : o.data.shipped_rules_db;
  if (!o.search) o.search = d.search;

  saturation::SaturationOptions& s = o.saturation;
  if (o.node_limit) {
    s.runner.node_limit = *o.node_limit;
    s.runner.growth_limit = 0;  // the limit given, alone
  } else {
    s.runner.growth_limit = o.node_growth ? *o.node_growth : d.node_growth;
  }
  s.runner.iteration_limit = o.iterations ? *o.iterations : d.iterations;
  s.use_ilp = s.ilp.time_limit_s > 0;
  s.runner.time_limit_s = saturation::saturation_time_limit(o.backtracking.timeout_s, s);
  s.timeout_s = o.backtracking.timeout_s;
  s.runner.parallel = o.backtracking.parallel;
  s.runner.shipped_rules_first = true;  // where they join a user's database (runner.h, "Stages")

  optimizer::MeasureOptions& m = o.measure;
  const std::string& timing = o.target.target == Target::kTgrGpu ? o.data.bench_program : o.data.measure_ort_script;
  // Not with --convert-to: the input file is the float32 model, no baseline of the converted one.
  m.enabled = !o.no_measure && !o.convert && o.target.target != Target::kRoofline && (o.timer || !timing.empty());
  if (m.ort_script.empty()) m.ort_script = o.data.measure_ort_script;
  if (m.bench_program.empty()) m.bench_program = o.data.bench_program;
  m.input_shapes = o.input_shapes;
  m.gpu_costs_db = o.target.costs_db;
  m.gpu_precision = o.target.precision;
  return o;
}

}  // namespace tgr::pipeline
