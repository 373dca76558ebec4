// Float semantics of every operator against values computed by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <stdexcept>

#include "test_util.h"

namespace tgr {
namespace {

using test::Bool;
using test::eval;
using test::eval_values;
using test::expect_floats;
using test::expect_ints;
using test::Floats;
using test::I64;
using test::expect_tensor;
using test::iota;
using test::T64;

TEST(Conv2d, ValidIsCrossCorrelation) {
  // 1 2 3 / 4 5 6 / 7 8 9 with a 2x2 kernel of ones
  expect_tensor(eval<double>("conv2d[pad=valid](x, k)", {{"x", iota({1, 1, 3, 3})}, {"k", T64({1, 1, 2, 2}, {1, 1, 1, 1})}}),
                {1, 1, 2, 2}, {12, 16, 24, 28});
  // The kernel is not flipped: [1, 10] over [1, 2, 3] gives 1*1 + 10*2.
  expect_tensor(eval<double>("conv2d[pad=valid](x, k)", {{"x", iota({1, 1, 1, 3})}, {"k", T64({1, 1, 1, 2}, {1, 10})}}),
                {1, 1, 1, 2}, {21, 32});
}

TEST(Conv2d, SamePaddingKeepsTheSizeAndReadsZeros) {
  expect_tensor(eval<double>("conv2d(x, k)", {{"x", iota({1, 1, 3, 3})}, {"k", T64({1, 1, 3, 3}, std::vector<double>(9, 1))}}),
                {1, 1, 3, 3}, {12, 21, 16, 27, 45, 33, 24, 39, 28});
}

TEST(Conv2d, SamePaddingWithStridePutsTheExtraRowAtTheEnd) {
  // 4x4 input, 3x3 kernel, stride 2: total padding 1, all of it bottom/right.
  expect_tensor(eval<double>("conv2d[stride=2x2](x, k)",
                             {{"x", iota({1, 1, 4, 4})}, {"k", T64({1, 1, 3, 3}, std::vector<double>(9, 1))}}),
                {1, 1, 2, 2}, {54, 45, 72, 54});
}

TEST(Conv2d, StrideExplicitPaddingAndDilation) {
  expect_tensor(eval<double>("conv2d[stride=2x2, pad=valid](x, k)", {{"x", iota({1, 1, 3, 3})}, {"k", T64({1, 1, 1, 1}, {2})}}),
                {1, 1, 2, 2}, {2, 6, 14, 18});
  expect_tensor(eval<double>("conv2d[pad=0x1x0x0](x, k)", {{"x", iota({1, 1, 1, 2})}, {"k", T64({1, 1, 1, 1}, {1})}}),
                {1, 1, 1, 3}, {0, 1, 2});
  // Dilation 2: the 3x3 kernel reads rows and columns 0, 2, 4 of a 5x5 input.
  expect_tensor(eval<double>("conv2d[pad=valid, dilation=2x2](x, k)",
                             {{"x", iota({1, 1, 5, 5})}, {"k", T64({1, 1, 3, 3}, std::vector<double>(9, 1))}}),
                {1, 1, 1, 1}, {117});
}

TEST(Conv2d, ChannelsAndGroups) {
  // Two input channels [1], [2]; three output channels summing them 1:0, 0:1, 1:1.
  expect_tensor(eval<double>("conv2d(x, k)", {{"x", T64({1, 2, 1, 1}, {1, 2})}, {"k", T64({3, 2, 1, 1}, {1, 0, 0, 1, 1, 1})}}),
                {1, 3, 1, 1}, {1, 2, 3});
  // Two groups (weight has 1 channel per group), two outputs per group.
  expect_tensor(eval<double>("conv2d(x, k)", {{"x", T64({1, 2, 1, 2}, {1, 2, 3, 4})}, {"k", T64({4, 1, 1, 1}, {1, 2, 3, 4})}}),
                {1, 4, 1, 2}, {1, 2, 2, 4, 9, 12, 12, 16});
  // Batch of two images.
  expect_tensor(eval<double>("conv2d(x, k)", {{"x", T64({2, 1, 1, 2}, {1, 2, 3, 4})}, {"k", T64({1, 1, 1, 1}, {-1})}}),
                {2, 1, 1, 2}, {-1, -2, -3, -4});
}

TEST(Conv2d, FusedRelu) {
  expect_tensor(eval<double>("conv2d[act=relu](x, k)", {{"x", T64({1, 1, 1, 2}, {1, -2})}, {"k", T64({1, 1, 1, 1}, {-1})}}),
                {1, 1, 1, 2}, {0, 2});
}

TEST(Matmul, TwoAndThreeDimensional) {
  expect_tensor(eval<double>("matmul(a, b)", {{"a", iota({2, 3})}, {"b", iota({3, 2})}}), {2, 2}, {22, 28, 49, 64});
  expect_tensor(eval<double>("batch_matmul(a, b)", {{"a", iota({2, 1, 2})}, {"b", T64({2, 2, 1}, {5, 6, 7, 8})}}),
                {2, 1, 1}, {17, 53});
}

TEST(Matmul, LargeProductMatchesTheDefinition) {
  // Big enough to take the blocked, parallel path, with ragged edges.
  const auto a = random_tensor<double>({70, 300}, 1), b = random_tensor<double>({300, 45}, 2);
  const auto c = eval<double>("matmul(a, b)", {{"a", a}, {"b", b}});
  for (int i = 0; i < 70; i += 13)
    for (int j = 0; j < 45; j += 7) {
      double s = 0;
      for (int k = 0; k < 300; ++k) s += a.data[i * 300 + k] * b.data[k * 45 + j];
      EXPECT_NEAR(c.data[i * 45 + j], s, 1e-10);
    }
}

TEST(Elementwise, AddAndMulBroadcast) {
  expect_tensor(eval<double>("add(a, b)", {{"a", iota({2, 3})}, {"b", T64({3}, {10, 20, 30})}}), {2, 3}, {11, 22, 33, 14, 25, 36});
  expect_tensor(eval<double>("mul(a, b)", {{"a", T64({2, 1}, {1, 2})}, {"b", T64({1, 3}, {1, 2, 3})}}), {2, 3}, {1, 2, 3, 2, 4, 6});
  expect_tensor(eval<double>("scalar_mul(a, s)", {{"a", iota({3})}, {"s", T64({}, {2})}}), {3}, {2, 4, 6});
}

TEST(Elementwise, Activations) {
  expect_tensor(eval<double>("relu(x)", {{"x", T64({3}, {-1, 0, 2})}}), {3}, {0, 0, 2});
  expect_tensor(eval<double>("sigmoid(x)", {{"x", T64({2}, {0, std::log(3.0)})}}), {2}, {0.5, 0.75}, 1e-12);
  expect_tensor(eval<double>("tanh(x)", {{"x", T64({2}, {0, std::atanh(0.5)})}}), {2}, {0, 0.5}, 1e-12);
}

TEST(Elementwise, Trigonometric) {
  const double pi = std::numbers::pi;
  expect_tensor(eval<double>("cos(x)", {{"x", T64({4}, {0, pi / 3, pi, -pi / 3})}}), {4}, {1, 0.5, -1, 0.5}, 1e-12);
  expect_tensor(eval<double>("sin(x)", {{"x", T64({4}, {0, pi / 6, pi / 2, -pi / 6})}}), {4}, {0, 0.5, 1, -0.5}, 1e-12);
}

TEST(Layout, Transpose) {
  expect_tensor(eval<double>("transpose(x)", {{"x", iota({2, 3})}}), {3, 2}, {1, 4, 2, 5, 3, 6});
  // out[i][j][k] = in[j][k][i]
  expect_tensor(eval<double>("transpose[perm=2x0x1](x)", {{"x", iota({2, 2, 2})}}), {2, 2, 2}, {1, 3, 5, 7, 2, 4, 6, 8});
}

TEST(Layout, ConcatSplitReshape) {
  expect_tensor(eval<double>("concat[axis=0](a, b)", {{"a", iota({2, 2})}, {"b", T64({1, 2}, {9, 10})}}), {3, 2}, {1, 2, 3, 4, 9, 10});
  expect_tensor(eval<double>("concat[axis=1](a, b)", {{"a", T64({2, 1}, {1, 2})}, {"b", T64({2, 2}, {3, 4, 5, 6})}}), {2, 3},
                {1, 3, 4, 2, 5, 6});
  expect_tensor(eval<double>("split[axis=1, sizes=1x2](x).0", {{"x", iota({2, 3})}}), {2, 1}, {1, 4});
  expect_tensor(eval<double>("split[axis=1, sizes=1x2](x).1", {{"x", iota({2, 3})}}), {2, 2}, {2, 3, 5, 6});
  expect_tensor(eval<double>("split[axis=0, sizes=1x1](x).1", {{"x", iota({2, 3})}}), {1, 3}, {4, 5, 6});
  expect_tensor(eval<double>("reshape[shape=3x2](x)", {{"x", iota({2, 3})}}), {3, 2}, {1, 2, 3, 4, 5, 6});
}

TEST(Pooling, AveragePoolCountsPaddingOnlyWhenAsked) {
  // 3x3 windows, same padding, on 1..9: corner sum 12 over 4 elements.
  expect_tensor(eval<double>("avgpool[kernel=3x3](x)", {{"x", iota({1, 1, 3, 3})}}), {1, 1, 3, 3},
                {12.0 / 4, 21.0 / 6, 16.0 / 4, 27.0 / 6, 5, 33.0 / 6, 24.0 / 4, 39.0 / 6, 28.0 / 4}, 1e-12);
  expect_tensor(eval<double>("avgpool[kernel=3x3, include_pad=1](x)", {{"x", iota({1, 1, 3, 3})}}), {1, 1, 3, 3},
                {12.0 / 9, 21.0 / 9, 16.0 / 9, 27.0 / 9, 5, 33.0 / 9, 24.0 / 9, 39.0 / 9, 28.0 / 9}, 1e-12);
  expect_tensor(eval<double>("avgpool[kernel=2x2, stride=2x2, pad=valid](x)", {{"x", iota({1, 1, 4, 4})}}), {1, 1, 2, 2},
                {3.5, 5.5, 11.5, 13.5}, 1e-12);
}

TEST(Pooling, MaxPoolPaddingNeverWins) {
  Tensor<double> x = iota({1, 1, 3, 3});
  for (double& v : x.data) v = -v;
  expect_tensor(eval<double>("maxpool[kernel=3x3](x)", {{"x", x}}), {1, 1, 3, 3}, {-1, -1, -2, -1, -1, -2, -4, -4, -5});
  expect_tensor(eval<double>("maxpool[kernel=2x2, stride=2x2, pad=valid](x)", {{"x", iota({1, 2, 4, 4})}}), {1, 2, 2, 2},
                {6, 8, 14, 16, 22, 24, 30, 32});
}

TEST(Kernels, EnlargeCentresTheKernel) {
  expect_tensor(eval<double>("enlarge[size=3x3](k)", {{"k", T64({1, 1, 1, 1}, {7})}}), {1, 1, 3, 3}, {0, 0, 0, 0, 7, 0, 0, 0, 0});
  expect_tensor(eval<double>("enlarge[size=3x3](k)", {{"k", T64({1, 1, 1, 3}, {1, 2, 3})}}), {1, 1, 3, 3}, {0, 0, 0, 1, 2, 3, 0, 0, 0});
  // A same-padded convolution with an enlarged kernel equals the original.
  const auto x = random_tensor<double>({1, 3, 6, 6}, 5);
  const auto k = random_tensor<double>({2, 3, 1, 3}, 6);
  const auto a = eval<double>("conv2d(x, k)", {{"x", x}, {"k", k}});
  const auto b = eval<double>("conv2d(x, enlarge[size=3x3](k))", {{"x", x}, {"k", k}});
  expect_tensor(b, a.shape, std::vector<double>(a.data.begin(), a.data.end()), 1e-12);
}

TEST(Constants, ValuesAndDefiningIdentities) {
  const auto eye = build_graph("eye[n=2]()", {});
  expect_tensor(evaluate<double>(eye, std::span<const Tensor<double>>{}).at(0), {2, 2}, {1, 0, 0, 1});
  const auto ones = build_graph("ones[shape=2x1]()", {});
  expect_tensor(evaluate<double>(ones, std::span<const Tensor<double>>{}).at(0), {2, 1}, {1, 1});
  const auto pool = build_graph("pool_kernel[channels=1, kernel=2x2]()", {});
  expect_tensor(evaluate<double>(pool, std::span<const Tensor<double>>{}).at(0), {1, 1, 2, 2}, {0.25, 0.25, 0.25, 0.25});

  const auto x = random_tensor<double>({1, 2, 5, 5}, 9);
  const auto same = eval<double>("conv2d(x, conv_identity[channels=2, kernel=3x3]())", {{"x", x}});
  expect_tensor(same, x.shape, std::vector<double>(x.data.begin(), x.data.end()), 0);
  const auto pooled = eval<double>("conv2d(x, pool_kernel[channels=2, kernel=3x3]())", {{"x", x}});
  const auto avg = eval<double>("avgpool[kernel=3x3, include_pad=1](x)", {{"x", x}});
  expect_tensor(pooled, avg.shape, std::vector<double>(avg.data.begin(), avg.data.end()), 1e-12);
  const auto m = random_tensor<double>({3, 4}, 10);
  const auto prod = eval<double>("matmul(eye[n=3](), m)", {{"m", m}});
  expect_tensor(prod, m.shape, std::vector<double>(m.data.begin(), m.data.end()), 0);
}

TEST(Precision, Float32AgreesWithFloat64) {
  const Graph g = build_graph("relu(add(conv2d(x, k), x))", {{"x", {1, 8, 12, 12}}, {"k", {8, 8, 3, 3}}});
  const auto in64 = random_inputs<double>(g, 4);
  std::vector<Tensor<float>> in32;
  for (const auto& t : in64) in32.push_back(convert<float>(t));
  const auto out64 = evaluate<double>(g, std::span<const Tensor<double>>(in64)).at(0);
  const auto out32 = evaluate<float>(g, std::span<const Tensor<float>>(in32)).at(0);
  for (size_t i = 0; i < out64.data.size(); ++i) EXPECT_NEAR(out32.data[i], out64.data[i], 1e-5);
}


// --- binary arithmetic -------------------------------------------------------

TEST(Elementwise, SubAndDivBroadcast) {
  expect_tensor(eval<double>("sub(a, b)", {{"a", iota({2, 3})}, {"b", T64({3}, {10, 20, 30})}}), {2, 3},
                {-9, -18, -27, -6, -15, -24}, 0);
  expect_tensor(eval<double>("sub(a, b)", {{"a", T64({2, 1}, {1, 2})}, {"b", T64({1, 3}, {1, 2, 3})}}), {2, 3},
                {0, -1, -2, 1, 0, -1}, 0);
  // b - a is not a - b: sub is not commutative.
  expect_tensor(eval<double>("sub(b, a)", {{"a", T64({2, 1}, {1, 2})}, {"b", T64({1, 3}, {1, 2, 3})}}), {2, 3},
                {0, 1, 2, -1, 0, 1}, 0);
  expect_tensor(eval<double>("div(a, b)", {{"a", iota({2, 3})}, {"b", T64({2, 1}, {2, 4})}}), {2, 3},
                {0.5, 1, 1.5, 1, 1.25, 1.5}, 0);
  expect_tensor(eval<double>("div(a, b)", {{"a", iota({3})}, {"b", T64({}, {-4})}}), {3}, {-0.25, -0.5, -0.75}, 0);
  expect_tensor(eval<double>("div(b, a)", {{"a", T64({3}, {1, 2, 8})}, {"b", T64({}, {1})}}), {3}, {1, 0.5, 0.125}, 0);
}

TEST(Elementwise, FloatDivisionByZeroIsIeee) {
  const auto q = eval<double>("div(a, b)", {{"a", T64({3}, {1, -1, 0})}, {"b", T64({3}, {0, 0, 0})}});
  ASSERT_EQ(q.shape, (Shape{3}));
  EXPECT_EQ(q.data[0], std::numeric_limits<double>::infinity());
  EXPECT_EQ(q.data[1], -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(q.data[2]));
}

TEST(Elementwise, IntegerDivTruncatesTowardZero) {
  expect_ints(eval_values<double>("div(a, b)", {{"a", I64({6}, {-7, 7, -7, 7, 6, -1})}, {"b", I64({6}, {2, 2, -2, -2, 3, 2})}}),
              DType::kInt64, {6}, {-3, 3, 3, -3, 2, 0});
  // With broadcasting: [[-7], [7]] / [2, -2].
  expect_ints(eval_values<double>("div(a, b)", {{"a", I64({2, 1}, {-7, 7})}, {"b", I64({2}, {2, -2})}}), DType::kInt64,
              {2, 2}, {-3, 3, 3, -3});
}

TEST(Elementwise, IntegerDivisionByZeroRaises) {
  test::expect_error<std::domain_error>(
      [] { eval_values<double>("div(a, b)", {{"a", I64({2}, {1, 2})}, {"b", I64({2}, {1, 0})}}); },
      "div: integer division by zero");
  // A zero that broadcasts is a zero too.
  test::expect_error<std::domain_error>(
      [] { eval_values<double>("div(a, b)", {{"a", I64({2, 2}, {1, 2, 3, 4})}, {"b", I64({}, {0})}}); },
      "division by zero");
}

TEST(Elementwise, Int64Arithmetic) {
  const std::map<std::string, Value<double>> ab{{"a", I64({2, 2}, {1, -2, 3, -4})}, {"b", I64({2}, {10, -20})}};
  expect_ints(eval_values<double>("add(a, b)", ab), DType::kInt64, {2, 2}, {11, -22, 13, -24});
  expect_ints(eval_values<double>("sub(a, b)", ab), DType::kInt64, {2, 2}, {-9, 18, -7, 16});
  expect_ints(eval_values<double>("mul(a, b)", ab), DType::kInt64, {2, 2}, {10, 40, 30, 80});
  expect_ints(eval_values<double>("neg(a)", ab), DType::kInt64, {2, 2}, {-1, 2, -3, 4});
  expect_ints(eval_values<double>("abs(a)", ab), DType::kInt64, {2, 2}, {1, 2, 3, 4});
  // Exact beyond float precision: 2^53 + 1.
  expect_ints(eval_values<double>("add(a, b)", {{"a", I64({1}, {int64_t{1} << 53})}, {"b", I64({1}, {1})}}), DType::kInt64,
              {1}, {(int64_t{1} << 53) + 1});
}

TEST(Elementwise, Pow) {
  expect_tensor(eval<double>("pow(a, b)", {{"a", T64({4}, {2, 3, 4, 2})}, {"b", T64({4}, {3, 2, 0.5, -1})}}), {4},
                {8, 9, 2, 0.5}, 0);
  expect_tensor(eval<double>("pow(a, b)", {{"a", T64({2, 1}, {2, 3})}, {"b", T64({3}, {0, 1, 2})}}), {2, 3},
                {1, 2, 4, 1, 3, 9}, 0);
  expect_tensor(eval<double>("pow(a, b)", {{"a", T64({2}, {-2, 0})}, {"b", T64({}, {3})}}), {2}, {-8, 0}, 0);
}

// --- unary ----------------------------------------------------------------------

TEST(Elementwise, NegAbsSqrt) {
  expect_tensor(eval<double>("neg(x)", {{"x", T64({3}, {1, -2.5, 0})}}), {3}, {-1, 2.5, 0}, 0);
  expect_tensor(eval<double>("abs(x)", {{"x", T64({4}, {-1.5, 0, 2, -0.25})}}), {4}, {1.5, 0, 2, 0.25}, 0);
  expect_tensor(eval<double>("sqrt(x)", {{"x", T64({4}, {0, 4, 2.25, 1e6})}}), {4}, {0, 2, 1.5, 1000}, 0);
  EXPECT_TRUE(std::isnan(eval<double>("sqrt(x)", {{"x", T64({1}, {-1})}}).data[0]));
}

TEST(Elementwise, ExpAndLog) {
  expect_tensor(eval<double>("exp(x)", {{"x", T64({3}, {0, std::log(2.0), -std::log(4.0)})}}), {3}, {1, 2, 0.25}, 1e-12);
  expect_tensor(eval<double>("exp(x)", {{"x", T64({1}, {1})}}), {1}, {2.718281828459045}, 1e-12);
  expect_tensor(eval<double>("log(x)", {{"x", T64({4}, {1, 2.718281828459045, 8, 0.5})}}), {4},
                {0, 1, 3 * 0.6931471805599453, -0.6931471805599453}, 1e-12);
  const auto edge = eval<double>("log(x)", {{"x", T64({2}, {0, -1})}});
  EXPECT_EQ(edge.data[0], -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(edge.data[1]));
  // log(exp(x)) == x
  expect_tensor(eval<double>("log(exp(x))", {{"x", T64({3}, {-2, 0.5, 3})}}), {3}, {-2, 0.5, 3}, 1e-12);
}

TEST(Elementwise, Erf) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // erf(1) = 0.8427007929497148693... (Abramowitz & Stegun, table 7.1)
  expect_tensor(eval<double>("erf(x)", {{"x", T64({5}, {0, kInf, -kInf, 1, -1})}}), {5},
                {0, 1, -1, 0.8427007929497149, -0.8427007929497149}, 1e-15);
  // Nearly 1 beyond 6: 1 - erf(6) < 3e-17.
  expect_tensor(eval<double>("erf(x)", {{"x", T64({1}, {6})}}), {1}, {1}, 1e-15);
}

TEST(Elementwise, LeakyRelu) {
  expect_tensor(eval<double>("leaky_relu[alpha=0.5](x)", {{"x", T64({4}, {-2, -0.5, 0, 3})}}), {4}, {-1, -0.25, 0, 3}, 0);
  expect_tensor(eval<double>("leaky_relu(x)", {{"x", T64({2}, {-100, 7})}}), {2}, {-1, 7}, 1e-12);  // alpha = 0.01
  expect_tensor(eval<double>("leaky_relu[alpha=-1](x)", {{"x", T64({2}, {-3, 3})}}), {2}, {3, 3}, 0);  // |x|
}

TEST(Elementwise, HardSigmoidClampsAtBothEnds) {
  // Default alpha 0.2, beta 0.5: 0.2 x + 0.5 clamped to [0, 1], reaching 0 at -2.5 and 1 at 2.5.
  expect_tensor(eval<double>("hard_sigmoid(x)", {{"x", T64({7}, {-5, -2.5, -1, 0, 1, 2.5, 3})}}), {7},
                {0, 0, 0.3, 0.5, 0.7, 1, 1}, 1e-12);
  expect_tensor(eval<double>("hard_sigmoid[alpha=0.5, beta=0](x)", {{"x", T64({4}, {-1, 1, 2, 3})}}), {4},
                {0, 0.5, 1, 1}, 0);
}

TEST(Elementwise, HardSwish) {
  // x * clamp(x / 6 + 1/2, 0, 1): 0 up to -3, x from 3 on.
  expect_tensor(eval<double>("hard_swish(x)", {{"x", T64({6}, {-4, -3, 0, 1, 3, 4})}}), {6},
                {0, 0, 0, 2.0 / 3, 3, 4}, 1e-12);
  expect_tensor(eval<double>("hard_swish(x)", {{"x", T64({1}, {-1.5})}}), {1}, {-1.5 * 0.25}, 1e-12);
}

TEST(Elementwise, Clip) {
  expect_tensor(eval<double>("clip[max=6](x)", {{"x", T64({4}, {-10, 2, 6, 7})}}), {4}, {-10, 2, 6, 6}, 0);
  expect_tensor(eval<double>("clip[min=0](x)", {{"x", T64({3}, {-1, 0.5, 1e9})}}), {3}, {0, 0.5, 1e9}, 0);
  expect_tensor(eval<double>("clip[min=-1, max=1](x)", {{"x", T64({3}, {-2, 0.5, 2})}}), {3}, {-1, 0.5, 1}, 0);
  expect_tensor(eval<double>("clip(x)", {{"x", T64({2}, {-1e300, 1e300})}}), {2}, {-1e300, 1e300}, 0);
}

// --- comparisons, logic, cast, where -----------------------------------------------

TEST(Compare, FloatsWithBroadcastingGiveBool) {
  // a = [[1], [3]] against b = [1, 2, 3]
  const std::map<std::string, Value<double>> ab{{"a", Floats({2, 1}, {1, 3})}, {"b", Floats({3}, {1, 2, 3})}};
  expect_ints(eval_values<double>("equal(a, b)", ab), DType::kBool, {2, 3}, {1, 0, 0, 0, 0, 1});
  expect_ints(eval_values<double>("less(a, b)", ab), DType::kBool, {2, 3}, {0, 1, 1, 0, 0, 0});
  expect_ints(eval_values<double>("greater(a, b)", ab), DType::kBool, {2, 3}, {0, 0, 0, 1, 1, 0});
  expect_ints(eval_values<double>("less_equal(a, b)", ab), DType::kBool, {2, 3}, {1, 1, 1, 0, 0, 1});
  expect_ints(eval_values<double>("greater_equal(a, b)", ab), DType::kBool, {2, 3}, {1, 0, 0, 1, 1, 1});
}

TEST(Compare, NanComparesFalse) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::map<std::string, Value<double>> ab{{"a", Floats({2}, {nan, nan})}, {"b", Floats({2}, {nan, 1})}};
  for (const char* op : {"equal", "less", "greater", "less_equal", "greater_equal"})
    expect_ints(eval_values<double>(std::string(op) + "(a, b)", ab), DType::kBool, {2}, {0, 0});
}

