// `optimize --target` (optimizer/target.h): the targets' names, the cost
// model each builds, and ONNX Runtime's measured cost model
// (optimizer/onnxruntime_cost_model.h): table lookups, the operators the
// exporter writes inside others, the fitted fallback, the signatures it asks
// the calibration to measure.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "ir/op_signature.h"
#include "ir/text.h"
#include "optimizer/onnxruntime_cost_model.h"
#include "optimizer/plan_cost_model.h"
#include "optimizer/target.h"
#include "rules_db/rules_db.h"
#include "runtime/execution_plan.h"
#include "runtime/step_signature.h"
#include "tests/optimizer_test_util.h"

namespace tgr::optimizer {
namespace {

namespace fs = std::filesystem;
using testing::weight;

// A rules database holding `costs` (signature -> ms) for `device`, removed at the end.
class CostsDb {
 public:
  CostsDb(const std::string& device, const std::unordered_map<std::string, double>& costs)
      : path_((fs::temp_directory_path() / ("tgr_target_test_" + std::to_string(::getpid()) + ".db")).string()) {
    clean();
    auto db = rules_db::RulesDb::open(path_, true);
    for (const auto& [signature, ms] : costs) db.put_op_cost(device, signature, ms);
  }
  ~CostsDb() { clean(); }
  const std::string& path() const { return path_; }

 private:
  void clean() {
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path_ + suffix);
  }
  std::string path_;
};

Graph conv_bias_relu(bool conv_read_twice) {
  Graph g;
  const ValueRef x = g.add_input("x", {1, 4, 8, 8});
  const ValueRef conv = g.apply("conv2d", {x, weight(g, {6, 4, 3, 3}, 1)});
  const ValueRef bias = g.apply("reshape", {weight(g, {6}, 2)}, {{"shape", std::vector<int64_t>{1, 6, 1, 1}}});
  const ValueRef y = g.apply("relu", {g.apply("add", {conv, bias})});
  g.add_output(y);
  if (conv_read_twice) g.add_output(conv);
  return g;
}

const Node& first(const Graph& g, std::string_view op) {
  for (int32_t i : g.topological_order())
    if (g.node(i).is_op() && g.node(i).op->name == op) return g.node(i);
  throw std::runtime_error("no " + std::string(op));
}

TEST(Target, NamesRoundTripAndUnknownNamesListTheTargets) {
  ASSERT_EQ(targets().size(), 3u);
  for (const TargetInfo& t : targets()) {
    EXPECT_EQ(parse_target(t.name), t.target);
    EXPECT_EQ(target_name(t.target), t.name);
    EXPECT_FALSE(t.help.empty());
  }
  EXPECT_EQ(target_name(Target::kRoofline), "roofline");
  try {
    parse_target("gpu");
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'gpu'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("onnxruntime-cpu, tgr-gpu, roofline"), std::string::npos) << e.what();
  }
  EXPECT_EQ(TargetOptions{}.target, Target::kOnnxRuntimeCpu);  // the default (optimizer/target.h says why)
}

TEST(Target, EachTargetBuildsItsOwnCostModelFromItsOwnTable) {
  const Graph g = conv_bias_relu(false);
  const std::string conv = op_signature(g, first(g, "conv2d"));
  CostsDb db(std::string(kOnnxRuntimeCpuDevice), {{conv, 0.25}});
  // The GPU runtime runs the convolution, its bias and its relu as one step.
  const ExecutionPlan plan = make_execution_plan(g);
  ASSERT_EQ(plan.tasks.size(), 1u);
  {
    auto gpu = rules_db::RulesDb::open(db.path(), true);
    gpu.put_op_cost("test-gpu", step_signature(g, plan.tasks[0]), 0.5);
  }
  TargetOptions o;
  o.costs_db = db.path();
  auto ort = make_cost_model(o);
  ASSERT_NE(dynamic_cast<OnnxRuntimeCostModel*>(ort.get()), nullptr);
  EXPECT_DOUBLE_EQ(ort->op_cost_us(g, first(g, "conv2d")), 250.0);
  o.target = Target::kTgrGpu;
  o.gpu_device = "test-gpu";
  auto gpu = make_cost_model(o);
  ASSERT_NE(dynamic_cast<PlanCostModel*>(gpu.get()), nullptr);
  EXPECT_DOUBLE_EQ(gpu->graph_cost(g), 500.0);
  EXPECT_GT(gpu->op_cost_us(g, first(g, "conv2d")), 450.0);  // nearly all of the step: the bias and relu ride along
  EXPECT_LT(gpu->op_cost_us(g, first(g, "relu")), 25.0);
  o.target = Target::kRoofline;
  auto roofline = make_cost_model(o);
  ASSERT_NE(dynamic_cast<AnalyticCostModel*>(roofline.get()), nullptr);
  EXPECT_NE(roofline->describe().find("roofline"), std::string::npos);
}

// A table whose step costs were timed two ways (calibrate's op_costs.method)
// says so in the cost model's description (optimize's summary, bench).
TEST(Target, AGpuTableTimedTwoWaysSaysSo) {
  const Graph g = conv_bias_relu(false);
  const ExecutionPlan plan = make_execution_plan(g);
  CostsDb db("test-gpu", {});
  {
    auto w = rules_db::RulesDb::open(db.path(), true);
    w.put_op_cost("test-gpu", step_signature(g, plan.tasks[0]), 0.5, "copies 8..64, spacer 65536 floats");
  }
  TargetOptions o;
  o.costs_db = db.path();
  o.target = Target::kTgrGpu;
  o.gpu_device = "test-gpu";
  EXPECT_EQ(make_cost_model(o)->describe().find("ways"), std::string::npos);  // one way: nothing to say
  {
    auto w = rules_db::RulesDb::open(db.path(), true);
    w.put_op_cost("test-gpu", "step node: relu(float:4)", 0.01);  // timed before methods were recorded
  }
  const std::string text = make_cost_model(o)->describe();
  EXPECT_NE(text.find("timed 2 ways (1 not recorded, 1 copies 8..64, spacer 65536 floats)"), std::string::npos) << text;
}

