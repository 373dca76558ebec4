#include <gtest/gtest.h>

#include <limits>

#include "ir/op_def.h"
#include "test_util.h"

namespace tgr {
namespace {

using test::expect_error;
using Ints = std::vector<int64_t>;
using Given = std::vector<std::pair<std::string, ParamValue>>;

std::vector<Shape> infer(const std::string& op_name, std::vector<Shape> inputs, Given params = {}) {
  const OpDef& op = OpTable::instance().get(op_name);
  return op.output_shapes(op.make_params(std::move(params)), inputs);
}

Shape infer1(const std::string& op_name, std::vector<Shape> inputs, Given params = {}) {
  return infer(op_name, std::move(inputs), std::move(params)).at(0);
}

TEST(ShapeInference, Matmul) {
  EXPECT_EQ(infer1("matmul", {{2, 3}, {3, 5}}), (Shape{2, 5}));
  EXPECT_EQ(infer1("batch_matmul", {{4, 2, 3}, {4, 3, 5}}), (Shape{4, 2, 5}));
  expect_error<ShapeError>([] { infer("matmul", {{2, 3}, {4, 5}}); }, "matmul: inner dimensions differ (2x3 times 4x5)");
  expect_error<ShapeError>([] { infer("matmul", {{2, 3, 1}, {3, 5}}); }, "inputs must be 2-D");
  expect_error<ShapeError>([] { infer("batch_matmul", {{4, 2, 3}, {2, 3, 5}}); }, "batch sizes differ (4 vs 2)");
  expect_error<ShapeError>([] { infer("matmul", {{2, 3}}); }, "expected 2 input(s), got 1");
}

TEST(ShapeInference, Conv2dPaddingStrideDilation) {
  // same: out = ceil(in / stride)
  EXPECT_EQ(infer1("conv2d", {{1, 3, 8, 8}, {4, 3, 3, 3}}), (Shape{1, 4, 8, 8}));
  EXPECT_EQ(infer1("conv2d", {{1, 3, 7, 7}, {4, 3, 3, 3}}, {{"stride", Ints{2, 2}}}), (Shape{1, 4, 4, 4}));
  EXPECT_EQ(infer1("conv2d", {{1, 3, 8, 9}, {4, 3, 1, 3}}, {{"pad", std::string("same")}}), (Shape{1, 4, 8, 9}));
  // valid: out = in - k + 1
  EXPECT_EQ(infer1("conv2d", {{2, 3, 8, 8}, {4, 3, 3, 3}}, {{"pad", std::string("valid")}}), (Shape{2, 4, 6, 6}));
  // explicit top x left x bottom x right
  EXPECT_EQ(infer1("conv2d", {{1, 3, 8, 8}, {4, 3, 3, 3}}, {{"pad", Ints{1, 0, 2, 0}}}), (Shape{1, 4, 9, 6}));
  // dilation 2 makes a 3x3 kernel cover 5x5
  EXPECT_EQ(infer1("conv2d", {{1, 3, 8, 8}, {4, 3, 3, 3}}, {{"pad", std::string("valid")}, {"dilation", Ints{2, 2}}}),
            (Shape{1, 4, 4, 4}));
  // ResNet's stem: 7x7 stride 2 pad 3
  EXPECT_EQ(infer1("conv2d", {{1, 3, 224, 224}, {64, 3, 7, 7}}, {{"stride", Ints{2, 2}}, {"pad", Ints{3, 3, 3, 3}}}),
            (Shape{1, 64, 112, 112}));
}

TEST(ShapeInference, Conv2dGroupsComeFromTheShapes) {
  EXPECT_EQ(infer1("conv2d", {{1, 8, 5, 5}, {16, 2, 3, 3}}), (Shape{1, 16, 5, 5}));  // 4 groups
  EXPECT_EQ(infer1("conv2d", {{1, 8, 5, 5}, {8, 1, 3, 3}}), (Shape{1, 8, 5, 5}));    // depthwise
  expect_error<ShapeError>([] { infer("conv2d", {{1, 8, 5, 5}, {16, 3, 3, 3}}); }, "not a multiple");
  expect_error<ShapeError>([] { infer("conv2d", {{1, 8, 5, 5}, {6, 2, 3, 3}}); }, "not divisible by the 4 groups");
  expect_error<ShapeError>([] { infer("conv2d", {{3, 8, 8}, {4, 3, 3, 3}}); }, "input must be 4-D");
  expect_error<ShapeError>([] { infer("conv2d", {{1, 3, 2, 2}, {4, 3, 3, 3}}, {{"pad", std::string("valid")}}); },
                           "does not fit");
}

TEST(ShapeInference, Pooling) {
  EXPECT_EQ(infer1("maxpool", {{1, 2, 8, 8}}, {{"kernel", Ints{3, 3}}}), (Shape{1, 2, 8, 8}));
  EXPECT_EQ(infer1("avgpool", {{1, 2, 8, 8}}, {{"kernel", Ints{2, 2}}, {"stride", Ints{2, 2}}, {"pad", std::string("valid")}}),
            (Shape{1, 2, 4, 4}));
  EXPECT_EQ(infer1("maxpool", {{1, 64, 112, 112}}, {{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"pad", Ints{1, 1, 1, 1}}}),
            (Shape{1, 64, 56, 56}));
  expect_error<ShapeError>([] { infer("maxpool", {{1, 2, 8, 8}}, {{"kernel", Ints{2, 2}}, {"pad", Ints{2, 0, 0, 0}}}); },
                           "padding must be smaller");
  expect_error<ParamError>([] { infer("maxpool", {{1, 2, 8, 8}}); }, "missing required parameter 'kernel'");
}

TEST(ShapeInference, Elementwise) {
  EXPECT_EQ(infer1("add", {{2, 3}, {2, 3}}), (Shape{2, 3}));
  EXPECT_EQ(infer1("add", {{2, 3}, {3}}), (Shape{2, 3}));
  EXPECT_EQ(infer1("mul", {{4, 1, 3}, {2, 1}}), (Shape{4, 2, 3}));
  EXPECT_EQ(infer1("scalar_mul", {{2, 3}, {}}), (Shape{2, 3}));
  expect_error<ShapeError>([] { infer("add", {{2, 3}, {2, 4}}); }, "do not broadcast (axis 1: 3 vs 4)");
  expect_error<ShapeError>([] { infer("scalar_mul", {{2, 3}, {1}}); }, "s must be a scalar");
  EXPECT_EQ(infer1("relu", {{2, 3, 4}}), (Shape{2, 3, 4}));
}

TEST(ShapeInference, Layout) {
  EXPECT_EQ(infer1("transpose", {{2, 3}}), (Shape{3, 2}));
  EXPECT_EQ(infer1("transpose", {{2, 3, 4}}), (Shape{4, 3, 2}));
  EXPECT_EQ(infer1("transpose", {{2, 3, 4}}, {{"perm", Ints{0, 2, 1}}}), (Shape{2, 4, 3}));
  expect_error<ShapeError>([] { infer("transpose", {{2, 3, 4}}, {{"perm", Ints{0, 0, 1}}}); }, "not a permutation");
  EXPECT_EQ(infer1("concat", {{2, 3}, {2, 5}, {2, 1}}, {{"axis", int64_t{1}}}), (Shape{2, 9}));
  expect_error<ShapeError>([] { infer("concat", {{2, 3}, {3, 3}}, {{"axis", int64_t{1}}}); }, "outside axis 1");
  expect_error<ShapeError>([] { infer("concat", {{2, 3}, {2, 3}}, {{"axis", int64_t{2}}}); }, "axis 2 out of range");
  EXPECT_EQ(infer("split", {{2, 6}}, {{"axis", int64_t{1}}, {"sizes", Ints{1, 2, 3}}}),
            (std::vector<Shape>{{2, 1}, {2, 2}, {2, 3}}));
  expect_error<ShapeError>([] { infer("split", {{2, 6}}, {{"axis", int64_t{1}}, {"sizes", Ints{1, 2}}}); },
                           "add up to 3, but axis 1 of 2x6 has 6");
  expect_error<ShapeError>(
      [] {
        infer("split", {{2, 6}}, {{"axis", int64_t{1}}, {"sizes", Ints{4, 4}}});
      },
      "add up to more than 6");
  // Sizes beyond the axis (from a fuzzed ONNX Split: near 2^62, whose sum overflowed).
  expect_error<ShapeError>(
      [] {
        infer("split", {{2, 6}}, {{"axis", int64_t{1}}, {"sizes", Ints{7160574348236906242, 4193133941175448417}}});
      },
      "size 7160574348236906242 of 7160574348236906242x4193133941175448417 is larger than axis 1 of 2x6 (6)");
  EXPECT_EQ(infer1("reshape", {{2, 6}}, {{"shape", Ints{3, 4}}}), (Shape{3, 4}));
  expect_error<ShapeError>([] { infer("reshape", {{2, 6}}, {{"shape", Ints{5, 2}}}); }, "cannot reshape 2x6 (12 elements)");
  EXPECT_EQ(infer1("enlarge", {{4, 3, 1, 3}}, {{"size", Ints{3, 3}}}), (Shape{4, 3, 3, 3}));
  expect_error<ShapeError>([] { infer("enlarge", {{4, 3, 1, 1}}, {{"size", Ints{2, 2}}}); }, "even amount");
  expect_error<ShapeError>([] { infer("enlarge", {{4, 3, 3, 3}}, {{"size", Ints{1, 1}}}); }, "even amount");
}

TEST(ShapeInference, Constants) {
  EXPECT_EQ(infer1("eye", {}, {{"n", int64_t{4}}}), (Shape{4, 4}));
  EXPECT_EQ(infer1("conv_identity", {}, {{"channels", int64_t{8}}, {"kernel", Ints{3, 3}}}), (Shape{8, 8, 3, 3}));
  EXPECT_EQ(infer1("pool_kernel", {}, {{"channels", int64_t{8}}, {"kernel", Ints{3, 3}}}), (Shape{8, 1, 3, 3}));
  EXPECT_EQ(infer1("ones", {}, {{"shape", Ints{2, 5}}}), (Shape{2, 5}));
  expect_error<ShapeError>([] { infer("conv_identity", {}, {{"channels", int64_t{2}}, {"kernel", Ints{2, 2}}}); },
                           "has no centre");
}


// Inference with element types (int64 indices, bool masks).
OpDef::Inferred infer_typed(const std::string& op_name, std::vector<Shape> shapes, std::vector<DType> dtypes,
                            Given params = {}) {
  const OpDef& op = OpTable::instance().get(op_name);
  return op.infer(op.make_params(std::move(params)), shapes, dtypes);
}

constexpr DType kF = DType::kFloat, kI = DType::kInt64, kB = DType::kBool;

TEST(ShapeInference, ArithmeticAndUnaryOperators) {
  EXPECT_EQ(infer1("sub", {{2, 3}, {3}}), (Shape{2, 3}));
  EXPECT_EQ(infer1("div", {{4, 1, 3}, {2, 1}}), (Shape{4, 2, 3}));
  EXPECT_EQ(infer1("pow", {{2, 3}, {}}), (Shape{2, 3}));
  expect_error<ShapeError>([] { infer("sub", {{2, 3}, {2}}); }, "sub: shapes 2x3 and 2 do not broadcast (axis 1: 3 vs 2)");
  expect_error<ShapeError>([] { infer("div", {{4}, {3}}); }, "div: shapes 4 and 3 do not broadcast");
  for (const char* op : {"neg", "abs", "sqrt", "exp", "log", "erf", "leaky_relu", "hard_sigmoid", "hard_swish", "clip"})
    EXPECT_EQ(infer1(op, {{2, 3, 4}}), (Shape{2, 3, 4})) << op;
  // int64 where an int64 kernel exists; the type follows the inputs.
  EXPECT_EQ(infer_typed("div", {{2}, {2}}, {kI, kI}).dtypes, (std::vector<DType>{kI}));
  EXPECT_EQ(infer_typed("neg", {{2}}, {kI}).dtypes, (std::vector<DType>{kI}));
  expect_error<ShapeError>([] { infer_typed("add", {{2}, {2}}, {kF, kI}); },
                           "add: inputs must have one element type, got float and int64");
}

TEST(ShapeInference, FloatOnlyOperatorsRejectIntegers) {
  expect_error<ShapeError>([] { infer_typed("relu", {{2}}, {kI}); }, "relu: defined on float values only, got int64");
  expect_error<ShapeError>([] { infer_typed("pow", {{2}, {2}}, {kI, kI}); }, "pow: defined on float values only");
  expect_error<ShapeError>([] { infer_typed("sqrt", {{2}}, {kI}); }, "sqrt: defined on float values only");
  expect_error<ShapeError>([] { infer_typed("reduce_mean", {{2}}, {kI}, {{"axes", Ints{0}}}); },
                           "reduce_mean: defined on float values only, got int64");
  expect_error<ShapeError>([] { infer_typed("softmax", {{2}}, {kI}, {{"axis", int64_t{0}}}); },
                           "softmax: defined on float values only");
  expect_error<ShapeError>([] { infer_typed("matmul", {{2, 2}, {2, 2}}, {kB, kB}); }, "matmul: defined on float values only, got bool");
  // Through the text form, the error points at the operator.
  expect_error<ParseError>([] { build_graph("relu(x)", {{"x", {2}}}, {{"x", kI}}); }, "relu: defined on float values only");
}

TEST(ShapeInference, Comparisons) {
  for (const char* op : {"equal", "less", "greater", "less_equal", "greater_equal"}) {
    const auto r = infer_typed(op, {{2, 1}, {3}}, {kF, kF});
    EXPECT_EQ(r.shapes.at(0), (Shape{2, 3})) << op;
    EXPECT_EQ(r.dtypes.at(0), kB) << op;
    EXPECT_EQ(infer_typed(op, {{3}, {}}, {kI, kI}).dtypes.at(0), kB) << op;
  }
  EXPECT_EQ(infer_typed("equal", {{2}, {2}}, {kB, kB}).dtypes.at(0), kB);
  expect_error<ShapeError>([] { infer_typed("less", {{2}, {2}}, {kB, kB}); }, "less: bool values have no order");
  expect_error<ShapeError>([] { infer_typed("greater_equal", {{2}, {2}}, {kB, kB}); }, "greater_equal: bool values have no order");
  expect_error<ShapeError>([] { infer_typed("less", {{2}, {2}}, {kF, kI}); },
                           "less: both inputs must have one element type, got float and int64");
  expect_error<ShapeError>([] { infer_typed("equal", {{2}, {3}}, {kF, kF}); }, "equal: shapes 2 and 3 do not broadcast");
}

TEST(ShapeInference, LogicAndCast) {
  EXPECT_EQ(infer_typed("is_nan", {{2, 3}}, {kF}).dtypes.at(0), kB);
  expect_error<ShapeError>([] { infer_typed("is_nan", {{2}}, {kI}); }, "is_nan: defined on float values, got int64");
  EXPECT_EQ(infer_typed("logical_not", {{2}}, {kB}).dtypes.at(0), kB);
  expect_error<ShapeError>([] { infer_typed("logical_not", {{2}}, {kF}); }, "logical_not: defined on bool values, got float");
  expect_error<ShapeError>([] { infer_typed("logical_not", {{2}}, {kI}); }, "logical_not: defined on bool values, got int64");
  EXPECT_EQ(infer_typed("cast", {{2, 3}}, {kF}, {{"to", std::string("int64")}}).dtypes.at(0), kI);
  EXPECT_EQ(infer_typed("cast", {{2, 3}}, {kI}, {{"to", std::string("bool")}}).dtypes.at(0), kB);
  const auto to_float = infer_typed("cast", {{2, 3}}, {kB});  // default: to float
  EXPECT_EQ(to_float.dtypes.at(0), kF);
  EXPECT_EQ(to_float.shapes.at(0), (Shape{2, 3}));
  expect_error<ParamError>([] { infer_typed("cast", {{2}}, {kF}, {{"to", std::string("int32")}}); },
                           "cast: parameter 'to' = int32: expected one of float|int64|bool");
  expect_error<ParamError>([] { infer_typed("cast", {{2}}, {kF}, {{"to", int64_t{1}}}); }, "cast: parameter 'to'");
  expect_error<ParseError>([] { build_graph("cast[to=double](x)", {{"x", {2}}}); }, "expected one of float|int64|bool");
}

TEST(ShapeInference, Where) {
  const auto r = infer_typed("where", {{1, 3}, {2, 1}, {}}, {kB, kF, kF});
  EXPECT_EQ(r.shapes.at(0), (Shape{2, 3}));
  EXPECT_EQ(r.dtypes.at(0), kF);
  EXPECT_EQ(infer_typed("where", {{4, 1, 1}, {3}, {2, 1}}, {kB, kI, kI}).shapes.at(0), (Shape{4, 2, 3}));
  EXPECT_EQ(infer_typed("where", {{2}, {2}, {2}}, {kB, kI, kI}).dtypes.at(0), kI);
  expect_error<ShapeError>([] { infer_typed("where", {{2}, {2}, {2}}, {kF, kF, kF}); }, "where: cond must be bool, got float");
  expect_error<ShapeError>([] { infer_typed("where", {{2}, {2}, {2}}, {kI, kF, kF}); }, "where: cond must be bool, got int64");
  expect_error<ShapeError>([] { infer_typed("where", {{2}, {2}, {2}}, {kB, kF, kI}); },
                           "where: x and y must have one element type, got float and int64");
  expect_error<ShapeError>([] { infer_typed("where", {{2}, {3}, {3}}, {kB, kF, kF}); }, "where: shapes 2 and 3 do not broadcast");
  expect_error<ShapeError>([] { infer_typed("where", {{3}, {2}, {3}}, {kB, kF, kF}); }, "where: shapes 2 and 3 do not broadcast");
}

TEST(ShapeInference, SoftmaxAndNorms) {
  EXPECT_EQ(infer1("softmax", {{2, 3}}, {{"axis", int64_t{1}}}), (Shape{2, 3}));
  expect_error<ShapeError>([] { infer("softmax", {{2, 3}}, {{"axis", int64_t{2}}}); }, "softmax: axis 2 out of range for 2x3");
  expect_error<ParamError>([] { infer("softmax", {{2, 3}}); }, "softmax: missing required parameter 'axis'");

  EXPECT_EQ(infer1("layer_norm", {{2, 3, 4}, {3, 4}, {3, 4}}, {{"axis", int64_t{1}}}), (Shape{2, 3, 4}));
  EXPECT_EQ(infer1("layer_norm", {{2, 3, 4}, {4}, {4}}, {{"axis", int64_t{2}}}), (Shape{2, 3, 4}));
  expect_error<ShapeError>([] { infer("layer_norm", {{2, 4}, {3}, {4}}, {{"axis", int64_t{1}}}); },
                           "layer_norm: scale has shape 3, expected 4 (the axes from 1 on)");
  expect_error<ShapeError>([] { infer("layer_norm", {{2, 3, 4}, {3, 4}, {4}}, {{"axis", int64_t{1}}}); },
                           "layer_norm: bias has shape 4, expected 3x4 (the axes from 1 on)");
  expect_error<ShapeError>([] { infer("layer_norm", {{2, 4}, {4}, {4}}, {{"axis", int64_t{2}}}); },
                           "layer_norm: axis 2 out of range for 2x4");
  expect_error<ParamError>([] { infer("layer_norm", {{2, 4}, {4}, {4}}, {{"axis", int64_t{1}}, {"epsilon", -1.0}}); },
                           "layer_norm: parameter 'epsilon' = -1");

  EXPECT_EQ(infer1("batch_norm", {{2, 3, 4, 4}, {3}, {3}, {3}, {3}}), (Shape{2, 3, 4, 4}));
  EXPECT_EQ(infer1("batch_norm", {{2, 3}, {3}, {3}, {3}, {3}}), (Shape{2, 3}));
  expect_error<ShapeError>([] { infer("batch_norm", {{1, 2, 4, 4}, {2}, {2}, {3}, {2}}); },
                           "batch_norm: mean has shape 3, expected 2 (one per channel)");
  expect_error<ShapeError>([] { infer("batch_norm", {{1, 2, 4, 4}, {2, 1}, {2}, {2}, {2}}); }, "batch_norm: scale has shape 2x1");
  expect_error<ShapeError>([] { infer("batch_norm", {{1, 2, 4, 4}, {2}, {2}, {2}, {}}); }, "batch_norm: var has shape scalar");
  expect_error<ShapeError>([] { infer("batch_norm", {{5}, {5}, {5}, {5}, {5}}); },
                           "batch_norm: input must have a channel axis (N x C x ...), got 5");
  expect_error<ShapeError>([] { infer("batch_norm", {{1, 2}, {2}, {2}, {2}}); }, "batch_norm: expected 5 input(s), got 4");
}

TEST(ShapeInference, Reductions) {
  EXPECT_EQ(infer1("reduce_sum", {{2, 3, 4}}, {{"axes", Ints{1}}}), (Shape{2, 1, 4}));
  EXPECT_EQ(infer1("reduce_sum", {{2, 3, 4}}, {{"axes", Ints{0, 2}}, {"keepdims", int64_t{0}}}), (Shape{3}));
  EXPECT_EQ(infer1("reduce_mean", {{2, 3}}, {{"axes", Ints{0, 1}}, {"keepdims", int64_t{0}}}), (Shape{}));
  EXPECT_EQ(infer_typed("reduce_sum", {{2, 3}}, {kI}, {{"axes", Ints{1}}}).dtypes.at(0), kI);
  expect_error<ShapeError>([] { infer("reduce_sum", {{2, 3}}, {{"axes", Ints{1, 0}}}); }, "reduce_sum: axes 1x0 must be increasing");
  expect_error<ShapeError>([] { infer("reduce_mean", {{2, 3}}, {{"axes", Ints{1, 1}}}); }, "reduce_mean: axes 1x1 must be increasing");
  expect_error<ShapeError>([] { infer("reduce_sum", {{2, 3}}, {{"axes", Ints{2}}}); }, "reduce_sum: axis 2 out of range for 2x3");
  expect_error<ParamError>([] { infer("reduce_sum", {{2, 3}}, {{"axes", Ints{-1}}}); }, "reduce_sum: parameter 'axes' = -1");
  expect_error<ParamError>([] { infer("reduce_sum", {{2, 3}}, {{"axes", Ints{0}}, {"keepdims", int64_t{2}}}); },
                           "parameter 'keepdims' = 2");
  expect_error<ParamError>([] { infer("reduce_sum", {{2, 3}}); }, "missing required parameter 'axes'");
}

TEST(ShapeInference, Slice) {
  EXPECT_EQ(infer1("slice", {{3, 4}}, {{"starts", Ints{1, 1}}, {"ends", Ints{3, 3}}}), (Shape{2, 2}));
  EXPECT_EQ(infer1("slice", {{5, 4}}, {{"starts", Ints{0, 0}}, {"ends", Ints{5, 4}}, {"steps", Ints{2, 3}}}), (Shape{3, 2}));
  EXPECT_EQ(infer1("slice", {{4}}, {{"starts", Ints{3}}, {"ends", Ints{-1}}, {"steps", Ints{-1}}}), (Shape{4}));
  EXPECT_EQ(infer1("slice", {{5}}, {{"starts", Ints{4}}, {"ends", Ints{-1}}, {"steps", Ints{-2}}}), (Shape{3}));
  EXPECT_EQ(infer1("slice", {{4}}, {{"starts", Ints{2}}, {"ends", Ints{2}}}), (Shape{0}));
  expect_error<ShapeError>([] { infer("slice", {{4}}, {{"starts", Ints{5}}, {"ends", Ints{5}}}); },
                           "slice: axis 0 of size 4: start 5, end 5, step 1 is not a normalised range");
  expect_error<ShapeError>([] { infer("slice", {{4}}, {{"starts", Ints{3}}, {"ends", Ints{2}}}); },
                           "slice: axis 0 of size 4: start 3, end 2, step 1");
  expect_error<ShapeError>([] { infer("slice", {{2, 4}}, {{"starts", Ints{0, 0}}, {"ends", Ints{2, 5}}}); },
                           "slice: axis 1 of size 4: start 0, end 5, step 1");
  expect_error<ShapeError>([] { infer("slice", {{4}}, {{"starts", Ints{0}}, {"ends", Ints{-1}}}); }, "end -1, step 1");
  expect_error<ShapeError>([] { infer("slice", {{4}}, {{"starts", Ints{4}}, {"ends", Ints{-1}}, {"steps", Ints{-1}}}); },
                           "start 4, end -1, step -1");
  expect_error<ShapeError>([] { infer("slice", {{4}}, {{"starts", Ints{0}}, {"ends", Ints{4}}, {"steps", Ints{0}}}); },
                           "step 0 is not a normalised range");
  expect_error<ShapeError>([] { infer("slice", {{2, 3}}, {{"starts", Ints{0}}, {"ends", Ints{1}}}); },
                           "slice: starts, ends and steps need one entry per axis of 2x3");
  expect_error<ShapeError>([] { infer("slice", {{2, 3}}, {{"starts", Ints{0, 0}}, {"ends", Ints{1, 1}}, {"steps", Ints{1}}}); },
                           "need one entry per axis");
  expect_error<ParamError>([] { infer("slice", {{4}}, {{"starts", Ints{0}}, {"ends", Ints{-2}}}); }, "slice: parameter 'ends' = -2");
}

TEST(ShapeInference, ExpandAndPad) {
  EXPECT_EQ(infer1("expand", {{3, 1}}, {{"shape", Ints{2, 3, 4}}}), (Shape{2, 3, 4}));
  EXPECT_EQ(infer1("expand", {{}}, {{"shape", Ints{2}}}), (Shape{2}));
  // A dimension that is neither equal nor 1 fails in the broadcast itself ...
  expect_error<ShapeError>([] { infer("expand", {{2, 3}}, {{"shape", Ints{4, 3}}}); },
                           "expand: shapes 2x3 and 4x3 do not broadcast (axis 0: 2 vs 4)");
  // ... a broadcast that is not the target shape fails afterwards.
  expect_error<ShapeError>([] { infer("expand", {{3, 1}}, {{"shape", Ints{1, 3}}}); }, "expand: 3x1 does not broadcast to 1x3");
  expect_error<ShapeError>([] { infer("expand", {{2, 3}}, {{"shape", Ints{3}}}); }, "expand: 2x3 does not broadcast to 3");

  EXPECT_EQ(infer1("pad", {{2, 3}}, {{"pads", Ints{1, 0, 2, 3}}}), (Shape{5, 6}));
  EXPECT_EQ(infer_typed("pad", {{2}}, {kI}, {{"pads", Ints{1, 1}}}).dtypes.at(0), kI);
  expect_error<ShapeError>([] { infer("pad", {{2, 3}}, {{"pads", Ints{1, 1}}}); },
                           "pad: pads needs 4 entries (all begins, then all ends) for 2x3, got 2");
  expect_error<ParamError>([] { infer("pad", {{2}}, {{"pads", Ints{-1, 0}}}); }, "pad: parameter 'pads' = -1x0");
  // A model's pads whose sum passes int64 (found by fuzz_onnx_import).
  expect_error<ShapeError>(
      [] {
        infer("pad", {{2}}, {{"pads", Ints{INT64_MAX, 1}}});
      },
      "pad: pads 9223372036854775807 and 1 on axis 0 of 2 give no valid size");
}

TEST(ShapeInference, Gather) {
  const auto g = infer_typed("gather", {{4, 2}, {2, 3}}, {kF, kI});
  EXPECT_EQ(g.shapes.at(0), (Shape{2, 3, 2}));
  EXPECT_EQ(g.dtypes.at(0), kF);
  EXPECT_EQ(infer_typed("gather", {{2, 5, 3}, {4}}, {kF, kI}, {{"axis", int64_t{1}}}).shapes.at(0), (Shape{2, 4, 3}));
  EXPECT_EQ(infer_typed("gather", {{4, 2}, {}}, {kF, kI}).shapes.at(0), (Shape{2}));
  EXPECT_EQ(infer_typed("gather", {{4}, {2}}, {kI, kI}).dtypes.at(0), kI);
  expect_error<ShapeError>([] { infer_typed("gather", {{4, 2}, {2}}, {kF, kF}); }, "gather: indices must be int64, got float");
  expect_error<ShapeError>([] { infer_typed("gather", {{4, 2}, {2}}, {kF, kB}); }, "gather: indices must be int64, got bool");
  expect_error<ShapeError>([] { infer_typed("gather", {{4, 2}, {2}}, {kF, kI}, {{"axis", int64_t{2}}}); },
                           "gather: axis 2 out of range for 4x2");

  EXPECT_EQ(infer_typed("gather_elements", {{3, 4}, {5, 2}}, {kF, kI}).shapes.at(0), (Shape{5, 2}));
  EXPECT_EQ(infer_typed("gather_elements", {{3, 4}, {3, 7}}, {kF, kI}, {{"axis", int64_t{1}}}).shapes.at(0), (Shape{3, 7}));
  expect_error<ShapeError>([] { infer_typed("gather_elements", {{2, 3}, {3, 2}}, {kF, kI}, {{"axis", int64_t{1}}}); },
                           "gather_elements: indices 3x2 do not fit data 2x3 outside axis 1");
  expect_error<ShapeError>([] { infer_typed("gather_elements", {{2, 3}, {2}}, {kF, kI}); }, "gather_elements: indices 2 do not fit");
  expect_error<ShapeError>([] { infer_typed("gather_elements", {{2, 3}, {2, 3}}, {kF, kF}); },
                           "gather_elements: indices must be int64, got float");
}

}  // namespace
}  // namespace tgr

namespace tgr {
namespace {

// An empty axis makes any shape empty, however large the others (the fuzzer
// found an ONNX initializer 0 x ... x 107 x 95 x ... whose strides
// overflowed); a product beyond int64 saturates, so that limits refuse it.
TEST(Shape, NumElementsOfEmptyAndHugeShapes) {
  EXPECT_EQ(num_elements({}), 1);
  EXPECT_EQ(num_elements({2, 3, 4}), 24);
  EXPECT_EQ(num_elements({0, int64_t{1} << 40, int64_t{1} << 40}), 0);
  EXPECT_EQ(num_elements({int64_t{1} << 40, int64_t{1} << 40, 0}), 0);
  EXPECT_EQ(num_elements({int64_t{1} << 40, int64_t{1} << 40}), std::numeric_limits<int64_t>::max());
}

}  // namespace
}  // namespace tgr