TEST(Compare, Int64AndBool) {
  // a = [-1, 5, 7] against the scalar 5
  const std::map<std::string, Value<double>> ab{{"a", I64({3}, {-1, 5, 7})}, {"b", I64({}, {5})}};
  expect_ints(eval_values<double>("equal(a, b)", ab), DType::kBool, {3}, {0, 1, 0});
  expect_ints(eval_values<double>("less(a, b)", ab), DType::kBool, {3}, {1, 0, 0});
  expect_ints(eval_values<double>("greater(a, b)", ab), DType::kBool, {3}, {0, 0, 1});
  expect_ints(eval_values<double>("less_equal(a, b)", ab), DType::kBool, {3}, {1, 1, 0});
  expect_ints(eval_values<double>("greater_equal(a, b)", ab), DType::kBool, {3}, {0, 1, 1});
  // Exact beyond float precision: 2^53 and 2^53 + 1 differ.
  expect_ints(eval_values<double>("less(a, b)", {{"a", I64({1}, {int64_t{1} << 53})}, {"b", I64({1}, {(int64_t{1} << 53) + 1})}}),
              DType::kBool, {1}, {1});
  // Bools compare for equality, with broadcasting.
  expect_ints(eval_values<double>("equal(a, b)", {{"a", Bool({2, 1}, {0, 1})}, {"b", Bool({2}, {1, 1})}}), DType::kBool,
              {2, 2}, {0, 0, 1, 1});
}

