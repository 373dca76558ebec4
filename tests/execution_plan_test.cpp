// The GPU runtime's plan, which needs no GPU: memory plan (buffers shared only
// between values whose lifetimes do not overlap), folding, fusion decisions.
#include <gtest/gtest.h>

#include <map>

#include "ir/text.h"
#include "runtime/execution_plan.h"
#include "runtime/memory_plan.h"

namespace tgr {
namespace {

bool overlap(const Lifetime& a, const Lifetime& b) { return a.first <= b.last && b.first <= a.last; }

TEST(MemoryPlan, ValuesAliveTogetherNeverShareBytes) {
  std::vector<Lifetime> values{{1000, 0, 2}, {500, 1, 3}, {1000, 3, 5}, {200, 4, 4}, {1000, 6, 7}, {3000, 2, 6}};
  const MemoryPlan plan = plan_memory(values, 256);
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(plan.offsets[i] % 256, 0);
    EXPECT_LE(plan.offsets[i] + values[i].bytes, plan.arena_bytes);
    for (size_t j = i + 1; j < values.size(); ++j)
      if (overlap(values[i], values[j])) {
        const bool disjoint = plan.offsets[i] + values[i].bytes <= plan.offsets[j] ||
                              plan.offsets[j] + values[j].bytes <= plan.offsets[i];
        EXPECT_TRUE(disjoint) << i << " and " << j;
      }
  }
  EXPECT_LT(plan.arena_bytes, plan.total_bytes);
}

TEST(MemoryPlan, AChainReusesTwoBuffers) {
  std::vector<Lifetime> chain;
  for (int i = 0; i < 10; ++i) chain.push_back({1024, i, i + 1});
  EXPECT_EQ(plan_memory(chain).arena_bytes, 2048);
}

const Task* task_with(const ExecutionPlan& plan, const Graph& g, const std::string& label) {
  for (const Task& t : plan.tasks)
    if (task_label(g, t) == label) return &t;
  return nullptr;
}

TEST(ExecutionPlan, FusesConvBiasResidualRelu) {
  const Graph g = build_graph("relu(add(add(conv2d(x, k), b), z))",
                              parse_shape_map("x=1x8x7x5,k=4x8x1x1,b=1x4x1x1,z=1x4x7x5"));
  const ExecutionPlan plan = make_execution_plan(g);
  ASSERT_EQ(plan.tasks.size(), 1u);
  const Task& t = plan.tasks[0];
  EXPECT_EQ(t.kind, Task::Kind::kConv);
  EXPECT_TRUE(t.bias && t.residual && t.relu);
  EXPECT_EQ(task_label(g, t), "conv2d+add+add+relu");
}

TEST(ExecutionPlan, ResidualWithoutReluStaysAnAdd) {
  const Graph g = build_graph("add(add(conv2d(x, k), b), z)", parse_shape_map("x=1x8x7x5,k=4x8x1x1,b=4x1x1,z=1x4x7x5"));
  const ExecutionPlan plan = make_execution_plan(g);
  ASSERT_NE(task_with(plan, g, "conv2d+add"), nullptr);
  ASSERT_NE(task_with(plan, g, "add"), nullptr);
}

TEST(ExecutionPlan, FusesElementwiseChainsButNotSharedValues) {
  // relu(x0) is read twice, so it stays a step of its own.
  const Graph g = build_graph("(mul(add(relu(x0), x1), sigmoid(x2)), tanh(relu(x0)))", parse_shape_map("x0=4x8,x1=8,x2=4x8"));
  const ExecutionPlan plan = make_execution_plan(g);
  EXPECT_NE(task_with(plan, g, "add+sigmoid+mul"), nullptr);
  EXPECT_NE(task_with(plan, g, "relu"), nullptr);
  EXPECT_NE(task_with(plan, g, "tanh"), nullptr);
  const ExecutionPlan unfused = make_execution_plan(g, PlanOptions{false});
  EXPECT_EQ(unfused.tasks.size(), 5u);
}

TEST(ExecutionPlan, FoldsConstantsAndAliasesReshape) {
  const Graph g = build_graph("relu(reshape[shape=4x3](add(x, matmul(eye[n=3](), ones[shape=3x4]()))))",
                              parse_shape_map("x=3x4"));
  const ExecutionPlan plan = make_execution_plan(g);
  EXPECT_EQ(plan.folded_nodes, 3);
  ASSERT_EQ(plan.tasks.size(), 3u);  // add, reshape (alias), relu
  EXPECT_EQ(plan.tasks[1].kind, Task::Kind::kAlias);
  const ValueSlot& before = plan.slot({plan.tasks[0].root(), 0});
  const ValueSlot& after = plan.slot({plan.tasks[1].root(), 0});
  EXPECT_EQ(before.offset, after.offset);
  EXPECT_EQ(before.home, after.home);
  EXPECT_EQ(plan.constants.size(), 1u);  // the folded product
}

TEST(ExecutionPlan, AsymmetricConvPaddingGetsScratch) {
  const Graph g = build_graph("conv2d[stride=2x2](x, k)", parse_shape_map("x=1x3x8x6,k=4x3x3x3"));
  const ExecutionPlan plan = make_execution_plan(g);
  ASSERT_EQ(plan.tasks.size(), 1u);
  EXPECT_GT(plan.tasks[0].scratch_bytes, 0);
  EXPECT_GE(plan.scratch_offsets[0], 0);
}

}  // namespace
}  // namespace tgr

