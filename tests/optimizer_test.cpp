// The optimizer (optimizer/): matching, instances at model shapes, the
// backtracking search on model-shaped graphs, cost models, weight folding.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include "ir/op_signature.h"
#include "optimizer/backtracking_search.h"
#include "optimizer/cost_model.h"
#include "optimizer/fold_constants.h"
#include "optimizer/matcher.h"
#include "optimizer/node_names.h"
#include "optimizer/partial_instance.h"
#include "optimizer/rewrite.h"
#include "rules_db/rules_db.h"
#include "runtime/interpreter.h"
#include "tests/optimizer_test_util.h"
#include "verifier/axioms.h"

namespace tgr::optimizer {
namespace {

namespace fs = std::filesystem;

using testing::default_rules;
using testing::proof_options;
using testing::prover;

using testing::count_ops;
using testing::directions_of;
using testing::rules_of;
using testing::weight;

// The outputs of both graphs agree on random inputs (float32).
void expect_same_outputs(const Graph& a, const Graph& b) { testing::expect_same_outputs(a, b, 1e-4); }

BacktrackingResult optimize(const Graph& g, const std::vector<DirectedRule>& rules, double alpha, int budget = 200) {
  AnalyticCostModel cost;
  InstanceProver instances(prover(), proof_options());
  BacktrackingOptions options;
  options.alpha = alpha;
  options.budget = budget;
  options.timeout_s = 60;
  return backtracking_search(g, rules, cost, instances, options);
}

// --- matching ------------------------------------------------------------------

const std::pair<std::string, std::string> kConcatConvs{
    "concat[axis=1](conv2d(i0, k0), conv2d(i0, k1)) => conv2d(i0, concat[axis=0](k0, k1))",
    "i0=1x2x4x4,k0=2x2x3x3,k1=2x2x3x3"};

// Two products of one input merged into one over concatenated weights, split
// (a two-output rule).
const std::pair<std::string, std::string> kMergeProducts{
    "(matmul(x0, w0), matmul(x0, w1)) => (split[axis=1, sizes=4x5](matmul(x0, concat[axis=1](w0, w1))).0, "
    "split[axis=1, sizes=4x5](matmul(x0, concat[axis=1](w0, w1))).1)",
    "x0=2x3,w0=3x4,w1=3x5"};

Graph two_convs(bool first_also_output) {
  Graph g;
  const ValueRef x = g.add_input("x", {1, 4, 8, 8});
  const ValueRef a = g.apply("conv2d", {x, weight(g, {3, 4, 3, 3}, 1)});
  const ValueRef b = g.apply("conv2d", {x, weight(g, {5, 4, 3, 3}, 2)});
  g.add_output(g.apply("concat", {a, b}, {{"axis", int64_t{1}}}), "y");
  if (first_also_output) g.add_output(a, "a");
  return g;
}

TEST(Matching, FindsConvolutionsOfOneInput) {
  const auto rules = rules_of({kConcatConvs});
  const Graph g = two_convs(false);
  const auto matches = find_matches(GraphIndex(g), rules[0]);
  ASSERT_EQ(matches.size(), 1u);
}

TEST(Matching, IntermediateUsedOutsideTheMatchIsRejected) {
  const auto rules = rules_of({kConcatConvs});
  const Graph g = two_convs(true);
  MatchStats stats;
  EXPECT_TRUE(find_matches(GraphIndex(g), rules[0], 64, &stats).empty());
  EXPECT_EQ(stats.found, 1);
  EXPECT_EQ(stats.used_outside, 1);
}

TEST(Matching, ReplacementThatWouldReadItsOwnResultIsRejected) {
  // (m0, m1) with m1 = matmul(x, relu(m0)): merging them would make the
  // merged product read relu of its own output.
  const auto rules = rules_of({kMergeProducts});
  Graph g;
  const ValueRef x = g.add_input("x", {4, 4});
  const ValueRef m0 = g.apply("matmul", {x, weight(g, {4, 4}, 1)});
  const ValueRef m1 = g.apply("matmul", {x, g.apply("relu", {m0})});
  g.add_output(m0);
  g.add_output(m1);
  MatchStats stats;
  EXPECT_TRUE(find_matches(GraphIndex(g), rules[0], 64, &stats).empty());
  EXPECT_GE(stats.cycles, 1);
}

TEST(Matching, ParametersMustBeEqual) {
  const auto rules = rules_of({{"relu(conv2d(i0, k0)) => conv2d[act=relu](i0, k0)", "i0=1x2x4x4,k0=2x2x3x3"}});
  Graph g;
  const ValueRef x = g.add_input("x", {1, 4, 8, 8});
  g.add_output(g.apply("relu", {g.apply("conv2d", {x, weight(g, {4, 4, 3, 3}, 1)}, {{"stride", std::vector<int64_t>{2, 2}}})}));
  EXPECT_TRUE(find_matches(GraphIndex(g), rules[0]).empty());  // the rule's conv has stride 1
}

// --- instances at model shapes --------------------------------------------------

TEST(Instance, SplitSizesAreRederivedFromTheModelShapes) {
  const auto rules = rules_of({kMergeProducts});
  Graph g;
  const ValueRef x = g.add_input("x", {8, 16});
  g.add_output(g.apply("matmul", {x, weight(g, {16, 6}, 1)}));
  g.add_output(g.apply("matmul", {x, weight(g, {16, 10}, 2)}));
  const auto matches = find_matches(GraphIndex(g), rules[0]);
  ASSERT_FALSE(matches.empty());
  const auto inst = instantiate(g, rules[0], matches[0]);
  ASSERT_TRUE(inst);
  EXPECT_NE(inst->text.find("sizes=6x10"), std::string::npos) << inst->text;
  EXPECT_EQ(inst->shapes, "x0=8x16,w0=16x6,w1=16x10");
  InstanceProver instances(prover(), proof_options());
  EXPECT_TRUE(instances.proved(*inst));
  const Graph rewritten = apply_instance(g, matches[0], *inst);
  EXPECT_EQ(count_ops(rewritten, "matmul"), 1);
  expect_same_outputs(g, rewritten);
}

TEST(Instance, TheCacheReturnsWhatABuildWouldAndKeysByShapes) {
  const auto rules = rules_of({kMergeProducts});
  // Two places with the same shapes (one instance), a third with others.
  Graph g;
  const ValueRef x = g.add_input("x", {8, 16});
  const ValueRef y = g.add_input("y", {8, 16});
  const ValueRef z = g.add_input("z", {8, 12});
  g.add_output(g.apply("matmul", {x, weight(g, {16, 6}, 1)}));
  g.add_output(g.apply("matmul", {x, weight(g, {16, 10}, 2)}));
  g.add_output(g.apply("matmul", {y, weight(g, {16, 6}, 3)}));
  g.add_output(g.apply("matmul", {y, weight(g, {16, 10}, 4)}));
  g.add_output(g.apply("matmul", {z, weight(g, {12, 7}, 5)}));
  g.add_output(g.apply("matmul", {z, weight(g, {12, 9}, 6)}));
  const auto matches = find_matches(GraphIndex(g), rules[0]);
  InstanceCache cache;
  std::set<std::string> texts;
  for (const Match& m : matches) {
    const auto built = instantiate(g, rules[0], m);
    const auto cached = instantiate(g, rules[0], m, &cache);
    ASSERT_EQ(built.has_value(), cached.has_value());
    if (!built) continue;
    EXPECT_EQ(cached->text, built->text);
    EXPECT_EQ(cached->shapes, built->shapes);
    EXPECT_EQ(cached->bindings, built->bindings);  // this match's values, not the first's
    EXPECT_EQ(cached->rule.target.nodes().size(), built->rule.target.nodes().size());
    texts.insert(cached->text);
  }
  EXPECT_NE(std::find_if(texts.begin(), texts.end(),
                         [](const std::string& t) { return t.find("sizes=7x9") != std::string::npos; }),
            texts.end());
  const InstanceCache::Stats stats = cache.stats();
  EXPECT_EQ(stats.hits + stats.misses, static_cast<int64_t>(matches.size()));
  EXPECT_GE(stats.hits, 1);                                     // x's pair and y's pair: one build
  EXPECT_EQ(stats.misses, static_cast<int64_t>(texts.size()));  // one build per distinct instance
}

// --- names (optimizer/node_names.h) -------------------------------------------------

TEST(Names, ARewriteKeepsTheNamesOfWhatSurvivesAndNamesWhatItMakesAfterTheRule) {
  const auto rules = rules_of({kMergeProducts});
  Graph g;
  const ValueRef x = g.add_input("x", {8, 16});
  const OpDef& matmul = OpTable::instance().get("matmul");
  const OpDef& relu = OpTable::instance().get("relu");
  const ValueRef q = g.add_op(matmul, matmul.make_params({}), {x, weight(g, {16, 6}, 1)}, "/layer/query/MatMul")[0];
  const ValueRef k = g.add_op(matmul, matmul.make_params({}), {x, weight(g, {16, 10}, 2)}, "/layer/key/MatMul")[0];
  const ValueRef r = g.add_op(relu, relu.make_params({}), {q}, "/layer/Relu")[0];
  g.name_value(r, "/layer/Relu_output_0");
  g.add_output(r);
  g.add_output(k);
  const auto matches = find_matches(GraphIndex(g), rules[0]);
  ASSERT_FALSE(matches.empty());
  const auto inst = instantiate(g, rules[0], matches[0]);
  ASSERT_TRUE(inst);
  AppliedRewrite record;
  const Graph out = apply_instance(g, matches[0], *inst, rule_tag(rules[0]), &record);
  EXPECT_EQ(record.removed, (std::vector<std::string>{"/layer/query/MatMul", "/layer/key/MatMul"}));
  const std::string stem = "/layer/query/MatMul/rule" + std::to_string(rules[0].id) + "/";
  EXPECT_EQ(record.added, (std::vector<std::string>{stem + "concat", stem + "matmul", stem + "split"}));
  std::map<std::string, const Node*> by_name;
  for (int32_t i : out.topological_order())
    if (out.node(i).is_op()) by_name[out.node(i).name] = &out.node(i);
  ASSERT_TRUE(by_name.contains("/layer/Relu"));  // survives, names and all
  EXPECT_EQ(by_name["/layer/Relu"]->value_names, (std::vector<std::string>{"/layer/Relu_output_0"}));
  EXPECT_FALSE(by_name.contains("/layer/query/MatMul"));
  ASSERT_TRUE(by_name.contains(stem + "split"));
  EXPECT_EQ(by_name[stem + "split"]->value_names,
            (std::vector<std::string>{stem + "split_output_0", stem + "split_output_1"}));
  // Folding keeps operator names and names a folded weight as the value it replaces.
  const Graph folded = fold_constants(out);
  bool concat_folded = false, relu_named = false;
  for (int32_t i : folded.topological_order()) {
    concat_folded |= folded.node(i).is_constant() && folded.node(i).name == stem + "concat_output_0";
    relu_named |= folded.node(i).is_op() && folded.node(i).name == "/layer/Relu";
  }
  EXPECT_TRUE(concat_folded);
  EXPECT_TRUE(relu_named);
}

TEST(Names, ARewrittenNodesNameIsCutBackToTheModelsBeforeItIsReused) {
  EXPECT_EQ(model_name_of("/a/MatMul/rule20/matmul_1"), "/a/MatMul");
  EXPECT_EQ(model_name_of("/a/MatMul/default_rule3/split"), "/a/MatMul");
  EXPECT_EQ(model_name_of("rule3/split"), "");
  EXPECT_EQ(model_name_of("/a/rules/rule/x"), "/a/rules/rule/x");  // no rule id: a model's own name
  RewriteNamer namer("rule5", {"", "/a/MatMul/rule20/matmul", "/b/Add"},
                     [](const std::string& n) { return n == "/a/MatMul/rule5/add"; });
  EXPECT_EQ(namer.node_name("add"), "/a/MatMul/rule5/add_1");  // the graph holds "/a/MatMul/rule5/add"
  EXPECT_EQ(namer.node_name("add"), "/a/MatMul/rule5/add_2");
  EXPECT_EQ(namer.node_name("relu"), "/a/MatMul/rule5/relu");
}

TEST(Instance, AnInstanceThatDoesNotHoldAtTheModelShapesIsNotProved) {
  // Summing the kernels of two convolutions of one input is right for
  // kernels of one size. With a 3x3 and a 1x1 kernel the target still
  // type-checks (add broadcasts the 1x1 kernel) but computes something
  // else: the instance proof at the model's shapes refuses it.
  const auto rules = rules_of({{"add(conv2d(i0, k0), conv2d(i0, k1)) => conv2d(i0, add(k0, k1))",
                                "i0=1x2x4x4,k0=2x2x3x3,k1=2x2x3x3"}});
  Graph g;
  const ValueRef x = g.add_input("x", {1, 2, 6, 6});
  g.add_output(g.apply("add", {g.apply("conv2d", {x, weight(g, {2, 2, 3, 3}, 1)}),
                               g.apply("conv2d", {x, weight(g, {2, 2, 1, 1}, 2)})}));
  const auto matches = find_matches(GraphIndex(g), rules[0]);
  ASSERT_EQ(matches.size(), 2u);  // add is commutative: both orders
  InstanceProver instances(prover(), proof_options());
  for (const Match& m : matches) {
    const auto inst = instantiate(g, rules[0], m);
    ASSERT_TRUE(inst);
    EXPECT_FALSE(instances.proved(*inst)) << inst->text;
  }
  EXPECT_EQ(instances.stats().failed, 2);
}

// Two convolutions of one input, each with a per-channel bias and relu,
// the bias added after the convolution (as exporters write it; the shipped
// rule #22 adds it first, so the match relies on add being commutative).
Graph two_conv_bias_relu() {
  Graph g;
  const ValueRef x = g.add_input("x", {1, 16, 9, 9});
  for (int64_t c : {6, 10}) {
    const ValueRef conv = g.apply("conv2d", {x, weight(g, {c, 16, 1, 1}, static_cast<uint64_t>(c))});
    g.add_output(g.apply("relu", {g.apply("add", {conv, weight(g, {1, c, 1, 1}, static_cast<uint64_t>(c) + 1)})}));
  }
  return g;
}

TEST(Instance, AProofReplaysTheAxiomsOfTheRulesProofFirst) {
  const DirectedRule* merge = nullptr;
  for (const DirectedRule& r : default_rules())
    if (r.id == 22 && !r.reversed) merge = &r;
  ASSERT_NE(merge, nullptr);
  ASSERT_NE(merge->proof_axioms.find("conv2d_concat_kernels"), std::string::npos) << merge->proof_axioms;
  const Graph g = two_conv_bias_relu();
  const auto matches = find_matches(GraphIndex(g), *merge);
  ASSERT_FALSE(matches.empty());
  auto inst = instantiate(g, *merge, matches[0]);
  ASSERT_TRUE(inst);
  EXPECT_EQ(inst->proof_axioms, merge->proof_axioms);
  // The replay (the rule's axioms and add's argument swap) proves it.
  InstanceProver replaying(prover(), proof_options());
  EXPECT_TRUE(replaying.proved(*inst));
  EXPECT_EQ(replaying.stats().replayed, 1);
  // Axioms that cannot prove it: the full search still does.
  inst->proof_axioms = R"(["relu_concat"])";
  InstanceProver falling_back(prover(), proof_options());
  EXPECT_TRUE(falling_back.proved(*inst));
  EXPECT_EQ(falling_back.stats().replayed, 0);
  EXPECT_EQ(falling_back.stats().proved, 1);
  // No recorded axioms (or a value that is not a list of names): the full search.
  inst->proof_axioms = "not json";
  InstanceProver unrecorded(prover(), proof_options());
  EXPECT_TRUE(unrecorded.proved(*inst));
  EXPECT_EQ(unrecorded.stats().replayed, 0);
}

// --- search on model-shaped graphs -----------------------------------------------

TEST(Search, AttentionProjectionsSharingAnInputMergeIntoOneMatmul) {
  Graph g;
  const ValueRef x = g.add_input("x", {16, 32});
  for (const char* name : {"q", "k", "v"}) g.add_output(g.apply("matmul", {x, weight(g, {32, 32}, name[0])}), name);
  const BacktrackingResult r = optimize(g, default_rules(), 1.05);
  EXPECT_LT(r.best_cost, r.initial_cost);
  const Graph folded = fold_constants(r.best);
  EXPECT_EQ(count_ops(folded, "matmul"), 1);
  EXPECT_EQ(count_ops(folded, "concat"), 0);  // the merged weight is one constant
  expect_same_outputs(g, folded);
}

TEST(Search, ResNeXtParallelPathsBecomeOneGroupedConvolution) {
  // Two paths: 1x1 convolution of x, then a 3x3 convolution each; the
  // results stacked. Best: one 1x1 convolution, one grouped 3x3.
  Graph g;
  const ValueRef x = g.add_input("x", {1, 8, 8, 8});
  std::vector<ValueRef> paths;
  for (uint64_t p = 0; p < 2; ++p) {
    const ValueRef a = g.apply("conv2d", {x, weight(g, {4, 8, 1, 1}, 10 + p)});
    paths.push_back(g.apply("conv2d", {a, weight(g, {4, 4, 3, 3}, 20 + p)}));
  }
  g.add_output(g.apply("concat", paths, {{"axis", int64_t{1}}}), "y");
  const BacktrackingResult r = optimize(g, default_rules(), 1.05);
  const Graph folded = fold_constants(r.best);
  // The merged 1x1 convolution may also be its product form
  // (conv2d_pointwise_one_image_as_matmul), which the roofline prices alike.
  EXPECT_EQ(count_ops(folded, "conv2d") + count_ops(folded, "matmul"), 2);
  EXPECT_GE(count_ops(folded, "conv2d"), 1);
  EXPECT_EQ(count_ops(folded, "concat"), 0);
  EXPECT_LT(r.best_cost, r.initial_cost);
  expect_same_outputs(g, folded);
}

TEST(Search, OnlyATemporarilyWorseRewriteLeadsToTheBestGraph) {
  // add(conv 1x1, conv 3x3) of one input: enlarging the 1x1 kernel costs
  // more alone, but then the two convolutions merge into one.
  const auto rules = rules_of({{"conv2d(i0, enlarge[size=3x3](p0)) => conv2d(i0, p0)", "i0=1x2x4x4,p0=2x2x1x1"},
                               {"add(conv2d(i0, k0), conv2d(i0, k1)) => conv2d(i0, add(k0, k1))",
                                "i0=1x2x4x4,k0=2x2x3x3,k1=2x2x3x3"}});
  Graph g;
  // Eight channels: few enough FLOPs that the enlarged kernel costs under
  // the 5 % relaxation even at these 16 output tiles' occupancy.
  const ValueRef x = g.add_input("x", {1, 8, 32, 32});
  g.add_output(g.apply(
      "add", {g.apply("conv2d", {x, weight(g, {8, 8, 1, 1}, 1)}), g.apply("conv2d", {x, weight(g, {8, 8, 3, 3}, 2)})}));
  const BacktrackingResult greedy = optimize(g, rules, 1.0);
  EXPECT_EQ(greedy.best_cost, greedy.initial_cost);
  EXPECT_TRUE(greedy.applied.empty());
  const BacktrackingResult relaxed = optimize(g, rules, 1.05);
  EXPECT_LT(relaxed.best_cost, relaxed.initial_cost);
  ASSERT_EQ(relaxed.applied.size(), 2u);
  const Graph folded = fold_constants(relaxed.best);
  EXPECT_EQ(count_ops(folded, "conv2d"), 1);
  EXPECT_EQ(count_ops(folded, "add"), 0);
  expect_same_outputs(g, folded);
}

TEST(Search, BudgetAndSeenGraphsAreCounted) {
  const Graph g = two_convs(false);
  const BacktrackingResult r = optimize(g, default_rules(), 1.05, 3);
  EXPECT_LE(r.stats.popped, 3);
  EXPECT_LT(r.best_cost, r.initial_cost);
  expect_same_outputs(g, r.best);
}

TEST(Search, WithADatabaseTheShippedRulesRunFirstAndTheRestFromTheirGraph) {
  // Two independent rewrites that each lower the cost: the convolutions'
  // merge (a shipped rule) and the products' merge (a database's). With a
  // budget of one graph per stage, the shipped stage takes the first and
  // the second stage, from its graph, the second; one unstaged search with
  // both rules pops the model alone and keeps one of them.
  std::vector<DirectedRule> rules = rules_of({kConcatConvs, kMergeProducts});
  for (DirectedRule& r : rules) r.shipped = r.text.find("conv2d") != std::string::npos;
  Graph g = two_convs(false);
  const ValueRef x = g.add_input("m", {8, 16});
  g.add_output(g.apply("matmul", {x, weight(g, {16, 6}, 3)}), "p");
  g.add_output(g.apply("matmul", {x, weight(g, {16, 10}, 4)}), "q");
  AnalyticCostModel cost;
  InstanceProver instances(prover(), proof_options());
  BacktrackingOptions options;
  options.budget = 1;
  options.timeout_s = 60;
  const BacktrackingResult together = backtracking_search(g, rules, cost, instances, options);
  EXPECT_EQ(together.applied.size(), 1u);
  const BacktrackingResult staged = staged_backtracking_search(g, rules, cost, instances, options);
  ASSERT_EQ(staged.applied.size(), 2u);
  EXPECT_NE(staged.applied[0].text.find("conv2d"), std::string::npos);  // the shipped stage's, first
  EXPECT_NE(staged.applied[1].text.find("matmul"), std::string::npos);
  EXPECT_LT(staged.best_cost, together.best_cost);
  EXPECT_EQ(staged.stats.popped, 2);  // one graph a stage
  expect_same_outputs(g, staged.best);
  // Only shipped rules (or none): one stage, the plain search.
  for (DirectedRule& r : rules) r.shipped = true;
  EXPECT_EQ(staged_backtracking_search(g, rules, cost, instances, options).applied.size(), 1u);
}

// --- cost models ------------------------------------------------------------------

TEST(CostModel, AnalyticCostGrowsWithWorkAndWeightsOnlyCostNothing) {
  AnalyticCostModel cost;
  auto matmul_cost = [&](int64_t n) {
    Graph g;
    const ValueRef x = g.add_input("x", {n, n});
    g.add_output(g.apply("matmul", {x, weight(g, {n, n}, 1)}));
    return cost.graph_cost(g);
  };
  EXPECT_GE(matmul_cost(8), 3.0);  // at least the launch overhead
  EXPECT_LT(matmul_cost(8), matmul_cost(256));
  EXPECT_LT(matmul_cost(256), matmul_cost(1024));
  Graph g;
  const ValueRef x = g.add_input("x", {4, 4});
  const ValueRef w = g.apply("concat", {weight(g, {4, 2}, 1), weight(g, {4, 2}, 2)}, {{"axis", int64_t{1}}});
  g.add_output(g.apply("matmul", {x, w}));
  Graph only_matmul;
  only_matmul.add_output(only_matmul.apply("matmul", {only_matmul.add_input("x", {4, 4}), weight(only_matmul, {4, 4}, 3)}));
  EXPECT_DOUBLE_EQ(cost.graph_cost(g), cost.graph_cost(only_matmul));  // the concat of weights is folded
  // 1024^3 * 2 FLOPs at 67 TFLOP/s: 32 us of compute.
  EXPECT_NEAR(matmul_cost(1024), 2.0 * 1024 * 1024 * 1024 / 67e12 * 1e6 + 3.0, 1e-6);
}

class TempPath {
 public:
  explicit TempPath(const std::string& name)
      : path_((fs::temp_directory_path() / (name + std::to_string(::getpid()) + ".db")).string()) {
    clean();
  }
  ~TempPath() { clean(); }
  const std::string& str() const { return path_; }

