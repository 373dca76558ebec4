// The GPU runtime's plan, which needs no GPU: memory plan (buffers shared only
// between values whose lifetimes do not overlap), folding, fusion decisions.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "ir/text.h"
#include "runtime/execution_plan.h"
#include "runtime/memory_plan.h"
#include "runtime/step_signature.h"
#include "tests/attention_graphs.h"

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

// A squeeze-and-excitation gate: the sigmoid of C values runs inside the
// program of its mul by the C x H x W features (it broadcasts there); a
// producer of another rank, or of a shape that does not broadcast to its
// consumer's, stays a step of its own.
TEST(ExecutionPlan, FusesABroadcastProducerIntoItsConsumer) {
  {
    const Graph g = build_graph("mul(relu(x), sigmoid(add(s, t)))", parse_shape_map("x=1x8x5x5,s=1x8x1x1,t=1x8x1x1"));
    const ExecutionPlan plan = make_execution_plan(g);
    ASSERT_EQ(plan.tasks.size(), 1u);
    EXPECT_EQ(plan.tasks[0].kind, Task::Kind::kElementwise);
    EXPECT_EQ(plan.tasks[0].nodes.size(), 4u);
  }
  {  // rank 3 against rank 4: not fused
    const Graph g = build_graph("mul(x, sigmoid(s))", parse_shape_map("x=1x8x5x5,s=8x1x1"));
    EXPECT_EQ(make_execution_plan(g).tasks.size(), 2u);
  }
  {  // the gate read twice: computed once, not inside each reader
    const Graph g =
        build_graph("add(mul(x, sigmoid(s)), mul(y, sigmoid(s)))", parse_shape_map("x=1x8x5x5,y=1x8x5x5,s=1x8x1x1"));
    EXPECT_EQ(make_execution_plan(g).tasks.size(), 2u);
  }
  {  // without fusion, each node its own step
    PlanOptions unfused;
    unfused.fuse = false;
    const Graph g = build_graph("mul(x, sigmoid(s))", parse_shape_map("x=1x8x5x5,s=1x8x1x1"));
    EXPECT_EQ(make_execution_plan(g, unfused).tasks.size(), 2u);
  }
}

