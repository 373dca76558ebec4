#include "runtime/cuda/step_timing.h"

#include <cuda_runtime.h>

#include "runtime/cuda/gpu_model.h"
#include "runtime/interpreter.h"
#include "runtime/step_signature.h"

namespace tgr::gpu {

std::vector<ConstantValue> timing_inputs(const Graph& graph) {
  std::vector<ConstantValue> values;
  uint64_t seed = 7;
  for (int32_t i : graph.inputs()) {
    const Node& n = graph.node(i);
    if (is_floating(n.output_dtypes[0])) values.emplace_back(random_tensor<float>(n.output_shapes[0], seed++));
    else values.emplace_back(n.output_dtypes[0], Tensor<int64_t>(n.output_shapes[0]));
  }
  return values;
}

int64_t l2_cache_bytes() {
  int bytes = 0;
  if (cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, 0) != cudaSuccess) return 0;
  return bytes;
}

double measure_step_ms(const Graph& model, const ExecutionPlan& plan, const Task& task, const StepTiming& timing,
                       bool* clamped) {
  if (clamped) *clamped = false;
  if (step_is_free(task)) return 0;
  const int copies = timing.cache_bytes > 0
                         ? copies_streaming_weights(step_weight_bytes(model, plan, task), timing.cache_bytes,
                                                    timing.copies, timing.max_copies)
                         : timing.copies;
  const Graph step = step_graph(model, plan, task, copies, timing.spacer_elements);
  GpuOptions options;  // fusion on: each copy is the model's step
  options.precision = plan.precision;
  GpuModel gpu = GpuModel::load(step, options);
  gpu.set_inputs(timing_inputs(step));
  const double ms = gpu.replay_ms(timing.iters, timing.warmup);
  double spacers_ms = 0;
  if (timing.spacer_elements > 0) {
    const Graph spacers = spacer_graph(copies, timing.spacer_elements);
    GpuModel alone = GpuModel::load(spacers, options);
    alone.set_inputs(timing_inputs(spacers));
    spacers_ms = alone.replay_ms(timing.iters, timing.warmup);
  }
  return step_cost_ms(ms, spacers_ms, copies, clamped);
}

}  // namespace tgr::gpu
