// The half-precision element types in the IR (ir/float_types.h): rounding,
// the interpreter's rounding at each operator's output, type inference and
// cast, the rules' type binding, costs and step signatures of half values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/float_types.h"
#include "ir/ops/op_helpers.h"
#include "ir/text.h"
#include "runtime/execution_plan.h"
#include "runtime/interpreter.h"
#include "runtime/step_signature.h"

namespace tgr {
namespace {

Graph typed_graph(const std::string& text, const std::string& shapes) {
  DTypeMap dtypes;
  const ShapeMap s = parse_shape_map(shapes, &dtypes);
  return build_graph(text, s, dtypes);
}

TEST(IrFloatTypes, Float16RoundsToNearestEven) {
  EXPECT_EQ(float16_bits(1.0f), 0x3c00);
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: the even one, 1.
  EXPECT_EQ(float16_value(float16_bits(1.0f + std::ldexp(1.0f, -11))), 1.0f);
  // 1 + 3 * 2^-11 lies halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
  EXPECT_EQ(float16_value(float16_bits(1.0f + 3 * std::ldexp(1.0f, -11))), 1.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(float16_value(float16_bits(65504.0f)), 65504.0f);      // the largest
  EXPECT_TRUE(std::isinf(float16_value(float16_bits(65520.0f))));  // halfway to 2^16 rounds up: overflow
  EXPECT_EQ(float16_value(float16_bits(std::ldexp(1.0f, -24))), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_TRUE(std::isnan(float16_value(float16_bits(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(IrFloatTypes, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(bfloat16_bits(1.0f), 0x3f80);
  EXPECT_EQ(bfloat16_value(bfloat16_bits(1.0f + std::ldexp(1.0f, -8))), 1.0f);  // tie to even
  EXPECT_EQ(bfloat16_value(bfloat16_bits(1.0f + 3 * std::ldexp(1.0f, -8))), 1.0f + std::ldexp(1.0f, -6));
  EXPECT_EQ(bfloat16_value(bfloat16_bits(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20))),
            1.0f + std::ldexp(1.0f, -7));  // above the tie: up
  EXPECT_TRUE(std::isinf(bfloat16_value(bfloat16_bits(std::numeric_limits<float>::max()))));
  EXPECT_TRUE(std::isnan(bfloat16_value(bfloat16_bits(std::numeric_limits<float>::quiet_NaN()))));
  // From double: rounded once (a double just above a bfloat16 tie goes up,
  // where rounding to float32 first would land on the tie and go to even).
  const double above_tie = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  EXPECT_EQ(round_to_dtype(DType::kBFloat16, above_tie), 1.0 + std::ldexp(1.0, -7));
  EXPECT_EQ(round_to_dtype(DType::kFloat, 0.1), 0.1);  // float32 values in float64 stay float64
}

TEST(IrFloatTypes, NamesPredicateAndSizes) {
  EXPECT_EQ(dtype_name(DType::kFloat16), "float16");
  EXPECT_EQ(dtype_name(DType::kBFloat16), "bfloat16");
  EXPECT_EQ(parse_dtype("bfloat16"), DType::kBFloat16);
  EXPECT_TRUE(is_floating(DType::kFloat) && is_floating(DType::kFloat16) && is_floating(DType::kBFloat16));
  EXPECT_FALSE(is_floating(DType::kInt64) || is_floating(DType::kBool));
  EXPECT_EQ(element_bytes(DType::kBFloat16), 2);
  EXPECT_THROW(parse_dtype("float64"), ShapeError);
}

// The reference semantics: each operator computes in float32 and rounds its
// half-typed output; the sum of two float16 values is rounded once.
TEST(IrFloatTypes, InterpreterRoundsEachOperatorsOutput) {
  const Graph g = typed_graph("mul(add(x, y), y)", "x=float16:2,y=float16:2");
  EXPECT_EQ(g.dtype(g.outputs()[0]), DType::kFloat16);
  Value<float> x(Tensor<float>({2}, {1.0f, 1024.0f})), y(Tensor<float>({2}, {std::ldexp(1.0f, -11), 0.5f}));
  x.dtype = y.dtype = DType::kFloat16;
  const std::vector<Value<float>> in{x, y};
  const Value<float> out = evaluate_values<float>(g, in).at(0);
  EXPECT_EQ(out.dtype, DType::kFloat16);
  // 1 + 2^-11 rounds to 1 (tie to even), times 2^-11; 1024.5 rounds to 1024 (spacing 1), times 0.5.
  EXPECT_EQ(out.real.data[0], std::ldexp(1.0f, -11));
  EXPECT_EQ(out.real.data[1], 512.0f);
  // In float64 too (the same rounding points), and not in the field (exact algebra).
  std::vector<Value<double>> in64;
  for (const auto& v : in) in64.push_back(constant_in_domain<double>(v));
  EXPECT_EQ(evaluate_values<double>(g, in64).at(0).real.data[1], 512.0);
}

TEST(IrFloatTypes, OperatorsKeepTheirInputsTypeAndMixingTakesACast) {
  EXPECT_EQ(typed_graph("relu(x)", "x=bfloat16:3").dtype(ValueRef{1, 0}), DType::kBFloat16);
  try {
    typed_graph("add(x, y)", "x=float16:3,y=bfloat16:3");
    FAIL() << "mixed float types were accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("one element type, got float16 and bfloat16"), std::string::npos) << e.what();
  }
  const Graph g = typed_graph("add(cast[to=float16](y), x)", "x=float16:3,y=bfloat16:3");
  EXPECT_EQ(g.dtype(g.outputs()[0]), DType::kFloat16);
  // A cast to bfloat16 rounds (to nearest even); one back to float32 is exact.
  const Graph c = typed_graph("cast[to=float](cast[to=bfloat16](x))", "x=3");
  const std::vector<Tensor<float>> out = evaluate<float>(
      c, std::vector<Tensor<float>>{Tensor<float>({3}, {1.0f + std::ldexp(1.0f, -8), 3.14159f, -0.0f})});
  EXPECT_EQ(out[0].data[0], 1.0f);
  EXPECT_EQ(out[0].data[1], 3.140625f);
  EXPECT_EQ(c.dtype(c.outputs()[0]), DType::kFloat);
}

TEST(IrFloatTypes, RuleVariablesBindOneFloatTypePerMatch) {
  RuleTypeBinding b;
  EXPECT_TRUE(b.bind(DType::kFloat, DType::kFloat16));
  EXPECT_TRUE(b.bind(DType::kFloat, DType::kFloat16));
  EXPECT_FALSE(b.bind(DType::kFloat, DType::kBFloat16));  // would mix types across the rule's variables
  EXPECT_FALSE(b.bind(DType::kFloat, DType::kInt64));
  EXPECT_TRUE(b.bind(DType::kInt64, DType::kInt64));  // typed variables match their type only
  EXPECT_FALSE(b.bind(DType::kInt64, DType::kFloat16));
  b.unbind(DType::kFloat);
  b.unbind(DType::kFloat);
  EXPECT_TRUE(b.bind(DType::kFloat, DType::kBFloat16));  // all unbound: free again
}

TEST(IrFloatTypes, HalfValuesMoveHalfTheBytesAndFloat32CostsAreUnchanged) {
  const OpDef& relu = OpTable::instance().get("relu");
  const Params p = relu.make_params();
  const std::vector<Shape> s{{4, 8}};
  const std::vector<DType> f32{DType::kFloat}, f16{DType::kFloat16};
  EXPECT_EQ(relu.cost.bytes(OpCall{relu, p, s, f32, s}), 4.0 * 64);
  EXPECT_EQ(relu.cost.bytes(OpCall{relu, p, s, f16, s}), 2.0 * 64);
  const OpDef& cast = OpTable::instance().get("cast");
  const Params to_half = cast.make_params({{"to", std::string("bfloat16")}});
  EXPECT_EQ(cast.cost.bytes(OpCall{cast, to_half, s, f32, s}), 6.0 * 32);
}

TEST(IrFloatTypes, StepSignaturesNameHalfTypesAndKeepFloat32Ones) {
  const Graph half = typed_graph("relu(add(x, y))", "x=float16:2x3,y=float16:2x3");
  const Graph single = typed_graph("relu(add(x, y))", "x=2x3,y=2x3");
  const ExecutionPlan hp = make_execution_plan(half), sp = make_execution_plan(single);
  ASSERT_EQ(hp.tasks.size(), 1u);
  ASSERT_EQ(sp.tasks.size(), 1u);
  EXPECT_EQ(step_signature(single, sp.tasks[0]), "step elementwise: add(float:2x3,float:2x3) ; relu(float:2x3)<0");
  EXPECT_EQ(step_signature(half, hp.tasks[0]), "step elementwise: add(float16:2x3,float16:2x3) ; relu(float16:2x3)<0");
}

}  // namespace
}  // namespace tgr
