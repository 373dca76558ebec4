#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tgr
