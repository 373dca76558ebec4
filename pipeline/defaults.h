// Every default the pipeline takes from the target or from the
// installation, decided here and nowhere else: the search, saturation's
// limits, the costs database, the rules and the axioms. Why each target's
// values are what they are: docs/benchmarks.md ("Which search runs without
// `--search`", "Saturation's node limit follows the model's size", "The GPU
// plan's node limit", "GPU (H200): 1 x 1 convolutions as products").
#pragma once

#include <vector>

#include "optimizer/target.h"
#include "pipeline/options.h"
#include "pipeline/search.h"

namespace tgr::pipeline {

struct TargetDefaults {
  optimizer::Target target;
  Search search;       // --search when none is given
  double node_growth;  // saturation's growth limit (RunnerOptions::growth_limit; 0: the node limit alone)
  int iterations;      // saturation's iteration limit (RunnerOptions::iteration_limit)
};
// One row per target of optimizer::targets(), in its order.
const std::vector<TargetDefaults>& target_defaults();
const TargetDefaults& target_defaults(optimizer::Target target);

// `asked` with every default filled in:
//   rules_db            data.shipped_rules_db when empty
//   default_rules_db    data.shipped_rules_db with add_shipped_rules, else empty
//   specs_dir           data.specs_dir when empty
//   target.costs_db     when empty: tgr-gpu the rules database, the other
//                       targets the shipped one (its onnxruntime-cpu table)
//   search              the target's when unset
//   saturation.runner   node_limit given: that limit alone; else the growth
//                       limit given or the target's; the iteration limit
//                       given or the target's; the time limit
//                       saturation::saturation_time_limit of
//                       backtracking.timeout_s, which also bounds the whole
//                       saturation search (SaturationOptions::timeout_s);
//                       parallel as backtracking.parallel; the shipped
//                       rules first (RunnerOptions::shipped_rules_first)
//   saturation.use_ilp  whether the ILP has time (ilp.time_limit_s > 0)
//   measure             enabled unless no_measure or convert, for a target other than
//                       roofline with a timer (`timer`, or data's
//                       bench_program for tgr-gpu, measure_ort_script for
//                       onnxruntime-cpu); its script and program data's when
//                       empty; its input shapes and costs database the
//                       model's and the target's
// Resolving resolved options changes nothing.
OptimizeOptions resolve_defaults(OptimizeOptions asked);

}  // namespace tgr::pipeline
