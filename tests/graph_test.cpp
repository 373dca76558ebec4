#include <gtest/gtest.h>

#include <limits>

#include "test_util.h"

namespace tgr {
namespace {

using Ints = std::vector<int64_t>;

TEST(Graph, NodesComeAfterTheirInputs) {
  Graph g;
  ValueRef x = g.add_input("x", {2, 3});
  ValueRef w = g.add_input("w", {3, 4});
  ValueRef y = g.apply("matmul", {x, w});
  ValueRef dead = g.apply("relu", {x});
  ValueRef z = g.apply("relu", {y});
  g.add_output(z, "out");
  EXPECT_EQ(g.shape(z), (Shape{2, 4}));
  EXPECT_EQ(g.topological_order(), (std::vector<int32_t>{x.node, w.node, y.node, z.node}));
  EXPECT_EQ(g.num_ops(), 2);  // the dead relu is not counted
  EXPECT_EQ(g.use_counts()[dead.node][0], 0);
  EXPECT_EQ(g.output_names()[0], "out");
  EXPECT_THROW(g.add_input("x", {1}), std::invalid_argument);
  EXPECT_THROW(g.apply("relu", {ValueRef{42, 0}}), std::out_of_range);
  EXPECT_THROW(g.apply("matmul", {w, x}), ShapeError);
}

// An empty tensor holds no element, but kernels compute strides over its
// other dimensions: a shape whose nonzero dimensions overflow int64 is
// refused wherever it would enter a graph (the onnx_import fuzzer found a
// concat of 0 x 2^61 x 65 overflowing its inner stride).
TEST(Graph, ShapesWhoseStridesOverflowAreRefused) {
  const int64_t huge = int64_t{1} << 61;
  Graph g;
  EXPECT_THROW(g.add_input("x", {0, huge, 65}), ShapeError);
  const ValueRef empty = g.add_input("empty", {0, huge, 2});  // strides fit: an empty tensor like any other
  const ValueRef wide = g.add_input("wide", {0, huge, 2});
  try {
    g.apply("concat", {empty, wide}, {{"axis", int64_t{2}}});  // 0 x 2^61 x 4: its stride 2^63 does not fit
    ADD_FAILURE() << "expected a ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("concat: shape 0x2305843009213693952x4 has dimensions whose product exceeds"),
              std::string::npos)
        << e.what();
  }
  // A slice over such a dimension counts its elements without overflow (the
  // fuzzer: end - start + step - 1 past int64).
  const int64_t top = std::numeric_limits<int64_t>::max() - 1;
  const ValueRef tall = g.add_input("tall", {0, top});
  const ValueRef sliced = g.apply("slice", {tall}, {{"starts", Ints{0, 0}}, {"ends", Ints{0, top}}, {"steps", Ints{1, 7}}});
  EXPECT_EQ(g.shape(sliced), (Shape{0, top / 7 + 1}));
  EXPECT_TRUE(indexable({0, huge, 3}));
  EXPECT_FALSE(indexable({huge, 4}));
  EXPECT_TRUE(indexable({}));
}

TEST(Graph, StructuralHashIsAboutStructureNotConstructionOrder) {
  const ShapeMap shapes{{"a", {4, 4}}, {"b", {4, 4}}};
  const Graph g1 = build_graph("add(matmul(a, b), relu(a))", shapes);
  Graph g2;  // built by hand, in a different order, with a dead node
  ValueRef a = g2.add_input("a", {4, 4});
  ValueRef b = g2.add_input("b", {4, 4});
  ValueRef r = g2.apply("relu", {a});
  g2.apply("tanh", {b});
  ValueRef m = g2.apply("matmul", {a, b});
  g2.add_output(g2.apply("add", {m, r}));
  EXPECT_EQ(g1.structural_hash(), g2.structural_hash());
  EXPECT_NE(g1.structural_hash(), build_graph("add(matmul(b, a), relu(a))", shapes).structural_hash());
  EXPECT_NE(build_graph("conv2d(x, k)", {{"x", {1, 2, 5, 5}}, {"k", {2, 2, 3, 3}}}).structural_hash(),
            build_graph("conv2d[pad=valid](x, k)", {{"x", {1, 2, 5, 5}}, {"k", {2, 2, 3, 3}}}).structural_hash());
  // The same expression over inputs of other shapes is another graph.
  EXPECT_NE(build_graph("relu(a)", {{"a", {2}}}).structural_hash(), build_graph("relu(a)", {{"a", {3}}}).structural_hash());
}

TEST(Graph, EqualSubexpressionsAreShared) {
  const Graph g = build_graph("add(matmul(a, b), matmul(a, b))", {{"a", {2, 2}}, {"b", {2, 2}}});
  EXPECT_EQ(g.num_ops(), 2);
  const Node& add = g.node(g.outputs()[0].node);
  EXPECT_EQ(add.inputs[0], add.inputs[1]);
  // add_op never shares: an imported model may hold two equal nodes.
  Graph h;
  ValueRef a = h.add_input("a", {2});
  h.add_output(h.apply("relu", {a}));
  h.add_output(h.apply("relu", {a}));
  EXPECT_EQ(h.num_ops(), 2);
}

TEST(Graph, SplitHasOneValuePerOutput) {
  Graph g;
  ValueRef x = g.add_input("x", {6, 2});
  const OpDef& split = OpTable::instance().get("split");
  auto parts = g.add_op(split, split.make_params({{"axis", int64_t{0}}, {"sizes", Ints{1, 2, 3}}}), {x});
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(g.shape(parts[2]), (Shape{3, 2}));
  EXPECT_NE(g.hash(parts[0]), g.hash(parts[1]));
  g.add_output(parts[2]);
  EXPECT_EQ(to_text(g), "split[axis=0, sizes=1x2x3](x).2");
}

}  // namespace
}  // namespace tgr

