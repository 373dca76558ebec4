// The GPU runtime's precision without a GPU (runtime/precision.h): names,
// storage types, the half types' encodings, and what a precision changes in
// the execution plan (sizes by storage type) and in step signatures (keys of
// measured costs and kernel choices).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "ir/text.h"
#include "runtime/execution_plan.h"
#include "runtime/precision.h"
#include "runtime/step_signature.h"

namespace tgr {
namespace {

TEST(Precision, NamesParseBackAndOthersAreRefused) {
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kBf16, Precision::kFp16})
    EXPECT_EQ(parse_precision(precision_name(p)), p);
  EXPECT_FALSE(parse_precision("fp64").has_value());
  EXPECT_FALSE(parse_precision("BF16").has_value());
  EXPECT_FALSE(parse_precision("").has_value());
}

TEST(Precision, StorageTypeOfEachGraphType) {
  EXPECT_EQ(storage_dtype(DType::kFloat, Precision::kFp32), DType::kFloat);
  EXPECT_EQ(storage_dtype(DType::kFloat, Precision::kTf32), DType::kFloat);
  EXPECT_EQ(storage_dtype(DType::kFloat, Precision::kBf16), DType::kBFloat16);
  EXPECT_EQ(storage_dtype(DType::kFloat, Precision::kFp16), DType::kFloat16);
  // A graph's own half types and integers keep their type at every precision.
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kBf16, Precision::kFp16}) {
    EXPECT_EQ(storage_dtype(DType::kFloat16, p), DType::kFloat16);
    EXPECT_EQ(storage_dtype(DType::kBFloat16, p), DType::kBFloat16);
    EXPECT_EQ(storage_dtype(DType::kInt64, p), DType::kInt64);
    EXPECT_EQ(storage_dtype(DType::kBool, p), DType::kBool);
  }
  EXPECT_TRUE(allows_tf32(Precision::kTf32));
  EXPECT_FALSE(allows_tf32(Precision::kFp32));
  EXPECT_FALSE(allows_tf32(Precision::kBf16));
}

