// Step signatures of the GPU runtime's plan (runtime/step_signature.h): what
// one task launches, the key of the measured step costs; and the graph
// `calibrate` times for a step. No GPU needed.
#include <gtest/gtest.h>

#include <algorithm>

#include "ir/text.h"
#include "runtime/execution_plan.h"
#include "runtime/interpreter.h"
#include "runtime/step_signature.h"

namespace tgr {
namespace {

std::vector<std::string> signatures(const Graph& g, const ExecutionPlan& plan) {
  std::vector<std::string> out;
  for (const Task& t : plan.tasks)
    if (!step_is_free(t)) out.push_back(step_signature(g, t));
  return out;
}

ExecutionPlan tasks_only(const Graph& g) {
  PlanOptions o;
  o.place_values = false;
  return make_execution_plan(g, o);
}

TEST(StepSignature, ConvBiasReluIsOneStepNamingItsNodesAndWiring) {
  const Graph g = build_graph("relu(add(conv2d(x, k), b))", parse_shape_map("x=1x8x7x5,k=4x8x3x3,b=1x4x1x1"));
  const ExecutionPlan plan = make_execution_plan(g);
  ASSERT_EQ(plan.tasks.size(), 1u);
  EXPECT_EQ(step_signature(g, plan.tasks[0]),
            "step conv: conv2d(float:1x8x7x5,float:4x8x3x3) ; add(float:1x4x7x5,float:1x4x1x1)<0,- ; "
            "relu(float:1x4x7x5)<1");
  const ParsedStepSignature parsed = parse_step_signature(step_signature(g, plan.tasks[0]));
  EXPECT_EQ(parsed.kind, "conv");
  ASSERT_EQ(parsed.nodes.size(), 3u);
  EXPECT_EQ(parsed.nodes[0].op_signature, "conv2d(float:1x8x7x5,float:4x8x3x3)");
  EXPECT_EQ(parsed.nodes[0].source, (std::vector<int>{-1, -1}));
  EXPECT_EQ(parsed.nodes[1].source, (std::vector<int>{0, -1}));
  EXPECT_EQ(parsed.nodes[2].source, (std::vector<int>{1}));
}

TEST(StepSignature, ElementwiseChainIsOneStepAndUnfusedItIsThree) {
  const Graph g = build_graph("mul(relu(add(x, y)), z)", parse_shape_map("x=4x6,y=4x6,z=4x6"));
  EXPECT_EQ(signatures(g, make_execution_plan(g)),
            (std::vector<std::string>{"step elementwise: add(float:4x6,float:4x6) ; relu(float:4x6)<0 ; "
                                      "mul(float:4x6,float:4x6)<1,-"}));
  PlanOptions unfused;
  unfused.fuse = false;
  EXPECT_EQ(signatures(g, make_execution_plan(g, unfused)),
            (std::vector<std::string>{"step elementwise: add(float:4x6,float:4x6)", "step elementwise: relu(float:4x6)",
                                      "step elementwise: mul(float:4x6,float:4x6)"}));
}

TEST(StepSignature, AViewIsAFreeStepAndWeightsAreNoStep) {
  Graph g;
  const ValueRef x = g.add_input("x", {2, 6});
  const ValueRef r = g.apply("reshape", {x}, {{"shape", std::vector<int64_t>{3, 4}}});
  const ValueRef w = g.apply("relu", {g.add_constant(ConstantValue(random_tensor<float>({3, 4}, 1)))});  // at load
  g.add_output(g.apply("matmul", {g.apply("transpose", {r}), w}));
  const ExecutionPlan plan = tasks_only(g);
  int free = 0;
  for (const Task& t : plan.tasks) free += step_is_free(t);
  // The reshape and the transpose (read by cuBLAS through its transpose
  // flag, views.h) are both views.
  EXPECT_EQ(free, 2);
  EXPECT_EQ(signatures(g, plan), (std::vector<std::string>{"step node: matmul(float:4x3,float:3x4)"}));
}

TEST(StepSignature, TasksOnlyPlanHasTheFullPlansTasks) {
  const Graph g = build_graph("relu(add(add(conv2d(x, k), b), sigmoid(mul(z, z))))",
                              parse_shape_map("x=1x8x7x5,k=4x8x1x1,b=4x1x1,z=1x4x7x5"));
  const ExecutionPlan full = make_execution_plan(g), tasks = tasks_only(g);
  EXPECT_EQ(signatures(g, full), signatures(g, tasks));
  EXPECT_TRUE(tasks.slots.empty());
  EXPECT_EQ(full.folded, tasks.folded);
}

TEST(StepSignature, EveryKindHasItsNameAndMalformedSignaturesAreRejected) {
  EXPECT_EQ(task_kind_name(Task::Kind::kProduct), "product");
  EXPECT_EQ(task_kind_name(Task::Kind::kConv), "conv");
  EXPECT_THROW(parse_step_signature("conv2d(float:1x8x7x5,float:4x8x3x3)"), ParseError);
  EXPECT_THROW(parse_step_signature("step conv: relu(float:4)<3"), ParseError);  // no earlier node 3
  EXPECT_THROW(parse_step_signature("step conv: relu(float:4)x"), ParseError);
}

// What calibrate times: copies of the step, each planned as the same step.
TEST(StepSignature, AConcatWithInputsWrittenInPlaceIsTheConcatOfTheOthers) {
  // relu and sigmoid write their pieces in place; x, a graph input, is
  // copied. The step is costed and timed as concatenating x alone.
  const Graph g =
      build_graph("softmax[axis=1](concat[axis=1](relu(y), x, sigmoid(y)))", parse_shape_map("x=1x4x6x6,y=1x8x6x6"));
  const ExecutionPlan plan = tasks_only(g);
  const Task* concat = nullptr;
  for (const Task& t : plan.tasks)
    if (g.node(t.root()).op->name == "concat") concat = &t;
  ASSERT_NE(concat, nullptr);
  ASSERT_EQ(concat->in_place_inputs, (std::vector<size_t>{0, 2}));
  const Graph alone = build_graph("concat[axis=1](x)", parse_shape_map("x=1x4x6x6"));
  const std::vector<std::string> expected = signatures(alone, tasks_only(alone));
  ASSERT_EQ(expected.size(), 1u);
  EXPECT_EQ(step_signature(g, *concat), expected[0]);
  const Graph timed = step_graph(g, plan, *concat, 2);
  EXPECT_EQ(timed.inputs().size(), 1u);
  EXPECT_EQ(signatures(timed, make_execution_plan(timed)), std::vector<std::string>(2, expected[0]));
}

// ShuffleNet's channel shuffle: reshape, transpose (a strided view), reshape.
// The last reshape cannot be a view of a strided tensor, so it copies; timed
// with a row-major input of its own it would be a view and time nothing
// (0.2 us in an H200's table, 5 to 9 us in the model). Its step is costed
// and timed with the transpose it reads: the step graph plans the transpose
// as a view and the reshape as the model's copy.
TEST(StepSignature, AReshapeOfATransposedViewIsTimedWithTheTranspose) {
  const Graph g =
      build_graph("relu(reshape[shape=1x12x5x5](transpose[perm=0x2x1x3x4](reshape[shape=1x2x6x5x5](relu(x)))))",
                  parse_shape_map("x=1x12x5x5"));
  const ExecutionPlan plan = tasks_only(g);
  const Task* copy = nullptr;
  for (const Task& t : plan.tasks)
    if (!step_is_free(t) && g.node(t.root()).op->name == "reshape") copy = &t;
  ASSERT_NE(copy, nullptr) << "the reshape of the transposed view copies";
  const std::string signature = step_signature(g, *copy);
  EXPECT_EQ(signature,
            "step node: transpose[perm=0x2x1x3x4](float:1x2x6x5x5) ; reshape[shape=1x12x5x5](float:1x6x2x5x5)<0");
  const Graph timed = step_graph(g, plan, *copy, 2);
  EXPECT_EQ(timed.inputs().size(), 1u);
  EXPECT_EQ(g.shape(g.node(copy->root()).inputs[0]), (Shape{1, 6, 2, 5, 5}));
  // Two copies of the step, each the copy the model runs (the transposes are views).
  EXPECT_EQ(signatures(timed, make_execution_plan(timed)), std::vector<std::string>(2, signature));
}

TEST(StepGraph, CopiesPlanAsTheSameStepWithWeightsAndLoadTimeValuesAsConstants) {
  Graph g;
  const ValueRef x = g.add_input("x", {1, 3, 6, 6});
  const ValueRef k = g.add_constant(ConstantValue(random_tensor<float>({4, 3, 3, 3}, 2)));
  const ValueRef b = g.apply("reshape", {g.add_constant(ConstantValue(random_tensor<float>({4}, 3)))},
                             {{"shape", std::vector<int64_t>{1, 4, 1, 1}}});  // computed at load
  const ValueRef conv = g.apply("relu", {g.apply("add", {g.apply("conv2d", {x, k}), b})});
  g.add_output(g.apply("mul", {g.apply("sigmoid", {conv}), conv}));
  const ExecutionPlan plan = tasks_only(g);
  const std::vector<std::string> model_steps = signatures(g, plan);
  ASSERT_EQ(model_steps.size(), 2u);
  for (const Task& t : plan.tasks) {
    const Graph step = step_graph(g, plan, t, 3);
    EXPECT_EQ(step.inputs().size(), 1u);  // the weight and the folded bias are constants
    // Each copy reads its own weight and bias (the conv step's two constants).
    auto constants = [](const Graph& graph) {
      return std::count_if(graph.nodes().begin(), graph.nodes().end(), [](const Node& n) { return n.is_constant(); });
    };
    const Graph one = step_graph(g, plan, t, 1);
    EXPECT_EQ(constants(one), g.node(t.nodes[0]).op->name == "conv2d" ? 2 : 0);
    EXPECT_EQ(constants(step), 3 * constants(one));
    EXPECT_EQ(signatures(step, make_execution_plan(step)), std::vector<std::string>(3, step_signature(g, t)));
    EXPECT_EQ(step.outputs().size(), 3u);
  }
}

// calibrate's default: a light step (a relu of one shared input) after each
// copy, so that each copy follows a step other than itself, as in a model.
TEST(StepGraph, SpacersRunBetweenTheCopies) {
  Graph g;
  const ValueRef x = g.add_input("x", {1, 3, 6, 6});
  const ValueRef k = g.add_constant(ConstantValue(random_tensor<float>({4, 3, 3, 3}, 2)));
  g.add_output(g.apply("relu", {g.apply("conv2d", {x, k})}));
  const ExecutionPlan plan = tasks_only(g);
  ASSERT_EQ(plan.tasks.size(), 1u);
  const std::string conv = step_signature(g, plan.tasks[0]);
  const Graph step = step_graph(g, plan, plan.tasks[0], 3, 64);
  EXPECT_EQ(step.inputs().size(), 2u);  // x and the spacers' input, each shared
  EXPECT_EQ(step.outputs().size(), 6u);
  const Graph spacers = spacer_graph(3, 64);
  const std::vector<std::string> spacer_steps = signatures(spacers, make_execution_plan(spacers));
  ASSERT_EQ(spacer_steps.size(), 3u);
  EXPECT_NE(spacer_steps[0], conv);
  // The plan runs them in turn: copy, spacer, copy, spacer, ...
  EXPECT_EQ(signatures(step, make_execution_plan(step)),
            (std::vector<std::string>{conv, spacer_steps[0], conv, spacer_steps[0], conv, spacer_steps[0]}));
}

// What op_costs.method records for calibrate's options.
TEST(StepGraph, TheCalibrationMethodNamesCopiesAndSpacer) {
  EXPECT_EQ(calibration_method(8, 64, 65536), "copies 8..64, spacer 65536 floats");
  EXPECT_EQ(calibration_method(8, 8, 0), "copies 8..8, back to back");
  EXPECT_EQ(calibration_method(16, 4, 0), "copies 16..16, back to back");  // at most never below at least
  EXPECT_NE(calibration_method(8, 64, 65536), calibration_method(8, 64, 1024));
}

// A view-like step (a Swin-T reshape) timed below its spacers: 0, said so,
// instead of a negative cost the database refuses (which ended the whole
// model's calibration).
TEST(StepGraph, AStepTimedBelowItsSpacersCostsZero) {
  bool clamped = true;
  EXPECT_DOUBLE_EQ(step_cost_ms(1.0, 0.2, 8, &clamped), 0.1);
  EXPECT_FALSE(clamped);
  EXPECT_DOUBLE_EQ(step_cost_ms(0.9, 1.0, 8, &clamped), 0.0);
  EXPECT_TRUE(clamped);
  EXPECT_DOUBLE_EQ(step_cost_ms(0.5, 0.0, 4), 0.125);  // back to back: no spacers
}

// Enough copies that their weights stream from memory, as in a model larger than L2.
TEST(StepGraph, WeightHeavyStepsGetCopiesBeyondTheL2) {
  Graph g;
  const ValueRef x = g.add_input("x", {1, 256, 14, 14});
  const ValueRef k = g.add_constant(ConstantValue(random_tensor<float>({256, 256, 3, 3}, 2)));
  const ValueRef b = g.add_constant(ConstantValue(random_tensor<float>({1, 256, 1, 1}, 3)));
  g.add_output(g.apply("relu", {g.apply("add", {g.apply("conv2d", {x, k}), b})}));
  const ExecutionPlan plan = tasks_only(g);
  ASSERT_EQ(plan.tasks.size(), 1u);
  const int64_t weights = step_weight_bytes(g, plan, plan.tasks[0]);
  EXPECT_EQ(weights, (256 * 256 * 9 + 256) * 4);  // the kernel and the bias; not the input
  const int64_t l2 = 50 << 20;                    // an H100's
  const int copies = copies_streaming_weights(weights, l2, 8, 64);
  EXPECT_EQ(copies, 45);  // 2 x 50 MiB over 2.36 MB
  EXPECT_GE(copies * weights, 2 * l2);
  EXPECT_LT((copies - 1) * weights, 2 * l2);
  // Bounds: never below --repeat, never above --max-repeat; no weights, no cache size: --repeat.
  EXPECT_EQ(copies_streaming_weights(weights, l2, 8, 32), 32);
  EXPECT_EQ(copies_streaming_weights(weights, 1 << 20, 8, 64), 8);
  EXPECT_EQ(copies_streaming_weights(0, l2, 8, 64), 8);
  EXPECT_EQ(copies_streaming_weights(weights, 0, 8, 64), 8);
  // An elementwise step of the same model reads no weights.
  Graph e;
  e.add_output(e.apply("sigmoid", {e.add_input("x", {1, 256, 14, 14})}));
  const ExecutionPlan eplan = tasks_only(e);
  EXPECT_EQ(step_weight_bytes(e, eplan, eplan.tasks[0]), 0);
}

}  // namespace
}  // namespace tgr
