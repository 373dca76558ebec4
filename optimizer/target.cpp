#include "optimizer/target.h"

#include <stdexcept>

#include "optimizer/onnxruntime_cost_model.h"
#include "optimizer/plan_cost_model.h"

namespace tgr::optimizer {

const std::vector<TargetInfo>& targets() {
  static const std::vector<TargetInfo> all = {
      {Target::kOnnxRuntimeCpu, "onnxruntime-cpu",
       "ONNX Runtime on the CPU: operator times measured with ONNX Runtime (a table measured on the build machine "
       "ships with tgr; tools/calibrate_ort.py measures your own)"},
      {Target::kTgrGpu, "tgr-gpu", "tgr's CUDA runtime: its execution plan's steps, timed by `calibrate` on --device"},
      {Target::kRoofline, "roofline",
       "no runtime: an analytic H100 roofline (67 TFLOP/s, 3.35 TB/s, 3 us per operator)"},
  };
  return all;
}

const TargetInfo& target_info(Target target) {
  for (const TargetInfo& t : targets())
    if (t.target == target) return t;
  throw std::logic_error("a target missing from targets()");
}

std::string_view target_name(Target target) { return target_info(target).name; }

Target parse_target(std::string_view name) {
  std::string names;
  for (const TargetInfo& t : targets()) {
    if (t.name == name) return t.target;
    names += names.empty() ? "" : ", ";
    names += t.name;
  }
  throw std::invalid_argument("unknown target '" + std::string(name) + "' (the targets: " + names + ")");
}

std::unique_ptr<CostModel> make_cost_model(const TargetOptions& o) {
  if (o.target != Target::kRoofline && o.costs_db.empty())
    throw std::invalid_argument("--target " + std::string(target_name(o.target)) +
                                " reads measured costs, and no database holding them was given");
  switch (o.target) {
    case Target::kRoofline:
      return std::make_unique<AnalyticCostModel>();
    case Target::kTgrGpu: {
      auto model = PlanCostModel::from_db(o.costs_db, o.gpu_device, o.precision);
      if (o.unmeasured_margin) model->set_unmeasured_margin(*o.unmeasured_margin);
      return model;
    }
    case Target::kOnnxRuntimeCpu:
      return OnnxRuntimeCostModel::from_db(o.costs_db, std::string(kOnnxRuntimeCpuDevice));
  }
  throw std::logic_error("an unknown target");
}

}  // namespace tgr::optimizer
