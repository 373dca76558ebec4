// Scaled-dot-product attention as one step of the GPU plan (runtime/attention.h):
// which graphs are recognised, which are not, and how the kernel reads the
// operands (strides through head splits, transposes and grouped-query
// expands). No GPU: tests/gpu/attention_test.cpp runs the fused step.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "ir/text.h"
#include "runtime/attention.h"
#include "runtime/execution_plan.h"
#include "runtime/step_signature.h"
#include "tests/attention_graphs.h"

namespace tgr {
namespace {

std::vector<const Task*> attention_tasks(const ExecutionPlan& plan) {
  std::vector<const Task*> out;
  for (const Task& t : plan.tasks)
    if (t.kind == Task::Kind::kAttention) out.push_back(&t);
  return out;
}

int running_steps(const ExecutionPlan& plan) {
  return static_cast<int>(
      std::count_if(plan.tasks.begin(), plan.tasks.end(), [](const Task& t) { return !step_is_free(t); }));
}

TEST(AttentionPlan, EveryVariantIsOneStep) {
  using test::AttentionMask;
  using test::AttentionScale;
  for (AttentionScale scale : {AttentionScale::kQueryAndKey, AttentionScale::kScoresMul, AttentionScale::kScoresDiv})
    for (AttentionMask mask : {AttentionMask::kNone, AttentionMask::kCausal, AttentionMask::kPadding,
                               AttentionMask::kSquare, AttentionMask::kMaskedRow})
      for (bool guard : {false, true})
        for (int64_t hkv : {4, 2, 1}) {
          test::AttentionVariant a;
          a.scale = scale;
          a.mask = mask;
          a.nan_guard = guard;
          a.Hkv = hkv;
          const Graph g = test::attention_variant(a);
          const ExecutionPlan plan = make_execution_plan(g);
          const auto found = attention_tasks(plan);
          const std::string what = "scale " + std::to_string(static_cast<int>(scale)) + " mask " +
                                   std::to_string(static_cast<int>(mask)) + " guard " + std::to_string(guard) +
                                   " Hkv " + std::to_string(hkv);
          ASSERT_EQ(found.size(), 1u) << what;
          const AttentionMatch& m = *found[0]->attention;
          EXPECT_EQ(m.scales.size(), scale == AttentionScale::kQueryAndKey ? 2u : 1u) << what;
          EXPECT_EQ(m.mask.has_value(), mask != AttentionMask::kNone) << what;
          EXPECT_EQ(m.nan_guard, guard) << what;
          EXPECT_EQ(m.batch, 4);
          EXPECT_EQ(m.rows, 16);
          EXPECT_EQ(m.head_dim, 16);
          // q, k and v are read straight from the graph inputs: head splits,
          // transposes and the grouped-query expand are strides, and the
          // merged heads are written in place (B = 1): one step runs.
          for (const AttentionOperand* o : {&m.q, &m.k, &m.v}) EXPECT_TRUE(g.node(o->source.node).is_input()) << what;
          EXPECT_EQ(running_steps(plan), 1) << what;
          // Without fusing attention: products, softmax and elementwise steps.
          PlanOptions off;
          off.attention = false;
          EXPECT_GE(running_steps(make_execution_plan(g, off)), 3) << what;
        }
}

TEST(AttentionPlan, BatchesAndOddSizes) {
  for (const test::AttentionVariant& a :
       {test::AttentionVariant{.B = 2, .H = 3, .Hkv = 3, .S = 7, .T = 7, .D = 5, .Dv = 5},
        test::AttentionVariant{.B = 3, .H = 6, .Hkv = 2, .S = 9, .T = 13, .D = 80, .Dv = 80},
        test::AttentionVariant{.B = 1, .H = 12, .Hkv = 12, .S = 197, .T = 197, .D = 64, .Dv = 64},
        test::AttentionVariant{.B = 1, .H = 2, .Hkv = 2, .S = 5, .T = 5, .D = 128, .Dv = 32}}) {
    const Graph g = test::attention_variant(a);
    const ExecutionPlan plan = make_execution_plan(g);
    const auto found = attention_tasks(plan);
    ASSERT_EQ(found.size(), 1u) << "B " << a.B << " D " << a.D;
    EXPECT_EQ(found[0]->attention->batch, a.B * a.H);
    EXPECT_EQ(found[0]->attention->keys, a.T);
    EXPECT_EQ(found[0]->attention->value_dim, a.Dv);
  }
}

TEST(AttentionPlan, WhatIsNotAttentionStaysUnfused) {
  auto count = [](const Graph& g) { return attention_tasks(make_execution_plan(g)).size(); };
  // Head dimensions above the kernel's 128.
  EXPECT_EQ(count(test::attention_variant({.H = 2, .Hkv = 2, .S = 4, .T = 4, .D = 256, .Dv = 256})), 0u);
  // The softmax over another axis than the keys.
  const std::string scores = "batch_matmul(q, k)";
  EXPECT_EQ(count(build_graph("batch_matmul(softmax[axis=1](" + scores + "), v)",
                              parse_shape_map("q=2x6x4,k=2x4x6,v=2x6x4"))),
            0u);
  EXPECT_EQ(count(build_graph("batch_matmul(softmax[axis=2](" + scores + "), v)",
                              parse_shape_map("q=2x6x4,k=2x4x6,v=2x6x4"))),
            1u);
  // A scale that is no constant (a graph input): not folded into the step.
  EXPECT_EQ(count(build_graph("batch_matmul(softmax[axis=2](mul(" + scores + ", c)), v)",
                              parse_shape_map("q=2x6x4,k=2x4x6,v=2x6x4,c=1"))),
            0u);
  // The probabilities also a graph output: they must be written.
  EXPECT_EQ(count(build_graph("(softmax[axis=2](" + scores + "), batch_matmul(softmax[axis=2](" + scores + "), v))",
                              parse_shape_map("q=2x6x4,k=2x4x6,v=2x6x4"))),
            0u);
  // A scale after the mask: (scores + mask) * c is not scores * c + mask.
  EXPECT_EQ(count(build_graph("batch_matmul(softmax[axis=2](mul(add(" + scores + ", m), ones[shape=1]())), v)",
                              parse_shape_map("q=2x6x4,k=2x4x6,v=2x6x4,m=6x6"))),
            0u);
  // Unfused plans keep it apart.
  PlanOptions unfused{false};
  EXPECT_TRUE(attention_tasks(make_execution_plan(test::attention_variant({}), unfused)).empty());
}

TEST(AttentionPlan, TheStepHasASignatureAndTheCostModelsGraph) {
  const Graph g = test::attention_variant({.Hkv = 2, .mask = test::AttentionMask::kCausal, .nan_guard = true});
  const ExecutionPlan plan = make_execution_plan(g);
  const auto found = attention_tasks(plan);
  ASSERT_EQ(found.size(), 1u);
  const std::string sig = step_signature(g, *found[0]);
  EXPECT_EQ(sig.rfind("step attention: ", 0), 0u) << sig;
  EXPECT_EQ(parse_step_signature(sig).nodes.size(), found[0]->nodes.size());
  // What calibrate times: copies of the step, each recognised again as one attention step.
  const Graph copies = step_graph(g, plan, *found[0], 3);
  const ExecutionPlan copies_plan = make_execution_plan(copies);
  const auto again = attention_tasks(copies_plan);
  ASSERT_EQ(again.size(), 3u);
  for (const Task* t : again) EXPECT_EQ(step_signature(copies, *t), sig);
}

TEST(AttentionLayouts, HeadsAndGroupedQueryKeysAreStrides) {
  // k [1, T=6, Hkv=2 * D=4] -> heads [1, 2, 6, 4] -> expand to 2 repeats ->
  // [1, 4, 6, 4] -> transposed [1, 4, 4, 6] -> the product's [4, 4, 6]: head
  // h reads kv head h / 2 (sub-axes 2 x stride 4, 2 x stride 0), rows (d)
  // stride 1, columns (t) stride 8.
  const Graph g = test::attention_variant({.H = 4, .Hkv = 2, .S = 6, .T = 6, .D = 4, .Dv = 4});
  const ExecutionPlan plan = make_execution_plan(g);
  const auto found = attention_tasks(plan);
  ASSERT_EQ(found.size(), 1u);
  const AttentionMatch& m = *found[0]->attention;
  const auto k = operand_layout(g, m.k, row_major_strides(g.shape(m.k.source)));
  ASSERT_TRUE(k);
  ASSERT_EQ(k->batch.size(), 2u);
  EXPECT_EQ(k->batch[0].size, 2);
  EXPECT_EQ(k->batch[0].stride, 4);
  EXPECT_EQ(k->batch[1].size, 2);
  EXPECT_EQ(k->batch[1].stride, 0);
  EXPECT_EQ(k->row_stride, 1);
  EXPECT_EQ(k->col_stride, 8);
  const auto q = operand_layout(g, m.q, row_major_strides(g.shape(m.q.source)));
  ASSERT_TRUE(q);
  ASSERT_EQ(q->batch.size(), 1u);
  EXPECT_EQ(q->batch[0].stride, 4);  // head h starts at h * D
  EXPECT_EQ(q->row_stride, 16);      // a position: H * D
  EXPECT_EQ(q->col_stride, 1);
}

TEST(AttentionLayouts, ReshapesSplitAndMergeSubAxes) {
  // [6] of stride 2 as [2, 3]: strides 6 and 2.
  auto r = reshape_axes(strided_axes({6}, {2}), {2, 3});
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)[0][0].stride, 6);
  EXPECT_EQ((*r)[1][0].stride, 2);
  // Back: one contiguous sub-axis again.
  r = reshape_axes(*r, {6});
  ASSERT_TRUE(r);
  ASSERT_EQ((*r)[0].size(), 1u);
  EXPECT_EQ((*r)[0][0].stride, 2);
  // [2, 3] transposed to [3, 2], merged: no one stride, two sub-axes.
  r = reshape_axes(transpose_axes(strided_axes({2, 3}, {3, 1}), {1, 0}), {6});
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)[0].size(), 2u);
  // An axis of 4 cut as 3 + ...: no.
  EXPECT_FALSE(reshape_axes(strided_axes({4, 3}, {3, 1}), {3, 4}));
  // Broadcast: new and unit axes read with stride 0.
  const StridedAxes b = broadcast_axes(strided_axes({1, 5}, {5, 1}), {1, 5}, {2, 3, 5});
  EXPECT_EQ(b[0][0].stride, 0);
  EXPECT_EQ(b[1][0].stride, 0);
  EXPECT_EQ(b[2][0].stride, 1);
}

TEST(AttentionLayouts, CausalMasks) {
  const float lo = std::numeric_limits<float>::lowest(), inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(is_causal_mask({1, 1, 2, 2}, {0, lo, 0, 0}, 2, 2));
  EXPECT_TRUE(is_causal_mask({2, 2}, {0, -inf, 0, 0}, 2, 2));
  EXPECT_FALSE(is_causal_mask({2, 2}, {0, -1, 0, 0}, 2, 2));   // past the diagonal but not masked
  EXPECT_FALSE(is_causal_mask({2, 2}, {lo, lo, 0, 0}, 2, 2));  // the diagonal masked
  EXPECT_FALSE(is_causal_mask({1, 2}, {0, lo}, 2, 2));         // broadcast rows: not S x T
  // More keys than rows (a cache): row s sees keys up to s + T - S.
  EXPECT_FALSE(is_causal_mask({1, 3}, {0, 0, lo}, 1, 3));
  EXPECT_TRUE(is_causal_mask({1, 3}, {0, 0, 0}, 1, 3));
  EXPECT_TRUE(is_causal_mask({2, 3}, {0, 0, lo, 0, 0, 0}, 2, 3));
}

}  // namespace
}  // namespace tgr
