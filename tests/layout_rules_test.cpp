// The layout rules of rules/generated.rules (transposes of attention and of
// ConvNeXt-style blocks, biases next to their products) applied to small
// model-shaped graphs: each instance is proved at the graph's shapes, the
// transposes go away or become views, and the outputs stay the same.
#include <gtest/gtest.h>

#include "optimizer/backtracking_search.h"
#include "optimizer/cost_model.h"
#include "optimizer/fold_constants.h"
#include "optimizer/instance.h"
#include "optimizer/matcher.h"
#include "optimizer/rewrite.h"
#include "tests/optimizer_test_util.h"
#include "verifier/axioms.h"

namespace tgr::optimizer {
namespace {

using testing::count_ops;
using testing::directions_of;
using testing::weight;

using testing::default_rules;
using testing::proof_options;
using testing::prover;

void expect_same_outputs(const Graph& a, const Graph& b) { testing::expect_same_outputs(a, b, 1e-4); }

// The best graph the backtracking search finds with the default rules under
// the roofline, folded as the exporter folds it.
Graph optimized(const Graph& g, double* initial_cost = nullptr, double* best_cost = nullptr) {
  AnalyticCostModel cost;
  InstanceProver instances(prover(), proof_options());
  BacktrackingOptions options;
  options.alpha = 1.05;
  options.budget = 200;
  options.timeout_s = 60;
  const BacktrackingResult r = backtracking_search(g, default_rules(), cost, instances, options);
  if (initial_cost) *initial_cost = r.initial_cost;
  if (best_cost) *best_cost = r.best_cost;
  return fold_constants(r.best);
}

// `rule` (a rule of rules/generated.rules, left to right) applied once to `g`:
// its instance at g's shapes must be proved.
Graph rewritten_once(const Graph& g, const std::string& rule, const std::string& shapes) {
  const std::vector<DirectedRule> directions = directions_of(rule, shapes);
  EXPECT_FALSE(directions.empty());
  if (directions.empty()) return g;
  const DirectedRule& forward = directions[0];
  const auto matches = find_matches(GraphIndex(g), forward);
  EXPECT_FALSE(matches.empty()) << rule;
  if (matches.empty()) return g;
  const auto instance = instantiate(g, forward, matches[0]);
  EXPECT_TRUE(instance) << rule;
  if (!instance) return g;
  InstanceProver instances(prover(), proof_options());
  EXPECT_TRUE(instances.proved(*instance)) << instance->text;
  return apply_instance(g, matches[0], *instance);
}

ValueRef transpose(Graph& g, ValueRef x, std::vector<int64_t> perm) {
  return g.apply("transpose", {x}, {{"perm", std::move(perm)}});
}

// GPT-2's key: split into heads (0x2x1x3), then transposed for Q K^T
// (0x1x3x2). The two transposes become one (0x2x3x1).
TEST(LayoutRules, TheKeysTwoTransposesOfGpt2BecomeOne) {
  Graph g;
  const ValueRef k = g.add_input("k", {1, 32, 2, 16});
  g.add_output(transpose(g, transpose(g, k, {0, 2, 1, 3}), {0, 1, 3, 2}), "kt");
  double before = 0, after = 0;
  const Graph best = optimized(g, &before, &after);
  EXPECT_EQ(count_ops(best, "transpose"), 1);
  EXPECT_LT(after, before);
  expect_same_outputs(g, best);
}

// NCHW -> NHWC, an elementwise function, NHWC -> NCHW: the transposes move
// through erf, meet and cancel.
TEST(LayoutRules, NhwcRoundTripAroundAnElementwiseOperatorCancels) {
  Graph g;
  const ValueRef x = g.add_input("x", {1, 8, 6, 6});
  g.add_output(transpose(g, g.apply("erf", {transpose(g, x, {0, 2, 3, 1})}), {0, 3, 1, 2}), "y");
  const Graph best = optimized(g);
  EXPECT_EQ(count_ops(best, "transpose"), 0);
  EXPECT_EQ(count_ops(best, "erf"), 1);
  expect_same_outputs(g, best);
}

// ViT's sequence-first attention at batch 1: [1, S, E] -> [S, 1, E] moves
// only an axis of size 1, so it is a reshape (a view), not a copy.
TEST(LayoutRules, ATransposeOfAnAxisOfSizeOneIsAReshape) {
  Graph g;
  const ValueRef x = g.add_input("x", {1, 17, 64});
  g.add_output(g.apply("relu", {transpose(g, x, {1, 0, 2})}), "y");
  const Graph best = optimized(g);
  EXPECT_EQ(count_ops(best, "transpose"), 0);
  EXPECT_EQ(count_ops(best, "reshape"), 1);
  expect_same_outputs(g, best);
}

// ConvNeXt's pointwise Linear on NHWC, as a MatMul of rank 4 imports
// (permute, flatten the rows, product, unflatten), is a 1 x 1 convolution on
// NCHW followed by the permute: the permute moves from the input to the
// output, where it can meet the block's permute back.
TEST(LayoutRules, APointwiseLinearOnNhwcIsAOneByOneConvolution) {
  Graph g;
  const ValueRef x = g.add_input("x", {1, 8, 5, 5});
  const ValueRef rows = g.apply("reshape", {transpose(g, x, {0, 2, 3, 1})}, {{"shape", std::vector<int64_t>{25, 8}}});
  const ValueRef y = g.apply("matmul", {rows, weight(g, {8, 32}, 1)});
  g.add_output(transpose(g, g.apply("reshape", {y}, {{"shape", std::vector<int64_t>{1, 5, 5, 32}}}), {0, 3, 1, 2}),
               "y");
  const Graph conv =
      rewritten_once(g,
                     "reshape[shape=1x3x4x5](matmul(reshape[shape=12x2](transpose[perm=0x2x3x1](i0)), "
                     "w0)) => transpose[perm=0x2x3x1](conv2d(i0, reshape[shape=5x2x1x1](transpose(w0))))",
                     "i0=1x2x3x4,w0=2x5");
  EXPECT_EQ(count_ops(conv, "matmul"), 0);
  EXPECT_EQ(count_ops(conv, "conv2d"), 1);
  expect_same_outputs(g, conv);
  // The permute now follows the convolution and cancels with the one back.
  const Graph cancelled =
      rewritten_once(conv, "transpose[perm=0x3x1x2](transpose[perm=0x2x3x1](i0)) => i0", "i0=1x2x3x4");
  EXPECT_EQ(count_ops(fold_constants(cancelled), "transpose"), 0);
  expect_same_outputs(g, cancelled);
}

// ConvNeXt's MLP without its norm, as imported: permute to NHWC, Linear,
// relu, Linear, permute back. The search writes both Linear layers as 1 x 1
// convolutions, moves the permute through relu and cancels the pair: the
// block runs on NCHW without a transpose.
TEST(LayoutRules, APointwiseMlpBetweenPermutesRunsOnNchwWithoutThem) {
  Graph g;
  const ValueRef x = g.add_input("x", {1, 8, 5, 5});
  auto reshape = [&](ValueRef v, std::vector<int64_t> shape) {
    return g.apply("reshape", {v}, {{"shape", std::move(shape)}});
  };
  const ValueRef nhwc = transpose(g, x, {0, 2, 3, 1});
  const ValueRef hidden =
      g.apply("relu", {reshape(g.apply("matmul", {reshape(nhwc, {25, 8}), weight(g, {8, 32}, 1)}), {1, 5, 5, 32})});
  const ValueRef out = reshape(g.apply("matmul", {reshape(hidden, {25, 32}), weight(g, {32, 8}, 2)}), {1, 5, 5, 8});
  g.add_output(transpose(g, out, {0, 3, 1, 2}), "y");
  double before = 0, after = 0;
  const Graph best = optimized(g, &before, &after);
  EXPECT_EQ(count_ops(best, "transpose"), 0);
  // Each Linear runs on NCHW: as a 1 x 1 convolution or as that
  // convolution's product form (conv2d_pointwise_one_image_as_matmul), the
  // two priced alike by the roofline.
  EXPECT_EQ(count_ops(best, "matmul") + count_ops(best, "conv2d"), 2);
  EXPECT_LT(after, before);
  expect_same_outputs(g, best);
}

// A Linear of rank 3 imports as reshape(matmul(reshape(x), w)) and its bias
// add after the outer reshape; the rule adds the bias next to the product,
// where the exporter writes a Gemm and the GPU runtime fuses it.
TEST(LayoutRules, ALinearsBiasMovesNextToItsProduct) {
  Graph g;
  const ValueRef x = g.add_input("x", {1, 16, 32});
  const ValueRef rows = g.apply("reshape", {x}, {{"shape", std::vector<int64_t>{16, 32}}});
  const ValueRef y = g.apply("reshape", {g.apply("matmul", {rows, weight(g, {32, 48}, 1)})},
                             {{"shape", std::vector<int64_t>{1, 16, 48}}});
  g.add_output(g.apply("add", {weight(g, {48}, 2), y}), "y");
  const Graph moved = rewritten_once(g,
                                     "add(b0, reshape[shape=1x3x5](matmul(x0, w0))) => "
                                     "reshape[shape=1x3x5](add(b0, matmul(x0, w0)))",
                                     "x0=3x4,w0=4x5,b0=5");
  bool bias_reads_product = false;
  for (int32_t i : moved.topological_order()) {
    const Node& n = moved.node(i);
    if (n.is_op() && n.op->name == "add")
      for (ValueRef in : n.inputs)
        bias_reads_product |= moved.node(in.node).is_op() && moved.node(in.node).op->name == "matmul";
  }
  EXPECT_TRUE(bias_reads_product);
  expect_same_outputs(g, moved);
}

// A 1 x 1 convolution of one image is a product of its kernel as an O x C
// matrix and the image as a C x (H * W) matrix. The reshape to H * W pixels
// is no dimension of the rule's variables: it re-derives as the product of
// the image's last two axes at the model's shapes (here 14 x 10 = 140).
TEST(LayoutRules, AOneByOneConvolutionOfOneImageIsAProduct) {
  const std::string rule =
      "conv2d(i0, k0) => reshape[shape=1x5x3x4](matmul(reshape[shape=5x2](k0), reshape[shape=2x12](i0)))";
  const std::string shapes = "i0=1x2x3x4,k0=5x2x1x1";
  Graph g;
  const ValueRef x = g.add_input("x", {1, 24, 14, 10});
  g.add_output(g.apply("relu", {g.apply("conv2d", {x, weight(g, {40, 24, 1, 1}, 1)})}), "y");
  const Graph product = rewritten_once(g, rule, shapes);
  EXPECT_EQ(count_ops(product, "conv2d"), 0);
  EXPECT_EQ(count_ops(product, "matmul"), 1);
  bool pixels_flattened = false;
  for (int32_t i : product.topological_order()) {
    const Node& n = product.node(i);
    if (n.is_op() && n.op->name == "matmul") pixels_flattened = n.output_shapes[0] == Shape{40, 140};
  }
  EXPECT_TRUE(pixels_flattened);
  expect_same_outputs(g, product);

  // Not for a batch of two images (the rows would mix images) nor for a
  // 3 x 3 kernel: the instance does not type-check or is not proved.
  for (const auto& [image, kernel] : {std::pair<Shape, Shape>{{2, 24, 14, 10}, {40, 24, 1, 1}},
                                      std::pair<Shape, Shape>{{1, 24, 14, 10}, {40, 24, 3, 3}}}) {
    Graph other;
    other.add_output(other.apply("conv2d", {other.add_input("x", image), weight(other, kernel, 1)}), "y");
    const DirectedRule forward = directions_of(rule, shapes).at(0);
    const auto matches = find_matches(GraphIndex(other), forward);
    ASSERT_EQ(matches.size(), 1u);
    const auto instance = instantiate(other, forward, matches[0]);
    InstanceProver instances(prover(), proof_options());
    EXPECT_TRUE(!instance || !instances.proved(*instance)) << instance->text;
  }
}

}  // namespace
}  // namespace tgr::optimizer