 private:
  void clean() {
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path_ + suffix);
  }
  std::string path_;
};

TEST(CostModel, MeasuredCostsAreReadByDeviceAndSignatureWithAnalyticFallback) {
  Graph g;
  const ValueRef x = g.add_input("x", {8, 8});
  const ValueRef m = g.apply("matmul", {x, weight(g, {8, 8}, 1)});
  g.add_output(g.apply("relu", {m}));
  const Node& matmul = g.node(m.node);
  EXPECT_EQ(op_signature(g, matmul), "matmul(float:8x8,float:8x8)");
  TempPath db("tgr_optimizer_costs_");
  {
    auto w = rules_db::RulesDb::open(db.str(), true);
    w.put_op_cost("test-gpu", op_signature(g, matmul), 0.5);
    w.put_op_cost("other-gpu", op_signature(g, matmul), 9.0);
  }
  auto measured = MeasuredCostModel::from_db(db.str(), "test-gpu");
  EXPECT_EQ(measured->measured_signatures(), 1u);
  EXPECT_DOUBLE_EQ(measured->op_cost_us(g, matmul), 500.0);
  AnalyticCostModel analytic;
  const Node& relu = g.node(g.outputs()[0].node);
  EXPECT_DOUBLE_EQ(measured->op_cost_us(g, relu), analytic.op_cost_us(g, relu));
  EXPECT_EQ(measured->missing_signatures(), 1u);
  EXPECT_DOUBLE_EQ(measured->graph_cost(g), 500.0 + analytic.op_cost_us(g, relu));
  EXPECT_NE(measured->describe().find("1 missing"), std::string::npos) << measured->describe();
}

// What the measured model charges for the first `op` node of `free_graph`,
// where the GPU runtime runs nothing for it (runtime/views.h), and of
// `copying_graph`, where it copies: nothing, node by node as for the whole
// graph, and something.
void expect_free_only_where_the_runtime_runs_nothing(const std::string& op, const Graph& free_graph,
                                                     const Graph& copying_graph) {
  MeasuredCostModel measured("test-gpu", {});
  auto first = [&](const Graph& g) -> const Node& {
    for (const Node& n : g.nodes())
      if (n.is_op() && n.op->name == op) return n;
    throw std::logic_error("no " + op);
  };
  EXPECT_EQ(measured.op_cost_us(free_graph, first(free_graph)), 0.0);
  EXPECT_GT(measured.op_cost_us(copying_graph, first(copying_graph)), 0.0);
  double without = 0;
  for (const Node& n : free_graph.nodes())
    if (n.is_op() && n.op->name != op) without += measured.op_cost_us(free_graph, n);
  EXPECT_DOUBLE_EQ(measured.graph_cost(free_graph), without);
}

// The GPU runtime reads a split's pieces in place where every reader can
// (runtime/views.h); the measured model then charges nothing for the split,
// and the copy otherwise.
TEST(CostModel, MeasuredSplitCostsNothingWhenTheRuntimeViewsItsPieces) {
  auto split_graph = [](const std::string& reader) {
    const std::string piece = "split[axis=1, sizes=8x8](matmul(x, w))";
    return build_graph("(" + reader + "(" + piece + ".0), " + reader + "(" + piece + ".1))",
                       parse_shape_map("x=16x32,w=32x16"));
  };
  expect_free_only_where_the_runtime_runs_nothing("split", split_graph("relu"), split_graph("softmax[axis=1]"));
}

// Likewise a concatenation whose inputs are all written in place by their
// producers; one with a graph input copies it.
TEST(CostModel, MeasuredConcatCostsNothingWhenItsInputsAreWrittenInPlace) {
  auto concat_graph = [](const std::string& first) {
    return build_graph("softmax[axis=1](concat[axis=1](" + first + ", sigmoid(y)))",
                       parse_shape_map("x=1x4x6x6,y=1x4x6x6"));
  };
  expect_free_only_where_the_runtime_runs_nothing("concat", concat_graph("relu(x)"), concat_graph("x"));
}

// --- partial rules (PET) ------------------------------------------------------------

// PET's classic example: two convolutions with one kernel, and one
// convolution of the two images stacked along the height, cut back; the
// rows at the seam are wrong and the correction recomputes them.
const char* kStackedConvs =
    "(conv2d(i0, k0), conv2d(i1, k0)) => (split[axis=2, sizes=6x6](conv2d(concat[axis=2](i0, i1), k0)).0, "
    "split[axis=2, sizes=6x6](conv2d(concat[axis=2](i0, i1), k0)).1)";

Graph two_images_one_kernel() {
  Graph g;
  const ValueRef x0 = g.add_input("x0", {1, 8, 12, 12});
  const ValueRef x1 = g.add_input("x1", {1, 8, 12, 12});
  const ValueRef k = weight(g, {8, 8, 3, 3}, 5);
  g.add_output(g.apply("conv2d", {x0, k}), "y0");
  g.add_output(g.apply("conv2d", {x1, k}), "y1");
  return g;
}

DirectedRule stacked_convs_rule() {
  auto directed = directions_of(kStackedConvs, "i0=1x2x6x6,i1=1x2x6x6,k0=2x2x3x3");
  auto forward = std::find_if(directed.begin(), directed.end(), [](const DirectedRule& d) { return !d.reversed; });
  EXPECT_NE(forward, directed.end());
  forward->partial = true;
  return *forward;
}

TEST(PartialRules, AppliedWithTheirCorrectionTheModelComputesTheSame) {
  const Graph g = two_images_one_kernel();
  const DirectedRule rule = stacked_convs_rule();
  const GraphIndex index(g);
  const auto matches = find_matches(index, rule, 10);
  ASSERT_EQ(matches.size(), 2u);  // (y0, y1), and (y1, y0) with the images swapped
  std::optional<Instance> inst = instantiate(g, rule, matches[0]);
  ASSERT_TRUE(inst);
  // Uncorrected, the instance is wrong at the seam: applying it changes the outputs.
  const Graph wrong = apply_instance(g, matches[0], *inst);
  const auto inputs = random_inputs<float>(g, 11);
  const auto y = evaluate<float>(g, std::span<const Tensor<float>>(inputs));
  const auto y_wrong = evaluate<float>(wrong, std::span<const Tensor<float>>(inputs));
  double worst = 0;
  for (size_t i = 0; i < y[0].data.size(); ++i) worst = std::max(worst, double(std::abs(y[0].data[i] - y_wrong[0].data[i])));
  EXPECT_GT(worst, 1e-2);
  // Corrected (at the model's shapes), it is right everywhere.
  ASSERT_TRUE(correct_partial_instance(*inst, pet::CheckOptions{4, 1, 1 << 18}));
  ASSERT_TRUE(inst->region_checked);
  EXPECT_TRUE(*inst->region_checked);
  EXPECT_GT(count_ops(inst->rule.target, "slice"), 0);
  const Graph corrected = apply_instance(g, matches[0], *inst);
  expect_same_outputs(g, corrected);
  // The instance prover takes the checker's word for it, and counts it.
  InstanceProver instances(prover(), proof_options());
  EXPECT_TRUE(instances.proved(*inst));
  EXPECT_EQ(instances.stats().corrected, 1);
  EXPECT_EQ(instances.stats().proofs, 0);
}

// A device on which convolutions of 12-row images are slow: the search
// takes the partial rule, with its correction, and the result is exact.
struct SlowTwelveRowConvolutions : CostModel {
  double op_cost_us(const Graph& graph, const Node& node) override {
    if (node.op->name == "conv2d") return graph.shape(node.inputs[0])[2] == 12 ? 1000 : 1;
    return 1;
  }
  std::string describe() const override { return "test: 12-row convolutions cost 1000"; }
};

TEST(PartialRules, TheSearchAppliesThemWithTheirCorrections) {
  const Graph g = two_images_one_kernel();
  SlowTwelveRowConvolutions cost;
  InstanceProver instances(prover(), proof_options());
  BacktrackingOptions options;
  options.budget = 20;
  options.timeout_s = 60;
  const BacktrackingResult r = backtracking_search(g, {stacked_convs_rule()}, cost, instances, options);
  ASSERT_EQ(r.applied.size(), 1u);
  EXPECT_EQ(r.applied[0].id, 1);
  EXPECT_LT(r.best_cost, 2000);
  EXPECT_GE(instances.stats().corrected, 1);
  expect_same_outputs(g, r.best);
}

TEST(PartialRules, LoadedOnlyWithACorrectionAndOnlyLeftToRight) {
  TempPath db("tgr_optimizer_partial_");
  {
    auto w = rules_db::RulesDb::open(db.str(), true);
    auto with = rules_db::rule_record_from_text(kStackedConvs, "i0=1x2x6x6,i1=1x2x6x6,k0=2x2x3x3");
    with.kind = with.status = "partial";
    with.correction = "(a corrected target)";
    auto without = rules_db::rule_record_from_text("conv2d(i0, k0) => pad[pads=0x0x1x1x0x0x1x1](conv2d[pad=valid](i0, k0))",
                                                   "i0=1x2x8x8,k0=2x2x3x3");
    without.kind = without.status = "partial";
    w.insert_rules({with, without});
  }
  RuleLoadStats stats;
  const auto rules = load_rules(db.str(), &stats);
  EXPECT_EQ(stats.partial, 1);
  EXPECT_EQ(stats.skipped_partial, 1);
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_TRUE(rules[0].partial);
  EXPECT_FALSE(rules[0].reversed);
}

TEST(CostModel, MissingSignaturesAreEstimatedAtTheMeasuredScaleOfTheirOperator) {
  Graph g;
  const ValueRef x = g.add_input("x", {8, 8});
  const ValueRef m = g.apply("matmul", {x, weight(g, {8, 8}, 1)});
  g.add_output(g.apply("relu", {m}));
  Graph wider;
  const ValueRef y = wider.add_input("x", {8, 8});
  wider.add_output(wider.apply("matmul", {y, weight(wider, {8, 16}, 2)}));
  AnalyticCostModel analytic;
  const double measured_us = 4 * analytic.op_cost_us(g, g.node(m.node));  // this device: 4x the roofline
  MeasuredCostModel measured("test-gpu", {{op_signature(g, g.node(m.node)), measured_us / 1000.0}});
  const Node& wide = wider.node(wider.outputs()[0].node);
  EXPECT_DOUBLE_EQ(measured.op_cost_us(wider, wide), analytic.op_cost_us(wider, wide));  // not scaled yet
  measured.scale_fallback_to(g);
  EXPECT_NEAR(measured.op_cost_us(wider, wide), 4 * analytic.op_cost_us(wider, wide), 1e-9);
  // An operator never measured takes the scale of all measurements.
  const Node& relu = g.node(g.outputs()[0].node);
  EXPECT_NEAR(measured.op_cost_us(g, relu), 4 * analytic.op_cost_us(g, relu), 1e-9);
}

// --- weight folding ---------------------------------------------------------------

TEST(FoldConstants, OperatorsOfWeightsOnlyBecomeConstants) {
  Graph g;
  const ValueRef x = g.add_input("x", {1, 2, 5, 5});
  const ValueRef k = g.apply("concat", {g.apply("enlarge", {weight(g, {2, 2, 1, 1}, 1)}, {{"size", std::vector<int64_t>{3, 3}}}),
                                        weight(g, {2, 2, 3, 3}, 2)},
                             {{"axis", int64_t{0}}});
  g.add_output(g.apply("conv2d", {x, k}), "y");
  FoldStats stats;
  const Graph folded = fold_constants(g, &stats);
  EXPECT_EQ(stats.folded_nodes, 2);
  EXPECT_EQ(folded.num_ops(), 1);
  EXPECT_EQ(folded.output_names()[0], "y");
  expect_same_outputs(g, folded);
}

}  // namespace
}  // namespace tgr::optimizer