// The bias add is a Conv's B once exported and ONNX Runtime runs the relu
// inside the convolution: the model charges for neither, nor for the reshape
// of the bias weight (folded). Read twice, the convolution keeps its Add and
// the relu reads the Add.
TEST(OnnxRuntimeCost, AddsAndReluRunInsideAConvCostNothing) {
  const Graph fused = conv_bias_relu(false), unfused = conv_bias_relu(true);
  const std::string conv = op_signature(fused, first(fused, "conv2d"));
  const std::string relu = op_signature(fused, first(fused, "relu"));
  const std::string add = op_signature(fused, first(fused, "add"));
  OnnxRuntimeCostModel cost({{conv, 0.040}, {relu, 0.010}, {add, 0.020}});
  EXPECT_DOUBLE_EQ(cost.graph_cost(fused), 40.0);
  EXPECT_DOUBLE_EQ(cost.graph_cost(unfused), 70.0);
  EXPECT_EQ(cost.missing_signatures(), 0u);
  EXPECT_NE(cost.describe().find("3 signatures in the table"), std::string::npos) << cost.describe();
}

// Signatures the table lacks are estimated by a fit of the table: here every
// measured product took 3 us + 20 ps per FLOP, and so does the estimate.
TEST(OnnxRuntimeCost, MissingSignaturesAreEstimatedByAFitOfTheTable) {
  auto product = [](int64_t m, int64_t k, int64_t n) {
    Graph g;
    g.add_output(g.apply("matmul", {g.add_input("x", {m, k}), weight(g, {k, n}, 1)}));
    return g;
  };
  std::unordered_map<std::string, double> costs;
  for (int64_t n : {8, 16, 64, 128, 256, 512}) {
    const Graph g = product(n, 2 * n, n);
    costs[op_signature(g, first(g, "matmul"))] = 0.003 + 2e-11 * (2.0 * n * 2 * n * n);
  }
  OnnxRuntimeCostModel cost(costs);
  const Graph missing = product(100, 300, 200);
  const double expected_us = (0.003 + 2e-11 * (2.0 * 100 * 300 * 200)) * 1000;
  EXPECT_NEAR(cost.graph_cost(missing), expected_us, 0.02 * expected_us);
  EXPECT_EQ(cost.missing_signatures(), 1u);
  EXPECT_NE(cost.describe().find("fitted fallback for 1 missing"), std::string::npos) << cost.describe();
  // An operator the table never measured: the fit of all operators pooled, never negative.
  Graph other;
  other.add_output(other.apply("relu", {other.add_input("x", {64, 64})}));
  EXPECT_GT(cost.graph_cost(other), 0.0);
}

// What the calibration measures next: each missing signature once, as a
// graph of the operator alone whose weights are constants (initializers once
// exported, as in the model) and whose other operands are inputs.
TEST(OnnxRuntimeCost, AskedSignaturesAreOneOperatorGraphsWithTheirWeights) {
  OnnxRuntimeCostModel cost({});
  const Graph g = conv_bias_relu(true);
  cost.graph_cost(g);
  cost.graph_cost(g);
  const auto asked = cost.asked();
  ASSERT_EQ(asked.size(), 3u);  // conv2d, add, relu (the reshape of a weight is folded)
  const std::string conv = op_signature(g, first(g, "conv2d"));
  ASSERT_TRUE(asked.contains(conv));
  const Graph& one = asked.at(conv);
  EXPECT_EQ(one.inputs().size(), 1u);  // x; the kernel is a constant
  EXPECT_EQ(one.num_ops(), 1);
  EXPECT_EQ(op_signature(one, first(one, "conv2d")), conv);
  const Graph& add = asked.at(op_signature(g, first(g, "add")));
  EXPECT_EQ(add.inputs().size(), 1u);  // the bias was computed from weights only
}

TEST(OpSignature, GraphOfSignatureRebuildsTheApplication) {
  DTypeMap dtypes;
  const ShapeMap shapes = parse_shape_map("x=1x3x9x9,k=4x3x3x3,y=2x6,ids=int64:5,s=3x2", &dtypes);
  const Graph g = build_graph(
      "(conv2d[pad=1x0x0x1, stride=2x1](x, k), split[axis=1, sizes=2x4](y).1, gather[axis=1](y, ids), "
      "reduce_sum[axes=0](s))",
      shapes, dtypes);
  int checked = 0;
  for (int32_t i : g.topological_order()) {
    const Node& n = g.node(i);
    if (!n.is_op()) continue;
    const std::string signature = op_signature(g, n);
    const Graph rebuilt = graph_of_signature(signature);
    EXPECT_EQ(op_signature(rebuilt, first(rebuilt, n.op->name)), signature);
    ++checked;
  }
  EXPECT_EQ(checked, 4);
  EXPECT_THROW(graph_of_signature("conv2d"), ParseError);
  EXPECT_THROW(graph_of_signature("relu(1x3)"), ParseError);
}

}  // namespace
}  // namespace tgr::optimizer