TEST(Compare, IsNanAndLogicalNot) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  expect_ints(eval_values<double>("is_nan(x)", {{"x", Floats({2, 2}, {nan, 1, inf, -0.0})}}), DType::kBool, {2, 2},
              {1, 0, 0, 0});
  expect_ints(eval_values<double>("is_nan(div(x, x))", {{"x", Floats({3}, {0, 2, inf})}}), DType::kBool, {3}, {1, 0, 1});
  expect_ints(eval_values<double>("logical_not(m)", {{"m", Bool({3}, {1, 0, 1})}}), DType::kBool, {3}, {0, 1, 0});
  expect_ints(eval_values<double>("logical_not(logical_not(m))", {{"m", Bool({3}, {1, 0, 1})}}), DType::kBool, {3},
              {1, 0, 1});
  expect_ints(eval_values<double>("logical_not(less(a, b))", {{"a", Floats({3}, {1, 2, 3})}, {"b", Floats({}, {2})}}),
              DType::kBool, {3}, {0, 1, 1});
}

TEST(Cast, FloatToInt64TruncatesTowardZero) {
  expect_ints(eval_values<double>("cast[to=int64](x)", {{"x", Floats({6}, {2.7, -2.7, 0.5, -0.5, 3, -1e15})}}),
              DType::kInt64, {6}, {2, -2, 0, 0, 3, -1000000000000000});
}

