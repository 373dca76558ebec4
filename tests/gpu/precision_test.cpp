// The GPU runtime at tf32, bf16 and fp16 (runtime/precision.h) against the
// float32 CPU interpreter: each path that stores half types or changes the
// math (cuBLAS and cuBLASLt products, cuDNN, cuBLAS and depthwise
// convolutions, compiled and interpreted elementwise programs, softmax,
// layer norm, reductions, pooling, layout and index kernels), fused and
// unfused; and what a half precision does to the memory plan on the device.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/text.h"
#include "runtime/precision.h"
#include "tests/gpu/gpu_test_util.h"

namespace tgr {
namespace {

struct HalfCase {
  std::string expr;
  std::string shapes;  // parse_shape_map text; "ids=int64:2x3"
  double scale = 1;    // floats in [-scale, scale)
  int64_t lo = 0, hi = 4;
};

// Relative L2 error one operator may reach against float32 at each
// precision: inputs, weights and outputs rounded to 8 (bf16) or 11 (fp16)
// significant bits, products' inputs to 11 (tf32).
double op_tolerance(Precision p) {
  switch (p) {
    case Precision::kBf16:
      return 1e-2;
    case Precision::kFp16:
      return 2e-3;
    case Precision::kTf32:
      return 2e-3;
    case Precision::kFp32:
      break;
  }
  return 1e-4;
}

const HalfCase kHalfCases[] = {
    // elementwise programs (compiled, and the interpreter kernel below)
    {"mul(add(relu(x0), x1), sigmoid(x2))", "x0=2x3x8,x1=8,x2=2x3x8"},
    {"tanh(sub(mul(x0, x0), exp(x1)))", "x0=6x7,x1=6x7"},
    {"batch_norm(x0, s, b, m, abs(v))", "x0=2x5x3x3,s=5,b=5,m=5,v=5"},
    {"where(less(a, b), x, y)", "a=int64:3x4,b=int64:4,x=3x4,y=3x4", 1, 0, 3},
    {"add(x, cast[to=float](a))", "x=3x4,a=int64:3x4", 1, -9, 9},
    // products: cuBLAS (GemmEx, strided batched), cuBLASLt with its epilogues
    {"matmul(a, b)", "a=33x65,b=65x17"},
    {"batch_matmul(a, b)", "a=3x7x9,b=3x9x5"},
    {"relu(add(matmul(x, w), b))", "x=64x256,w=256x128,b=128"},
    {"add(add(matmul(x, w), b), z)", "x=16x96,w=96x48,b=48,z=16x48"},
    {"(add(split[axis=1, sizes=8x8x8](matmul(x, w)).0, b), relu(split[axis=1, sizes=8x8x8](matmul(x, w)).1))",
     "x=5x16,w=16x24,b=8"},
    // convolutions: cuDNN (fused bias and relu, residual), padding copies, 1x1, depthwise, activations
    {"relu(add(conv2d(x, k), b))", "x=1x16x14x14,k=32x16x3x3,b=1x32x1x1"},
    {"relu(add(add(conv2d(x, k), b), z))", "x=1x32x7x7,k=16x32x1x1,b=1x16x1x1,z=1x16x7x7"},
    {"conv2d[stride=2x2](x, k)", "x=1x8x8x6,k=16x8x3x3"},  // "same": asymmetric padding
    {"conv2d(x, k)", "x=2x16x10x10,k=16x1x3x3"},           // depthwise
    {"clip[min=0, max=6](add(conv2d(x, k), b))", "x=1x16x9x9,k=16x1x3x3,b=1x16x1x1"},
    {"add(conv2d(x, k), b)", "x=1x64x14x14,k=96x64x1x1,b=1x96x1x1"},
    // normalisation, reductions, pooling
    {"softmax[axis=2](x)", "x=2x3x37", 4},
    {"softmax[axis=1](x)", "x=2x5x3", 4},
    {"softmax[axis=1](x)", "x=4x2000", 4},
    {"layer_norm[axis=2](x, s, b)", "x=2x3x50,s=50,b=50"},
    {"layer_norm[axis=1](x, s, b)", "x=3x768,s=768,b=768"},
    {"reduce_mean[axes=2x3](x)", "x=2x5x33x40"},
    {"reduce_sum[axes=1](x)", "x=2x3x4"},
    {"reduce_max[axes=0x2, keepdims=0](x)", "x=2x3x4"},
    {"maxpool[kernel=3x3, stride=2x2](x)", "x=1x3x9x8"},
    {"avgpool[kernel=3x3, stride=2x2, include_pad=1](x)", "x=1x3x9x8"},
    {"avgpool[kernel=7x7, pad=valid](x)", "x=1x16x7x7"},
    // layout and indexing on 2-byte elements
    {"transpose[perm=0x2x1x3](x)", "x=2x3x4x5"},
    {"concat[axis=1](x0, x1, x2)", "x0=2x3x4,x1=2x1x4,x2=2x5x4"},
    {"slice[starts=3x5, ends=-1x0, steps=-1x-2](x)", "x=4x6"},
    {"pad[pads=0x1x2x0, value=0.5](x)", "x=3x4"},
    {"expand[shape=2x3x4](x)", "x=3x1"},
    {"gather[axis=1](x, i)", "x=3x10x4,i=int64:5", 1, 0, 10},
    {"gather_elements[axis=1](x, i)", "x=3x6,i=int64:3x4", 1, 0, 6},
    {"reduce_sum[axes=0](a)", "a=int64:5x3", 1, -9, 9},  // integers stay int64 at every precision
};

struct PrecisionCase {
  Precision precision;
  HalfCase op;
};

std::ostream& operator<<(std::ostream& os, const PrecisionCase& c) {
  return os << precision_name(c.precision) << " " << c.op.expr << " with " << c.op.shapes;
}

std::vector<PrecisionCase> all_cases() {
  std::vector<PrecisionCase> out;
  for (Precision p : {Precision::kTf32, Precision::kBf16, Precision::kFp16})
    for (const HalfCase& c : kHalfCases) out.push_back({p, c});
  return out;
}

class GpuPrecision : public ::testing::TestWithParam<PrecisionCase> {};

TEST_P(GpuPrecision, MatchesTheFloat32ReferenceWithinThePrecisionsError) {
  SKIP_WITHOUT_GPU();
  const PrecisionCase& c = GetParam();
  DTypeMap dtypes;
  const ShapeMap shapes = parse_shape_map(c.op.shapes, &dtypes);
  const Graph g = build_graph(c.op.expr, shapes, dtypes);
  const std::vector<ConstantValue> inputs = test::random_values(g, 3, c.op.scale, c.op.lo, c.op.hi);
  const std::vector<ConstantValue> expected = evaluate_values<float>(g, inputs);
  gpu::GpuOptions options;
  options.precision = c.precision;
  const std::string what = std::string(precision_name(c.precision)) + " " + c.op.expr;
  test::expect_fused_and_unfused_match(g, inputs, expected, op_tolerance(c.precision), what, options);
  // The same on the interpreter kernel, and with each convolution pinned to
  // cuDNN and to its other implementation (cuBLAS for 1x1, the depthwise kernel).
  options.compile_elementwise = false;
  test::expect_fused_and_unfused_match(g, inputs, expected, op_tolerance(c.precision), what + " interpreted", options);
  options.compile_elementwise = true;
  if (c.op.expr.find("conv2d") == std::string::npos) return;
  for (gpu::ConvChoice choice : {gpu::ConvChoice::kCudnn, gpu::ConvChoice::kOther}) {
    options.conv_choice = choice;
    gpu::GpuModel model = gpu::GpuModel::load(g, options);
    test::expect_outputs_match(model.run(inputs), expected, op_tolerance(c.precision),
                               what + (choice == gpu::ConvChoice::kCudnn ? " cuDNN" : " other"));
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, GpuPrecision, ::testing::ValuesIn(all_cases()));

TEST(GpuPrecisionPlan, HalfTypesHalveTheArenaAndTheWeightsOnTheDevice) {
  SKIP_WITHOUT_GPU();
  const Graph g = build_graph("relu(add(matmul(relu(add(matmul(x, w1), b1)), w2), b2))",
                              parse_shape_map("x=64x512,w1=512x1024,b1=1024,w2=1024x256,b2=256"));
  gpu::GpuOptions options;
  const gpu::GpuModel fp32 = gpu::GpuModel::load(g, options);
  options.precision = Precision::kBf16;
  gpu::GpuModel bf16 = gpu::GpuModel::load(g, options);
  EXPECT_EQ(bf16.stats().arena_bytes * 2, fp32.stats().arena_bytes);
  EXPECT_LE(bf16.stats().weight_bytes * 2, fp32.stats().weight_bytes + 1024);
  // Outputs come back as float32, never NaN, within bf16's error.
  const std::vector<ConstantValue> inputs = test::random_values(g, 5);
  const std::vector<ConstantValue> out = bf16.run(inputs);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dtype, DType::kFloat);
  for (float v : out[0].real.data) ASSERT_FALSE(std::isnan(v));
  test::expect_outputs_match(out, evaluate_values<float>(g, inputs), 2e-2, "bf16 two-layer perceptron");
}

}  // namespace
}  // namespace tgr
