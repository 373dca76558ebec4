#include <gtest/gtest.h>

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
