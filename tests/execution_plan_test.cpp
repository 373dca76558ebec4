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
