// "Never slower" by measurement (`optimize`, docs/optimizing.md, "Measured
// before writing"): before a rewritten model is written, it and the input
// model are timed in the target's runtime, interleaved, and the input is
// written instead when the rewrite does not measure faster by the
// threshold. Precondition: a search chose a rewritten graph (a rule
// applied, above --min-gain); the caller exports it for timing.
//
// The timers: onnxruntime-cpu runs tools/measure_ort.py (ONNX Runtime's
// Python API, CPU provider, all graph optimizations, the threads the cost
// table was measured with) with python3 from PATH; tgr-gpu runs the `bench`
// program next to `optimize` where a GPU is present. Each is bounded by
// MeasureOptions::time_limit_s and says when it stopped there.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "ir/shape.h"
#include "onnx/onnx_export.h"
#include "optimizer/target.h"

namespace tgr::optimizer {

struct MeasureOptions {
  bool enabled = false;  // `optimize` turns it on for a target it can run (--no-measure: off)
  // The whole measurement, sessions' loads included (--measure-time). A
  // timer that reaches it stops after the round it is in and reports the
  // rounds it has; one that does not answer by twice the limit is killed.
  double time_limit_s = 60;
  int rounds = 20;     // interleaved rounds: each times both models, in an order that alternates
  int runs = 5;        // runs of each model per round; the round's sample is their median
  int min_rounds = 5;  // fewer rounds than this within the time limit: gave up
  // The rewrite is written when the median over rounds of the paired ratio
  // rewritten / original is at most 1 - min_speedup (--measure-threshold):
  // a rewrite that measures within the noise of the input is not written.
  double min_speedup = 0.01;
  int threads = 1;                            // ONNX Runtime's intra-op threads (the shipped table's)
  std::string ort_script;                     // tools/measure_ort.py (installed: PREFIX/share/tgr/measure_ort.py)
  std::string bench_program;                  // tgr-gpu: the `bench` executable; empty or missing: not measured
  std::string gpu_costs_db;                   // tgr-gpu: bench --db (the kernel choices calibrate stored)
  Precision gpu_precision = Precision::kFp32;  // tgr-gpu: bench --precision (TargetOptions::precision)
  std::map<std::string, Shape> input_shapes;  // graph inputs' shapes (optimize --input-shape)
};

// What a timer measured: per round, the sample of each model (microseconds).
struct PairedTimes {
  std::vector<double> original_us, rewritten_us;  // paired by round
  int runs_per_round = 0;
  double seconds = 0;             // the whole measurement, loads included
  bool stopped_at_limit = false;  // the time limit ended it before MeasureOptions::rounds
  std::string runtime;            // e.g. "ONNX Runtime 1.23.2, CPU, 1 thread"
  std::string not_measured;       // non-empty: why nothing was measured (no runtime, no GPU, an error)
};

// Times two model files in a runtime.
class ModelTimer {
 public:
  virtual ~ModelTimer() = default;
  virtual PairedTimes time(const std::string& original, const std::string& rewritten,
                           const MeasureOptions& options) = 0;
};

// The target's timer; null for a target no runtime runs (roofline).
std::unique_ptr<ModelTimer> make_timer(Target target);

// What optimize writes after measuring.
struct MeasuredDecision {
  enum class Outcome {
    kRewriteFaster,  // measured faster by the threshold: the rewrite is written
    kNotFaster,      // measured, not faster by the threshold: the input is written
    kGaveUp,         // fewer than min_rounds within the time limit: the input is written
    kNotMeasured,    // no runtime to measure with: the rewrite is written, as predicted
  };
  Outcome outcome = Outcome::kNotMeasured;
  PairedTimes times;
  double original_ms = 0, rewritten_ms = 0;      // medians of the rounds' samples
  double ratio = 1, ratio_q1 = 1, ratio_q3 = 1;  // median and quartiles of the paired ratios
  double min_speedup = 0;
  // Of the rewrite measured (set by the caller): the cost model's ratio,
  // and how many rule applications it holds.
  double predicted_ratio = 1;
  int rewrites = 0;

  bool keeps_rewrite() const { return outcome == Outcome::kRewriteFaster || outcome == Outcome::kNotMeasured; }
  // The summary's "measured:" line after the label, and its "output:" line
  // when the input is written (empty otherwise).
  std::string summary() const;
  std::string output_line() const;
  nlohmann::ordered_json to_json() const;  // the report's "measured" object
};

// The decision of `options` over what a timer measured.
MeasuredDecision decide(PairedTimes times, const MeasureOptions& options);

// Times `original` against `rewritten` with `timer` and decides.
MeasuredDecision measure_and_decide(ModelTimer& timer, const std::string& original, const std::string& rewritten,
                                    const MeasureOptions& options);

// Exports `rewritten` (weights folded, as optimize writes it) to a
// temporary file, times it against the model file `original` with `timer`
// (null: a target no runtime runs, not measured) and decides. The file is
// removed before it returns.
MeasuredDecision measure_rewrite(const std::string& original, const Graph& rewritten,
                                 const onnx_io::ExportOptions& export_options, ModelTimer* timer,
                                 const MeasureOptions& options);

}  // namespace tgr::optimizer
