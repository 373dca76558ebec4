// Float semantics of every operator against values computed by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"

namespace tgr {
namespace {

using test::eval;
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

}  // namespace
}  // namespace tgr
