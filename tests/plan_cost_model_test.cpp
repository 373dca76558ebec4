// The tgr-gpu target's cost model (optimizer/plan_cost_model.h): a graph
// costs the measured steps of the GPU runtime's plan for it, a step the
// table lacks a fit of the measured ones; the search takes a merge exactly
// when its merged step is measured faster than the steps it replaces.
#include <gtest/gtest.h>

#include <map>

#include "ir/op_signature.h"
#include "ir/text.h"
#include "optimizer/backtracking_search.h"
#include "optimizer/plan_cost_model.h"
#include "runtime/execution_plan.h"
#include "runtime/step_signature.h"
#include "tests/attention_graphs.h"
#include "tests/optimizer_test_util.h"
#include "verifier/axioms.h"

namespace tgr::optimizer {
namespace {

using testing::count_ops;
using testing::rules_of;
using testing::weight;

// The signatures of the steps of `g`'s plan that launch something, in order.
std::vector<std::string> steps_of(const Graph& g) {
  std::vector<std::string> out;
  for (const Task& t : make_execution_plan(g).tasks)
    if (!step_is_free(t)) out.push_back(step_signature(g, t));
  return out;
}

Graph relu_of(int64_t n) { return build_graph("relu(x)", parse_shape_map("x=" + std::to_string(n))); }

TEST(PlanCostModel, MeasuredStepsAreSummedAndViewsAreFree) {
  const Graph g = build_graph("relu(add(conv2d(x, k), b))", parse_shape_map("x=1x8x7x5,k=4x8x3x3,b=1x4x1x1"));
  Graph with_view = g;  // and a reshape of the result: a view, no step
  with_view.add_output(with_view.apply("reshape", {with_view.outputs()[0]}, {{"shape", std::vector<int64_t>{4, 35}}}));
  const std::vector<std::string> steps = steps_of(g);
  ASSERT_EQ(steps.size(), 1u);
  ASSERT_EQ(steps_of(with_view), steps);
  PlanCostModel model("test-gpu", {{steps[0], 0.04}});
  EXPECT_DOUBLE_EQ(model.graph_cost(g), 40.0);
  EXPECT_DOUBLE_EQ(model.graph_cost(with_view), 40.0);
  EXPECT_EQ(model.missing_steps(), 0u);
  // Per node: the convolution's FLOPs dominate its step.
  const std::vector<double> per_node = model.node_costs_us(g);
  double sum = 0;
  for (double c : per_node) sum += c;
  EXPECT_NEAR(sum, 40.0, 1e-9);
  for (const Node& n : g.nodes()) {
    if (n.is_op() && n.op->name == "relu") {
      EXPECT_LT(model.op_cost_us(g, n), 1.0);
    }
  }
}

TEST(PlanCostModel, AnAttentionIsOneMeasuredStep) {
  // Grouped-query attention with a causal mask: one step (runtime/attention.h),
  // its heads' splits and merge views; the model costs what calibrate measured for it.
  const Graph g = test::attention_variant({.Hkv = 2, .mask = test::AttentionMask::kCausal, .nan_guard = true});
  const std::vector<std::string> steps = steps_of(g);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].rfind("step attention: ", 0), 0u) << steps[0];
  PlanCostModel model("test-gpu", {{steps[0], 0.012}});
  EXPECT_DOUBLE_EQ(model.graph_cost(g), 12.0);
  EXPECT_EQ(model.missing_steps(), 0u);
}

TEST(PlanCostModel, AModelAtAPrecisionCostsTheStepsTimedAtIt) {
  const Graph g = build_graph("relu(add(conv2d(x, k), b))", parse_shape_map("x=1x8x7x5,k=4x8x3x3,b=1x4x1x1"));
  std::unordered_map<std::string, double> table;
  std::map<Precision, std::string> signature;
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kBf16, Precision::kFp16}) {
    PlanOptions options;
    options.precision = p;
    const ExecutionPlan plan = make_execution_plan(g, options);
    ASSERT_EQ(plan.tasks.size(), 1u);
    signature[p] = step_signature(g, plan.tasks[0], p);
    EXPECT_EQ(signature_precision(signature[p]), p) << signature[p];
    table[signature[p]] = 0.01 * (1 + static_cast<int>(p));  // 10, 20, 30, 40 us
  }
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kBf16, Precision::kFp16}) {
    PlanCostModel model("test-gpu", table, RooflineParams{}, p);
    EXPECT_DOUBLE_EQ(model.graph_cost(g), 10.0 * (1 + static_cast<int>(p))) << precision_name(p);
    EXPECT_EQ(model.measured_steps(), 1u) << "only the table's steps of " << precision_name(p);
  }
  // A step timed at another precision only is not this precision's: the fallback prices it.
  PlanCostModel bf16_only("test-gpu", {{signature[Precision::kBf16], 0.03}}, RooflineParams{}, Precision::kFp32);
  bf16_only.graph_cost(g);
  EXPECT_EQ(bf16_only.measured_steps(), 0u);
  EXPECT_EQ(bf16_only.missing_steps(), 1u);
  EXPECT_EQ(signature_precision(op_signature(g, g.node(g.outputs()[0].node))), Precision::kFp32);
}

