#include <gtest/gtest.h>

#include "test_util.h"

namespace tgr {
namespace {

TEST(Interpreter, EvaluatesAResidualBlock) {
  const Graph g = parse_graph_file(
      "input x 1x2x4x4\ninput k 2x2x1x1\n"
      "output relu(add(conv2d(x, k), x))\n");
  // k = -identity: conv2d(x, k) = -x, so the block computes relu(0) = 0.
  Tensor<double> k({2, 2, 1, 1}, {-1, 0, 0, -1});
  const auto out = evaluate<double>(g, {{"x", random_tensor<double>({1, 2, 4, 4}, 1)}, {"k", k}});
  test::expect_tensor(out[0], {1, 2, 4, 4}, std::vector<double>(32, 0.0), 1e-15);
}

TEST(Interpreter, OutputsMayRepeatOrBeInputs) {
  Graph g;
  ValueRef x = g.add_input("x", {3});
  ValueRef y = g.apply("relu", {x});
  g.add_output(y);
  g.add_output(y);
  g.add_output(x);
  const Tensor<double> in({3}, {-1, 2, -3});
  const auto out = evaluate<double>(g, {{"x", in}});
  ASSERT_EQ(out.size(), 3u);
  test::expect_tensor(out[0], {3}, {0, 2, 0});
  test::expect_tensor(out[1], {3}, {0, 2, 0});
  test::expect_tensor(out[2], {3}, {-1, 2, -3});
}

TEST(Interpreter, RejectsMissingOrMisshapenInputs) {
  const Graph g = build_graph("relu(x)", {{"x", {2, 2}}});
  test::expect_error<std::invalid_argument>([&] { evaluate<double>(g, {{"y", Tensor<double>({2, 2})}}); },
                                            "no value given for input 'x'");
  test::expect_error<std::invalid_argument>([&] { evaluate<double>(g, {{"x", Tensor<double>({2, 3})}}); },
                                            "input 'x' is float 2x2, given float 2x3");
}

TEST(Interpreter, DeepChainsFreeIntermediates) {
  // 200 chained convolutions on a 1x8x32x32 image: correct result, and it
  // runs in bounded memory because each intermediate dies after one use.
  Graph g;
  ValueRef x = g.add_input("x", {1, 8, 32, 32});
  ValueRef k = g.add_input("k", {8, 8, 1, 1});
  ValueRef y = x;
  for (int i = 0; i < 200; ++i) y = g.apply("conv2d", {y, k});
  g.add_output(y);
  Tensor<double> id({8, 8, 1, 1});
  for (int c = 0; c < 8; ++c) id.data[c * 8 + c] = 1;
  const auto in = random_tensor<double>({1, 8, 32, 32}, 2);
  const auto out = evaluate<double>(g, {{"x", in}, {"k", id}});
  EXPECT_EQ(out[0].data, in.data);
}

TEST(Interpreter, RandomTensorsAreInRange) {
  const auto f = random_tensor<float>({1000}, 3);
  for (float v : f.data) EXPECT_TRUE(v >= -1 && v < 1);
  const auto p = random_tensor<Fp>({1000}, 3);
  for (Fp v : p.data) EXPECT_LT(v.residue(), Fp::kModulus);
}

}  // namespace
}  // namespace tgr
