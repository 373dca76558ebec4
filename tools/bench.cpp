// `bench`: runs an original and an optimized model on the GPU runtime, checks
// both against the CPU reference interpreter (and the test data's reference
// outputs), times CUDA-graph replays (CUDA events; both models in alternating
// rounds, the median over rounds of each round's median; about --iters
// replays each, after warm-up) and prints the comparison table; --profile adds the per-operator
// time breakdown of each model, --profile-replay each kind of step's cost inside the replay. With --db, each model's
// predicted time too (the tgr-gpu target's cost model, optimizer/plan_cost_model.h: the sum of its plan's steps as
// `calibrate` measured them on this device), and the predicted speedup against the measured one. Each model's FLOPs and
// bytes (AnalyticCostModel's counts, over the operators its plan runs) over its measured time give the fraction of the
// GPU's float32 limits, and of its bfloat16 tensor-core peak, it achieves. --precision runs both models at tf32, bf16
// or fp16 (runtime/precision.h), checked against the float32 interpreter with that precision's tolerance.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include "optimizer/cost_model.h"
#include "optimizer/plan_cost_model.h"
#include "runtime/cuda/device_info.h"
#include "runtime/cuda/gpu_model.h"
#include "runtime/execution_plan.h"
#include "runtime/interpreter.h"
#include "runtime/step_signature.h"
#include "tools/cli_app.h"
#include "tools/cli_common.h"
#include "tools/input_shapes.h"
#include "tools/model_case.h"
#include "tools/precision_option.h"
#include "tools/stored_choices.h"
#include "util/statistics.h"

