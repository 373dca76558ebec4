#include "runtime/cuda/step_timing.h"

#include "runtime/cuda/gpu_model.h"
#include "runtime/interpreter.h"
#include "runtime/step_signature.h"

namespace tgr::gpu {

std::vector<ConstantValue> timing_inputs(const Graph& graph) {
  std::vector<ConstantValue> values;
  uint64_t seed = 7;
  for (int32_t i : graph.inputs()) {
    const Node& n = graph.node(i);
    if (n.output_dtypes[0] == DType::kFloat) values.emplace_back(random_tensor<float>(n.output_shapes[0], seed++));
    else values.emplace_back(n.output_dtypes[0], Tensor<int64_t>(n.output_shapes[0]));
  }
  return values;
}

double measure_step_ms(const Graph& model, const ExecutionPlan& plan, const Task& task, const StepTiming& timing) {
  if (step_is_free(task)) return 0;
  const Graph step = step_graph(model, plan, task, timing.copies);
  GpuModel gpu = GpuModel::load(step);  // fusion on: each copy is the model's step
  gpu.set_inputs(timing_inputs(step));
  return gpu.replay_ms(timing.iters, timing.warmup) / timing.copies;
}

}  // namespace tgr::gpu