namespace tgr {
namespace {

// ResNet's downsampling block: both convolutions end in the same residual
// add; only one task may take it.
TEST(ExecutionPlan, TwoConvChainsNeverClaimTheSameAdd) {
  const Graph g = build_graph("relu(add(add(conv2d(x, k0), b0), add(conv2d(x, k1), b1)))",
                              parse_shape_map("x=1x8x7x5,k0=4x8x1x1,k1=4x8x3x3,b0=1x4x1x1,b1=1x4x1x1"));
  const ExecutionPlan plan = make_execution_plan(g);
  std::map<int32_t, int> owners;
  for (const Task& t : plan.tasks)
    for (int32_t n : t.nodes) ++owners[n];
  for (const auto& [node, count] : owners) EXPECT_EQ(count, 1) << "node " << node;
  ASSERT_EQ(plan.tasks.size(), 2u);
  EXPECT_TRUE(plan.tasks[1].residual && plan.tasks[1].relu);
}

}  // namespace
}  // namespace tgr

// --- views (runtime/views.h) ----------------------------------------------------------

namespace tgr {
namespace {

TEST(Views, ReshapeOfAStridedMatrixKeepsItsRowStride) {
  // A [128, 768] piece of a [128, 2304] product, as BERT's heads see it.
  const auto s = reshape_strides({128, 768}, {2304, 1}, {1, 128, 12, 64});
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, (std::vector<int64_t>{128 * 2304, 2304, 64, 1}));
  // A transposed 4x6 read as 2x2x6: rows cut in two, columns kept.
  EXPECT_EQ(reshape_strides({4, 6}, {1, 4}, {2, 2, 6}), (std::vector<int64_t>{2, 1, 4}));
  // Flattening it would need one stride for two unrelated axes: a copy.
  EXPECT_FALSE(reshape_strides({4, 6}, {1, 4}, {24}));
  EXPECT_FALSE(reshape_strides({3, 4}, {8, 1}, {12}));
  // Row-major in, row-major out.
  EXPECT_EQ(reshape_strides({2, 3, 4}, {12, 4, 1}, {6, 4}), (std::vector<int64_t>{4, 1}));
}

const ValueRef piece(const Graph& g, int k) {
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (g.nodes()[i].is_op() && g.nodes()[i].op->name == "split") return {static_cast<int32_t>(i), k};
  return {};
}

TEST(Views, MergedProductPiecesAreReadInPlaceByElementwiseKernels) {
  const Graph g = build_graph(
      "(add(split[axis=1, sizes=8x8x8](matmul(x, w)).0, b0), add(split[axis=1, sizes=8x8x8](matmul(x, w)).1, b1),"
      " relu(split[axis=1, sizes=8x8x8](matmul(x, w)).2))",
      parse_shape_map("x=16x32,w=32x24,b0=8,b1=8"));
  const ExecutionPlan plan = make_execution_plan(g);
  const Task* split = task_with(plan, g, "split");
  ASSERT_NE(split, nullptr);
  EXPECT_EQ(split->kind, Task::Kind::kAlias);
  const ValueSlot& product = plan.slot(g.node(piece(g, 0).node).inputs[0]);
  for (int k = 0; k < 3; ++k) {
    const ValueSlot& s = plan.slot(piece(g, k));
    EXPECT_TRUE(s.view);
    EXPECT_EQ(s.offset, product.offset + k * 8 * 4) << k;
    EXPECT_EQ(s.strides, (std::vector<int64_t>{24, 1})) << k;
  }
  // The product's bytes stay untouched until the last piece is read.
  const int64_t lo = product.offset, hi = product.offset + product.bytes;
  for (const Task& t : plan.tasks) {
    if (t.kind != Task::Kind::kElementwise) continue;
    const ValueSlot& out = plan.slot({t.root(), 0});
    EXPECT_TRUE(out.offset + out.bytes <= lo || out.offset >= hi) << task_label(g, t);
  }
}

TEST(Views, ChannelPiecesOfABatchOfOneAreRowMajorForAnyReader) {
  const Graph g = build_graph("(conv2d(split[axis=1, sizes=4x4](x).0, k), softmax[axis=1](split[axis=1, sizes=4x4](x).1))",
                              parse_shape_map("x=1x8x5x5,k=2x4x3x3"));
  const ExecutionPlan plan = make_execution_plan(g);
  EXPECT_EQ(task_with(plan, g, "split")->kind, Task::Kind::kAlias);
  EXPECT_TRUE(plan.slot(piece(g, 1)).view);
  EXPECT_TRUE(plan.slot(piece(g, 1)).strides.empty());
  EXPECT_EQ(plan.slot(piece(g, 1)).offset - plan.slot(piece(g, 0)).offset, 4 * 25 * 4);
}

TEST(Views, ReadersThatNeedRowMajorGetACopy) {
  // Strided pieces: softmax and a graph output cannot read them in place; add can.
  const Graph g = build_graph(
      "(softmax[axis=1](split[axis=1, sizes=4x4x4](x).0), add(split[axis=1, sizes=4x4x4](x).1, y),"
      " split[axis=1, sizes=4x4x4](x).2)",
      parse_shape_map("x=3x12,y=4"));
  const ExecutionPlan plan = make_execution_plan(g);
  const Task* split = task_with(plan, g, "split");
  ASSERT_NE(split, nullptr);
  EXPECT_EQ(split->kind, Task::Kind::kNode);  // copies pieces 0 and 2
  EXPECT_FALSE(plan.slot(piece(g, 0)).view);
  EXPECT_TRUE(plan.slot(piece(g, 1)).view);
  EXPECT_FALSE(plan.slot(piece(g, 2)).view);
  EXPECT_TRUE(plan.slot(piece(g, 0)).strides.empty());
}

TEST(Views, AStridedPieceIsNeverFusedIntoCudnnAsResidual) {
  const Graph g = build_graph("relu(add(conv2d(x, k), split[axis=1, sizes=4x4](z).0))",
                              parse_shape_map("x=2x8x5x5,k=4x8x1x1,z=2x8x5x5"));
  const ExecutionPlan plan = make_execution_plan(g);
  EXPECT_NE(task_with(plan, g, "add+relu"), nullptr);
  EXPECT_TRUE(plan.slot(piece(g, 0)).view);
  EXPECT_FALSE(plan.slot(piece(g, 0)).strides.empty());
}

TEST(Views, AReshapeNoStridesCanExpressCopies) {
  const Graph g = build_graph("relu(reshape[shape=12](split[axis=1, sizes=4x4](x).1))", parse_shape_map("x=3x8"));
  const ExecutionPlan plan = make_execution_plan(g);
  EXPECT_TRUE(plan.slot(piece(g, 1)).view);
  const Task* reshape = task_with(plan, g, "reshape");
  ASSERT_NE(reshape, nullptr);
  EXPECT_EQ(reshape->kind, Task::Kind::kNode);
  EXPECT_FALSE(plan.slot({reshape->root(), 0}).view);
}

TEST(Views, UnalignedPiecesAreNotHandedToCublas) {
  // Piece 1 starts 5 floats (20 bytes) in: cuBLAS gets a copy; at 8 floats it reads in place.
  const Graph odd = build_graph("matmul(split[axis=1, sizes=5x4](x).1, w)", parse_shape_map("x=6x9,w=4x3"));
  EXPECT_FALSE(make_execution_plan(odd).slot(piece(odd, 1)).view);
  const Graph even = build_graph("matmul(split[axis=1, sizes=8x4](x).1, w)", parse_shape_map("x=6x12,w=4x3"));
  EXPECT_TRUE(make_execution_plan(even).slot(piece(even, 1)).view);
}

}  // namespace
}  // namespace tgr