namespace tgr::optimizer {
namespace {

// Both directions of each "SRC => DST | SHAPES" text, as read from a database.
std::vector<RuleDirectionText> direction_texts(const std::vector<std::pair<std::string, std::string>>& rules) {
  std::vector<RuleDirectionText> out;
  int64_t id = 0;
  for (const auto& [text, shapes] : rules) {
    const auto arrow = text.find(" => ");
    const std::string source = text.substr(0, arrow), target = text.substr(arrow + 4);
    out.push_back({++id, false, false, source + " => " + target, shapes});
    out.push_back({id, true, false, target + " => " + source, shapes});
  }
  return out;
}

// A model of relu and matmul: rules about conv2d can never match, while a
// rule about transpose can once a matmul rule has introduced a transpose.
TEST(RuleFilter, KeepsExactlyTheDirectionsWhoseOperatorsCanExist) {
  Graph g;
  const ValueRef x = g.add_input("x", Shape{4, 8});
  g.add_output(g.apply("relu", {g.apply("matmul", {x, weight(g, Shape{8, 8}, 1)})}));
  const auto texts = direction_texts({
      {"matmul(x0, w0) => transpose(matmul(transpose(w0), transpose(x0)))", "x0=2x3,w0=3x4"},
      {"relu(transpose(x0)) => transpose(relu(x0))", "x0=2x3"},
      {"relu(conv2d(i0, k0)) => conv2d[act=relu](i0, k0)", "i0=1x2x6x6,k0=2x2x3x3"},
  });
  RuleLoadStats loaded;
  ASSERT_EQ(build_directed_rules(texts, std::span<RuleLoadStats>(&loaded, 1)).size(), 6u);
  RuleFilterStats stats;
  const auto kept = build_directed_rules(texts, {}, &g, &stats);
  std::set<std::string> kept_texts;
  for (const DirectedRule& r : kept) kept_texts.insert(r.text);
  // The matmul rule, left to right, introduces transpose; then both transpose/relu
  // directions can match. Neither conv2d direction can.
  EXPECT_EQ(stats.kept, 4);
  EXPECT_EQ(stats.unreachable, 2);
  for (const RuleDirectionText& d : texts) {
    const bool conv = d.text.find("conv2d") != std::string::npos;
    EXPECT_EQ(kept_texts.count(d.text) == 0, conv) << d.text;
  }
  // Without the matmul rule nothing introduces transpose, and both
  // directions of the transpose/relu rule read one.
  EXPECT_TRUE(build_directed_rules({texts[2], texts[3]}, {}, &g, &stats).empty());
  EXPECT_EQ(stats.unreachable, 2);
  Graph only_conv;
  const ValueRef i = only_conv.add_input("i", Shape{1, 2, 6, 6});
  only_conv.add_output(only_conv.apply("conv2d", {i, weight(only_conv, Shape{2, 2, 3, 3}, 2)}));
  build_directed_rules(texts, {}, &only_conv, &stats);
  // conv2d[act=relu] => relu(conv2d(...)) matches, and its target brings
  // relu, so the other direction can match too; nothing brings matmul.
  EXPECT_EQ(stats.kept, 2);
  EXPECT_EQ(stats.unreachable, 4);
}

}  // namespace
}  // namespace tgr::optimizer