TEST(PlanCostModel, AStepOfOneOperatorFallsBackToTheOperatorsRow) {
  const Graph g = build_graph("matmul(x, w)", parse_shape_map("x=8x16,w=16x4"));
  const Node& m = g.node(g.outputs()[0].node);
  PlanCostModel model("test-gpu", {{op_signature(g, m), 0.007}});
  EXPECT_DOUBLE_EQ(model.graph_cost(g), 7.0);
  EXPECT_EQ(model.missing_steps(), 0u);
}

TEST(PlanCostModel, UnmeasuredStepsAreFittedToTheMeasuredOnesOfTheirKind) {
  // relu steps measured at 2 us + 1 us per 4000 bytes (a linear law the fit must recover).
  std::unordered_map<std::string, double> table;
  auto law_ms = [](int64_t n) { return (2.0 + 8.0 * static_cast<double>(n) / 4000.0) / 1000.0; };
  for (int64_t n : {1000, 4000, 16000, 64000}) table[steps_of(relu_of(n))[0]] = law_ms(n);
  PlanCostModel model("test-gpu", table);
  EXPECT_EQ(model.measured_steps(), 4u);
  // A guess is priced kUnmeasuredMargin above the fit.
  const double margin = PlanCostModel::kUnmeasuredMargin;
  EXPECT_GT(margin, 1.0);
  const Graph big = relu_of(256000);
  EXPECT_NEAR(model.graph_cost(big), margin * law_ms(256000) * 1000.0, 0.01 * law_ms(256000) * 1000.0);
  EXPECT_NEAR(model.fitted_us(steps_of(big)[0]), law_ms(256000) * 1000.0, 0.01 * law_ms(256000) * 1000.0);
  EXPECT_EQ(model.missing_steps(), 1u);
  EXPECT_NE(model.describe().find("1 missing"), std::string::npos) << model.describe();
  // An operator with no measured step uses the fit of its kind's; an empty table, the roofline.
  const Graph sig = build_graph("sigmoid(x)", parse_shape_map("x=64000"));
  EXPECT_NEAR(model.graph_cost(sig), margin * law_ms(64000) * 1000.0, 0.01 * law_ms(64000) * 1000.0);
  PlanCostModel empty("test-gpu", {});
  EXPECT_NEAR(empty.graph_cost(big), margin * (3.0 + 256000 * 8 / 3.35e12 * 1e6), 1e-9);
  // An exploring search (optimize --unmeasured-margin 0.5) prices a guess below its fit; a measured step
  // costs what was measured either way.
  PlanCostModel exploring("test-gpu", table);
  exploring.set_unmeasured_margin(0.5);
  EXPECT_NEAR(exploring.graph_cost(big), 0.5 * law_ms(256000) * 1000.0, 0.01 * law_ms(256000) * 1000.0);
  EXPECT_DOUBLE_EQ(exploring.graph_cost(relu_of(4000)), model.graph_cost(relu_of(4000)));
  EXPECT_NE(exploring.describe().find("priced x0.50"), std::string::npos) << exploring.describe();
}

// Two convolutions of one input, concatenated: the rule merges them into one
// convolution of concatenated weights (folded at load). Original: two conv
// steps, which write their outputs in place into the concatenation's bytes
// (runtime/views.h), so the concatenation runs nothing; merged: one conv step.
BacktrackingResult search_two_convs(double merged_ms) {
  Graph g;
  const ValueRef x = g.add_input("x", {1, 4, 8, 8});
  const ValueRef k0 = weight(g, {2, 4, 3, 3}, 1), k1 = weight(g, {2, 4, 3, 3}, 2);
  g.add_output(g.apply("concat", {g.apply("conv2d", {x, k0}), g.apply("conv2d", {x, k1})}, {{"axis", int64_t{1}}}));
  Graph merged;
  const ValueRef mx = merged.add_input("x", {1, 4, 8, 8});
  const ValueRef mk = merged.apply("concat", {weight(merged, {2, 4, 3, 3}, 1), weight(merged, {2, 4, 3, 3}, 2)},
                                   {{"axis", int64_t{0}}});
  merged.add_output(merged.apply("conv2d", {mx, mk}));
  const std::vector<std::string> original_steps = steps_of(g), merged_steps = steps_of(merged);
  EXPECT_EQ(original_steps.size(), 2u);
  EXPECT_EQ(merged_steps.size(), 1u);
  std::unordered_map<std::string, double> table;
  for (const std::string& s : original_steps) table[s] = 0.010;  // each conv 10 us (one signature)
  table[merged_steps[0]] = merged_ms;
  PlanCostModel model("test-gpu", table);
  EXPECT_DOUBLE_EQ(model.graph_cost(g), 20.0);
  InstanceProver instances(testing::prover(), testing::proof_options());
  BacktrackingOptions options;
  options.alpha = 1.0;
  options.timeout_s = 60;
  const auto rules = rules_of({{"concat[axis=1](conv2d(i0, k0), conv2d(i0, k1)) => conv2d(i0, concat[axis=0](k0, k1))",
                                "i0=1x2x4x4,k0=2x2x3x3,k1=2x2x3x3"}});
  return backtracking_search(g, rules, model, instances, options);
}

