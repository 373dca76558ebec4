// What `calibrate` times (runtime/cuda/step_timing.h): each step of a plan,
// alone, as the runtime runs it in the model (label `gpu`).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>

#include "ir/text.h"
#include "onnx/onnx_import.h"
#include "runtime/cuda/step_timing.h"
#include "runtime/execution_plan.h"
#include "runtime/step_signature.h"
#include "tests/gpu/gpu_test_util.h"

namespace tgr {
namespace {

ExecutionPlan tasks_of(const Graph& g) {
  PlanOptions o;
  o.place_values = false;
  return make_execution_plan(g, o);
}

// Each distinct step of the bundled SqueezeNet, as calibrate builds it: on
// the GPU its copies are as many steps as copies (each fused as in the
// model), and they compute what the CPU interpreter does.
TEST(GpuStepTiming, EachStepOfAModelRunsAsCopiesOfItself) {
  SKIP_WITHOUT_GPU();
  const char* env = std::getenv("TGR_TEST_DATA");
  const std::string dir = std::string(env ? env : TGR_TEST_DATA) + "/models/";
  onnx_io::ImportOptions options;
  const Graph g = onnx_io::import_model_file(dir + "squeezenet1_1.onnx", options).graph;
  const ExecutionPlan plan = tasks_of(g);
  std::map<std::string, const Task*> steps;
  for (const Task& t : plan.tasks)
    if (!step_is_free(t)) steps.emplace(step_signature(g, t), &t);
  ASSERT_GT(steps.size(), 5u);
  int conv_steps = 0;
  for (const auto& [signature, task] : steps) {
    conv_steps += task->kind == Task::Kind::kConv && task->relu;
    for (int64_t spacer : {int64_t{0}, gpu::StepTiming::kSpacerElements}) {
      const Graph step = step_graph(g, plan, *task, 3, spacer);
      gpu::GpuModel model = gpu::GpuModel::load(step);
      EXPECT_EQ(model.stats().steps, spacer > 0 ? 6 : 3) << signature;
      const std::vector<ConstantValue> inputs = gpu::timing_inputs(step);
      test::expect_outputs_match(model.run(inputs), evaluate_values<float>(step, inputs), 1e-4, signature);
    }
  }
  EXPECT_GT(conv_steps, 0);  // SqueezeNet's conv + bias + relu steps are among them
}

TEST(GpuStepTiming, AStepTakesPositiveTimeAndAViewNone) {
  SKIP_WITHOUT_GPU();
  const Graph g = build_graph("reshape[shape=8x1024](relu(add(conv2d(x, k), b)))",
                              parse_shape_map("x=1x8x32x32,k=8x8x3x3,b=1x8x1x1"));
  const ExecutionPlan plan = tasks_of(g);
  int timed = 0;
  for (const Task& t : plan.tasks) {
    for (int64_t spacer : {int64_t{0}, gpu::StepTiming::kSpacerElements}) {  // back to back; after a spacer
      gpu::StepTiming timing;
      timing.iters = 10;
      timing.spacer_elements = spacer;
      const double ms = gpu::measure_step_ms(g, plan, t, timing);
      if (step_is_free(t)) {
        EXPECT_EQ(ms, 0.0);
        continue;
      }
      ++timed;
      EXPECT_EQ(t.kind, Task::Kind::kConv);
      EXPECT_GT(ms, 0.0) << "spacer " << spacer;  // the spacers' time subtracted leaves the convolution's
      EXPECT_LT(ms, 100.0);                       // a 32 x 32 convolution: microseconds, not a hang
    }
  }
  EXPECT_EQ(timed, 2);
}

}  // namespace
}  // namespace tgr
