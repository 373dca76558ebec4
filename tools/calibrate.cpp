// `calibrate`: measures, on the GPU runtime, the time of every distinct step
// of the given models' execution plans (a step: what the runtime launches
// for one task of its plan, a convolution with its fused bias and relu, an
// elementwise chain, one operator; keyed by its step signature,
// runtime/step_signature.h) and stores it in the op_costs table of a
// database under the device's name; signatures already there are reused
// unless --force. What the tgr-gpu target's cost model reads
// (optimizer/plan_cost_model.h).
//
// Each step is timed as a graph of --repeat copies of it (more, up to
// --max-repeat, when the copies' weights would fit in the GPU's L2: in a
// model larger than L2 a step reads its weights from memory), fused as in the
// model, with a light step (--spacer) after each copy as in a model, replayed
// as one CUDA graph (median of --iters after warm-up, CUDA events), the
// spacers' time subtracted, and divided by the copies
// (runtime/cuda/step_timing.h). Each cost is stored with how it was timed
// (op_costs.method); one timed otherwise (other copies, another spacer, or
// before methods were recorded) is not reused but measured again. Per model
// it then prints the plan's predicted time (the sum of its steps) against
// the model's measured replay. The runtime's timed choices of implementation
// (which cuDNN algorithm runs each convolution) are read from and stored in
// the same database (kernel_choices, runtime/kernel_choices.h), so that
// `bench` runs each step as it was timed here; --force times them again too.
// --precision times the steps at tf32, bf16 or fp16 (runtime/precision.h):
// their signatures say so, so costs at one precision never stand for another.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <map>

#include "rules_db/rules_db.h"
#include "runtime/cuda/device_info.h"
#include "runtime/cuda/gpu_model.h"
#include "runtime/cuda/step_timing.h"
#include "runtime/execution_plan.h"
#include "runtime/step_signature.h"
#include "tools/cli_app.h"
#include "tools/cli_common.h"
#include "tools/input_shapes.h"
#include "tools/model_case.h"
#include "tools/precision_option.h"
#include "tools/stored_choices.h"