// `bare` and `fused` are one step each, of different signatures; with only
// `fused` measured (`ms`), `bare` costs that measurement.
void expect_bare_costs_the_fused_measurement(const Graph& fused, const Graph& bare, double ms) {
  const std::vector<std::string> fused_steps = steps_of(fused), bare_steps = steps_of(bare);
  ASSERT_EQ(fused_steps.size(), 1u);
  ASSERT_EQ(bare_steps.size(), 1u);
  ASSERT_NE(fused_steps[0], bare_steps[0]);
  PlanCostModel model("test-gpu", {{fused_steps[0], ms}});
  EXPECT_DOUBLE_EQ(model.graph_cost(bare), ms * 1000.0);
}

// A convolution whose bare step is unmeasured costs what the same
// convolution measured with its bias and relu (the epilogue runs inside
// cuDNN's call): what extraction sees of a convolution alone.
TEST(PlanCostModel, AConvolutionMeasuredWithAnEpilogueCostsThatAlone) {
  Graph fused;
  const ValueRef x = fused.add_input("x", {1, 8, 6, 6});
  const ValueRef b = weight(fused, {1, 8, 1, 1}, 3);
  fused.add_output(
      fused.apply("relu", {fused.apply("add", {fused.apply("conv2d", {x, weight(fused, {8, 8, 3, 3}, 1)}), b})}));
  Graph bare;
  bare.add_output(bare.apply("conv2d", {bare.add_input("x", {1, 8, 6, 6}), weight(bare, {8, 8, 3, 3}, 1)}));
  expect_bare_costs_the_fused_measurement(fused, bare, 0.021);
}

// A product with a bias measured, the bare product (a step of kind "node",
// not "product") unmeasured: the measurement, as for a convolution above.
TEST(PlanCostModel, AProductMeasuredWithABiasCostsThatBare) {
  Graph biased;
  biased.add_output(
      biased.apply("add", {biased.apply("matmul", {biased.add_input("x", {16, 32}), weight(biased, {32, 64}, 1)}),
                           weight(biased, {64}, 2)}));
  Graph bare;
  bare.add_output(bare.apply("matmul", {bare.add_input("x", {16, 32}), weight(bare, {32, 64}, 1)}));
  expect_bare_costs_the_fused_measurement(biased, bare, 0.012);
}

// A merged product no one measured, between two measured sizes of it (BERT's
// 768 x 1536 between 768 x 768 and the merged 768 x 2304): on the line
// between them, over kInterpolatedMargin; off their range, the fit.
TEST(PlanCostModel, AnUnmeasuredProductSizeIsInterpolatedBetweenMeasuredOnes) {
  auto product = [](int64_t n) {
    Graph g;
    g.add_output(g.apply("matmul", {g.add_input("x", {128, 768}), weight(g, {768, n}, 1)}));
    return g;
  };
  const std::string small = steps_of(product(768))[0], large = steps_of(product(2304))[0];
  PlanCostModel model("test-gpu", {{small, 0.010}, {large, 0.020}});
  EXPECT_NEAR(model.graph_cost(product(1536)), 15.0 * PlanCostModel::kInterpolatedMargin, 1e-9);
  EXPECT_NEAR(model.graph_cost(product(1152)), 12.5 * PlanCostModel::kInterpolatedMargin, 1e-9);
  EXPECT_EQ(model.missing_steps(), 2u);
  // Above the largest measured size nothing brackets it: not the line's 30 us.
  EXPECT_NE(model.graph_cost(product(3072)), 30.0 * PlanCostModel::kInterpolatedMargin);
  // K is one size in two places (both operands' shapes).
  auto by_k = [](int64_t k) {
    Graph g;
    g.add_output(g.apply("matmul", {g.add_input("x", {128, k}), weight(g, {k, 768}, 1)}));
    return g;
  };
  PlanCostModel k_model("test-gpu", {{steps_of(by_k(512))[0], 0.008}, {steps_of(by_k(1024))[0], 0.012}});
  EXPECT_NEAR(k_model.graph_cost(by_k(768)), 10.0 * PlanCostModel::kInterpolatedMargin, 1e-9);
}

TEST(PlanCostModel, TheSearchMergesExactlyWhenTheMergedStepIsMeasuredFaster) {
  const BacktrackingResult faster = search_two_convs(0.012);  // 12 us against 20 us
  EXPECT_EQ(count_ops(faster.best, "conv2d"), 1);
  EXPECT_DOUBLE_EQ(faster.best_cost, 12.0);
  const BacktrackingResult slower = search_two_convs(0.025);  // 25 us against 20 us
  EXPECT_EQ(count_ops(slower.best, "conv2d"), 2);
  EXPECT_DOUBLE_EQ(slower.best_cost, 20.0);
}

}  // namespace
}  // namespace tgr::optimizer
