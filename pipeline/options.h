// What a caller asks of the pipeline (pipeline/pipeline.h): the model, where
// the result goes, the rules, the target and the search's settings. What is
// left unset here is the target's or the installation's, filled in by
// resolve_defaults (pipeline/defaults.h), the one place that decides it.
// The programs set these fields from their arguments through the option
// table (pipeline/option_table.h).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "ir/shape.h"
#include "onnx/onnx_import.h"
#include "optimizer/backtracking_search.h"
#include "optimizer/convert_precision.h"
#include "optimizer/measured_check.h"
#include "optimizer/target.h"
#include "pipeline/search.h"
#include "saturation/saturation.h"

namespace tgr::pipeline {

// Where an installation keeps its data files. The `optimize` program finds
// them relative to itself (tools/data_paths.h), the Python package in its
// own folder.
struct DataPaths {
  // The rules shipped with tgr (rules/default.rules and
  // rules/generated.rules, generated and proved at build time); its op_costs
  // table holds onnxruntime-cpu's measured costs.
  std::string shipped_rules_db;
  std::string specs_dir;  // the operator axioms
  // What times a rewrite against the model before it is written
  // (optimizer/measured_check.h): onnxruntime-cpu the script
  // tools/measure_ort.py, tgr-gpu the `bench` program. Empty: the
  // installation has none (the Python package), and nothing is measured.
  std::string measure_ort_script{};
  std::string bench_program{};
};

struct OptimizeOptions {
  std::string model;                          // the ONNX model to read
  std::map<std::string, Shape> input_shapes;  // graph inputs' shapes, for symbolic dimensions
  std::string output;                         // where the optimized model is written
  DataPaths data;
  std::string rules_db;  // the proved rules; empty: data.shipped_rules_db
  // Whether the shipped rules join rules_db's when it names another file,
  // so that a database of generated rules never means fewer rules than
  // the default (`--no-default-rules`: false).
  bool add_shipped_rules = true;
  // Set by resolve_defaults: data.shipped_rules_db with add_shipped_rules, else empty.
  std::string default_rules_db;
  std::string specs_dir;  // the axioms the instance proofs use; empty: data.specs_dir
  // Where the model will run: the cost model (optimizer/target.h). An empty
  // costs_db is the target's (resolve_defaults).
  optimizer::TargetOptions target;
  // onnxruntime-cpu: write a one-node ONNX model of each operator signature
  // the cost model had no measurement of into this folder, listed in its
  // signatures.tsv (FILE<TAB>SIGNATURE), for tools/calibrate_ort.py. Empty: none.
  std::string calibration_dir;
  onnx_io::ImportLimits import_limits;  // what the model may ask the importer for
  std::optional<Search> search;         // empty: the target's
  // budget, alpha, the whole search's timeout (every search's, --timeout)
  // and whether to run on several threads (every search's, --sequential).
  optimizer::BacktrackingOptions backtracking;
  // Saturation's e-node limit, alone (no growth limit) when given.
  std::optional<size_t> node_limit;
  // Saturation's growth limit (RunnerOptions::growth_limit); empty: the
  // target's, unless node_limit is given.
  std::optional<double> node_growth;
  std::optional<int> iterations;  // saturation's iteration limit; empty: the target's
  // The rest of the saturation's settings (the ILP's time limit, the
  // refinement window); resolve_defaults sets its runner's limits from the
  // fields above and its time limits from backtracking.timeout_s.
  saturation::SaturationOptions saturation;
  // The predicted gain below which the model is written unchanged: a
  // prediction is off by a few percent (measurement noise; what a runtime
  // fuses in the original file but not in a re-export), and a rewrite that
  // gains less risks a slower model.
  double min_gain = 0.02;
  unsigned proof_timeout_ms = 1000;  // per instance proof
  // Keep the graphs before and after, with each node's cost, in the report
  // (OptimizeReport::before, after; what optimize --report-html draws).
  bool keep_graphs = false;
  // Convert a float32 model to float16 or bfloat16 before the search
  // (optimize --convert-to, optimizer/convert_precision.h). Unset: the model
  // keeps the types it came in.
  std::optional<optimizer::PrecisionConversion> convert;
  // Time a chosen rewrite against the input in the target's runtime before
  // writing it, and write the input when the rewrite does not measure
  // faster (optimizer/measured_check.h). resolve_defaults sets
  // measure.enabled: on where the target runs on a runtime (not roofline)
  // that can time the model here (a `timer`, or data's script or program
  // for the target), unless no_measure (--no-measure) or `convert` (the
  // input is the float32 model, not a baseline of the converted one); and
  // fills in the script, the program, the input shapes and the costs database.
  bool no_measure = false;
  optimizer::MeasureOptions measure;
  std::shared_ptr<optimizer::ModelTimer> timer;  // null: the target's (optimizer::make_timer)
};

}  // namespace tgr::pipeline
