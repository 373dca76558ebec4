// A convolution's clip (ReLU6) or SiLU fused into its step (ExecutionPlan
// Task::activation) against the CPU reference interpreter, on each of its
// implementations: cuDNN with the elementwise epilogue, cuBLAS for 1x1 with
// the epilogue, and the runtime's depthwise kernel with the activation
// inside; pinned (ConvChoice) and as chosen by timing. Fused with a CUDA
// graph and unfused step by step.
#include <gtest/gtest.h>

#include "ir/text.h"
#include "runtime/execution_plan.h"
#include "tests/gpu/gpu_test_util.h"

namespace tgr::gpu {
// The test names: "cudnn", "other", "faster".
inline void PrintTo(ConvChoice c, std::ostream* os) {
  *os << (c == ConvChoice::kCudnn ? "cudnn" : c == ConvChoice::kOther ? "other" : "faster");
}
}  // namespace tgr::gpu

namespace tgr {
namespace {

struct ActivationCase {
  std::string expr;
  std::string shapes;
  Task::Activation activation;
};

std::ostream& operator<<(std::ostream& os, const ActivationCase& c) { return os << c.expr << " with " << c.shapes; }

class GpuConvActivation : public ::testing::TestWithParam<std::tuple<ActivationCase, gpu::ConvChoice>> {};

TEST_P(GpuConvActivation, MatchesTheCpuReference) {
  const auto& [c, choice] = GetParam();
  const Graph g = build_graph(c.expr, parse_shape_map(c.shapes));
  const ExecutionPlan plan = make_execution_plan(g);  // checked anywhere
  ASSERT_EQ(plan.tasks.size(), 1u) << "the activation is not in the convolution's step";
  EXPECT_EQ(plan.tasks[0].activation, c.activation);
  SKIP_WITHOUT_GPU();
  const std::vector<ConstantValue> inputs = test::random_values(g, 5, 4.0);  // some above 6 and below 0
  const std::vector<ConstantValue> expected = evaluate_values<float>(g, inputs);
  gpu::GpuOptions options;
  options.conv_choice = choice;
  test::expect_fused_and_unfused_match(g, inputs, expected, 1e-4, c.expr, options);
}

const ActivationCase kActivationCases[] = {
    // depthwise (MobileNet-v2's 3x3, EfficientNet's 5x5 at stride 2)
    {"clip[min=0, max=6](add(conv2d(x, k), b))", "x=1x32x14x14,k=32x1x3x3,b=1x32x1x1", Task::Activation::kClip},
    {"mul(add(conv2d[stride=2x2](x, k), b), sigmoid(add(conv2d[stride=2x2](x, k), b)))",
     "x=1x24x15x15,k=24x1x5x5,b=1x24x1x1", Task::Activation::kSilu},
    {"clip[min=-1, max=0.5](conv2d(x, k))", "x=2x8x9x9,k=8x1x7x7", Task::Activation::kClip},  // no bias
    // 1x1 (cuBLAS or cuDNN)
    {"clip[min=0, max=6](add(conv2d(x, k), b))", "x=1x16x7x7,k=48x16x1x1,b=1x48x1x1", Task::Activation::kClip},
    {"mul(sigmoid(add(conv2d(x, k), b)), add(conv2d(x, k), b))", "x=1x16x7x7,k=24x16x1x1,b=1x24x1x1",
     Task::Activation::kSilu},
    // a plain 3x3 (cuDNN only)
    {"mul(conv2d(x, k), sigmoid(conv2d(x, k)))", "x=1x3x10x10,k=8x3x3x3", Task::Activation::kSilu},
    {"clip[min=0, max=6](add(conv2d[stride=2x2](x, k), b))", "x=1x3x16x16,k=16x3x3x3,b=16x1x1",
     Task::Activation::kClip},
};

INSTANTIATE_TEST_SUITE_P(Cases, GpuConvActivation,
                         ::testing::Combine(::testing::ValuesIn(kActivationCases),
                                            ::testing::Values(gpu::ConvChoice::kCudnn, gpu::ConvChoice::kOther,
                                                              gpu::ConvChoice::kFaster)));

}  // namespace
}  // namespace tgr