TEST(Precision, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(bfloat16_bits(1.0f), 0x3f80);
  EXPECT_EQ(bfloat16_bits(-2.0f), 0xc000);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to the even 1.
  EXPECT_EQ(bfloat16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: up to the even one.
  EXPECT_EQ(bfloat16_bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(bfloat16_bits(1.0f + 0.75f * std::ldexp(1.0f, -7)), 0x3f81);
  EXPECT_TRUE(std::isnan(bfloat16_value(bfloat16_bits(std::nanf("")))));
  EXPECT_TRUE(std::isinf(bfloat16_value(bfloat16_bits(std::numeric_limits<float>::max()))));
  for (float v : {0.0f, -0.0f, 1.5f, -3.25f, 1e-30f, 12345.0f})
    EXPECT_NEAR(bfloat16_value(bfloat16_bits(v)), v, std::abs(v) * std::ldexp(1.0, -8));
}

TEST(Precision, Float16RoundsToNearestEvenWithSubnormalsAndOverflow) {
  EXPECT_EQ(float16_bits(1.0f), 0x3c00);
  EXPECT_EQ(float16_bits(-2.0f), 0xc000);
  EXPECT_EQ(float16_bits(65504.0f), 0x7bff);                          // the largest
  EXPECT_EQ(float16_bits(65519.0f), 0x7bff);                          // below the halfway point
  EXPECT_EQ(float16_bits(65520.0f), 0x7c00);                          // halfway, ties to even: infinity
  EXPECT_EQ(float16_bits(std::ldexp(1.0f, -24)), 0x0001);             // the smallest subnormal
  EXPECT_EQ(float16_bits(std::ldexp(1.0f, -25)), 0x0000);             // halfway to it: ties to even zero
  EXPECT_EQ(float16_bits(std::ldexp(3.0f, -25)), 0x0002);             // 1.5 units: to the even 2
  EXPECT_EQ(float16_bits(std::ldexp(1.0f, -14)), 0x0400);             // the smallest normal
  EXPECT_EQ(float16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie to even
  EXPECT_EQ(float16_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie to even, up
  EXPECT_EQ(float16_bits(std::nanf("")) & 0x7c00, 0x7c00);
  EXPECT_TRUE(std::isnan(float16_value(float16_bits(std::nanf("")))));
  EXPECT_TRUE(std::isinf(float16_value(0x7c00)));
  EXPECT_EQ(float16_value(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(float16_value(0x3555), 0.333251953125f);
  // Every float16 value survives a round trip through float32.
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float v = float16_value(static_cast<uint16_t>(bits));
    if (std::isnan(v)) continue;
    ASSERT_EQ(float16_bits(v), bits) << std::hex << bits;
  }
}

TEST(Precision, EncodeAndDecodeThroughStorageTypes) {
  const std::vector<float> values = {1.0f, -0.5f, 3.140625f, 0.0f};
  for (DType t : {DType::kFloat, DType::kFloat16, DType::kBFloat16}) {
    std::vector<uint8_t> bytes(values.size() * (t == DType::kFloat ? 4 : 2));
    encode_floats(values, t, bytes.data());
    std::vector<float> back(values.size());
    decode_floats(bytes.data(), t, back);
    EXPECT_EQ(back, values) << dtype_name(t);  // each value is exact in every type
  }
  std::vector<uint8_t> bytes(16);
  EXPECT_THROW(encode_floats(values, DType::kInt64, bytes.data()), std::invalid_argument);
}

ExecutionPlan plan_at(const Graph& g, Precision p) {
  PlanOptions o;
  o.precision = p;
  return make_execution_plan(g, o);
}

TEST(PrecisionPlan, HalfTypesHalveFloatSlotsAndWeightsButNotIntegers) {
  const Graph g = build_graph("relu(add(matmul(x, w), b))", parse_shape_map("x=64x256,w=256x512,b=512"));
  const ExecutionPlan fp32 = plan_at(g, Precision::kFp32);
  const ExecutionPlan bf16 = plan_at(g, Precision::kBf16);
  const ExecutionPlan tf32 = plan_at(g, Precision::kTf32);
  EXPECT_EQ(bf16.precision, Precision::kBf16);
  EXPECT_EQ(tf32.arena_bytes, fp32.arena_bytes);
  EXPECT_EQ(tf32.weight_bytes, fp32.weight_bytes);
  // The inputs x, w, b and the output, each 256-byte aligned, at 2 bytes instead of 4.
  EXPECT_EQ(fp32.unshared_bytes, (64 * 256 + 256 * 512 + 512 + 64 * 512) * 4);
  EXPECT_EQ(bf16.unshared_bytes, (64 * 256 + 256 * 512 + 512 + 64 * 512) * 2);
  EXPECT_EQ(bf16.arena_bytes * 2, fp32.arena_bytes);
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (const ValueSlot& s : bf16.slots[i]) {
      if (s.home == ValueSlot::Home::kNone) continue;
      EXPECT_EQ(s.storage, DType::kBFloat16);
      EXPECT_EQ(s.bytes % 2, 0);
    }
  const ExecutionPlan fp16 = plan_at(g, Precision::kFp16);
  EXPECT_EQ(fp16.slot(g.outputs()[0]).storage, DType::kFloat16);
  EXPECT_EQ(fp16.slot(g.outputs()[0]).bytes, 64 * 512 * 2);
}

TEST(PrecisionPlan, WeightsAreSizedByTheStorageType) {
  Graph g;
  const ValueRef x = g.add_input("x", Shape{4, 64}, DType::kFloat);
  const ValueRef w = g.add_constant(ConstantValue(Tensor<float>(Shape{64, 32})));
  g.add_output(g.add_op(op_def(OpKind::kMatmul), {}, {x, w})[0]);
  EXPECT_EQ(plan_at(g, Precision::kFp32).weight_bytes, 64 * 32 * 4);
  EXPECT_EQ(plan_at(g, Precision::kFp16).weight_bytes, 64 * 32 * 2);
  EXPECT_EQ(plan_at(g, Precision::kFp16).slot(w).storage, DType::kFloat16);
}

// A piece of a split along channels at an offset of 100 floats: 400 bytes
// (16-byte aligned) in float32, 200 in bfloat16 (not): a view at fp32,
// copied at bf16.
TEST(PrecisionPlan, ViewsNeedAlignmentInTheStorageType) {
  const Graph g =
      build_graph("(conv2d(split[axis=1, sizes=4x4](x).0, k), softmax[axis=1](split[axis=1, sizes=4x4](x).1))",
                  parse_shape_map("x=1x8x5x5,k=2x4x3x3"));
  const ValueRef second{g.node(g.outputs()[1].node).inputs[0]};  // softmax reads only plain values
  EXPECT_TRUE(plan_at(g, Precision::kFp32).slot(second).view);
  EXPECT_FALSE(plan_at(g, Precision::kBf16).slot(second).view);
  EXPECT_TRUE(plan_at(g, Precision::kTf32).slot(second).view);
}

TEST(PrecisionPlan, IntegerValuesKeepEightBytes) {
  DTypeMap types;
  const ShapeMap shapes = parse_shape_map("x=10x16,i=int64:4", &types);
  const Graph g = build_graph("gather[axis=0](x, i)", shapes, types);
  const ExecutionPlan bf16 = plan_at(g, Precision::kBf16);
  const ValueRef indices = g.node(g.outputs()[0].node).inputs[1];
  EXPECT_EQ(bf16.slot(indices).storage, DType::kInt64);
  EXPECT_EQ(bf16.slot(indices).bytes, 4 * 8);
  EXPECT_EQ(bf16.slot(g.outputs()[0]).bytes, 4 * 16 * 2);
}

TEST(PrecisionPlan, AsymmetricPaddingScratchIsSizedByTheStorageType) {
  const Graph g = build_graph("conv2d[pad=0x0x1x1](x, k)", parse_shape_map("x=1x8x7x7,k=4x8x3x3"));
  const ExecutionPlan fp32 = plan_at(g, Precision::kFp32);
  const ExecutionPlan fp16 = plan_at(g, Precision::kFp16);
  ASSERT_EQ(fp32.tasks.size(), 1u);
  EXPECT_EQ(fp32.tasks[0].scratch_bytes, 8 * 8 * 8 * 4);
  EXPECT_EQ(fp16.tasks[0].scratch_bytes, 8 * 8 * 8 * 2);
}

TEST(PrecisionSignature, HalfTypesNameTheStorageTypeAndTf32ItsMath) {
  const Graph g = build_graph("relu(add(conv2d(x, k), b))", parse_shape_map("x=1x8x7x5,k=4x8x3x3,b=1x4x1x1"));
  const ExecutionPlan plan = make_execution_plan(g);
  ASSERT_EQ(plan.tasks.size(), 1u);
  const std::string fp32 = step_signature(g, plan.tasks[0]);
  EXPECT_EQ(step_signature(g, plan.tasks[0], Precision::kFp32), fp32);
  EXPECT_EQ(step_signature(g, plan.tasks[0], Precision::kBf16),
            "step conv: conv2d(bfloat16:1x8x7x5,bfloat16:4x8x3x3) ; add(bfloat16:1x4x7x5,bfloat16:1x4x1x1)<0,- ; "
            "relu(bfloat16:1x4x7x5)<1");
  EXPECT_EQ(step_signature(g, plan.tasks[0], Precision::kFp16),
            "step conv: conv2d(float16:1x8x7x5,float16:4x8x3x3) ; add(float16:1x4x7x5,float16:1x4x1x1)<0,- ; "
            "relu(float16:1x4x7x5)<1");
  const std::string tf32 = step_signature(g, plan.tasks[0], Precision::kTf32);
  EXPECT_EQ(tf32, "step tf32 " + fp32.substr(kStepSignaturePrefix.size()));
  const ParsedStepSignature parsed = parse_step_signature(tf32);
  EXPECT_TRUE(parsed.tf32);
  EXPECT_EQ(parsed.kind, "conv");
  EXPECT_EQ(parsed.nodes.size(), 3u);
  EXPECT_FALSE(parse_step_signature(fp32).tf32);
}

TEST(PrecisionSignature, IntegerOperandsAndParametersAreUntouched) {
  DTypeMap types;
  const ShapeMap shapes = parse_shape_map("x=10x16,i=int64:4", &types);
  const Graph g = build_graph("gather[axis=1](x, i)", shapes, types);
  const ExecutionPlan plan = make_execution_plan(g);
  ASSERT_EQ(plan.tasks.size(), 1u);
  EXPECT_EQ(step_signature(g, plan.tasks[0], Precision::kBf16), "step node: gather[axis=1](bfloat16:10x16,int64:4)");
}

}  // namespace
}  // namespace tgr