TEST(Cast, FloatToBoolIsNotZero) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  expect_ints(eval_values<double>("cast[to=bool](x)", {{"x", Floats({5}, {0, -0.0, 0.1, -3, nan})}}), DType::kBool, {5},
              {0, 0, 1, 1, 1});
}

TEST(Cast, IntegersToFloatAndBetweenIntegers) {
  expect_floats(eval_values<double>("cast(i)", {{"i", I64({3}, {-3, 0, 5})}}), {3}, {-3, 0, 5}, 0);
  expect_floats(eval_values<double>("cast[to=float](b)", {{"b", Bool({2}, {1, 0})}}), {2}, {1, 0}, 0);
  expect_ints(eval_values<double>("cast[to=bool](i)", {{"i", I64({3}, {0, -2, 3})}}), DType::kBool, {3}, {0, 1, 1});
  expect_ints(eval_values<double>("cast[to=int64](b)", {{"b", Bool({2}, {1, 0})}}), DType::kInt64, {2}, {1, 0});
  expect_floats(eval_values<double>("cast[to=float](x)", {{"x", Floats({2}, {-1.5, 2.25})}}), {2}, {-1.5, 2.25}, 0);
  // int64 -> float -> int64 round-trips small integers.
  expect_ints(eval_values<double>("cast[to=int64](cast(i))", {{"i", I64({2}, {-7, 123456})}}), DType::kInt64, {2},
              {-7, 123456});
}