namespace tgr {
namespace {

TEST(Graph, ConstantsAreLeavesInEveryDomain) {
  Graph g;
  ValueRef x = g.add_input("x", {2});
  ValueRef c = g.add_constant(ConstantValue(Tensor<float>({2}, {0.5f, 3.0f})), "bias");
  g.add_output(g.apply("add", {x, c}));
  EXPECT_EQ(to_text(g), "add(x, bias)");
  const auto f32 = evaluate<float>(g, {{"x", Tensor<float>({2}, {1, 1})}});
  test::expect_tensor(f32[0], {2}, {1.5, 4});
  const auto f64 = evaluate<double>(g, {{"x", Tensor<double>({2}, {1, 1})}});
  test::expect_tensor(f64[0], {2}, {1.5, 4});
  // In the field an integer constant is its residue; others a fixed element.
  const auto field = evaluate<Fp>(g, {{"x", Tensor<Fp>({2}, {Fp(1), Fp(1)})}});
  EXPECT_EQ(field[0].data[1], Fp(4));
  EXPECT_EQ(field[0].data[0], Fp(1) + field_from_real(0.5));
  // Equal constants hash equally; different data does not.
  Graph h;
  ValueRef c1 = h.add_constant(ConstantValue(Tensor<float>({2}, {0.5f, 3.0f})));
  ValueRef c2 = h.add_constant(ConstantValue(Tensor<float>({2}, {0.5f, 3.0f})));
  ValueRef c3 = h.add_constant(ConstantValue(Tensor<float>({2}, {0.5f, 4.0f})));
  EXPECT_EQ(h.hash(c1), h.hash(c2));
  EXPECT_NE(h.hash(c1), h.hash(c3));
}

TEST(Graph, IntegerValuesUseTheInt64Kernels) {
  Graph g;
  ValueRef a = g.add_input("a", {2, 2}, DType::kInt64);
  ValueRef b = g.add_input("b", {2}, DType::kInt64);
  ValueRef s = g.apply("add", {a, b});
  EXPECT_EQ(g.dtype(s), DType::kInt64);
  g.add_output(g.apply("transpose", {s}));
  // Large integers stay exact even when the evaluation domain is float32.
  const int64_t big = (int64_t{1} << 40) + 1;
  std::vector<Value<float>> in{Value<float>(DType::kInt64, Tensor<int64_t>({2, 2}, {big, 2, 3, 4})),
                               Value<float>(DType::kInt64, Tensor<int64_t>({2}, {10, 20}))};
  const auto out = evaluate_values<float>(g, in);
  ASSERT_EQ(out[0].dtype, DType::kInt64);
  EXPECT_EQ(out[0].ints.data, (std::vector<int64_t>{big + 10, 13, 22, 24}));
  // Mixing element types, or ints where only floats are defined, is a shape error.
  ValueRef f = g.add_input("f", {2});
  test::expect_error<ShapeError>([&] { g.apply("add", {b, f}); }, "add: inputs must have one element type, got int64 and float");
  test::expect_error<ShapeError>([&] { g.apply("relu", {b}); }, "relu: defined on float values only, got int64");
  test::expect_error<std::invalid_argument>([&] { evaluate<float>(g, std::span<const Tensor<float>>{}); }, "has 3 inputs");
}

}  // namespace
}  // namespace tgr