// MobileNet's ReLU6 (clip) and EfficientNet's SiLU (x * sigmoid(x), as
// exporters write swish) after a convolution and its bias: one step, whose
// activation the depthwise kernel or the epilogue applies.
TEST(ExecutionPlan, FusesConvBiasAndClipOrSilu) {
  const ShapeMap shapes = parse_shape_map("x=1x8x7x7,k=8x1x3x3,b=1x8x1x1");
  {
    const Graph g = build_graph("clip[min=0, max=6](add(conv2d(x, k), b))", shapes);
    const ExecutionPlan plan = make_execution_plan(g);
    ASSERT_EQ(plan.tasks.size(), 1u);
    const Task& t = plan.tasks[0];
    EXPECT_EQ(t.kind, Task::Kind::kConv);
    EXPECT_TRUE(t.bias && !t.residual && !t.relu);
    EXPECT_EQ(t.activation, Task::Activation::kClip);
    EXPECT_EQ(t.clip_min, 0);
    EXPECT_EQ(t.clip_max, 6);
    EXPECT_EQ(task_label(g, t), "conv2d+add+clip");
  }
  for (const char* silu : {"mul(add(conv2d(x, k), b), sigmoid(add(conv2d(x, k), b)))",
                           "mul(sigmoid(add(conv2d(x, k), b)), add(conv2d(x, k), b))"}) {
    const Graph g = build_graph(silu, shapes);
    const ExecutionPlan plan = make_execution_plan(g);
    ASSERT_EQ(plan.tasks.size(), 1u) << silu;
    EXPECT_EQ(plan.tasks[0].activation, Task::Activation::kSilu) << silu;
    EXPECT_EQ(task_label(g, plan.tasks[0]), "conv2d+add+sigmoid+mul") << silu;
  }
  {  // no bias: the activation follows the convolution itself
    const Graph g = build_graph("mul(conv2d(x, k), sigmoid(conv2d(x, k)))", shapes);
    const ExecutionPlan plan = make_execution_plan(g);
    ASSERT_EQ(plan.tasks.size(), 1u);
    EXPECT_EQ(task_label(g, plan.tasks[0]), "conv2d+sigmoid+mul");
  }
  {  // the biased value read a third time: not SiLU's alone, nothing fused past the bias
    const Graph g =
        build_graph("add(mul(add(conv2d(x, k), b), sigmoid(add(conv2d(x, k), b))), add(conv2d(x, k), b))", shapes);
    const ExecutionPlan plan = make_execution_plan(g);
    EXPECT_EQ(plan.tasks[0].activation, Task::Activation::kNone);
    EXPECT_EQ(task_label(g, plan.tasks[0]), "conv2d+add");
  }
  {  // a residual without relu stays an add, and the clip after it with it
    const Graph g = build_graph("clip[min=0, max=6](add(add(conv2d(x, k), b), z))",
                                parse_shape_map("x=1x8x7x7,k=8x1x3x3,b=1x8x1x1,z=1x8x7x7"));
    const ExecutionPlan plan = make_execution_plan(g);
    ASSERT_EQ(plan.tasks.size(), 2u);
    EXPECT_EQ(task_label(g, plan.tasks[0]), "conv2d+add");
    EXPECT_EQ(plan.tasks[0].activation, Task::Activation::kNone);
    EXPECT_EQ(task_label(g, plan.tasks[1]), "add+clip");
  }
  {  // unfused (PlanOptions::fuse false): the convolution alone
    PlanOptions options;
    options.fuse = false;
    const Graph g = build_graph("clip[min=0, max=6](conv2d(x, k))", shapes);
    EXPECT_EQ(make_execution_plan(g, options).tasks.size(), 2u);
  }
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

// --- products with an epilogue (Task::Kind::kProduct) ---------------------------------

TEST(ExecutionPlan, FusesAPerColumnBiasIntoTheProduct) {
  // Gemm's form: the bias added straight to the product, on either side.
  for (const char* expr : {"add(matmul(x, w), b)", "add(b, matmul(x, w))"}) {
    const Graph g = build_graph(expr, parse_shape_map("x=5x16,w=16x24,b=24"));
    const ExecutionPlan plan = make_execution_plan(g);
    ASSERT_EQ(plan.tasks.size(), 1u) << expr;
    const Task& t = plan.tasks[0];
    EXPECT_EQ(t.kind, Task::Kind::kProduct) << expr;
    ASSERT_TRUE(t.bias) << expr;
    EXPECT_EQ(g.shape(*t.bias), Shape{24});
    EXPECT_FALSE(t.residual || t.relu) << expr;
    EXPECT_EQ(plan.fused_nodes, 1) << expr;
  }
}

TEST(ExecutionPlan, FusesThroughTheReshapeOfALinearLayer) {
  // BERT's Linear: [B*S, H] x [H, N], reshaped to [B, S, N], plus bias, residual, relu.
  const Graph g = build_graph("relu(add(add(b, reshape[shape=2x3x24](matmul(x, w))), z))",
                              parse_shape_map("x=6x16,w=16x24,b=1x1x24,z=2x3x24"));
  const ExecutionPlan plan = make_execution_plan(g);
  ASSERT_EQ(plan.tasks.size(), 1u);
  const Task& t = plan.tasks[0];
  EXPECT_EQ(t.kind, Task::Kind::kProduct);
  EXPECT_EQ(task_label(g, t), "matmul+reshape+add+add+relu");
  EXPECT_TRUE(t.bias && t.residual && t.relu);
  EXPECT_EQ(g.shape(*t.residual), (Shape{2, 3, 24}));
  // The task reads the operands, bias and residual; the product itself is never stored.
  EXPECT_EQ(t.reads.size(), 4u);
  EXPECT_EQ(plan.slot({t.nodes[0], 0}).home, ValueSlot::Home::kNone);
}

TEST(ExecutionPlan, ResidualOrReluAloneAlsoMakeAProductTask) {
  const Graph g =
      build_graph("(relu(matmul(x, w)), add(matmul(y, w), z))", parse_shape_map("x=5x16,y=5x16,w=16x8,z=5x8"));
  const ExecutionPlan plan = make_execution_plan(g);
  const Task* relu = task_with(plan, g, "matmul+relu");
  const Task* residual = task_with(plan, g, "matmul+add");
  ASSERT_NE(relu, nullptr);
  ASSERT_NE(residual, nullptr);
  EXPECT_TRUE(relu->relu && !relu->bias && !relu->residual);
  EXPECT_TRUE(residual->residual && !residual->bias && !residual->relu);
}

TEST(ExecutionPlan, OnlyAPerColumnBiasIsFusedIntoTheProduct) {
  // Per row ([5, 1]: broadcast along columns) and broadcast over more axes
  // than the product has: an elementwise add after a plain product.
  for (const char* shapes : {"x=5x16,w=16x24,b=5x1", "x=5x16,w=16x24,b=3x1x24"}) {
    const Graph g = build_graph("add(matmul(x, w), b)", parse_shape_map(shapes));
    const ExecutionPlan plan = make_execution_plan(g);
    ASSERT_NE(task_with(plan, g, "matmul"), nullptr) << shapes;
    EXPECT_EQ(task_with(plan, g, "matmul")->kind, Task::Kind::kNode) << shapes;
    EXPECT_NE(task_with(plan, g, "add"), nullptr) << shapes;
  }
  // A reshape that splits the columns: the bias is per new last axis, not per column.
  const Graph g = build_graph("add(reshape[shape=5x4x6](matmul(x, w)), b)", parse_shape_map("x=5x16,w=16x24,b=6"));
  const ExecutionPlan plan = make_execution_plan(g);
  EXPECT_EQ(task_with(plan, g, "matmul")->kind, Task::Kind::kNode);
  EXPECT_EQ(task_with(plan, g, "reshape")->kind, Task::Kind::kAlias);
  // batch_matmul: no epilogue fusion.
  const Graph bg = build_graph("add(batch_matmul(x, w), b)", parse_shape_map("x=2x5x16,w=2x16x24,b=24"));
  EXPECT_NE(task_with(make_execution_plan(bg), bg, "batch_matmul"), nullptr);
}

TEST(ExecutionPlan, AProductReadElsewhereIsNotFused) {
  // The product (or the value after its bias) has a second reader: it must be stored.
  const Graph g = build_graph("(add(matmul(x, w), b), relu(matmul(x, w)))", parse_shape_map("x=5x16,w=16x24,b=24"));
  const ExecutionPlan plan = make_execution_plan(g);
  EXPECT_EQ(task_with(plan, g, "matmul")->kind, Task::Kind::kNode);
  const Graph g2 = build_graph("(relu(add(matmul(x, w), b)), sigmoid(add(matmul(x, w), b)))",
                               parse_shape_map("x=5x16,w=16x24,b=24"));
  const ExecutionPlan plan2 = make_execution_plan(g2);
  const Task* product = task_with(plan2, g2, "matmul+add");
  ASSERT_NE(product, nullptr);
  EXPECT_TRUE(product->bias && !product->relu);
  // A graph output is stored as it is.
  const Graph g3 = build_graph("(matmul(x, w), add(matmul(x, w), b))", parse_shape_map("x=5x16,w=16x24,b=24"));
  EXPECT_EQ(task_with(make_execution_plan(g3), g3, "matmul")->kind, Task::Kind::kNode);
  // Unfused plans keep every node apart.
  const Graph g4 = build_graph("add(matmul(x, w), b)", parse_shape_map("x=5x16,w=16x24,b=24"));
  EXPECT_EQ(make_execution_plan(g4, PlanOptions{false}).tasks.size(), 2u);
}

TEST(ExecutionPlan, AConstantScaleOfAProductIsItsAlpha) {
  // Attention's scores scaled once (the form the hand-written rules gave them):
  // batch_matmul and the mul by a one-element constant are one step.
  const std::string two = "add(ones[shape=1](), ones[shape=1]())";  // computed at load
  const Graph g =
      build_graph("softmax[axis=2](mul(batch_matmul(q, k), " + two + "))", parse_shape_map("q=4x5x8,k=4x8x5"));
  const ExecutionPlan plan = make_execution_plan(g);
  const Task* scores = task_with(plan, g, "batch_matmul+mul");
  ASSERT_NE(scores, nullptr);
  EXPECT_EQ(scores->kind, Task::Kind::kProduct);
  ASSERT_TRUE(scores->scale);
  EXPECT_EQ(plan.slot(*scores->scale).home, ValueSlot::Home::kConstant);
  EXPECT_FALSE(scores->bias || scores->residual || scores->relu);
  // A matmul: the scale, then the Linear's bias, in one cuBLASLt call.
  const Graph lg = build_graph("add(mul(" + two + ", matmul(x, w)), b)", parse_shape_map("x=5x16,w=16x24,b=24"));
  const ExecutionPlan lplan = make_execution_plan(lg);
  ASSERT_EQ(lplan.tasks.size(), 1u);
  EXPECT_EQ(task_label(lg, lplan.tasks[0]), "matmul+mul+add");
  EXPECT_TRUE(lplan.tasks[0].scale && lplan.tasks[0].bias);
  // Not a scale: a scalar known only at run time (a graph input), a vector, a scale after the bias.
  for (const char* expr : {"mul(batch_matmul(q, k), s)", "mul(batch_matmul(q, k), c)",
                           "mul(add(matmul(x, w), b), add(ones[shape=1](), ones[shape=1]()))"}) {
    const Graph ng = build_graph(expr, parse_shape_map("q=4x5x8,k=4x8x5,s=scalar,c=5,x=5x16,w=16x24,b=24"));
    const ExecutionPlan nplan = make_execution_plan(ng);
    for (const Task& t : nplan.tasks) EXPECT_FALSE(t.scale) << expr;
    const Task* mul = task_with(nplan, ng, "mul");  // an elementwise step of its own
    ASSERT_NE(mul, nullptr) << expr;
    EXPECT_EQ(mul->kind, Task::Kind::kElementwise) << expr;
  }
}

TEST(ExecutionPlan, AStridedBiasIsNotHandedToCublasLt) {
  // The bias is the second piece of a [25] vector: a view 4 bytes in, not
  // 16-byte aligned, so not plain: the add stays an elementwise step.
  const Graph g =
      build_graph("add(matmul(x, w), split[axis=0, sizes=1x24](v).1)", parse_shape_map("x=5x16,w=16x24,v=25"));
  const ExecutionPlan plan = make_execution_plan(g);
  EXPECT_EQ(task_with(plan, g, "matmul")->kind, Task::Kind::kNode);
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

// --- comparisons, is_nan, cast and where in elementwise programs ----------------------

TEST(ExecutionPlan, IsNanAndWhereAfterSoftmaxAreOneProgram) {
  // Attention's where(is_nan(p), 0, p) after each softmax.
  const Graph g =
      build_graph("where(is_nan(softmax[axis=1](x)), z, softmax[axis=1](x))", parse_shape_map("x=3x7,z=scalar"));
  const ExecutionPlan plan = make_execution_plan(g);
  ASSERT_EQ(plan.tasks.size(), 2u);
  EXPECT_EQ(task_label(g, plan.tasks[1]), "is_nan+where");
  EXPECT_EQ(plan.tasks[1].kind, Task::Kind::kElementwise);
  EXPECT_EQ(plan.tasks[1].reads.size(), 2u);  // the softmax, z
}

TEST(ExecutionPlan, FloatComparisonsAndBoolLogicJoinFloatPrograms) {
  const Graph g = build_graph("where(logical_not(less(x, y)), relu(x), cast[to=float](greater(y, x)))",
                              parse_shape_map("x=4x9,y=9"));
  const ExecutionPlan plan = make_execution_plan(g);
  ASSERT_EQ(plan.tasks.size(), 1u);
  EXPECT_EQ(plan.tasks[0].kind, Task::Kind::kElementwise);
  EXPECT_EQ(plan.tasks[0].nodes.size(), 6u);
}

TEST(ExecutionPlan, Int64NodesRunAsProgramsOfTheirOwn) {
  // less over int64 computes in int64; the float where after it reads its bools.
  DTypeMap dtypes;
  const ShapeMap shapes = parse_shape_map("a=int64:3x4,b=int64:4,x=3x4,y=4", &dtypes);
  const Graph g = build_graph("where(less(a, b), x, y)", shapes, dtypes);
  const ExecutionPlan plan = make_execution_plan(g);
  ASSERT_EQ(plan.tasks.size(), 2u);
  EXPECT_EQ(task_label(g, plan.tasks[0]), "less");
  EXPECT_EQ(task_label(g, plan.tasks[1]), "where");
  EXPECT_EQ(plan.tasks[0].kind, Task::Kind::kElementwise);
}

// --- transposes as views ------------------------------------------------------------

const Task* task_of_op(const ExecutionPlan& plan, const Graph& g, const std::string& op) {
  for (const Task& t : plan.tasks)
    for (int32_t n : t.nodes)
      if (g.node(n).op->name == op) return &t;
  return nullptr;
}

TEST(Views, CublasReadsRowsOrColumnsWithUnitStride) {
  EXPECT_EQ(cublas_matrix({4, 6}, {6, 1})->ld, 6);
  EXPECT_FALSE(cublas_matrix({4, 6}, {6, 1})->column_major);
  EXPECT_TRUE(cublas_matrix({4, 6}, {1, 4})->column_major);  // a transposed 6x4
  EXPECT_EQ(cublas_matrix({4, 6}, {1, 4})->ld, 4);
  EXPECT_EQ(cublas_matrix({3, 4, 6}, {100, 1, 32})->ld, 32);
  EXPECT_FALSE(cublas_matrix({4, 6}, {12, 2}));     // neither axis contiguous
  EXPECT_FALSE(cublas_matrix({4, 6}, {4, 1}));      // rows overlap
  EXPECT_FALSE(cublas_matrix({4, 6}, {1, 3}));      // columns overlap
  EXPECT_EQ(cublas_matrix({1, 6}, {0, 1})->ld, 6);  // one row: any row stride
}

TEST(Views, AttentionHeadsAreTransposedInPlace) {
  // BERT's query: [S, H] -> [1, S, heads, d] -> heads first, scaled (an
  // elementwise kernel reads the transposed view); value: straight into the
  // batched product (row stride H, batch stride d); key: transposed the
  // other way (columns with unit stride: cuBLAS's transpose flag).
  const Graph g = build_graph(
      "batch_matmul(batch_matmul(reshape[shape=4x5x8](mul(transpose[perm=0x2x1x3](reshape[shape=1x5x4x8](q)), s)),"
      " reshape[shape=4x8x5](transpose[perm=0x2x3x1](reshape[shape=1x5x4x8](k)))),"
      " reshape[shape=4x5x8](transpose[perm=0x2x1x3](reshape[shape=1x5x4x8](v))))",
      parse_shape_map("q=5x32,k=5x32,v=5x32,s=scalar"));
  const ExecutionPlan plan = make_execution_plan(g);
  int transposes = 0;
  for (const Task& t : plan.tasks) {
    for (int32_t n : t.nodes)
      if (g.node(n).op->name == "transpose") {
        ++transposes;
        EXPECT_EQ(t.kind, Task::Kind::kAlias) << "node " << n;
        const ValueSlot& s = plan.slot({n, 0});
        EXPECT_TRUE(s.view);
        EXPECT_FALSE(s.strides.empty());
      }
  }
  EXPECT_EQ(transposes, 3);
  // What runs: the scaling, two products.
  int running = 0;
  for (const Task& t : plan.tasks) running += t.kind != Task::Kind::kAlias;
  EXPECT_EQ(running, 3);
}

TEST(Views, ATransposeOfTheLastTwoAxesFeedsCublasDirectly) {
  const Graph g = build_graph("add(matmul(x, transpose(w)), b)", parse_shape_map("x=7x13,w=5x13,b=5"));
  const ExecutionPlan plan = make_execution_plan(g);
  ASSERT_EQ(plan.tasks.size(), 2u);
  EXPECT_EQ(plan.tasks[0].kind, Task::Kind::kAlias);
  EXPECT_EQ(plan.tasks[1].kind, Task::Kind::kProduct);
  EXPECT_EQ(plan.slot({plan.tasks[0].root(), 0}).strides, (std::vector<int64_t>{1, 13}));
}

// How many of the plan's transposes copy (a task of their own) and how many are views.
std::pair<int, int> transposes_copied_and_viewed(const Graph& g, const ExecutionPlan& plan) {
  int copies = 0, views = 0;
  for (const Task& t : plan.tasks)
    if (g.node(t.root()).op->name == "transpose") {
      copies += t.kind == Task::Kind::kNode;
      views += t.kind == Task::Kind::kAlias;
    }
  return {copies, views};
}

TEST(Views, TransposesReadByKernelsWithoutStridesAreCopies) {
  // softmax, a graph output, and a reshape that no strides can express
  // (the merge of heads: [1, S, heads, d] back to [S, H]) read copies.
  const Graph g = build_graph(
      "(softmax[axis=2](transpose[perm=0x2x1](x)), transpose[perm=1x0](y),"
      " reshape[shape=5x32](transpose[perm=0x2x1x3](reshape[shape=1x4x5x8](z))))",
      parse_shape_map("x=2x3x4,y=3x4,z=4x5x8"));
  const ExecutionPlan plan = make_execution_plan(g);
  const auto [copies, views] = transposes_copied_and_viewed(g, plan);
  EXPECT_EQ(copies, 2);  // softmax's, the graph output
  EXPECT_EQ(views, 1);   // the merge's
  // The merge: the transpose is a view and the reshape copies from it.
  const Task* reshape = nullptr;
  for (const Task& t : plan.tasks)
    if (g.node(t.root()).op->name == "reshape" && g.node(t.root()).output_shapes[0] == Shape{5, 32}) reshape = &t;
  ASSERT_NE(reshape, nullptr);
  EXPECT_EQ(reshape->kind, Task::Kind::kNode);
  EXPECT_EQ(task_of_op(plan, g, "reshape")->kind, Task::Kind::kAlias);  // [4,5,8] -> [1,4,5,8]
}

// --- layer norm over a permuted input (ConvNeXt) -------------------------------------

const Node& node_of_op(const Graph& g, const std::string& op) {
  for (const Node& n : g.nodes())
    if (n.is_op() && n.op->name == op) return n;
  throw std::logic_error("no " + op);
}

TEST(Views, LayerNormReadsChannelsStridedOverContiguousPositions) {
  const Graph g =
      build_graph("layer_norm[axis=3](transpose[perm=0x2x3x1](x), s, c)", parse_shape_map("x=2x9x5x7,s=9,c=9"));
  const Node& ln = node_of_op(g, "layer_norm");
  // permute(0,2,3,1) of 2x9x5x7: positions 5*7 with unit stride, channels 35 apart.
  const auto r = layer_norm_strided_input(g, ln, {315, 7, 1, 35});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->batches, 2);
  EXPECT_EQ(r->batch_stride, 315);
  EXPECT_EQ(r->positions, 35);
  EXPECT_EQ(r->channels, 9);
  EXPECT_EQ(r->channel_stride, 35);
  // Positions not contiguous (permute(0,3,2,1): columns first); row-major
  // (no positions in unit stride: the row kernel's).
  EXPECT_FALSE(layer_norm_strided_input(g, ln, {315, 1, 7, 35}));
  EXPECT_FALSE(layer_norm_strided_input(g, ln, {315, 63, 9, 1}));
  // Fewer positions than kMinStridedPositions: 7 in unit stride, then 10 rows of them 100 apart.
  EXPECT_FALSE(layer_norm_strided_input(g, ln, {500, 100, 1, 7}));
  // Batch axes merge into one block when they are contiguous among themselves.
  const Graph rank5 =
      build_graph("layer_norm[axis=4](transpose[perm=0x1x3x4x2](x), s, c)", parse_shape_map("x=2x3x9x5x7,s=9,c=9"));
  const Node& ln5 = node_of_op(rank5, "layer_norm");
  const auto r5 = layer_norm_strided_input(rank5, ln5, {945, 315, 7, 1, 35});
  ASSERT_TRUE(r5);
  EXPECT_EQ(r5->batches, 6);
  EXPECT_EQ(r5->batch_stride, 315);
  EXPECT_FALSE(layer_norm_strided_input(rank5, ln5, {1000, 315, 7, 1, 35}));
  const Graph two_axes =
      build_graph("layer_norm[axis=2](transpose[perm=0x2x3x1](x), s, c)", parse_shape_map("x=2x9x5x7,s=7x9,c=7x9"));
  EXPECT_FALSE(layer_norm_strided_input(two_axes, node_of_op(two_axes, "layer_norm"), {315, 7, 1, 35}));
  // Another operator never.
  const Graph sm = build_graph("softmax[axis=3](transpose[perm=0x2x3x1](x))", parse_shape_map("x=2x9x5x7"));
  EXPECT_FALSE(layer_norm_strided_input(sm, node_of_op(sm, "softmax"), {315, 7, 1, 35}));
}

TEST(Views, ConvNextsPermuteBeforeLayerNormIsAView) {
  // A ConvNeXt block's start: depthwise 7x7 convolution with its bias,
  // permute(0,2,3,1), layer norm over channels: the permute runs nothing and
  // the layer norm reads the convolution's NCHW output in place.
  const Graph g = build_graph("layer_norm[axis=3](transpose[perm=0x2x3x1](add(conv2d(x, k), b)), s, c)",
                              parse_shape_map("x=2x96x56x56,k=96x1x7x7,b=1x96x1x1,s=96,c=96"));
  const ExecutionPlan plan = make_execution_plan(g);
  ASSERT_EQ(plan.tasks.size(), 3u);
  EXPECT_EQ(plan.tasks[0].kind, Task::Kind::kConv);
  EXPECT_TRUE(plan.tasks[0].bias.has_value());
  EXPECT_EQ(task_label(g, plan.tasks[1]), "transpose");
  EXPECT_EQ(plan.tasks[1].kind, Task::Kind::kAlias);
  EXPECT_EQ(task_label(g, plan.tasks[2]), "layer_norm");
  EXPECT_EQ(plan.tasks[2].kind, Task::Kind::kNode);
  const ValueSlot& permuted = plan.slot({plan.tasks[1].root(), 0});
  EXPECT_TRUE(permuted.view);
  EXPECT_EQ(permuted.strides, (std::vector<int64_t>{96 * 3136, 56, 1, 3136}));
  EXPECT_EQ(permuted.offset, plan.slot({plan.tasks[0].root(), 0}).offset);
  // No copy anywhere: the arena holds the inputs (x, and here k, b, s, c;
  // 256-byte aligned), the convolution's output and the layer norm's.
  const int64_t plane_bytes = int64_t{2} * 96 * 56 * 56 * 4, kernel_bytes = 96 * 49 * 4;
  EXPECT_EQ(plan.unshared_bytes, 3 * plane_bytes + (kernel_bytes + 255) / 256 * 256 + 3 * 512);
}

TEST(Views, ConvNextsDownsamplingLayerNormWritesNchwSoThePermuteBackRunsNothing) {
  // ConvNeXt's LayerNorm2d before a downsampling convolution: permute to
  // NHWC (read in place), layer norm over channels, permute back to NCHW,
  // convolution 2x2 stride 2. The layer norm writes the permute back's
  // row-major NCHW bytes through channel strides: neither permute runs.
  const Graph g = build_graph(
      "conv2d[stride=2x2](transpose[perm=0x3x1x2](layer_norm[axis=3](transpose[perm=0x2x3x1](x), s, c)), k)",
      parse_shape_map("x=1x96x56x56,s=96,c=96,k=192x96x2x2"));
  const ExecutionPlan plan = make_execution_plan(g);
  ASSERT_EQ(plan.tasks.size(), 4u);
  EXPECT_EQ(task_label(g, plan.tasks[0]), "transpose");
  EXPECT_EQ(plan.tasks[0].kind, Task::Kind::kAlias);
  EXPECT_EQ(task_label(g, plan.tasks[1]), "layer_norm");
  EXPECT_EQ(task_label(g, plan.tasks[2]), "transpose");
  EXPECT_EQ(plan.tasks[2].kind, Task::Kind::kAlias);
  EXPECT_EQ(plan.tasks[3].kind, Task::Kind::kConv);
  const ValueSlot& normalized = plan.slot({plan.tasks[1].root(), 0});
  const ValueSlot& nchw = plan.slot({plan.tasks[2].root(), 0});
  EXPECT_TRUE(normalized.view);
  EXPECT_EQ(normalized.strides, (std::vector<int64_t>{96 * 3136, 56, 1, 3136}));  // NHWC indices, NCHW bytes
  EXPECT_EQ(normalized.offset, nchw.offset);
  EXPECT_TRUE(nchw.strides.empty());  // row-major: cuDNN reads it
  const Node& ln = node_of_op(g, "layer_norm");
  const auto written = layer_norm_strided_output(g, ln, normalized.strides);
  ASSERT_TRUE(written);
  EXPECT_EQ(written->positions, 3136);
  EXPECT_EQ(written->channel_stride, 3136);
}

TEST(Views, LayerNormsOutputStaysRowMajorWhereNothingWouldCopy) {
  // Read by a product through a reshape (ConvNeXt's blocks), read by two
  // permutes, or a graph output: the layer norm writes row-major rows.
  const Graph g = build_graph(
      "(matmul(reshape[shape=3136x96](layer_norm[axis=3](transpose[perm=0x2x3x1](x), s, c)), w),"
      " transpose[perm=0x3x1x2](layer_norm[axis=3](transpose[perm=0x2x3x1](y), s, c)),"
      " relu(layer_norm[axis=3](transpose[perm=0x2x3x1](y), s, c)),"
      " layer_norm[axis=3](transpose[perm=0x2x3x1](z), s, c))",
      parse_shape_map("x=1x96x56x56,y=1x96x8x8,z=1x96x8x8,s=96,c=96,w=96x384"));
  const ExecutionPlan plan = make_execution_plan(g);
  int layer_norms = 0;
  for (const Task& t : plan.tasks)
    if (g.node(t.root()).op->name == "layer_norm") {
      ++layer_norms;
      EXPECT_TRUE(plan.slot({t.root(), 0}).strides.empty()) << "layer norm node " << t.root();
    }
  EXPECT_EQ(layer_norms, 3);
}

TEST(Views, PermutesLayerNormCannotReadAreCopies) {
  // Copied: a layer norm over two axes; positions not in unit stride
  // (permute(0,3,2,1)). A view: 1x1 planes, where the permute is row-major.
  const Graph g = build_graph(
      "(layer_norm[axis=2](transpose[perm=0x2x3x1](x), s2, c2), layer_norm[axis=3](transpose[perm=0x3x2x1](x), s, c),"
      " layer_norm[axis=3](transpose[perm=0x2x3x1](y), t, d))",
      parse_shape_map("x=2x9x5x7,s2=7x9,c2=7x9,s=9,c=9,y=3x4x1x1,t=4,d=4"));
  const ExecutionPlan plan = make_execution_plan(g);
  const auto [copies, views] = transposes_copied_and_viewed(g, plan);
  EXPECT_EQ(copies, 2);
  EXPECT_EQ(views, 1);
}

// --- products written in place through the head merge ---------------------------------

TEST(Views, CublasWritesRowsWithUnitStride) {
  EXPECT_EQ(cublas_output({4, 6}, {6, 1})->ld, 6);
  EXPECT_EQ(cublas_output({4, 5, 8}, {8, 32, 1})->ld, 32);  // 4 heads of 5 x 8 merged into rows of 32
  EXPECT_EQ(cublas_output({4, 5, 8}, {8, 32, 1})->batch_stride, 8);
  EXPECT_EQ(cublas_output({1, 6}, {0, 1})->ld, 6);             // one row: any row stride
  EXPECT_FALSE(cublas_output({4, 6}, {1, 4}));                 // column-major: cuBLAS's C is never transposed
  EXPECT_FALSE(cublas_output({4, 6}, {4, 1}));                 // rows overlap
  EXPECT_FALSE(cublas_output({2, 4, 5, 6}, {120, 30, 6, 1}));  // rank 4: no product's output
}

// The attention output: the graph's last batch_matmul.
ValueRef attention_output(const Graph& g) {
  ValueRef last;
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (g.nodes()[i].is_op() && g.nodes()[i].op->name == "batch_matmul") last = {static_cast<int32_t>(i), 0};
  return last;
}

// The head merge's last reshape: what the output projection (the matmul) reads.
int32_t merge_reshape(const Graph& g) {
  for (const Node& n : g.nodes())
    if (n.is_op() && n.op->name == "matmul") return n.inputs[0].node;
  return -1;
}

const Task* task_of_node(const ExecutionPlan& plan, int32_t node) {
  for (const Task& t : plan.tasks)
    if (std::find(t.nodes.begin(), t.nodes.end(), node) != t.nodes.end()) return &t;
  return nullptr;
}

// The steps that launch something, by label.
std::vector<std::string> running_steps(const ExecutionPlan& plan, const Graph& g) {
  std::vector<std::string> out;
  for (const Task& t : plan.tasks)
    if (!step_is_free(t)) out.push_back(task_label(g, t));
  return out;
}

TEST(Views, TheHeadMergeOfOneBatchIsWrittenByTheProduct) {
  // [H=4, S=5, D=8] -> [1, 4, 5, 8] -> [1, 5, 4, 8] -> [5, 32]: the product
  // writes head h's 5 x 8 block at column 8h of rows 32 long.
  const Graph g =
      build_graph("relu(reshape[shape=5x32](transpose[perm=0x2x1x3](reshape[shape=1x4x5x8](batch_matmul(p, v)))))",
                  parse_shape_map("p=4x5x5,v=4x5x8"));
  const ExecutionPlan plan = make_execution_plan(g);
  EXPECT_EQ(running_steps(plan, g), (std::vector<std::string>{"batch_matmul", "relu"}));
  const ValueRef product = attention_output(g);
  const ValueSlot& written = plan.slot(product);
  EXPECT_TRUE(written.view);
  EXPECT_EQ(written.strides, (std::vector<int64_t>{8, 32, 1}));
  // The merged value owns the bytes the product writes; relu reads them row-major.
  const Task* relu = task_with(plan, g, "relu");
  ASSERT_NE(relu, nullptr);
  const ValueRef merged = relu->reads.at(0);
  EXPECT_FALSE(plan.slot(merged).view);
  EXPECT_TRUE(plan.slot(merged).strides.empty());
  EXPECT_EQ(written.offset, plan.slot(merged).offset);
  EXPECT_EQ(written.home, ValueSlot::Home::kArena);
  // The merge's reshape runs nothing, in the plan and for the cost models.
  const ViewAnalysis views = analyse_views(g, plan.folded);
  EXPECT_TRUE(views.runs_nothing(merged.node));
  EXPECT_EQ(views.layout(product).source, merged);
}

TEST(Views, TheMergeOfABatchOfTwoStillCopies) {
  // Batch-first, B = 2: the product's batch index b*4 + h is no single stride of [2, 5, 32].
  const Graph g =
      build_graph("relu(reshape[shape=2x5x32](transpose[perm=0x2x1x3](reshape[shape=2x4x5x8](batch_matmul(p, v)))))",
                  parse_shape_map("p=8x5x5,v=8x5x8"));
  const ExecutionPlan plan = make_execution_plan(g);
  EXPECT_EQ(running_steps(plan, g), (std::vector<std::string>{"batch_matmul", "reshape", "relu"}));
  EXPECT_FALSE(plan.slot(attention_output(g)).view);
  EXPECT_TRUE(plan.slot(attention_output(g)).strides.empty());
}

// Attention left as its steps (runtime/attention.h fuses it by default):
// the views between them, as where it cannot be fused (head dimensions above 128).
PlanOptions attention_unfused() {
  PlanOptions o;
  o.attention = false;
  return o;
}

TEST(Views, AttentionFusedRunsOneStepBeforeTheProjection) {
  for (int64_t batch : {1, 2}) {
    const test::AttentionBlock block = test::attention_block(batch, 4, 5, 8, test::HeadMerge::kSequenceFirst);
    const Graph g = build_graph(block.expr, parse_shape_map(block.shapes));
    const ExecutionPlan plan = make_execution_plan(g);
    const std::vector<std::string> steps = running_steps(plan, g);
    ASSERT_EQ(steps.size(), 2u) << "B = " << batch;
    EXPECT_EQ(task_of_node(plan, attention_output(g).node)->kind, Task::Kind::kAttention);
    EXPECT_EQ(steps[1], "matmul+add");
    // The fused step writes the merged heads in place as the product did.
    EXPECT_TRUE(plan.slot(attention_output(g)).view) << "B = " << batch;
  }
}

TEST(Views, SequenceFirstHeadsAreMergedInPlaceForAnyBatch) {
  // ViT's [B, H, S, D] -> [S, B, H, D]: batch b*H + h starts at (b*H + h)*D, one stride for any B.
  for (int64_t batch : {1, 2, 3}) {
    const test::AttentionBlock block = test::attention_block(batch, 4, 5, 8, test::HeadMerge::kSequenceFirst);
    const Graph g = build_graph(block.expr, parse_shape_map(block.shapes));
    const ExecutionPlan plan = make_execution_plan(g, attention_unfused());
    EXPECT_EQ(running_steps(plan, g),
              (std::vector<std::string>{"batch_matmul", "softmax", "batch_matmul", "matmul+add"}))
        << "B = " << batch;
    const ValueSlot& written = plan.slot(attention_output(g));
    EXPECT_TRUE(written.view) << "B = " << batch;
    EXPECT_EQ(written.strides, (std::vector<int64_t>{8, batch * 32, 1})) << "B = " << batch;
    EXPECT_EQ(task_of_node(plan, merge_reshape(g))->kind, Task::Kind::kAlias) << "B = " << batch;
  }
}

TEST(Views, BatchFirstAttentionMergesInPlaceOnlyForOneBatch) {
  for (int64_t batch : {1, 2}) {
    const test::AttentionBlock block = test::attention_block(batch, 3, 6, 4, test::HeadMerge::kBatchFirst);
    const Graph g = build_graph(block.expr, parse_shape_map(block.shapes));
    const ExecutionPlan plan = make_execution_plan(g, attention_unfused());
    const Task* merge = task_of_node(plan, merge_reshape(g));
    ASSERT_NE(merge, nullptr);
    EXPECT_EQ(merge->kind, batch == 1 ? Task::Kind::kAlias : Task::Kind::kNode) << "B = " << batch;
    EXPECT_EQ(plan.slot(attention_output(g)).view, batch == 1) << "B = " << batch;
    if (batch == 1) {
      EXPECT_EQ(running_steps(plan, g),
                (std::vector<std::string>{"batch_matmul", "softmax", "batch_matmul", "matmul+add"}));
    }
  }
}

TEST(Views, TheMergedBytesAreNotSharedWithWhatTheProductReads) {
  // The merged value's bytes are taken when the product runs, not when the
  // (free) reshape would: the softmax's output, read by the product, must not share them.
  const test::AttentionBlock block = test::attention_block(1, 2, 7, 4, test::HeadMerge::kBatchFirst);
  const Graph g = build_graph(block.expr, parse_shape_map(block.shapes));
  const ExecutionPlan plan = make_execution_plan(g);
  const ValueRef product = attention_output(g);
  const ValueSlot& written = plan.slot(product);
  ASSERT_TRUE(written.view);
  const Node& second = g.node(product.node);
  ASSERT_EQ(second.op->name, "batch_matmul");
  const ValueSlot& probabilities = plan.slot(second.inputs[0]);
  EXPECT_EQ(g.node(second.inputs[0].node).op->name, "softmax");
  const int64_t lo = written.offset, hi = written.offset + written.bytes;
  EXPECT_TRUE(probabilities.offset + probabilities.bytes <= lo || probabilities.offset >= hi);
}

TEST(Views, AProductReadTwiceOrLeftAsAnOutputIsNotPlaced) {
  // Another reader of the product (relu) must see it row-major; so must a graph output.
  const Graph read_twice = build_graph(
      "(relu(batch_matmul(p, v)), reshape[shape=5x32](transpose[perm=0x2x1x3](reshape[shape=1x4x5x8](batch_matmul(p, "
      "v)))))",
      parse_shape_map("p=4x5x5,v=4x5x8"));
  const ExecutionPlan plan = make_execution_plan(read_twice);
  EXPECT_FALSE(plan.slot(attention_output(read_twice)).view);
  const Task* merge = task_of_node(plan, read_twice.outputs()[1].node);
  ASSERT_NE(merge, nullptr);
  EXPECT_EQ(merge->kind, Task::Kind::kNode);  // the copy
  // A transpose that stays a view is no reason to place the product (no copy to save).
  const Graph no_copy =
      build_graph("relu(transpose[perm=0x2x1](batch_matmul(p, v)))", parse_shape_map("p=4x5x5,v=4x5x8"));
  EXPECT_FALSE(make_execution_plan(no_copy).slot(attention_output(no_copy)).view);
}

// --- concatenations written in place ----------------------------------------------------

// The node computing the first value of operator `op` (in node order) and its ordinal `nth`.
ValueRef value_of(const Graph& g, const std::string& op, int nth = 0) {
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (g.nodes()[i].is_op() && g.nodes()[i].op->name == op && nth-- == 0) return {static_cast<int32_t>(i), 0};
  return {};
}

TEST(Views, AChannelConcatOfABatchOfOneIsWrittenInPlaceByItsProducers) {
  // relu's and the convolution's outputs are placed one after the other in
  // the concatenation's bytes; the concatenation runs nothing.
  const Graph g =
      build_graph("softmax[axis=1](concat[axis=1](relu(x), conv2d(x, k)))", parse_shape_map("x=1x4x6x6,k=3x4x1x1"));
  const ExecutionPlan plan = make_execution_plan(g);
  EXPECT_EQ(task_with(plan, g, "concat")->kind, Task::Kind::kAlias);
  const ValueSlot& whole = plan.slot(value_of(g, "concat"));
  const ValueSlot& first = plan.slot(value_of(g, "relu"));
  const ValueSlot& second = plan.slot(value_of(g, "conv2d"));
  EXPECT_FALSE(whole.view);
  EXPECT_TRUE(first.view && second.view);
  EXPECT_EQ(first.offset, whole.offset);
  EXPECT_EQ(second.offset, whole.offset + 4 * 36 * 4);
  EXPECT_TRUE(first.strides.empty() && second.strides.empty());
  // The steps that run: relu, the convolution and the softmax; the
  // concatenation's bytes are taken when relu writes its piece.
  EXPECT_EQ(task_with(plan, g, "relu")->kind, Task::Kind::kElementwise);
  EXPECT_EQ(task_with(plan, g, "conv2d")->kind, Task::Kind::kConv);
}

TEST(Views, EachDenseLayersConcatIsTheStartOfTheBlocksLast) {
  // DenseNet: every layer reads the concatenation of the features so far
  // and adds its own. All three features live in the last concatenation's
  // bytes; the first concatenation is a view of its start.
  const Graph g = build_graph(
      "concat[axis=1](relu(x), conv2d(relu(x), k1), conv2d(sigmoid(concat[axis=1](relu(x), conv2d(relu(x), k1))), k2))",
      parse_shape_map("x=1x4x6x6,k1=4x4x1x1,k2=4x8x1x1"));
  const ExecutionPlan plan = make_execution_plan(g);
  int free_concats = 0;
  for (const Task& t : plan.tasks)
    if (task_label(g, t) == "concat") free_concats += t.kind == Task::Kind::kAlias;
  EXPECT_EQ(free_concats, 2);
  const ValueRef inner = value_of(g, "concat", 0), outer = value_of(g, "concat", 1);
  ASSERT_EQ(g.node(outer.node).inputs.size(), 3u);
  EXPECT_TRUE(plan.slot(inner).view);
  EXPECT_FALSE(plan.slot(outer).view);  // a graph output owns its bytes
  EXPECT_EQ(plan.slot(inner).offset, plan.slot(outer).offset);
  EXPECT_EQ(plan.slot(value_of(g, "conv2d", 1)).offset, plan.slot(outer).offset + 8 * 36 * 4);
  // The sigmoid, alive while the block's bytes are, shares none of them.
  const ValueSlot& s = plan.slot(value_of(g, "sigmoid"));
  const ValueSlot& o = plan.slot(outer);
  EXPECT_TRUE(s.offset + s.bytes <= o.offset || s.offset >= o.offset + o.bytes);
}

TEST(Views, AConcatCopiesOnlyTheInputsThatCannotBeWrittenInPlace) {
  // The task of the concatenation and the inputs it does not copy.
  auto concat_task = [](const std::string& expr, const std::string& shapes) {
    const Graph g = build_graph(expr, parse_shape_map(shapes));
    const ExecutionPlan plan = make_execution_plan(g);
    const Task* t = task_with(plan, g, "concat");
    return std::pair{t->kind, t->in_place_inputs};
  };
  using Inputs = std::vector<size_t>;
  // A graph input is where the caller put it: only relu's output is written in place.
  EXPECT_EQ(concat_task("softmax[axis=1](concat[axis=1](x, relu(y)))", "x=1x4x6x6,y=1x4x6x6"),
            std::pair(Task::Kind::kNode, Inputs{1}));
  // Batch 2: each piece would be strided.
  EXPECT_EQ(concat_task("softmax[axis=1](concat[axis=1](relu(x), sigmoid(y)))", "x=2x4x6x6,y=2x4x6x6"),
            std::pair(Task::Kind::kNode, Inputs{}));
  // The second piece would start 12 bytes in: not 16-byte aligned.
  EXPECT_EQ(concat_task("softmax[axis=1](concat[axis=1](relu(x), sigmoid(y)))", "x=1x1x1x3,y=1x1x1x3"),
            std::pair(Task::Kind::kNode, Inputs{0}));
  // One value twice cannot be in two places.
  EXPECT_EQ(concat_task("softmax[axis=1](concat[axis=1](relu(x), relu(x)))", "x=1x4x6x6"),
            std::pair(Task::Kind::kNode, Inputs{}));
  // A graph output stays where the caller reads it.
  EXPECT_EQ(concat_task("(relu(x), softmax[axis=1](concat[axis=1](relu(x), sigmoid(x))))", "x=1x4x6x6"),
            std::pair(Task::Kind::kNode, Inputs{1}));
  // A piece of a split is a view of the split's input.
  EXPECT_EQ(concat_task("softmax[axis=1](concat[axis=1](split[axis=1, sizes=4x4](relu(x)).0, sigmoid(y)))",
                        "x=1x8x6x6,y=1x4x6x6"),
            std::pair(Task::Kind::kNode, Inputs{1}));
  // Inception after a merge: the piece of the merged convolution's split is
  // copied, the 3x3 convolution of the other piece writes in place.
  EXPECT_EQ(concat_task("softmax[axis=1](concat[axis=1](split[axis=1, sizes=4x4](relu(x)).0, "
                        "conv2d(split[axis=1, sizes=4x4](relu(x)).1, k)))",
                        "x=1x8x6x6,k=5x4x3x3"),
            std::pair(Task::Kind::kNode, Inputs{1}));
  // Every input written in place: nothing left to copy.
  EXPECT_EQ(concat_task("softmax[axis=1](concat[axis=1](relu(x), sigmoid(y)))", "x=1x4x6x6,y=1x4x6x6"),
            std::pair(Task::Kind::kAlias, Inputs{}));
}

// --- gathers of one constant index ----------------------------------------------------

// x [3, 5, 8] -> relu, then gathers along axis 1 of the constant indices given.
std::pair<Graph, std::vector<ValueRef>> gathers_of(std::vector<int64_t> indices) {
  Graph g;
  const ValueRef t = g.apply("relu", {g.add_input("x", {3, 5, 8})}, {});
  std::vector<ValueRef> picked;
  for (int64_t k : indices) {
    const ValueRef index = g.add_constant(ConstantValue(DType::kInt64, Tensor<int64_t>(Shape{}, {k})));
    picked.push_back(g.apply("gather", {t, index}, {{"axis", int64_t{1}}}));
  }
  return {std::move(g), picked};
}

TEST(Views, AGatherOfOneConstantIndexIsASlice) {
  // ViT's query, key and value picked from one tensor: views at the slice's offset.
  auto [g, picked] = gathers_of({0, 2, -2});
  g.add_output(g.apply("add", {picked[0], picked[1]}, {}));
  g.add_output(g.apply("softmax", {picked[2]}, {{"axis", int64_t{1}}}));
  const ExecutionPlan plan = make_execution_plan(g);
  const ValueSlot& source = plan.slot(g.node(picked[0].node).inputs[0]);
  EXPECT_TRUE(plan.slot(picked[0]).view);
  EXPECT_EQ(plan.slot(picked[0]).offset, source.offset);
  EXPECT_EQ(plan.slot(picked[0]).strides, (std::vector<int64_t>{40, 1}));
  EXPECT_TRUE(plan.slot(picked[1]).view);
  EXPECT_EQ(plan.slot(picked[1]).offset, source.offset + 2 * 8 * 4);
  // Index -2 is 3; softmax needs row-major bytes: that gather runs its kernel.
  EXPECT_FALSE(plan.slot(picked[2]).view);
  EXPECT_EQ(running_steps(plan, g), (std::vector<std::string>{"relu", "gather", "add", "softmax"}));
}

TEST(Views, AGatherThatCopiesTakesNoStridedInput) {
  // The gather's own kernel reads row-major bytes: a strided input of a
  // gather that is not a view is copied first.
  Graph g;
  const ValueRef t = g.apply("transpose", {g.apply("relu", {g.add_input("x", {5, 3, 8})}, {})},
                             {{"perm", std::vector<int64_t>{1, 0, 2}}});
  const ValueRef index = g.add_constant(ConstantValue(DType::kInt64, Tensor<int64_t>(Shape{}, {1})));
  const ValueRef picked = g.apply("gather", {t, index}, {{"axis", int64_t{0}}});
  g.add_output(g.apply("softmax", {picked}, {{"axis", int64_t{1}}}));
  const ExecutionPlan plan = make_execution_plan(g);
  EXPECT_FALSE(plan.slot(picked).view);
  EXPECT_FALSE(plan.slot(t).view);
  EXPECT_EQ(running_steps(plan, g), (std::vector<std::string>{"relu", "transpose", "gather", "softmax"}));
}

}  // namespace
}  // namespace tgr