TEST(Cast, FloatOutsideInt64Raises) {
  test::expect_error<std::domain_error>(
      [] { eval_values<double>("cast[to=int64](x)", {{"x", Floats({2}, {1, 1e19})}}); }, "does not fit int64");
  test::expect_error<std::domain_error>(
      [] { eval_values<double>("cast[to=int64](x)", {{"x", Floats({1}, {-1e19})}}); }, "does not fit int64");
  test::expect_error<std::domain_error>(
      [] { eval_values<double>("cast[to=int64](x)", {{"x", Floats({1}, {std::numeric_limits<double>::quiet_NaN()})}}); },
      "does not fit int64");
}

TEST(Where, BroadcastsAllThreeInputs) {
  // cond [[1, 0, 1]] (1x3), x [[10], [20]] (2x1), y -1 (scalar) -> 2x3
  expect_floats(eval_values<double>("where(c, x, y)", {{"c", Bool({1, 3}, {1, 0, 1})},
                                                        {"x", Floats({2, 1}, {10, 20})},
                                                        {"y", Floats({}, {-1})}}),
                {2, 3}, {10, -1, 10, 20, -1, 20}, 0);
  // cond [[1], [0]] (2x1), x [1, 2, 3] (3), y [[4, 5, 6]] (1x3)
  expect_floats(eval_values<double>("where(c, x, y)", {{"c", Bool({2, 1}, {1, 0})},
                                                        {"x", Floats({3}, {1, 2, 3})},
                                                        {"y", Floats({1, 3}, {4, 5, 6})}}),
                {2, 3}, {1, 2, 3, 4, 5, 6}, 0);
}

TEST(Where, Int64Values) {
  expect_ints(eval_values<double>("where(c, x, y)", {{"c", Bool({3}, {0, 1, 0})},
                                                      {"x", I64({3}, {1, 2, 3})},
                                                      {"y", I64({1}, {-5})}}),
              DType::kInt64, {3}, {-5, 2, -5});
  // relu written with where and a comparison
  expect_floats(eval_values<double>("where(greater(x, z), x, z)", {{"x", Floats({4}, {-2, 0, 1.5, 3})}, {"z", Floats({}, {0})}}),
                {4}, {0, 0, 1.5, 3}, 0);
}

// --- normalisation ---------------------------------------------------------------

TEST(Normalization, SoftmaxAlongEachAxis) {
  const double l2 = std::log(2.0), l3 = std::log(3.0);
  // Along axis 1: softmax([0, ln 2, ln 3]) = [1, 2, 3] / 6; a constant row is uniform.
  expect_tensor(eval<double>("softmax[axis=1](x)", {{"x", T64({2, 3}, {0, l2, l3, 1, 1, 1})}}), {2, 3},
                {1.0 / 6, 2.0 / 6, 3.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 3}, 1e-12);
  // Along axis 0 (columns): [0, ln 3] -> [1/4, 3/4].
  const auto cols = eval<double>("softmax[axis=0](x)", {{"x", T64({2, 3}, {0, 0, l3, l3, 0, 0})}});
  expect_tensor(cols, {2, 3}, {0.25, 0.5, 0.75, 0.75, 0.5, 0.25}, 1e-12);
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(cols.data[j] + cols.data[3 + j], 1.0, 1e-12);
  // A middle axis (outer 2, inner 2).
  expect_tensor(eval<double>("softmax[axis=1](x)", {{"x", T64({2, 2, 2}, {0, l3, l3, 0, 1, 1, 1, 1})}}), {2, 2, 2},
                {0.25, 0.75, 0.75, 0.25, 0.5, 0.5, 0.5, 0.5}, 1e-12);
}