namespace tgr {
namespace {

struct Options {
  std::string db;
  std::vector<std::string> models;
  std::string test_data;
  int iters = 50, repeat = 8, max_repeat = 64;
  int64_t spacer = gpu::StepTiming::kSpacerElements;
  bool force = false;
  std::vector<std::string> input_shapes;  // --input-shape NAME=DIMS
  std::string precision = "fp32";
};

int calibrate(const Options& o) {
  if (!gpu::gpu_available()) throw std::runtime_error("no CUDA device is visible");
  warm_up_gpu(0.5);
  rules_db::RulesDb table = rules_db::RulesDb::open(o.db, true);  // the op_costs table
  const std::string device = gpu_device_name();
  const size_t stored_choices = o.force ? 0 : cli::seed_kernel_choices(table);
  size_t new_choices = 0;
  std::map<std::string, double> known;  // this device's stored costs, by signature
  int measured = 0, cached = 0;
  gpu::StepTiming timing;
  timing.copies = o.repeat;
  timing.max_copies = o.max_repeat;  // never below --repeat (copies_streaming_weights)
  timing.cache_bytes = gpu::l2_cache_bytes();
  timing.iters = o.iters;
  timing.spacer_elements = o.spacer;
  // Stored with each cost; a cost timed another way is measured again.
  const std::string method = calibration_method(o.repeat, o.max_repeat, o.spacer);
  int timed_otherwise = 0;
  for (const rules_db::RulesDb::OpCost& row : table.op_cost_rows(device)) {
    if (row.method == method) known[row.signature] = row.ms;
    else ++timed_otherwise;
  }
  if (timed_otherwise > 0)
    std::printf(
        "calibrate: %d of the table's costs for '%s' were timed otherwise than now (%s): those these "
        "models need are measured again\n",
        timed_otherwise, device.c_str(), method.c_str());
  for (const std::string& path : o.models) {
    cli::ModelCase mc = cli::load_model_case(path, o.test_data, 1, cli::parse_input_shapes(o.input_shapes));
    const Graph& g = mc.graph;
    const Precision precision = cli::precision_of(o.precision);
    gpu::GpuOptions gpu_options;
    gpu_options.precision = precision;
    gpu::GpuModel whole = gpu::GpuModel::load(g, gpu_options);  // checks the runtime can run it, and times it below
    PlanOptions plan_options;
    plan_options.place_values = false;  // the tasks are what is timed
    plan_options.precision = precision;
    const ExecutionPlan plan = make_execution_plan(g, plan_options);
    std::map<std::string, size_t> steps;  // signature -> its first task
    std::vector<std::string> plan_signatures;
    for (size_t t = 0; t < plan.tasks.size(); ++t) {
      if (step_is_free(plan.tasks[t])) continue;
      plan_signatures.push_back(step_signature(g, plan.tasks[t], precision));
      steps.emplace(plan_signatures.back(), t);
    }
    std::printf("%s: %d operators, %zu steps, %zu distinct step signatures\n", mc.name.c_str(), g.num_ops(),
                plan_signatures.size(), steps.size());
    for (const auto& [sig, t] : steps) {
      if (!o.force) {
        if (auto it = known.find(sig); it != known.end()) {
          ++cached;
          std::printf("  %10.4f ms  cached    %s\n", it->second, sig.c_str());
          continue;
        }
      }
      bool clamped = false;
      const double ms = gpu::measure_step_ms(g, plan, plan.tasks[t], timing, &clamped);
      table.put_op_cost(device, sig, ms, method);
      known[sig] = ms;
      ++measured;
      std::printf("  %10.4f ms  measured  %s%s\n", ms, sig.c_str(),
                  clamped ? "  (below 0 once the spacers' time was taken off: stored as 0)" : "");
      std::fflush(stdout);
    }
    new_choices += cli::store_kernel_choices(table);  // per model: an interrupted run keeps them
    double predicted = 0;
    for (const std::string& sig : plan_signatures) predicted += known.at(sig);
    whole.set_inputs(mc.inputs);
    const double replay = whole.replay_ms(o.iters, 10);
    std::printf("%s: predicted %.4f ms (the sum of its %zu steps), measured %.4f ms per CUDA-graph replay (%.3fx)\n",
                mc.name.c_str(), predicted, plan_signatures.size(), replay, replay > 0 ? predicted / replay : 0.0);
  }
  std::printf("kernel choices (%s): %zu timed and stored, %zu read from the database\n", gpu_library_versions().c_str(),
              new_choices, stored_choices);
  // Last: scripts read this line (tools/device/gpu_bench.sh).
  std::printf("device '%s': %d step signatures measured, %d reused; the table holds %d rows for this device (%s)\n",
              device.c_str(), measured, cached, static_cast<int>(table.op_costs(device).size()), o.db.c_str());
  return 0;
}

}  // namespace
}  // namespace tgr

int main(int argc, char** argv) {
  CLI::App app{"calibrate: measure the GPU time of each step of models' execution plans into the op_costs table",
               "calibrate"};
  tgr::cli::setup(app);
  tgr::Options o;
  app.add_option("--db", o.db, "the database (rules database) holding op_costs; created if absent")->required();
  app.add_option("models", o.models, "ONNX models")->required()->check(CLI::ExistingFile);
  app.add_option("--test-data", o.test_data, "input shapes from this folder's input_K.pb (one model)")
      ->check(CLI::ExistingDirectory);
  app.add_option("--iters", o.iters, "timed replays per step signature (median)")->check(CLI::Range(1, 10000));
  app.add_option("--repeat", o.repeat, "copies of the step per replay")->check(CLI::Range(1, 64));
  app.add_option("--max-repeat", o.max_repeat,
                 "copies of a weight-heavy step per replay, at most: as many as make the copies' weights twice the "
                 "GPU's L2, so that they are read from memory as in a model larger than L2 (--repeat's value: "
                 "exactly --repeat copies)")
      ->check(CLI::Range(1, 256));
  app.add_option("--spacer", o.spacer,
                 "floats of the relu timed after each copy of a step and subtracted: in a model no step runs right "
                 "after a copy of itself (0: copies back to back)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 26));
  app.add_flag("--force", o.force,
               "measure again signatures the table already holds, and time again the convolution choices it holds");
  tgr::cli::add_input_shape_option(app, o.input_shapes);
  tgr::cli::add_precision_option(app, o.precision);
  if (auto rc = tgr::cli::parse(app, argc, argv)) return *rc;
  return tgr::cli::guarded("calibrate", [&] { return tgr::calibrate(o); });
}