namespace tgr {
namespace {

struct Options {
  std::vector<std::string> models;
  std::string test_data;
  int iters = 100, warmup = 20, profile_iters = 20;
  double rtol = -1;  // --rtol; below 0: the precision's default (default_tolerance)
  std::string precision = "fp32";
  Precision precision_value() const { return cli::precision_of(precision); }
  double tolerance() const { return rtol >= 0 ? rtol : cli::default_tolerance(precision_value()); }
  bool profile = false, profile_steps = false, no_graph = false, no_fuse = false, no_fuse_attention = false,
       interpret = false;
  bool no_decoy = false, profile_replay = false;
  std::string name;
  std::vector<std::string> input_shapes;  // --input-shape NAME=DIMS
  std::string db, device;                 // --db, --device: predicted times from measured step costs
};

struct Result {
  double ms = 0;
  int ops = 0;
  bool ok = true;
  double flops = 0, bytes = 0;  // of the operators the plan runs (AnalyticCostModel's counts)
};

// FLOPs and bytes of the nodes of the steps `graph`'s plan launches (not
// those computed at load, not views); bytes as if every operator moved its
// operands once (a fused step moves fewer), float32 values counted at the
// size `precision` stores them in.
void count_work(const Graph& graph, Precision precision, Result& r) {
  PlanOptions options;
  options.place_values = false;
  const double float_scale = static_cast<double>(device_element_bytes(storage_dtype(DType::kFloat, precision))) / 4.0;
  for (const Task& t : make_execution_plan(graph, options).tasks) {
    if (step_is_free(t)) continue;
    for (int32_t n : t.nodes) {
      r.flops += optimizer::AnalyticCostModel::flops(graph, graph.node(n));
      r.bytes += float_scale * optimizer::AnalyticCostModel::bytes(graph, graph.node(n));
    }
  }
}

// The predicted cost of each step of `graph`'s plan, by its nodes (each
// node of a step maps to that step); empty without a cost model (no --db).
std::map<int32_t, optimizer::PlanCostModel::StepCost> predicted_by_node(optimizer::PlanCostModel* predicted,
                                                                        const Graph& graph) {
  std::map<int32_t, optimizer::PlanCostModel::StepCost> out;
  if (predicted)
    for (const auto& c : predicted->plan_costs(graph))
      for (int32_t n : c.nodes) out[n] = c;
  return out;
}

// `predicted`: with --db, the plan cost model: each step's row then shows
// its predicted time beside the measured one (and whether from the table).
void print_profile(const std::string& label, gpu::GpuModel& model, const Graph& graph, int iters, double replay_ms,
                   bool each_step, optimizer::PlanCostModel* predicted) {
  const std::vector<gpu::StepTime> steps = model.profile(iters);
  struct Row {
    int count = 0;
    double ms = 0;
  };
  std::map<std::string, Row> by_label, by_op;
  double total = 0;
  for (const auto& s : steps) {
    by_label[s.label].count++, by_label[s.label].ms += s.ms;
    const std::string op = s.label.substr(0, s.label.find('+'));
    by_op[op].count++, by_op[op].ms += s.ms;
    total += s.ms;
  }
  auto print = [&](const char* title, const std::map<std::string, Row>& rows) {
    std::vector<std::pair<std::string, Row>> sorted(rows.begin(), rows.end());
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
    std::printf("  %-36s %6s %10s %7s\n", title, "steps", "ms", "share");
    for (const auto& [name, row] : sorted)
      std::printf("  %-36s %6d %10.4f %6.1f%%\n", name.c_str(), row.count, row.ms, total > 0 ? 100 * row.ms / total : 0);
  };
  std::printf("profile of %s: %zu steps, %.4f ms of kernels (step by step) vs %.4f ms per CUDA-graph replay\n",
              label.c_str(), steps.size(), total, replay_ms);
  print("by operator (first of a fused step)", by_op);
  print("by step (fused operators joined by +)", by_label);
  if (!each_step) return;
  // node -> its step's predicted time (the cost model's plan, made again on the CPU)
  const auto step_of = predicted_by_node(predicted, graph);
  std::printf("  %5s %-36s %-20s %10s%s\n", "step", "operators", "output", "ms",
              predicted ? "  predicted ms (table or fitted)" : "");
  for (size_t k = 0; k < steps.size(); ++k) {
    const gpu::StepTime& s = steps[k];
    const std::string shape = s.node >= 0 ? shape_to_string(graph.node(s.node).output_shapes.at(0)) : "-";
    std::printf("  %5zu %-36s %-20s %10.4f", k, s.label.c_str(), shape.c_str(), s.ms);
    if (auto it = step_of.find(s.node); it != step_of.end())
      std::printf("  %10.4f %s", it->second.us / 1000.0, it->second.measured ? "table" : "fitted");
    std::printf("\n");
  }
}

// What each kind of step (its fused operators, "conv2d+add+relu") costs
// inside the model's CUDA-graph replay: the full replay's time minus that of
// a replay without those steps, in alternating rounds (the median of the
// rounds' differences). Unlike --profile, whose events between steps leave
// each step alone on an idle GPU, this sees what the model's neighbours do to
// a step (launch gaps, what they leave in L2); "alone" is a replay of only
// that kind's steps. With --db, each kind's predicted time (the sum of its
// steps' step costs) beside, so the kind a prediction misses shows.
void print_replay_profile(const std::string& label, gpu::GpuModel& model, const Graph& graph, int iters,
                          optimizer::PlanCostModel* predicted) {
  constexpr int kRounds = 5;
  const int per_round = std::max(5, iters / kRounds);
  const std::vector<gpu::StepTime> steps = model.steps();
  const auto predicted_step = predicted_by_node(predicted, graph);
  struct Kind {
    std::vector<bool> keep;  // every step but this kind's
    int count = 0;
    double predicted_ms = 0, in_replay_ms = 0, alone_ms = 0;
  };
  std::map<std::string, Kind> kinds;
  for (size_t k = 0; k < steps.size(); ++k) {
    Kind& kind = kinds[steps[k].label];
    if (kind.keep.empty()) kind.keep.assign(steps.size(), true);
    kind.keep[k] = false;
    kind.count++;
    if (auto it = predicted_step.find(steps[k].node); it != predicted_step.end())
      kind.predicted_ms += it->second.us / 1000.0;
  }
  std::vector<double> full_rounds;
  double sum_in_replay = 0, sum_predicted = 0;
  for (auto& [name, kind] : kinds) {
    std::vector<double> differences;
    for (int r = 0; r < kRounds; ++r) {
      const double full = model.replay_ms(per_round, 2);
      full_rounds.push_back(full);
      differences.push_back(full - model.replay_ms_keeping(kind.keep, per_round, 2));
    }
    kind.in_replay_ms = median(differences);
    std::vector<bool> only(kind.keep.size());
    for (size_t k = 0; k < only.size(); ++k) only[k] = !kind.keep[k];
    kind.alone_ms = model.replay_ms_keeping(only, per_round * kRounds, 2);
    sum_in_replay += kind.in_replay_ms;
    sum_predicted += kind.predicted_ms;
  }
  std::vector<std::pair<std::string, Kind>> sorted(kinds.begin(), kinds.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second.in_replay_ms > b.second.in_replay_ms; });
  std::printf(
      "in-replay profile of %s: each kind of step's cost in the CUDA-graph replay (the replay minus one "
      "without them, median of %d rounds of %d)\n",
      label.c_str(), kRounds, per_round);
  std::printf("  %-36s %6s %12s %9s%s\n", "step", "steps", "in-replay ms", "alone ms",
              predicted ? " predicted ms  predicted/in-replay" : "");
  for (const auto& [name, kind] : sorted) {
    std::printf("  %-36s %6d %12.4f %9.4f", name.c_str(), kind.count, kind.in_replay_ms, kind.alone_ms);
    if (predicted)
      std::printf(" %12.4f  %.3f", kind.predicted_ms,
                  kind.in_replay_ms > 0 ? kind.predicted_ms / kind.in_replay_ms : 0.0);
    std::printf("\n");
  }
  std::printf("  %-36s %6zu %12.4f %9s", "all kinds (sum)", steps.size(), sum_in_replay, "");
  if (predicted) std::printf(" %12.4f", sum_predicted);
  std::printf("; the replay: %.4f ms\n", median(full_rounds));
}

// A model on the GPU, checked against the CPU reference.
struct Loaded {
  std::string name, role;
  Result result;
  std::unique_ptr<gpu::GpuModel> model;
  Graph graph;
};

// How bench loads every model: --no-graph, --no-fuse, --no-fuse-attention, --interpret-elementwise.
gpu::GpuOptions gpu_options(const Options& o) {
  gpu::GpuOptions options;
  options.cuda_graph = !o.no_graph;
  options.fuse = !o.no_fuse;
  options.attention = !o.no_fuse_attention;
  options.compile_elementwise = !o.interpret;
  options.precision = o.precision_value();
  return options;
}

Loaded load_and_check(const Options& o, const std::string& path, const std::string& role,
                      const std::vector<ConstantValue>* cpu_reference, std::vector<ConstantValue>* reference_out) {
  Loaded l;
  l.role = role;
  Result& r = l.result;
  cli::ModelCase mc = cli::load_model_case(path, o.test_data, 1, cli::parse_input_shapes(o.input_shapes));
  l.name = mc.name;
  r.ops = mc.graph.num_ops();
  count_work(mc.graph, o.precision_value(), r);
  std::vector<ConstantValue> cpu;
  if (!cpu_reference) {
    cpu = evaluate_values<float>(mc.graph, mc.inputs);
    cpu_reference = &cpu;
    if (reference_out) *reference_out = cpu;
  }
  const auto load_start = std::chrono::steady_clock::now();
  l.model = std::make_unique<gpu::GpuModel>(gpu::GpuModel::load(mc.graph, gpu_options(o)));
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  const auto& st = l.model->stats();
  const std::vector<ConstantValue> out = l.model->run(mc.inputs);
  const double vs_cpu = cli::worst_error(out, *cpu_reference);
  const double rtol = o.tolerance();
  r.ok = vs_cpu <= rtol;  // NaN fails
  std::printf(
      "%s (%s): %d operators -> %d GPU steps (%d folded at load, %d fused) at %s; arena %.1f MB (%.1f MB without "
      "sharing), weights %.1f MB, conv workspace %.1f MB; CUDA graph %s; elementwise programs %d compiled, %d "
      "interpreted; loaded in %.2f s\n",
      mc.name.c_str(), role.c_str(), st.graph_ops, st.steps, st.folded, st.fused, o.precision.c_str(),
      st.arena_bytes / 1e6, st.unshared_bytes / 1e6, st.weight_bytes / 1e6, st.workspace_bytes / 1e6,
      st.cuda_graph ? "yes" : "no", st.compiled_programs, st.interpreted_programs, load_s);
  std::printf("  check: relative L2 error vs the CPU interpreter (float32) %.2e (tolerance %.0e at %s) %s", vs_cpu,
              rtol, o.precision.c_str(), r.ok ? "ok" : "FAIL");
  if (!mc.expected.empty()) {
    const double vs_ref = cli::worst_error(out, mc.expected);
    std::printf("; vs the test data's reference outputs %.2e %s", vs_ref, vs_ref <= rtol ? "ok" : "FAIL");
    r.ok = r.ok && vs_ref <= rtol;
  }
  std::printf("\n");
  std::fflush(stdout);
  l.graph = std::move(mc.graph);
  return l;
}

// Both models are timed in alternating rounds (median of each round's
// replays, then the median over rounds), so that neither gets a better
// moment of the GPU: timed one after the other, the second of two copies
// of one BERT-base model ran 5% slower.
void time_models(const Options& o, std::vector<Loaded*> models, optimizer::PlanCostModel* predicted) {
  constexpr int kRounds = 10;
  const int per_round = std::max(10, o.iters / kRounds);
  std::vector<std::vector<double>> rounds(models.size());
  for (Loaded* l : models) l->model->replay_ms(1, o.warmup);
  for (int round = 0; round < kRounds; ++round)
    for (size_t i = 0; i < models.size(); ++i) rounds[i].push_back(models[i]->model->replay_ms(per_round, 2));
  for (size_t i = 0; i < models.size(); ++i) {
    Loaded& l = *models[i];
    l.result.ms = median(rounds[i]);
    std::printf("  time %s (%s): %.4f ms (median of %d rounds of %d %s, alternating with the other model, after %d "
                "warm-up)\n",
                l.name.c_str(), l.role.c_str(), l.result.ms, kRounds, per_round,
                l.model->stats().cuda_graph ? "CUDA-graph replays" : "runs", o.warmup);
    if (o.profile || o.profile_steps)
      print_profile(l.name + " (" + l.role + ")", *l.model, l.graph, o.profile_iters, l.result.ms, o.profile_steps,
                    predicted);
    if (o.profile_replay && l.model->stats().cuda_graph)
      print_replay_profile(l.name + " (" + l.role + ")", *l.model, l.graph, o.iters, predicted);
    else if (o.profile_replay)
      std::printf("in-replay profile of %s: none, the model was not captured as a CUDA graph\n",
                  (l.name + " (" + l.role + ")").c_str());
  }
  std::fflush(stdout);
}

// Predicted (`cost`: the plan cost model over --db's step costs; null without --db) against measured, and the
// achieved fraction of the limits.
void print_predictions(const std::string& name, const std::vector<Loaded*>& models, optimizer::PlanCostModel* cost,
                       Precision precision) {
  std::vector<double> predicted;
  if (cost) {
    for (Loaded* l : models) {
      predicted.push_back(cost->graph_cost(l->graph) / 1000.0);
      std::printf("  predicted %s (%s): %.4f ms, measured %.4f ms (%.3fx)\n", l->name.c_str(), l->role.c_str(),
                  predicted.back(), l->result.ms, predicted.back() / l->result.ms);
    }
    std::printf("  prediction: %s\n", cost->describe().c_str());
    if (models.size() > 1)
      std::printf("  speedup: predicted %.3fx, measured %.3fx (predicted / measured %.3f)\n",
                  predicted[0] / predicted[1], models[0]->result.ms / models[1]->result.ms,
                  (predicted[0] / predicted[1]) / (models[0]->result.ms / models[1]->result.ms));
  }
  // Achieved shares of this GPU's float32 limits (device_info.h); of the
  // roofline's (an H100 SXM) where the GPU reports none.
  GpuLimits limits = gpu_fp32_limits();
  if (limits.fp32_flops <= 0 || limits.bandwidth <= 0) {
    const optimizer::RooflineParams h100;
    limits.fp32_flops = h100.peak_flops;
    limits.bandwidth = h100.bandwidth;
  }
  for (Loaded* l : models) {
    const Result& r = l->result;
    const double s = r.ms / 1000.0;
    std::printf("  achieved %s (%s): %.2f GFLOP, %.1f MB in %.4f ms: %.1f%% of %.0f TFLOP/s, %.1f%% of %.2f TB/s",
                l->name.c_str(), l->role.c_str(), r.flops / 1e9, r.bytes / 1e6, r.ms,
                100 * r.flops / s / limits.fp32_flops, limits.fp32_flops / 1e12, 100 * r.bytes / s / limits.bandwidth,
                limits.bandwidth / 1e12);
    if (limits.bf16_tensor_flops > 0)
      std::printf(", %.2f%% of the %.0f TFLOP/s bf16 tensor-core peak", 100 * r.flops / s / limits.bf16_tensor_flops,
                  limits.bf16_tensor_flops / 1e12);
    std::printf(" (%s)\n", std::string(precision_name(precision)).c_str());
    // One line for scripts: ACHIEVED name role precision flops_share_bf16_peak bandwidth_share
    std::printf(
        "ACHIEVED %s %s %s %.4f %.4f\n", name.c_str(), l->role.c_str(), std::string(precision_name(precision)).c_str(),
        limits.bf16_tensor_flops > 0 ? r.flops / s / limits.bf16_tensor_flops : 0.0, r.bytes / s / limits.bandwidth);
  }
  // One line for scripts: PREDICTED name original_ms optimized_ms (the predicted times; - without --db)
  if (!predicted.empty()) std::printf("PREDICTED %s %.4f %.4f\n", name.c_str(), predicted[0], predicted.back());
  std::fflush(stdout);
}

int bench(const Options& o) {
  std::printf("%s\n", cuda_device_report().c_str());
  if (!gpu::gpu_available()) throw std::runtime_error("no CUDA device is visible");
  warm_up_gpu(0.5);
  // With --db: each convolution runs as calibrate timed it (its stored
  // choices, runtime/kernel_choices.h); one the table lacks is timed here.
  if (!o.db.empty()) {
    const size_t stored = cli::seed_kernel_choices(rules_db::RulesDb::open_read_only(o.db));
    std::printf("kernel choices: %zu for '%s' (%s) read from %s\n", stored, gpu_device_name().c_str(),
                gpu_library_versions().c_str(), o.db.c_str());
  }
  // The first model a process loads ran slower than a later load of the same
  // file, which favours the optimized model, loaded second. A decoy copy of
  // the first model is loaded, run and dropped before either is loaded for
  // timing; with it a smaller gap remained on small networks, whose cause is
  // still open (the figures: docs/benchmarks-archive.md).
  if (!o.no_decoy) {
    const cli::ModelCase decoy =
        cli::load_model_case(o.models[0], o.test_data, 1, cli::parse_input_shapes(o.input_shapes));
    gpu::GpuModel model = gpu::GpuModel::load(decoy.graph, gpu_options(o));
    model.run(decoy.inputs);
    model.replay_ms(1, o.warmup);
  }
  std::vector<ConstantValue> reference;
  Loaded original_model = load_and_check(o, o.models[0], "original", nullptr, &reference);
  const bool has_opt = o.models.size() > 1;
  Loaded optimized_model;
  if (has_opt) optimized_model = load_and_check(o, o.models[1], "optimized", &reference, nullptr);
  std::vector<Loaded*> timed{&original_model};
  if (has_opt) timed.push_back(&optimized_model);
  // With --db: the plan cost model over calibrate's step times, read once
  // for the profile's per-step predictions and the predicted totals.
  // Predictions are of float32 steps (the tgr-gpu target costs them so); at
  // another precision --db only seeds the convolution choices.
  std::unique_ptr<optimizer::PlanCostModel> predicted;
  if (!o.db.empty() && o.precision_value() != Precision::kFp32)
    std::printf("predicted times: none at %s (the cost model's steps are float32's)\n", o.precision.c_str());
  else if (!o.db.empty())
    predicted =
        optimizer::PlanCostModel::from_db(o.db, o.device.empty() ? original_model.model->device_name() : o.device);
  time_models(o, timed, predicted.get());
  std::string name = o.name;
  if (name.empty()) name = std::filesystem::path(o.models[0]).stem().string();
  print_predictions(name, timed, predicted.get(), o.precision_value());
  const Result& original = original_model.result;
  const Result& optimized = optimized_model.result;
  const bool ok = original.ok && (!has_opt || optimized.ok);
  std::printf("\n%-18s | %11s | %12s | %7s | %10s | %9s | %s\n", "model", "original ms", "optimized ms", "speedup",
              "ops before", "ops after", "check");
  if (has_opt)
    std::printf("%-18s | %11.4f | %12.4f | %6.3fx | %10d | %9d | %s\n", name.c_str(), original.ms, optimized.ms,
                original.ms / optimized.ms, original.ops, optimized.ops, ok ? "ok" : "FAIL");
  else
    std::printf("%-18s | %11.4f | %12s | %7s | %10d | %9s | %s\n", name.c_str(), original.ms, "-", "-", original.ops,
                "-", ok ? "ok" : "FAIL");
  // One line for scripts: RESULT name original_ms optimized_ms ops_before ops_after check
  std::printf("RESULT %s %.4f %.4f %d %d %s\n", name.c_str(), original.ms, has_opt ? optimized.ms : original.ms,
              original.ops, has_opt ? optimized.ops : original.ops, ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace tgr

int main(int argc, char** argv) {
  CLI::App app{
      "bench: time an original and an optimized ONNX model on the GPU runtime, checked against the CPU "
      "reference interpreter",
      "bench"};
  tgr::cli::setup(app);
  tgr::Options o;
  app.add_option("models", o.models, "ORIGINAL.onnx [OPTIMIZED.onnx]")->required()->expected(1, 2)
      ->check(CLI::ExistingFile);
  app.add_option("--test-data", o.test_data, "a folder of input_K.pb (and output_K.pb references); default: random inputs")
      ->check(CLI::ExistingDirectory);
  app.add_option("--iters", o.iters, "timed replays (median)")->check(CLI::Range(1, 100000));
  app.add_option("--warmup", o.warmup, "untimed replays first")->check(CLI::Range(0, 100000));
  app.add_option("--rtol", o.rtol,
                 "largest relative L2 error vs the CPU reference (default by --precision: 1e-4 fp32, 5e-3 tf32 and "
                 "fp16, 2e-2 bf16)")
      ->check(tgr::cli::at_least(0.0))
      ->default_str("by --precision");
  tgr::cli::add_precision_option(app, o.precision);
  app.add_flag("--profile", o.profile, "print the per-operator time breakdown of each model");
  app.add_flag("--profile-steps", o.profile_steps,
               "--profile, and every step's time with its output's shape (with --db, its predicted time beside)");
  app.add_option("--profile-iters", o.profile_iters, "profiled runs (median per step)");
  CLI::Option* profile_replay =
      app.add_flag("--profile-replay", o.profile_replay,
                   "print what each kind of step costs inside the CUDA-graph replay (the replay minus a replay "
                   "without those steps) and replayed alone (with --db, its predicted time beside)");
  app.add_flag("--no-decoy", o.no_decoy, "do not load (and drop) a copy of the first model before timing");
  app.add_flag("--no-graph", o.no_graph, "run step by step instead of replaying a CUDA graph")
      ->excludes(profile_replay);
  app.add_flag("--no-fuse", o.no_fuse, "no elementwise or convolution fusion");
  app.add_flag("--no-fuse-attention", o.no_fuse_attention,
               "attention as its products, scale, mask and softmax steps instead of one fused step");
  app.add_flag("--interpret-elementwise", o.interpret,
               "run elementwise programs on the interpreter kernel instead of compiling each (NVRTC)");
  app.add_option("--name", o.name, "the model's name in the table (default: the file's stem)");
  app.add_option("--db", o.db, "a database whose op_costs hold calibrate's step times: print predicted times too")
      ->check(CLI::ExistingFile);
  app.add_option("--device", o.device, "the op_costs device of --db (default: this GPU's name)");
  tgr::cli::add_input_shape_option(app, o.input_shapes);
  if (auto rc = tgr::cli::parse(app, argc, argv)) return *rc;
  return tgr::cli::guarded("bench", [&] { return tgr::bench(o); });
}