TEST(Normalization, SoftmaxIsShiftInvariantAndDoesNotOverflow) {
  expect_tensor(eval<double>("softmax[axis=0](x)", {{"x", T64({3}, {1000, 1000 + std::log(2.0), 1000 + std::log(3.0)})}}), {3},
                {1.0 / 6, 2.0 / 6, 3.0 / 6}, 1e-12);
  expect_tensor(eval<double>("softmax[axis=0](x)", {{"x", T64({2}, {-1000, -1000})}}), {2}, {0.5, 0.5}, 1e-12);
}

TEST(Normalization, LayerNormOfAKnownRow) {
  // [1, 2, 3, 4]: mean 2.5, (biased) variance 1.25; epsilon 2.75 makes var + eps = 4,
  // so the normalised row is (x - 2.5) / 2 = [-0.75, -0.25, 0.25, 0.75].
  // A constant row normalises to 0 and gives the bias.
  expect_tensor(eval<double>("layer_norm[axis=1, epsilon=2.75](x, s, b)", {{"x", T64({2, 4}, {1, 2, 3, 4, 2, 2, 2, 2})},
                                                                           {"s", T64({4}, {1, 2, 3, 4})},
                                                                           {"b", T64({4}, {0, 1, 0, -1})}}),
                {2, 4}, {-0.75, 0.5, 0.75, 2, 0, 1, 0, -1}, 1e-12);
  // Default epsilon 1e-5.
  const double r = 1 / std::sqrt(1.25 + 1e-5);
  expect_tensor(eval<double>("layer_norm[axis=0](x, s, b)", {{"x", T64({4}, {1, 2, 3, 4})},
                                                             {"s", T64({4}, {1, 1, 1, 1})},
                                                             {"b", T64({4}, {0, 0, 0, 0})}}),
                {4}, {-1.5 * r, -0.5 * r, 0.5 * r, 1.5 * r}, 1e-12);
}

TEST(Normalization, LayerNormOverTwoAxes) {
  // Axis 1 of 2x2x2: each 2x2 block is one group, scaled by 2. Block 0 is [1, 2, 3, 4]
  // (as above); block 1 is [0, 0, 4, 4]: mean 2, var 4, and epsilon 0 (allowed)
  // gives (x - 2) / 2 * 2 = [-2, -2, 2, 2].
  const double r = 2 / std::sqrt(1.25);
  expect_tensor(eval<double>("layer_norm[axis=1, epsilon=0](x, s, b)", {{"x", T64({2, 2, 2}, {1, 2, 3, 4, 0, 0, 4, 4})},
                                                                         {"s", T64({2, 2}, {2, 2, 2, 2})},
                                                                         {"b", T64({2, 2}, {0, 0, 0, 1})}}),
                {2, 2, 2}, {-1.5 * r, -0.5 * r, 0.5 * r, 1.5 * r + 1, -2, -2, 2, 3}, 1e-12);
}

TEST(Normalization, BatchNormPerChannel) {
  // Channel 0: mean 2, var 3.75, scale 2, bias 1; channel 1: mean 15, var 24.75,
  // scale 1, bias 0; epsilon 0.25 makes var + eps = 4 and 25:
  //   c0: (x - 2) / 2 * 2 + 1 = x - 1,  c1: (x - 15) / 5.
  const std::map<std::string, Tensor<double>> params{{"s", T64({2}, {2, 1})},
                                                     {"b", T64({2}, {1, 0})},
                                                     {"m", T64({2}, {2, 15})},
                                                     {"v", T64({2}, {3.75, 24.75})}};
  auto with_x = [&](Tensor<double> x) {
    auto in = params;
    in["x"] = std::move(x);
    return in;
  };
  // N = 2, C = 2, H = 1, W = 2
  expect_tensor(eval<double>("batch_norm[epsilon=0.25](x, s, b, m, v)", with_x(T64({2, 2, 1, 2}, {1, 3, 10, 20, 2, 4, 15, 25}))),
                {2, 2, 1, 2}, {0, 2, -1, 1, 1, 3, 0, 2}, 1e-12);
  // N x C without spatial axes.
  expect_tensor(eval<double>("batch_norm[epsilon=0.25](x, s, b, m, v)", with_x(T64({1, 2}, {5, 5}))), {1, 2}, {4, -2}, 1e-12);
}

// --- reductions ----------------------------------------------------------------

TEST(Reduce, SumAndMeanOverOneAxis) {
  const std::map<std::string, Tensor<double>> x{{"x", iota({2, 3})}};  // [[1, 2, 3], [4, 5, 6]]
  expect_tensor(eval<double>("reduce_sum[axes=0](x)", x), {1, 3}, {5, 7, 9}, 0);
  expect_tensor(eval<double>("reduce_sum[axes=1, keepdims=0](x)", x), {2}, {6, 15}, 0);
  expect_tensor(eval<double>("reduce_sum[axes=1, keepdims=1](x)", x), {2, 1}, {6, 15}, 0);
  expect_tensor(eval<double>("reduce_mean[axes=1](x)", x), {2, 1}, {2, 5}, 1e-12);
  expect_tensor(eval<double>("reduce_mean[axes=0, keepdims=0](x)", x), {3}, {2.5, 3.5, 4.5}, 1e-12);
}

TEST(Reduce, SumAndMeanOverTwoAxes) {
  const std::map<std::string, Tensor<double>> x{{"x", iota({2, 3})}};
  expect_tensor(eval<double>("reduce_sum[axes=0x1](x)", x), {1, 1}, {21}, 0);
  expect_tensor(eval<double>("reduce_sum[axes=0x1, keepdims=0](x)", x), {}, {21}, 0);
  expect_tensor(eval<double>("reduce_mean[axes=0x1, keepdims=0](x)", x), {}, {3.5}, 1e-12);
  // 2x3x2 holding 1..12: x[i][j][k] = 1 + 6i + 2j + k.
  const std::map<std::string, Tensor<double>> y{{"x", iota({2, 3, 2})}};
  expect_tensor(eval<double>("reduce_sum[axes=0x2, keepdims=0](x)", y), {3}, {18, 26, 34}, 0);
  expect_tensor(eval<double>("reduce_mean[axes=0x2](x)", y), {1, 3, 1}, {4.5, 6.5, 8.5}, 1e-12);
  expect_tensor(eval<double>("reduce_sum[axes=1](x)", y), {2, 1, 2}, {9, 12, 27, 30}, 0);
  expect_tensor(eval<double>("reduce_mean[axes=1x2, keepdims=0](x)", y), {2}, {3.5, 9.5}, 1e-12);
}

