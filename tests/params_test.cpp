#include <gtest/gtest.h>

#include "ir/op_def.h"
#include "test_util.h"

namespace tgr {
namespace {

using test::expect_error;
using Ints = std::vector<int64_t>;

TEST(Params, DefaultsAreFilledInDeclarationOrder) {
  const OpDef& conv = OpTable::instance().get("conv2d");
  const Params p = conv.make_params({{"act", std::string("relu")}});
  ASSERT_EQ(p.entries().size(), 4u);
  EXPECT_EQ(p.entries()[0].first, "stride");
  EXPECT_EQ(p.get_ints("stride"), (Ints{1, 1}));
  EXPECT_EQ(p.get_word("pad"), "same");
  EXPECT_EQ(p.get_ints("dilation"), (Ints{1, 1}));
  EXPECT_EQ(p.get_word("act"), "relu");
}

TEST(Params, BadParametersAreRejectedWithTheirName) {
  const OpDef& conv = OpTable::instance().get("conv2d");
  expect_error<ParamError>([&] { conv.make_params({{"strides", Ints{1, 1}}}); }, "unknown parameter 'strides'");
  expect_error<ParamError>([&] { conv.make_params({{"stride", Ints{0, 1}}}); }, "'stride' = 0x1");
  expect_error<ParamError>([&] { conv.make_params({{"stride", Ints{1, 1, 1}}}); }, "exactly 2 integers");
  expect_error<ParamError>([&] { conv.make_params({{"act", std::string("gelu")}}); }, "one of none|relu");
  expect_error<ParamError>([&] { conv.make_params({{"pad", std::string("full")}}); }, "same, valid or TxLxBxR");
  expect_error<ParamError>([&] { conv.make_params({{"pad", Ints{1, 1}}}); }, "needs 4 integers");
  expect_error<ParamError>([&] { conv.make_params({{"pad", Ints{1, -1, 1, 1}}}); }, ">= 0");
  const OpDef& concat = OpTable::instance().get("concat");
  expect_error<ParamError>([&] { concat.make_params({}); }, "missing required parameter 'axis'");
  expect_error<ParamError>([&] { concat.make_params({{"axis", Ints{1}}}); }, "expected one integer");
}

TEST(Params, TextValuesParseByKind) {
  const OpDef& conv = OpTable::instance().get("conv2d");
  EXPECT_EQ(parse_param_value(*conv.find_param("stride"), "2x1"), ParamValue(Ints{2, 1}));
  EXPECT_EQ(parse_param_value(*conv.find_param("pad"), "valid"), ParamValue(std::string("valid")));
  EXPECT_EQ(parse_param_value(*conv.find_param("pad"), "0x1x2x3"), ParamValue(Ints{0, 1, 2, 3}));
  EXPECT_EQ(param_value_to_string(Ints{3, 3}), "3x3");
  expect_error<ParamError>([&] { parse_param_value(*conv.find_param("stride"), "2y1"); }, "not a list");
}

TEST(OpTable, EveryEntryIsComplete) {
  const auto ops = OpTable::instance().all();
  EXPECT_GE(ops.size(), 20u);
  for (const char* name : {"matmul", "batch_matmul", "conv2d", "add", "mul", "scalar_mul", "relu", "sigmoid", "tanh",
                           "transpose", "concat", "split", "avgpool", "maxpool", "reshape", "enlarge", "eye",
                           "conv_identity", "pool_kernel", "ones"})
    EXPECT_NE(OpTable::instance().find(name), nullptr) << name;
  for (const OpDef* op : ops) {
    const bool plain = op->kernels.f32 && op->kernels.f64 && op->kernels.field;
    const bool mixed = op->mixed_kernels.f32 && op->mixed_kernels.f64 && op->mixed_kernels.field;
    EXPECT_TRUE(plain != mixed) << op->name << ": one complete kernel set";
    EXPECT_TRUE(!mixed || op->infer_dtypes) << op->name << ": mixed kernels need an element-type rule";
    EXPECT_EQ(op->multilinear.size(), op->inputs.size()) << op->name;
  }
  expect_error<std::out_of_range>([] { OpTable::instance().get("conv3d"); }, "unknown operator 'conv3d'");
}

TEST(OpTable, LinearityDependsOnFusedActivation) {
  const OpDef& conv = OpTable::instance().get("conv2d");
  EXPECT_TRUE(conv.is_multilinear_in(conv.make_params(), 0));
  EXPECT_FALSE(conv.is_multilinear_in(conv.make_params({{"act", std::string("relu")}}), 0));
  const OpDef& relu = OpTable::instance().get("relu");
  EXPECT_FALSE(relu.is_multilinear_in(relu.make_params(), 0));
}

}  // namespace
}  // namespace tgr

namespace tgr {
namespace {

TEST(Params, FloatValuesPrintInTheirShortestExactForm) {
  ParamSpec alpha{.name = "alpha", .kind = ParamKind::kFloat, .min_float = 0, .max_float = 1};
  EXPECT_EQ(parse_param_value(alpha, "0.01"), ParamValue(0.01));
  EXPECT_EQ(parse_param_value(alpha, "1"), ParamValue(1.0));
  EXPECT_EQ(param_value_to_string(ParamValue(0.01)), "0.01");
  EXPECT_EQ(param_value_to_string(ParamValue(1e-5)), "1e-05");
  EXPECT_EQ(param_value_to_string(ParamValue(static_cast<double>(0.1f))), "0.10000000149011612");
  test::expect_error<ParamError>([&] { check_param_value("op", alpha, ParamValue(2.0)); }, "must be in [0, 1]");
  test::expect_error<ParamError>([&] { parse_param_value(alpha, "abc"); }, "is not a number");
}

}  // namespace
}  // namespace tgr
