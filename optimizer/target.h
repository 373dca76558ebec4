// Where the optimized model will run (`optimize --target`), and so which
// cost model the search minimises. A target names a runtime; the cost model
// of each is its own class (optimizer/cost_model.h,
// optimizer/onnxruntime_cost_model.h), built here and nowhere else, so a
// change to how one runtime is modelled stays inside its class.
//
//   onnxruntime-cpu  ONNX Runtime's CPU provider, all graph optimizations on:
//                    operator times measured with ONNX Runtime
//                    (tools/calibrate_ort.py) in the op_costs table, device
//                    "onnxruntime-cpu"; the build ships a table measured on
//                    the build machine in the default rules database. The
//                    default: the exported ONNX model is what a user runs, and
//                    this is the runtime it is measured on out of the box.
//   tgr-gpu          tgr's CUDA runtime: the steps of the runtime's execution
//                    plan for the graph (a convolution with its bias and relu
//                    is one step, an elementwise chain another), each timed
//                    by `calibrate` on a GPU (--device names it) into the
//                    op_costs table, by default the rules database's
//                    (optimizer/plan_cost_model.h).
//   roofline         an analytic model of no runtime: an H100's peak FLOP/s
//                    and bandwidth per operator plus a launch overhead. It
//                    rewards what a GPU gains from (1x1 kernels enlarged to
//                    3x3 and merged), which ran slower in ONNX Runtime.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "optimizer/cost_model.h"
#include "runtime/precision.h"

namespace tgr::optimizer {

enum class Target { kOnnxRuntimeCpu, kTgrGpu, kRoofline };

struct TargetInfo {
  Target target;
  std::string_view name;  // what --target takes
  std::string_view help;  // one line for --help
};
const std::vector<TargetInfo>& targets();
const TargetInfo& target_info(Target target);  // its entry of targets()
std::string_view target_name(Target target);
// Throws std::invalid_argument naming the targets for an unknown name.
Target parse_target(std::string_view name);

// The op_costs device under which ONNX Runtime's measurements are stored.
inline constexpr std::string_view kOnnxRuntimeCpuDevice = "onnxruntime-cpu";

struct TargetOptions {
  Target target = Target::kOnnxRuntimeCpu;
  // The database whose op_costs the measured targets read (onnxruntime-cpu,
  // tgr-gpu); the pipeline's default is the target's (pipeline/defaults.h).
  std::string costs_db;
  std::string gpu_device = "H100";  // tgr-gpu: the device name calibrate stored its costs under
  // tgr-gpu: a step the table lacks costs its fitted guess times this
  // (unset: PlanCostModel::kUnmeasuredMargin; below 1 to explore).
  std::optional<double> unmeasured_margin;
  // tgr-gpu: what the model will run at; its steps are costed as calibrate
  // timed them at this precision (PlanCostModel).
  Precision precision = Precision::kFp32;
};

// The cost model of the target (each fits its fallback to its own table).
std::unique_ptr<CostModel> make_cost_model(const TargetOptions& options);

}  // namespace tgr::optimizer