TEST(Reduce, Int64Sum) {
  const std::map<std::string, Value<double>> x{{"x", I64({2, 2}, {1, -2, 3, -4})}};
  expect_ints(eval_values<double>("reduce_sum[axes=1, keepdims=0](x)", x), DType::kInt64, {2}, {-1, -1});
  expect_ints(eval_values<double>("reduce_sum[axes=0](x)", x), DType::kInt64, {1, 2}, {4, -6});
  expect_ints(eval_values<double>("reduce_sum[axes=0x1, keepdims=0](x)", x), DType::kInt64, {}, {-2});
}

// --- slice, expand, pad ---------------------------------------------------------

TEST(Layout, SliceWithPositiveSteps) {
  const std::map<std::string, Tensor<double>> x{{"x", iota({3, 4})}};  // rows 1..4, 5..8, 9..12
  expect_tensor(eval<double>("slice[starts=1x1, ends=3x3](x)", x), {2, 2}, {6, 7, 10, 11}, 0);
  expect_tensor(eval<double>("slice[starts=0x0, ends=3x4, steps=2x2](x)", x), {2, 2}, {1, 3, 9, 11}, 0);
  expect_tensor(eval<double>("slice[starts=0x1, ends=3x4, steps=1x2](x)", x), {3, 2}, {2, 4, 6, 8, 10, 12}, 0);
  expect_tensor(eval<double>("slice[starts=2x0, ends=3x4](x)", x), {1, 4}, {9, 10, 11, 12}, 0);
}

