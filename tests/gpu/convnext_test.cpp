// ConvNeXt's kernels against the CPU reference interpreter: the depthwise
// convolution kernel (runtime/cuda/kernels_conv.cu), pinned and as chosen by
// measurement against cuDNN, and the layer norm reading a permuted NCHW
// tensor in place (runtime/views.h layer_norm_strided_input). Fused with a
// CUDA graph and unfused step by step, each run twice.
#include <gtest/gtest.h>

#include "ir/text.h"
#include "runtime/execution_plan.h"
#include "tests/gpu/gpu_test_util.h"

namespace tgr {
namespace {

struct ConvNextCase {
  std::string expr;
  std::string shapes;  // parse_shape_map text
  double tolerance = 1e-4;
};

std::ostream& operator<<(std::ostream& os, const ConvNextCase& c) { return os << c.expr << " with " << c.shapes; }

void expect_matches_cpu(const ConvNextCase& c, gpu::ConvChoice choice) {
  const Graph g = build_graph(c.expr, parse_shape_map(c.shapes));
  const std::vector<ConstantValue> inputs = test::random_values(g, 7);
  const std::vector<ConstantValue> expected = evaluate_values<float>(g, inputs);
  gpu::GpuOptions options;
  options.conv_choice = choice;
  test::expect_fused_and_unfused_match(g, inputs, expected, c.tolerance, c.expr, options);
}

class GpuDepthwiseConv : public ::testing::TestWithParam<ConvNextCase> {};

// The runtime's kernel wherever it applies (ConvChoice::kOther).
TEST_P(GpuDepthwiseConv, OwnKernelMatchesTheCpuReference) {
  SKIP_WITHOUT_GPU();
  expect_matches_cpu(GetParam(), gpu::ConvChoice::kOther);
}

// The faster of the kernel and cuDNN, as models run.
TEST_P(GpuDepthwiseConv, MeasuredChoiceMatchesTheCpuReference) {
  SKIP_WITHOUT_GPU();
  expect_matches_cpu(GetParam(), gpu::ConvChoice::kFaster);
}

const ConvNextCase kDepthwiseCases[] = {
    // ConvNeXt-tiny's four stages (7x7, pad 3, with the bias), batch 1 and 2
    {"add(conv2d(x, k), b)", "x=1x96x56x56,k=96x1x7x7,b=1x96x1x1"},     // 0
    {"add(conv2d(x, k), b)", "x=2x192x28x28,k=192x1x7x7,b=1x192x1x1"},  // 1
    {"add(conv2d(x, k), b)", "x=1x384x14x14,k=384x1x7x7,b=1x384x1x1"},  // 2
    {"add(conv2d(x, k), b)", "x=2x768x7x7,k=768x1x7x7,b=768x1x1"},      // 3
    // kernels 3 and 5, no bias, relu, odd planes
    {"conv2d(x, k)", "x=1x3x7x7,k=3x1x3x3"},                                                // 4
    {"conv2d(x, k)", "x=2x5x13x9,k=5x1x5x5"},                                               // 5
    {"conv2d[act=relu](x, k)", "x=1x16x9x11,k=16x1x3x3"},                                   // 6
    {"relu(add(conv2d(x, k), b))", "x=2x32x17x23,k=32x1x5x5,b=32x1x1"},                     // 7
    {"relu(add(add(conv2d(x, k), b), z))", "x=1x8x12x12,k=8x1x3x3,b=1x8x1x1,z=1x8x12x12"},  // 8: residual
    // wide and tall planes (several tiles each way)
    {"conv2d(x, k)", "x=1x4x9x100,k=4x1x3x3"},  // 9
    {"conv2d(x, k)", "x=2x4x70x5,k=4x1x7x7"},   // 10
    {"conv2d(x, k)", "x=1x3x56x56,k=3x1x7x7"},  // 11
    // stride 2: "same" on an even plane pads asymmetrically
    {"conv2d[stride=2x2](x, k)", "x=1x24x56x56,k=24x1x3x3"},                         // 12
    {"add(conv2d[stride=2x2](x, k), b)", "x=2x40x15x15,k=40x1x5x5,b=1x40x1x1"},      // 13
    {"conv2d[stride=2x2](x, k)", "x=1x6x7x7,k=6x1x7x7"},                             // 14
    {"relu(add(conv2d[stride=2x2](x, k), b))", "x=1x64x33x20,k=64x1x7x7,b=64x1x1"},  // 15
    // explicit padding: none, asymmetric
    {"conv2d[pad=valid](x, k)", "x=1x5x10x9,k=5x1x7x7"},    // 16
    {"conv2d[pad=1x2x3x0](x, k)", "x=1x6x8x8,k=6x1x5x5"},   // 17
    {"conv2d[pad=0x3x1x2](x, k)", "x=2x7x11x6,k=7x1x7x7"},  // 18
};
INSTANTIATE_TEST_SUITE_P(Shapes, GpuDepthwiseConv, ::testing::ValuesIn(kDepthwiseCases));

class GpuPermutedLayerNorm : public ::testing::TestWithParam<ConvNextCase> {};

// The plan reads the permute in place (views.h); the result is the interpreter's.
TEST_P(GpuPermutedLayerNorm, MatchesTheCpuReference) {
  SKIP_WITHOUT_GPU();
  const ConvNextCase& c = GetParam();
  const Graph g = build_graph(c.expr, parse_shape_map(c.shapes));
  const ExecutionPlan plan = make_execution_plan(g);
  for (const Task& t : plan.tasks) {
    if (g.node(t.root()).op->name == "transpose") {
      EXPECT_EQ(t.kind, Task::Kind::kAlias) << "the permute is copied: the test would not reach the strided kernel";
    }
  }
  expect_matches_cpu(c, gpu::ConvChoice::kFaster);
}

const ConvNextCase kLayerNormCases[] = {
    // ConvNeXt-tiny's stages (positions 3136, 784, 196, 49; channels 96 .. 768)
    {"layer_norm[axis=3](transpose[perm=0x2x3x1](x), s, c)", "x=1x96x56x56,s=96,c=96", 1e-5},     // 0
    {"layer_norm[axis=3](transpose[perm=0x2x3x1](x), s, c)", "x=2x192x28x28,s=192,c=192", 1e-5},  // 1
    {"layer_norm[axis=3](transpose[perm=0x2x3x1](x), s, c)", "x=1x384x14x14,s=384,c=384", 1e-5},  // 2
    {"layer_norm[axis=3](transpose[perm=0x2x3x1](x), s, c)", "x=2x768x7x7,s=768,c=768", 1e-5},    // 3
    // channels and positions not multiples of 32 (the tile), few channels
    {"layer_norm[axis=3](transpose[perm=0x2x3x1](x), s, c)", "x=1x5x3x3,s=5,c=5", 1e-5},         // 4
    {"layer_norm[axis=3](transpose[perm=0x2x3x1](x), s, c)", "x=2x40x9x11,s=40,c=40", 1e-5},     // 5
    {"layer_norm[axis=3](transpose[perm=0x2x3x1](x), s, c)", "x=3x33x5x7,s=33,c=33", 1e-5},      // 6
    {"layer_norm[axis=3](transpose[perm=0x2x3x1](x), s, c)", "x=1x100x1x33,s=100,c=100", 1e-5},  // 7
    {"layer_norm[axis=2](transpose[perm=0x2x1](x), s, c)", "x=4x65x70,s=65,c=65", 1e-5},         // 8: rank 3
    // positions not a multiple of the tile at a staged tile of 8, 4, 2; more
    // channels than the staged tile holds (the unstaged kernel)
    {"layer_norm[axis=3](transpose[perm=0x2x3x1](x), s, c)", "x=1x96x57x55,s=96,c=96", 1e-5},         // 9
    {"layer_norm[axis=3](transpose[perm=0x2x3x1](x), s, c)", "x=1x700x3x301,s=700,c=700", 1e-5},      // 10
    {"layer_norm[axis=3](transpose[perm=0x2x3x1](x), s, c)", "x=1x12000x2x4,s=12000,c=12000", 1e-4},  // 11
    // ConvNeXt's downsampling: layer norm written NCHW (the permute back
    // runs nothing), then a 2x2 stride-2 convolution; a graph output; more
    // channels than a staged tile holds (the unstaged kernel writes it)
    {"conv2d[stride=2x2](transpose[perm=0x3x1x2](layer_norm[axis=3](transpose[perm=0x2x3x1](x), s, c)), k)",
     "x=1x96x56x56,s=96,c=96,k=192x96x2x2", 1e-4},  // 12
    {"transpose[perm=0x3x1x2](layer_norm[axis=3](transpose[perm=0x2x3x1](x), s, c))", "x=2x40x9x11,s=40,c=40",
     1e-5},  // 13
    {"relu(transpose[perm=0x3x1x2](layer_norm[axis=3](transpose[perm=0x2x3x1](x), s, c)))",
     "x=1x12000x2x4,s=12000,c=12000", 1e-4},  // 14
    // a ConvNeXt block's start: depthwise conv with bias, permute, layer norm
    {"layer_norm[axis=3](transpose[perm=0x2x3x1](add(conv2d(x, k), b)), s, c)",
     "x=2x96x28x28,k=96x1x7x7,b=1x96x1x1,s=96,c=96", 1e-4},  // 15
};
INSTANTIATE_TEST_SUITE_P(Shapes, GpuPermutedLayerNorm, ::testing::ValuesIn(kLayerNormCases));

}  // namespace
}  // namespace tgr