TEST(Layout, SliceWithNegativeSteps) {
  const std::map<std::string, Tensor<double>> v{{"x", iota({4})}};  // [1, 2, 3, 4]
  // end -1 with a negative step: through index 0.
  expect_tensor(eval<double>("slice[starts=3, ends=-1, steps=-1](x)", v), {4}, {4, 3, 2, 1}, 0);
  expect_tensor(eval<double>("slice[starts=3, ends=-1, steps=-2](x)", v), {2}, {4, 2}, 0);
  expect_tensor(eval<double>("slice[starts=2, ends=0, steps=-1](x)", v), {2}, {3, 2}, 0);  // index 0 excluded
  // Both axes of 3x4 reversed.
  expect_tensor(eval<double>("slice[starts=2x3, ends=-1x-1, steps=-1x-1](x)", {{"x", iota({3, 4})}}), {3, 4},
                {12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, 0);
  // Rows reversed, columns 1..2 forward.
  expect_tensor(eval<double>("slice[starts=2x1, ends=-1x3, steps=-1x1](x)", {{"x", iota({3, 4})}}), {3, 2},
                {10, 11, 6, 7, 2, 3}, 0);
}

TEST(Layout, SliceCanBeEmpty) {
  expect_tensor(eval<double>("slice[starts=2, ends=2](x)", {{"x", iota({4})}}), {0}, {});
  expect_tensor(eval<double>("slice[starts=4, ends=4](x)", {{"x", iota({4})}}), {0}, {});
  expect_tensor(eval<double>("slice[starts=1, ends=1, steps=-1](x)", {{"x", iota({4})}}), {0}, {});
  expect_tensor(eval<double>("slice[starts=1x0, ends=1x4](x)", {{"x", iota({3, 4})}}), {0, 4}, {});
}

TEST(Layout, ExpandBroadcasts) {
  // [3, 1] -> [2, 3, 4]: out[i][j][k] = x[j]
  std::vector<double> expected;
  for (int i = 0; i < 2; ++i)
    for (double v : {1, 2, 3})
      for (int k = 0; k < 4; ++k) expected.push_back(v);
  expect_tensor(eval<double>("expand[shape=2x3x4](x)", {{"x", T64({3, 1}, {1, 2, 3})}}), {2, 3, 4}, expected, 0);
  expect_tensor(eval<double>("expand[shape=2x2](x)", {{"x", T64({2}, {5, 6})}}), {2, 2}, {5, 6, 5, 6}, 0);
  expect_tensor(eval<double>("expand[shape=2x3](x)", {{"x", T64({2, 3}, {1, 2, 3, 4, 5, 6})}}), {2, 3}, {1, 2, 3, 4, 5, 6}, 0);
  expect_ints(eval_values<double>("expand[shape=2x2](x)", {{"x", I64({2, 1}, {7, -8})}}), DType::kInt64, {2, 2},
              {7, 7, -8, -8});
}

TEST(Layout, PadWithAValueOnTwoAxes) {
  // pads = begins (1 row, 0 columns) then ends (0 rows, 2 columns), value 9.
  expect_tensor(eval<double>("pad[pads=1x0x0x2, value=9](x)", {{"x", iota({2, 2})}}), {3, 4},
                {9, 9, 9, 9, 1, 2, 9, 9, 3, 4, 9, 9}, 0);
  // Default value 0; a column before, a row after.
  expect_tensor(eval<double>("pad[pads=0x1x1x0](x)", {{"x", iota({2, 2})}}), {3, 3}, {0, 1, 2, 0, 3, 4, 0, 0, 0}, 0);
  expect_tensor(eval<double>("pad[pads=2x1, value=-1.5](x)", {{"x", T64({1}, {7})}}), {4}, {-1.5, -1.5, 7, -1.5}, 0);
  expect_ints(eval_values<double>("pad[pads=1x1x1x1, value=9](x)", {{"x", I64({1, 1}, {5})}}), DType::kInt64, {3, 3},
              {9, 9, 9, 9, 5, 9, 9, 9, 9});
}

TEST(Layout, Int64SliceTransposeConcat) {
  const std::map<std::string, Value<double>> x{{"x", I64({2, 3}, {1, 2, 3, 4, 5, 6})}};
  expect_ints(eval_values<double>("slice[starts=0x2, ends=2x-1, steps=1x-2](x)", x), DType::kInt64, {2, 2}, {3, 1, 6, 4});
  expect_ints(eval_values<double>("transpose(x)", x), DType::kInt64, {3, 2}, {1, 4, 2, 5, 3, 6});
  expect_ints(eval_values<double>("concat[axis=0](x, x)", x), DType::kInt64, {4, 3}, {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6});
  expect_ints(eval_values<double>("reshape[shape=3x2](x)", x), DType::kInt64, {3, 2}, {1, 2, 3, 4, 5, 6});
  expect_ints(eval_values<double>("split[axis=1, sizes=2x1](x).1", x), DType::kInt64, {2, 1}, {3, 6});
}

// --- gather ---------------------------------------------------------------------

TEST(Gather, EmbeddingLookupAlongAxis0) {
  // A 4x2 table; 2x2 indices give 2x2x2 rows.
  const Value<double> table = Floats({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  expect_floats(eval_values<double>("gather(d, i)", {{"d", table}, {"i", I64({2, 2}, {3, 0, 1, 1})}}), {2, 2, 2},
                {30, 31, 0, 1, 10, 11, 10, 11}, 0);
  // A scalar index drops the axis.
  expect_floats(eval_values<double>("gather(d, i)", {{"d", table}, {"i", I64({}, {2})}}), {2}, {20, 21}, 0);
}

TEST(Gather, AlongAxis1WithNegativeIndices) {
  const Value<double> d = Floats({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_floats(eval_values<double>("gather[axis=1](d, i)", {{"d", d}, {"i", I64({2}, {2, 0})}}), {2, 2}, {3, 1, 6, 4}, 0);
  // -1 is the last, -3 the first.
  expect_floats(eval_values<double>("gather[axis=1](d, i)", {{"d", d}, {"i", I64({3}, {-1, 1, -3})}}), {2, 3},
                {3, 2, 1, 6, 5, 4}, 0);
  expect_ints(eval_values<double>("gather(d, i)", {{"d", I64({3}, {7, 8, 9})}, {"i", I64({3}, {2, 2, -3})}}), DType::kInt64,
              {3}, {9, 9, 7});
}

TEST(Gather, OutOfRangeIndexRaises) {
  const Value<double> d = Floats({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  test::expect_error<std::out_of_range>([&] { eval_values<double>("gather(d, i)", {{"d", d}, {"i", I64({2}, {0, 4})}}); },
                                        "gather: index 4 out of range for an axis of size 4");
  test::expect_error<std::out_of_range>([&] { eval_values<double>("gather(d, i)", {{"d", d}, {"i", I64({1}, {-5})}}); },
                                        "index -5 out of range");
}

TEST(Gather, ElementsAlongAxis0And1) {
  // axis 0: out[i][j] = d[idx[i][j]][j] over d = [[1, 2], [3, 4], [5, 6]]
  expect_floats(eval_values<double>("gather_elements(d, i)", {{"d", Floats({3, 2}, {1, 2, 3, 4, 5, 6})},
                                                              {"i", I64({2, 2}, {2, 0, 1, 2})}}),
                {2, 2}, {5, 2, 3, 6}, 0);
  // axis 1: out[i][j] = d[i][idx[i][j]] over d = [[1, 2, 3], [4, 5, 6]], -1 the last
  expect_floats(eval_values<double>("gather_elements[axis=1](d, i)", {{"d", Floats({2, 3}, {1, 2, 3, 4, 5, 6})},
                                                                      {"i", I64({2, 2}, {2, 0, -1, 1})}}),
                {2, 2}, {3, 1, 6, 5}, 0);
  // Indices may be smaller than the data outside the axis.
  expect_floats(eval_values<double>("gather_elements[axis=1](d, i)", {{"d", Floats({2, 3}, {1, 2, 3, 4, 5, 6})},
                                                                      {"i", I64({1, 4}, {0, 0, 2, 1})}}),
                {1, 4}, {1, 1, 3, 2}, 0);
  test::expect_error<std::out_of_range>(
      [] {
        eval_values<double>("gather_elements[axis=1](d, i)", {{"d", Floats({2, 3}, {1, 2, 3, 4, 5, 6})}, {"i", I64({1, 1}, {3})}});
      },
      "gather_elements: index 3 out of range for an axis of size 3");
}

TEST(Precision, NewOperatorsFloat32AgreesWithFloat64) {
  const Graph g = build_graph(
      "add(softmax[axis=1](mul(x, y)), layer_norm[axis=1](hard_swish(sub(x, y)), s, b))",
      {{"x", {3, 5}}, {"y", {5}}, {"s", {5}}, {"b", {5}}});
  const auto in64 = random_inputs<double>(g, 7);
  std::vector<Tensor<float>> in32;
  for (const auto& t : in64) in32.push_back(convert<float>(t));
  const auto out64 = evaluate<double>(g, std::span<const Tensor<double>>(in64)).at(0);
  const auto out32 = evaluate<float>(g, std::span<const Tensor<float>>(in32)).at(0);
  for (size_t i = 0; i < out64.data.size(); ++i) EXPECT_NEAR(out32.data[i], out64.data[i], 1e-4);
}

// --- operator bugs found by review, fixed (regression tests) --------------------------

// FIXED (ir/ops/normalization.cpp, softmax_kernel): along an axis of size 0 the
// kernel still reads x.data[base] to find the maximum, past the end of the
// empty input; softmax[axis=0] of a 0x3 tensor crashes with SIGSEGV instead of
// returning the empty 0x3 result.
TEST(Normalization, SoftmaxAlongAnEmptyAxis) {
  expect_tensor(eval<double>("softmax[axis=0](x)", {{"x", Tensor<double>({0, 3})}}), {0, 3}, {});
}

// FIXED (ir/ops/elementwise.cpp, div_kernel): integer division guards only
// against a zero divisor; INT64_MIN / -1 overflows and kills the process with
// SIGFPE on x86-64 instead of raising std::domain_error like division by zero.
TEST(Elementwise, IntegerDivOverflowRaises) {
  test::expect_error<std::domain_error>(
      [] {
        eval_values<double>("div(a, b)", {{"a", I64({1}, {std::numeric_limits<int64_t>::min()})}, {"b", I64({1}, {-1})}});
      },
      "div:");
}

// FIXED (ir/op_table.cpp, OpDef::infer, and the int64 kernels): bool inputs are
// accepted by every operator with an int64 kernel, including arithmetic, and
// the result is typed bool although its values leave {0, 1} (ir/tensor.h:
// "bools 0 or 1"): add(true, true) is a bool 2, neg(true) a bool -1,
// reduce_sum of [true, true] a bool 2, pad[value=5] of a bool tensor fills 5.
// Expected: arithmetic on bool is a type error (as in ONNX), or at least the
// result is not a bool.
TEST(Elementwise, ArithmeticRejectsBoolInputs) {
  const ShapeMap shapes{{"a", {2}}, {"b", {2}}};
  const DTypeMap bools{{"a", DType::kBool}, {"b", DType::kBool}};
  for (const char* text : {"add(a, b)", "sub(a, b)", "mul(a, b)", "div(a, b)", "neg(a)", "abs(a)", "reduce_sum[axes=0](a)"})
    test::expect_error<ParseError>([&] { build_graph(text, shapes, bools); }, "bool");
  test::expect_error<ParseError>([&] { build_graph("pad[pads=1x0, value=5](a)", shapes, bools); }, "pad");
}

// FIXED (ir/ops/compare.cpp, cast_kernel): the range check |v| < 9.2e18 rejects
// floats that fit int64: 9.22e18 (< 2^63 - 1) and -2^63 (== INT64_MIN) raise
// "does not fit int64".
TEST(Cast, EveryFloatThatFitsInt64Converts) {
  expect_ints(eval_values<double>("cast[to=int64](x)", {{"x", Floats({2}, {9.22e18, -9223372036854775808.0})}}),
              DType::kInt64, {2}, {9220000000000000000, std::numeric_limits<int64_t>::min()});
}

}  // namespace
}  // namespace tgr
