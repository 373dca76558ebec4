// Equality saturation (saturation/): the e-graph's congruence closure and
// analysis, e-matching (commutative operators, multi-patterns), proved
// unions, cycle filtering, greedy and ILP extraction against brute force,
// the runner's stop reasons, and a rewrite saturation finds where the
// backtracking search with the same rules does not.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>

#include "optimizer/backtracking_search.h"
#include "optimizer/cost_model.h"
#include "optimizer/fold_constants.h"
#include "optimizer/plan_cost_model.h"
#include "runtime/interpreter.h"
#include "saturation/context_costs.h"
#include "saturation/egraph.h"
#include "saturation/extract.h"
#include "saturation/pattern.h"
#include "saturation/refine.h"
#include "saturation/rewrite.h"
#include "saturation/runner.h"
#include "saturation/saturation.h"
#include "saturation/window.h"
#include "tests/optimizer_test_util.h"
#include "verifier/axioms.h"

namespace tgr::saturation {
namespace {

using optimizer::DirectedRule;

using optimizer::testing::proof_options;
using optimizer::testing::prover;

using optimizer::testing::count_ops;
using optimizer::testing::rules_of;
using optimizer::testing::weight;

void expect_same_outputs(const Graph& a, const Graph& b) { optimizer::testing::expect_same_outputs(a, b, 1e-3); }

const OpDef& op(const char* name) { return OpTable::instance().get(name); }

Node input_node(const std::string& name, Shape shape) {
  Node n;
  n.name = name;
  n.output_shapes = {std::move(shape)};
  n.output_dtypes = {DType::kFloat};
  return n;
}

// --- the e-graph ------------------------------------------------------------------

TEST(EGraph, HashConsingKeepsEachENodeOnce) {
  EGraph g;
  const ClassId x = g.add_input(input_node("x", {2, 3}));
  const ClassId a = g.add_op(op("relu"), op("relu").make_params(), {x});
  const ClassId b = g.add_op(op("relu"), op("relu").make_params(), {x});
  EXPECT_EQ(a, b);
  EXPECT_EQ(g.add_input(input_node("x", {2, 3})), x);
  g.rebuild();
  EXPECT_EQ(g.num_nodes(), 2u);
  EXPECT_EQ(g.num_classes(), 2u);
  EXPECT_EQ(g.data(a).shapes, std::vector<Shape>{Shape({2, 3})});
}

TEST(EGraph, ReachesFollowsChildrenAcrossMergedClasses) {
  EGraph g;
  const ClassId x = g.add_input(input_node("x", {4}));
  const ClassId y = g.add_input(input_node("y", {4}));
  const ClassId rx = g.add_op(op("relu"), op("relu").make_params(), {x});
  const ClassId ey = g.add_op(op("exp"), op("exp").make_params(), {y});
  const ClassId top = g.add_op(op("add"), op("add").make_params(), {rx, rx});
  EXPECT_TRUE(g.reaches(top, x));
  EXPECT_FALSE(g.reaches(x, top));  // nothing reads top
  EXPECT_FALSE(g.reaches(top, y));
  EXPECT_FALSE(g.reaches(ey, x));
  // exp(y) joins x's class: what reads that class now reaches y too.
  g.merge(ey, x);
  g.rebuild();
  EXPECT_TRUE(g.reaches(top, y));
  EXPECT_TRUE(g.reaches(rx, y));
  EXPECT_FALSE(g.reaches(y, rx));
}

TEST(EGraph, CongruenceClosureMergesParentsOfMergedClassesAfterRebuild) {
  EGraph g;
  const ClassId x = g.add_input(input_node("x", {4}));
  const ClassId y = g.add_input(input_node("y", {4}));
  const ClassId z = g.add_input(input_node("z", {4}));
  const ClassId rx = g.add_op(op("relu"), op("relu").make_params(), {x});
  const ClassId ry = g.add_op(op("relu"), op("relu").make_params(), {y});
  const ClassId ax = g.add_op(op("add"), op("add").make_params(), {rx, z});
  const ClassId ay = g.add_op(op("add"), op("add").make_params(), {ry, z});
  g.rebuild();
  EXPECT_EQ(g.num_classes(), 7u);
  EXPECT_TRUE(g.merge(x, y));
  EXPECT_FALSE(g.merge(y, x));  // one class already
  // Deferred: the parents are not merged until the rebuild.
  EXPECT_NE(g.find(rx), g.find(ry));
  g.rebuild();
  EXPECT_EQ(g.find(rx), g.find(ry));
  EXPECT_EQ(g.find(ax), g.find(ay));  // two levels up
  EXPECT_NE(g.find(ax), g.find(z));
  EXPECT_EQ(g.num_classes(), 4u);  // {x,y}, z, relu, add
  EXPECT_EQ(g.num_nodes(), 5u);    // x, y, z, one relu, one add: duplicates gone
  // Hash-consing sees the merge: relu(y) is the class of relu(x).
  EXPECT_EQ(g.add_op(op("relu"), op("relu").make_params(), {y}), g.find(rx));
  EXPECT_EQ(g.lookup(ENode{NodeKind::kOp, g.eclass(rx).nodes[0].head, {g.find(x)}, 0}), g.find(rx));
  EXPECT_TRUE(g.acyclic());
}

TEST(EGraph, MergingClassesOfDifferentShapesIsABugNamingBoth) {
  EGraph g;
  const ClassId x = g.add_input(input_node("x", {4}));
  const ClassId w = g.add_input(input_node("w", {2, 2}));
  try {
    g.merge(x, w);
    FAIL() << "merged a 4 with a 2x2";
  } catch (const std::logic_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("input x"), std::string::npos) << what;
    EXPECT_NE(what.find("input w"), std::string::npos) << what;
    EXPECT_NE(what.find("2x2"), std::string::npos) << what;
  }
}

TEST(EGraph, MultiOutputOperatorsAreTupleClassesReadThroughProjections) {
  EGraph g;
  const ClassId x = g.add_input(input_node("x", {2, 6}));
  auto params = op("split").make_params({{"axis", int64_t{1}}, {"sizes", std::vector<int64_t>{2, 4}}});
  const std::vector<ClassId> parts = g.add_op_outputs(op("split"), params, {x});
  ASSERT_EQ(parts.size(), 2u);
  const ClassId tuple = g.eclass(parts[0]).nodes[0].children[0];
  EXPECT_TRUE(g.data(tuple).tuple);
  EXPECT_EQ(g.data(parts[0]).shapes[0], Shape({2, 2}));
  EXPECT_EQ(g.data(parts[1]).shapes[0], Shape({2, 4}));
  EXPECT_THROW(g.add_op(op("relu"), op("relu").make_params(), {tuple}), std::logic_error);
}

TEST(EGraph, WeightsOnlyClassesAreConstant) {
  Graph m;
  const ValueRef x = m.add_input("x", {2, 4});
  const ValueRef w = m.apply("relu", {weight(m, {4, 4}, 1)});
  m.add_output(m.apply("matmul", {x, w}));
  EGraph g;
  const std::vector<ClassId> out = g.add_graph(m);
  g.rebuild();
  EXPECT_FALSE(g.data(out[0]).constant);
  const ENode& product = g.eclass(out[0]).nodes[0];
  EXPECT_TRUE(g.data(product.children[1]).constant);  // relu of a weight
  EXPECT_FALSE(g.data(product.children[0]).constant);
}

// --- e-matching ------------------------------------------------------------------

TEST(Pattern, CommutativeOperatorsMatchInEitherOrder) {
  const auto rules = rules_of({{"add(relu(x0), x1) => add(x1, relu(x0))", "x0=4,x1=4"}});
  Graph m;
  const ValueRef a = m.add_input("a", {4});
  const ValueRef b = m.add_input("b", {4});
  m.add_output(m.apply("add", {b, m.apply("relu", {a})}));  // relu second
  EGraph g;
  g.add_graph(m);
  g.rebuild();
  const auto matches = Pattern(rules[0]).search(g, 16);
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_EQ(g.leaf(g.eclass(matches[0].variables[0]).nodes[0].head).name, "a");
  EXPECT_EQ(g.leaf(g.eclass(matches[0].variables[1]).nodes[0].head).name, "b");
}

// A search stops at its deadline with the matches found so far: one
// pattern over a large e-graph can take a second, and the runner's time
// limit must hold inside it.
TEST(Pattern, ASearchStopsAtItsDeadline) {
  const auto rules = rules_of({{"relu(relu(x0)) => relu(x0)", "x0=4"}});
  Graph m;
  ValueRef v = m.add_input("a", {4});
  for (int i = 0; i < 20000; ++i) v = m.apply("relu", {v});
  m.add_output(v);
  EGraph g;
  g.add_graph(m);
  g.rebuild();
  const Pattern pattern(rules[0]);
  EXPECT_EQ(pattern.search(g, 1 << 20).size(), 19999u);
  EXPECT_EQ(pattern.search(g, 1 << 20, {}, Pattern::Clock::now() + std::chrono::hours(1)).size(), 19999u);
  const size_t cut = pattern.search(g, 1 << 20, {}, Pattern::Clock::now() - std::chrono::seconds(1)).size();
  EXPECT_LT(cut, 19999u);
}

TEST(Pattern, MultiPatternsJoinOnSharedVariables) {
  const auto rules =
      rules_of({{"(matmul(x0, w0), matmul(x0, w1)) => (split[axis=1, sizes=4x5](matmul(x0, "
                 "concat[axis=1](w0, w1))).0, split[axis=1, sizes=4x5](matmul(x0, concat[axis=1](w0, "
                 "w1))).1)",
                 "x0=2x3,w0=3x4,w1=3x5"}});
  Graph m;
  const ValueRef x = m.add_input("x", {2, 3});
  const ValueRef y = m.add_input("y", {2, 3});
  m.add_output(m.apply("matmul", {x, weight(m, {3, 4}, 1)}));
  m.add_output(m.apply("matmul", {x, weight(m, {3, 6}, 2)}));
  m.add_output(m.apply("matmul", {y, weight(m, {3, 4}, 3)}));
  EGraph g;
  g.add_graph(m);
  g.rebuild();
  const auto matches = Pattern(rules[0]).search(g, 64);
  // The two products of x, in either order; y's product shares no input.
  ASSERT_EQ(matches.size(), 2u);
  for (const PatternMatch& pm : matches) {
    EXPECT_EQ(g.leaf(g.eclass(pm.variables[0]).nodes[0].head).name, "x");
    EXPECT_NE(pm.outputs[0], pm.outputs[1]);
  }
}

TEST(Pattern, ShapeParametersTakeTheMatchedValuesAndPointwisePaddingMatches) {
  // The rule's split has sizes 1x1 and its convolutions pad 'same'; the
  // model splits 3x5 and its 1x1 convolution pads 'valid'.
  const auto rules =
      rules_of({{"concat[axis=1](split[axis=1, sizes=1x1](i0).0, split[axis=1, sizes=1x1](i0).1) => i0", "i0=1x2x4x4"},
                {"conv2d(i0, p0) => conv2d[pad=valid](i0, p0)", "i0=1x2x4x4,p0=2x2x1x1"}});
  Graph m;
  const ValueRef x = m.add_input("x", {1, 8, 4, 4});
  auto parts = m.add_op(op("split"),
                        op("split").make_params({{"axis", int64_t{1}}, {"sizes", std::vector<int64_t>{3, 5}}}), {x});
  const ValueRef joined = m.apply("concat", {parts[0], parts[1]}, {{"axis", int64_t{1}}});
  m.add_output(m.apply("conv2d", {joined, weight(m, {8, 8, 1, 1}, 1)}, {{"pad", std::string("valid")}}));
  EGraph g;
  const std::vector<ClassId> out = g.add_graph(m);
  g.rebuild();
  EXPECT_EQ(Pattern(rules[0]).search(g, 8).size(), 1u);
  // The reversed direction of the padding rule matches the 'valid' 1x1 convolution.
  const auto reversed =
      std::find_if(rules.begin(), rules.end(), [](const DirectedRule& r) { return r.id == 2 && r.reversed; });
  ASSERT_NE(reversed, rules.end());
  EXPECT_EQ(Pattern(*reversed).search(g, 8).size(), 1u);
  // And the forward direction too: 'same' and 'valid' are one for 1 x 1.
  EXPECT_EQ(Pattern(rules[1]).search(g, 8).size(), 1u);
  // Saturation proves the split/concat identity at the model's shapes (its
  // sizes re-derived: 3x5). The union of the concat with x closes a cycle
  // (x would contain a concat of pieces of x): with cycle filtering it is
  // skipped, without it made.
  optimizer::InstanceProver instances(prover(), proof_options());
  const std::vector<DirectedRule> identity = {rules[0]};
  RunnerOptions options;
  options.time_limit_s = 60;
  const RunnerStats filtered = Runner(g, identity, instances, options).run();
  EXPECT_EQ(filtered.stop, StopReason::kSaturated);
  EXPECT_EQ(filtered.proved, 1);
  EXPECT_EQ(filtered.cycles_filtered, 1);
  const ClassId x_class = g.add_input(input_node("x", {1, 8, 4, 4}));
  const ClassId conv_input = g.eclass(out[0]).nodes[0].children[0];
  EXPECT_NE(g.find(conv_input), g.find(x_class));
  options.filter_cycles = false;
  const RunnerStats unfiltered = Runner(g, identity, instances, options).run();
  EXPECT_EQ(unfiltered.unions, 1);
  EXPECT_EQ(g.find(conv_input), g.find(x_class));
  EXPECT_FALSE(g.acyclic());
}

// --- soundness: instances are proved at the classes' shapes --------------------------

TEST(Rewrite, AnInstanceThatDoesNotHoldAtTheClassShapesIsNotUnioned) {
  // Summing the kernels of two convolutions of one input holds for kernels
  // of one size; with a 3x3 and a 1x1 kernel the target type-checks (add
  // broadcasts) but computes something else.
  const auto rules = rules_of(
      {{"add(conv2d(i0, k0), conv2d(i0, k1)) => conv2d(i0, add(k0, k1))", "i0=1x2x4x4,k0=2x2x3x3,k1=2x2x3x3"}});
  Graph m;
  const ValueRef x = m.add_input("x", {1, 2, 6, 6});
  m.add_output(m.apply(
      "add", {m.apply("conv2d", {x, weight(m, {2, 2, 3, 3}, 1)}), m.apply("conv2d", {x, weight(m, {2, 2, 1, 1}, 2)})}));
  EGraph g;
  g.add_graph(m);
  g.rebuild();
  const auto matches = Pattern(rules[0]).search(g, 8);
  ASSERT_EQ(matches.size(), 2u);  // add is commutative
  optimizer::InstanceProver instances(prover(), proof_options());
  ProofCache proofs;
  for (const PatternMatch& pm : matches) {
    std::optional<MatchInstance> inst = instantiate_match(g, rules[0], pm);
    ASSERT_TRUE(inst);
    EXPECT_NE(inst->instance.shapes.find("2x2x1x1"), std::string::npos) << inst->instance.shapes;
    EXPECT_FALSE(proofs.proved(*inst, rules[0], instances, pet::CheckOptions{})) << inst->instance.text;
  }
  RunnerOptions options;
  options.time_limit_s = 60;
  Runner runner(g, rules, instances, options);
  const RunnerStats stats = runner.run();
  EXPECT_EQ(stats.unions, 0);
  EXPECT_GE(stats.not_proved, 1);
}

TEST(Rewrite, ProofCacheKeysIgnoreVariableNames) {
  optimizer::Instance a, b;
  a.text = "add(add(b0, b1), b2) => add(add(b0, b2), b1)";
  b.text = "add(add(k0, k1), k2) => add(add(k0, k2), k1)";
  const ShapeMap sa = parse_shape_map("b0=128,b1=2x128,b2=2x128"), sb = parse_shape_map("k0=128,k1=2x128,k2=2x128");
  a.rule = build_rule(a.text, sa);
  b.rule = build_rule(b.text, sb);
  EXPECT_EQ(canonical_instance_key(a), canonical_instance_key(b));
  optimizer::Instance c = b;
  c.rule = build_rule(b.text, parse_shape_map("k0=2x128,k1=2x128,k2=2x128"));
  EXPECT_NE(canonical_instance_key(a), canonical_instance_key(c));  // other shapes
  EXPECT_EQ(rename_variables("conv2d[pad=valid](i0, enlarge[size=3x3](p0))"),
            "conv2d[pad=valid](v0, enlarge[size=3x3](v1))");
}

// --- cycles ---------------------------------------------------------------------------

TEST(Cycles, AMultiPatternUnionThatWouldCloseACycleIsFilteredAndTheResultIsValid) {
  // (m0, m1) with m1 = matmul(x, relu(m0)): merging the two products puts
  // relu(m0) into the merged weight, so m0 would contain a product that
  // reads m0. The union for m0 is filtered; the one for m1 is not.
  const auto rules =
      rules_of({{"(matmul(x0, w0), matmul(x0, w1)) => (split[axis=1, sizes=4x5](matmul(x0, "
                 "concat[axis=1](w0, w1))).0, split[axis=1, sizes=4x5](matmul(x0, concat[axis=1](w0, "
                 "w1))).1)",
                 "x0=2x3,w0=3x4,w1=3x5"}});
  Graph m;
  const ValueRef x = m.add_input("x", {4, 4});
  const ValueRef m0 = m.apply("matmul", {x, weight(m, {4, 4}, 1)});
  const ValueRef m1 = m.apply("matmul", {x, m.apply("relu", {m0})});
  m.add_output(m0, "m0");
  m.add_output(m1, "m1");
  EGraph g;
  const std::vector<ClassId> roots = g.add_graph(m);
  optimizer::InstanceProver instances(prover(), proof_options());
  RunnerOptions options;
  options.time_limit_s = 60;
  options.iteration_limit = 4;
  Runner runner(g, rules, instances, options);
  const RunnerStats stats = runner.run();
  EXPECT_GE(stats.cycles_filtered, 1);
  EXPECT_GE(stats.unions, 1);
  std::vector<ClassId> cycle;
  EXPECT_TRUE(g.acyclic(&cycle)) << cycle.size() << " classes on a cycle";
  // Without the filter the same rule closes the cycle; extraction stays acyclic.
  EGraph unfiltered;
  const std::vector<ClassId> roots2 = unfiltered.add_graph(m);
  options.filter_cycles = false;
  Runner(unfiltered, rules, instances, options).run();
  EXPECT_FALSE(unfiltered.acyclic());
  optimizer::AnalyticCostModel cost;
  for (EGraph* e : {&g, &unfiltered}) {
    std::vector<ClassId> r = e == &g ? roots : roots2;
    for (ClassId& c : r) c = e->find(c);
    const NodeCosts costs(*e, &cost);
    const Extraction greedy = greedy_extract(*e, costs);
    const IlpResult ilp = ilp_extract(*e, costs, r, greedy, greedy.selection, IlpOptions{});
    ASSERT_FALSE(ilp.selection.choice.empty());
    for (const Selection* s : {&greedy.selection, &ilp.selection}) {
      const Graph extracted = selection_graph(*e, *s, r, m.output_names());
      EXPECT_EQ(extracted.output_names(), m.output_names());
      expect_same_outputs(m, extracted);
    }
    if (e == &unfiltered) {
      EXPECT_GT(ilp.ordered_classes, 0u);  // the order constraints were needed
    }
  }
}

// --- extraction -------------------------------------------------------------------

// A cost model that plans whole graphs (the runtime's execution plan, as
// --target tgr-gpu) prices an e-node by the plan of the operator alone: a
// graph of that operator whose value is an output, so that the plan runs it.
// (Without the output the plan was empty and every operator free, and the
// ILP had nothing to choose by.)
TEST(ExtractionCosts, AnOperatorCostsWhatThePlanOfItAloneCosts) {
  Graph m;
  const ValueRef x = m.add_input("x", {1, 64, 14, 14});
  const ValueRef c = m.apply("conv2d", {x, weight(m, {64, 64, 3, 3}, 1)});
  m.add_output(m.apply("relu", {c}), "y");
  EGraph g;
  g.add_graph(m);
  g.rebuild();
  optimizer::PlanCostModel plan("test device", {});  // nothing measured: the roofline per step
  const NodeCosts costs(g, &plan);
  int priced = 0;
  for (ClassId id : g.class_ids()) {
    const EClass& cls = g.eclass(id);
    for (size_t i = 0; i < cls.nodes.size(); ++i) {
      if (cls.nodes[i].kind != NodeKind::kOp || g.is_constant_node(cls.nodes[i])) continue;
      EXPECT_GT(costs.cost(id, i), 0.0);
      ++priced;
    }
  }
  EXPECT_EQ(priced, 2);  // conv2d and relu
}

// Costs by operator: what the brute force and the ILP both see.
struct TableCost : optimizer::CostModel {
  std::map<std::string, double> by_op;
  double op_cost_us(const Graph&, const Node& node) override { return by_op.at(node.op->name); }
  std::string describe() const override { return "test table"; }
};

// The cheapest acyclic selection by enumerating every choice of every class.
double brute_force(const EGraph& g, const NodeCosts& costs, const std::vector<ClassId>& roots) {
  const std::vector<ClassId> ids = g.class_ids();
  Selection s;
  s.choice.assign(ids.back() + 1, -1);
  double best = INFINITY;
  std::function<void(size_t)> choose = [&](size_t k) {
    if (k == ids.size()) {
      try {
        best = std::min(best, selection_cost(g, costs, s, roots));
      } catch (const std::logic_error&) {
        // a cycle, or a class without a choice on the way
      }
      return;
    }
    const ClassId c = ids[k];
    bool any = false;
    for (size_t i = 0; i < g.eclass(c).nodes.size(); ++i) {
      if (!costs.allowed(c, i)) continue;
      any = true;
      s.choice[c] = static_cast<int32_t>(i);
      choose(k + 1);
    }
    if (!any) {
      s.choice[c] = -1;
      choose(k + 1);
    }
  };
  choose(0);
  return best;
}

// A random e-graph's classes: inputs x and y of `shape` (the first two),
// then `min_ops` to `min_ops + spread - 1` elementwise operators, each over
// classes added before it.
std::vector<ClassId> add_random_ops(EGraph& g, std::mt19937& rng, const Shape& shape, int min_ops, int spread) {
  const std::vector<const char*> unary = {"relu", "tanh", "exp", "neg"};
  const std::vector<const char*> binary = {"add", "mul", "sub"};
  std::vector<ClassId> classes = {g.add_input(input_node("x", shape)), g.add_input(input_node("y", shape))};
  const int n_ops = min_ops + static_cast<int>(rng() % static_cast<unsigned>(spread));
  for (int k = 0; k < n_ops; ++k) {
    const ClassId a = classes[rng() % classes.size()], b = classes[rng() % classes.size()];
    if (rng() % 2) {
      const OpDef& o = op(unary[rng() % unary.size()]);
      classes.push_back(g.add_op(o, o.make_params(), {a}));
    } else {
      const OpDef& o = op(binary[rng() % binary.size()]);
      classes.push_back(g.add_op(o, o.make_params(), {a, b}));
    }
  }
  return classes;
}

// Alternatives: three unions of random operator classes of add_random_ops
// (sound or not does not matter to extraction), then rebuild.
void merge_random_ops(EGraph& g, std::mt19937& rng, const std::vector<ClassId>& classes) {
  for (int k = 0; k < 3; ++k) {
    const ClassId a = classes[2 + rng() % (classes.size() - 2)], b = classes[2 + rng() % (classes.size() - 2)];
    g.merge(a, b);
  }
  g.rebuild();
}

TEST(Extraction, IlpEqualsBruteForceOnSmallEGraphs) {
  TableCost cost;
  cost.by_op = {{"relu", 1.0}, {"tanh", 2.0}, {"exp", 3.5}, {"neg", 0.5}, {"add", 1.5}, {"mul", 2.5}, {"sub", 4.0}};
  std::mt19937 rng(12345);
  int cyclic = 0, shared_better_than_greedy = 0;
  for (int trial = 0; trial < 40; ++trial) {
    EGraph g;
    const std::vector<ClassId> classes = add_random_ops(g, rng, {4}, 4, 4);
    const std::vector<ClassId> roots = {classes.back(), classes[classes.size() - 2]};
    merge_random_ops(g, rng, classes);
    if (!g.acyclic()) ++cyclic;
    std::vector<ClassId> r = roots;
    for (ClassId& c : r) c = g.find(c);
    const NodeCosts costs(g, &cost);
    const Extraction greedy = greedy_extract(g, costs);
    bool roots_extractable = true;
    for (ClassId c : r) roots_extractable = roots_extractable && greedy.settled[c] >= 0;
    if (!roots_extractable) continue;  // every derivation of a root is cyclic
    const double expected = brute_force(g, costs, r);
    IlpOptions options;
    options.time_limit_s = 20;
    const IlpResult ilp = ilp_extract(g, costs, r, greedy, greedy.selection, options);
    ASSERT_EQ(ilp.status, IlpStatus::kOptimal) << "trial " << trial;
    EXPECT_NEAR(ilp.objective, expected, 1e-9) << "trial " << trial;
    EXPECT_NEAR(selection_cost(g, costs, ilp.selection, r), expected, 1e-9) << "trial " << trial;
    const double greedy_cost = selection_cost(g, costs, greedy.selection, r);
    EXPECT_GE(greedy_cost, expected - 1e-9);
    if (greedy_cost > expected + 1e-9) ++shared_better_than_greedy;
    EXPECT_NO_THROW(selection_graph(g, ilp.selection, r, {"a", "b"}));
  }
  // The trials did exercise cycles and sharing the tree-cost greedy misses.
  EXPECT_GT(cyclic, 0);
  EXPECT_GT(shared_better_than_greedy, 0);
}

// The extractors behind one interface give what their passes give, each
// under its report name, and every selection they return builds a graph.
TEST(Extraction, EveryExtractorAnswersThroughOneInterface) {
  TableCost cost;
  cost.by_op = {{"relu", 1.0}, {"tanh", 2.0}, {"exp", 3.5}, {"neg", 0.5}, {"add", 1.5}, {"mul", 2.5}, {"sub", 4.0}};
  std::mt19937 rng(777);
  int compared = 0;
  for (int trial = 0; trial < 10; ++trial) {
    EGraph g;
    const std::vector<ClassId> classes = add_random_ops(g, rng, {4}, 4, 4);
    merge_random_ops(g, rng, classes);
    std::vector<ClassId> r = {g.find(classes.back()), g.find(classes[classes.size() - 2])};
    const NodeCosts costs(g, &cost);
    const Extraction greedy = greedy_extract(g, costs);
    if (greedy.settled[r[0]] < 0 || greedy.settled[r[1]] < 0) continue;  // no acyclic derivation of a root
    const ExtractionProblem problem{g, costs, r};
    GreedyExtractor by_tree;
    GreedyDagExtractor by_dag;
    SharedTuplesExtractor by_sharing(greedy, greedy.selection, std::nullopt);
    IlpOptions options;
    options.time_limit_s = 20;
    IlpExtractor by_ilp(greedy, greedy.selection, options);
    const std::vector<std::pair<Extractor*, Selection>> expected = {
        {&by_tree, greedy.selection},
        {&by_dag, greedy_dag_extract(g, costs).selection},
        {&by_sharing, share_tuples(g, costs, r, greedy, greedy.selection)},
        {&by_ilp, ilp_extract(g, costs, r, greedy, greedy.selection, options).selection}};
    for (const auto& [extractor, selection] : expected) {
      const Extraction got = extractor->extract(problem);
      // The ILP's optimum by its cost (CBC may return another optimal choice).
      if (extractor == &by_ilp)
        EXPECT_NEAR(selection_cost(g, costs, got.selection, r), selection_cost(g, costs, selection, r), 1e-9);
      else EXPECT_EQ(got.selection.choice, selection.choice) << extractor->name() << ", trial " << trial;
      EXPECT_NO_THROW(selection_graph(g, got.selection, r, {"a", "b"})) << extractor->name();
    }
    EXPECT_EQ(by_ilp.report().status, IlpStatus::kOptimal);
    const Selection again = by_ilp.extract(problem).selection;
    EXPECT_EQ(by_ilp.report().selection.choice, again.choice);  // the report of the last run
    ++compared;
  }
  EXPECT_GT(compared, 0);
  EXPECT_EQ(GreedyExtractor().name(), "greedy");
  EXPECT_EQ(GreedyDagExtractor().name(), "greedy_dag");
}

// A model that runs an add inside the product it reads (as ONNX Runtime
// runs a Gemm's C): graph_cost charges such an add nothing, op_cost_us
// (one operator alone) charges it.
struct FusingCost : TableCost {
  double graph_cost(const Graph& graph) override {
    double total = 0;
    for (int32_t i : graph.topological_order()) {
      const Node& n = graph.node(i);
      if (!n.is_op()) continue;
      const bool fused = n.op->name == "add" && graph.node(n.inputs[0].node).is_op() &&
                         graph.node(n.inputs[0].node).op->name == "matmul";
      if (!fused) total += op_cost_us(graph, n);
    }
    return total;
  }
  bool prices_in_context() const override { return true; }
};

TEST(ContextCosts, AFusionThatOperatorsAloneDoNotShowDecidesTheExtraction) {
  // One class, two forms: add(matmul(x, w), b) and relu(matmul(x, w)) (not
  // equal: the test joins them by hand). Alone the relu form is cheaper (10 +
  // 2 against 10 + 3); in context the add runs inside the product (10).
  EGraph g;
  Graph m;
  const ValueRef x = m.add_input("x", {2, 4});
  const ValueRef p = m.apply("matmul", {x, weight(m, {4, 4}, 1)});
  m.add_output(m.apply("add", {p, weight(m, {4}, 2)}), "with_bias");
  m.add_output(m.apply("relu", {p}), "with_relu");
  const std::vector<ClassId> outs = g.add_graph(m);
  g.merge(outs[0], outs[1]);
  g.rebuild();
  const std::vector<ClassId> roots{g.find(outs[0])};
  FusingCost model;
  model.by_op = {{"matmul", 10}, {"add", 3}, {"relu", 2}};
  const NodeCosts alone(g, &model);
  const Extraction by_alone = greedy_extract(g, alone);
  EXPECT_DOUBLE_EQ(selection_cost(g, alone, by_alone.selection, roots), 12);
  ContextCostStats stats;
  const NodeCosts in_context = context_costs(g, alone, model, by_alone.selection, {}, &stats);
  EXPECT_TRUE(stats.complete);
  EXPECT_EQ(stats.priced, 3u);  // matmul, add, relu
  const Extraction by_context = greedy_extract(g, in_context);
  EXPECT_DOUBLE_EQ(selection_cost(g, in_context, by_context.selection, roots), 10);
  const Graph chosen = selection_graph(g, by_context.selection, roots, {"y"});
  EXPECT_EQ(count_ops(chosen, "add"), 1);
  EXPECT_EQ(count_ops(chosen, "relu"), 0);
  EXPECT_DOUBLE_EQ(model.graph_cost(chosen), 10);
  // A deadline already passed leaves the costs alone.
  ContextCostOptions late;
  late.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  ContextCostStats late_stats;
  const NodeCosts unchanged = context_costs(g, alone, model, by_alone.selection, late, &late_stats);
  EXPECT_FALSE(late_stats.complete);
  EXPECT_DOUBLE_EQ(selection_cost(g, unchanged, by_alone.selection, roots), 12);
}

RefineOptions in_ten_seconds() {
  RefineOptions options;
  options.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  return options;
}

TEST(Refine, AParentsFusionThatDependsOnItsChildsENodeIsFoundByGraphCost) {
  // The model: add(relu(x), b). Its relu class also holds matmul(x, w) (not
  // equal: joined by hand). Priced alone or in context the relu is cheaper
  // (3 against 4), but an add reading a matmul costs nothing: the graph
  // with the matmul costs 4, with the relu 6. Only the whole graph shows it.
  Graph m;
  const ValueRef x = m.add_input("x", {2, 4});
  const ValueRef r = m.apply("relu", {x});
  m.add_output(m.apply("add", {r, weight(m, {4}, 2)}), "y");
  EGraph g;
  const std::vector<ClassId> roots = g.add_graph(m);
  Graph other;
  const ValueRef ox = other.add_input("x", {2, 4});
  other.add_output(other.apply("matmul", {ox, weight(other, {4, 4}, 1)}), "p");
  other.add_output(other.apply("relu", {ox}), "r");
  const std::vector<ClassId> joined = g.add_graph(other);
  g.merge(joined[0], joined[1]);
  g.rebuild();
  FusingCost model;
  model.by_op = {{"matmul", 4}, {"add", 3}, {"relu", 3}};
  const NodeCosts alone(g, &model);
  const Extraction greedy = greedy_extract(g, alone);
  const NodeCosts in_context = context_costs(g, alone, model, greedy.selection, {});
  const Extraction by_context = greedy_extract(g, in_context);
  const std::vector<std::string> names{"y"};
  EXPECT_DOUBLE_EQ(model.graph_cost(selection_graph(g, by_context.selection, roots, names)), 6);
  const Selection from_input = input_selection(g, alone);
  EXPECT_DOUBLE_EQ(model.graph_cost(selection_graph(g, from_input, roots, names)), 6);  // the model itself
  RefineStats stats;
  const Selection refined =
      refine_by_graph_cost(g, in_context, from_input, by_context, roots, names, model, in_ten_seconds(), &stats);
  const Graph best = selection_graph(g, refined, roots, names);
  EXPECT_DOUBLE_EQ(model.graph_cost(best), 4);
  EXPECT_EQ(count_ops(best, "matmul"), 1);
  EXPECT_EQ(stats.switches, 1u);
  EXPECT_TRUE(stats.complete);
}

TEST(Refine, AMultiOutputRulesOutputsSwitchTogether) {
  // Two products of x, and (by hand, as rule application 1 would add it)
  // one product over the concatenated weights, split. Either output alone
  // read through the split keeps the other product (10 + 10 + 1 = 21
  // against 20); both read through it cost 11. Only a move that switches
  // every class the application added reaches it.
  Graph m;
  const ValueRef x = m.add_input("x", {2, 4});
  m.add_output(m.apply("matmul", {x, weight(m, {4, 4}, 1)}), "q");
  m.add_output(m.apply("matmul", {x, weight(m, {4, 4}, 2)}), "k");
  EGraph g;
  const std::vector<ClassId> roots = g.add_graph(m);
  const ClassId x_class = g.find(g.eclass(roots[0]).nodes[0].children[0]);
  const ClassId w0 = g.eclass(roots[0]).nodes[0].children[1], w1 = g.eclass(roots[1]).nodes[0].children[1];
  const uint32_t application = 1;
  const ClassId both = g.add_op(op("concat"), op("concat").make_params({{"axis", int64_t{1}}}), {w0, w1}, application);
  const ClassId product = g.add_op(op("matmul"), op("matmul").make_params(), {x_class, both}, application);
  const std::vector<ClassId> parts = g.add_op_outputs(
      op("split"), op("split").make_params({{"axis", int64_t{1}}, {"sizes", std::vector<int64_t>{4, 4}}}), {product},
      application);
  g.merge(roots[0], parts[0]);
  g.merge(roots[1], parts[1]);
  g.rebuild();
  const std::vector<ClassId> r{g.find(roots[0]), g.find(roots[1])};
  TableCost model;
  model.by_op = {{"matmul", 10}, {"split", 1}, {"concat", 1}};
  const NodeCosts prices(g, &model);
  const Extraction greedy = greedy_extract(g, prices);
  const std::vector<std::string> names{"q", "k"};
  EXPECT_DOUBLE_EQ(model.graph_cost(selection_graph(g, greedy.selection, r, names)), 20);
  RefineStats stats;
  const Selection refined =
      refine_by_graph_cost(g, prices, input_selection(g, prices), greedy, r, names, model, in_ten_seconds(), &stats);
  const Graph best = selection_graph(g, refined, r, names);
  EXPECT_DOUBLE_EQ(model.graph_cost(best), 11);  // the concat of weights is folded: free
  EXPECT_EQ(count_ops(best, "matmul"), 1);
  EXPECT_EQ(stats.switches, 1u);
  EXPECT_TRUE(stats.complete);
  EXPECT_GT(stats.screened, 0u);  // moves screened by their windows first
  // Every move built whole (no windows): the same graph.
  RefineOptions whole = in_ten_seconds();
  whole.window_radius = 0;
  RefineStats whole_stats;
  const Selection without_windows =
      refine_by_graph_cost(g, prices, input_selection(g, prices), greedy, r, names, model, whole, &whole_stats);
  EXPECT_DOUBLE_EQ(model.graph_cost(selection_graph(g, without_windows, r, names)), 11);
  EXPECT_EQ(whole_stats.screened, 0u);
  EXPECT_GE(whole_stats.tries, stats.tries);
}

// --- refinement windows (window.h) --------------------------------------------

// A random e-graph of elementwise operators over two inputs (some classes
// merged, so classes hold alternatives) and a greedy selection of it.
struct RandomEGraph {
  EGraph g;
  std::vector<ClassId> roots;
  Selection selection;
};
std::optional<RandomEGraph> random_egraph(std::mt19937& rng) {
  RandomEGraph out;
  EGraph& g = out.g;
  const std::vector<ClassId> classes = add_random_ops(g, rng, {4, 8}, 8, 8);
  out.roots = {classes.back(), classes[classes.size() - 3]};
  merge_random_ops(g, rng, classes);
  for (ClassId& c : out.roots) c = g.find(c);
  TableCost unit;
  unit.by_op = {{"relu", 1.0}, {"tanh", 1.0}, {"exp", 1.0}, {"neg", 1.0}, {"add", 1.0}, {"mul", 1.0}, {"sub", 1.0}};
  const Extraction greedy = greedy_extract(g, NodeCosts(g, &unit));
  for (ClassId c : out.roots)
    if (greedy.settled[c] < 0) return std::nullopt;  // every derivation of a root is cyclic
  out.selection = greedy.selection;
  return out;
}

// Every single switch of a class the selection uses: its window delta at
// `radius` and the whole graphs' delta (nullopt where the trial is cyclic:
// both must then refuse it).
std::vector<std::pair<double, double>> window_and_whole_deltas(const RandomEGraph& e, optimizer::CostModel& model,
                                                               size_t radius) {
  const std::vector<std::string> names{"a", "b"};
  SelectionWindows windows(e.g, e.roots, model, radius);
  windows.reset(e.selection);
  const double current = model.graph_cost(selection_graph(e.g, e.selection, e.roots, names));
  std::vector<std::pair<double, double>> out;
  std::vector<ClassId> used;
  walk_selection(e.g, e.selection, e.roots, [&](ClassId c, const ENode&) { used.push_back(c); });
  for (ClassId c : used) {
    for (size_t i = 0; i < e.g.eclass(c).nodes.size(); ++i) {
      if (static_cast<int32_t>(i) == e.selection.choice[c]) continue;
      Selection trial = e.selection;
      trial.choice[c] = static_cast<int32_t>(i);
      double whole = 0;
      try {
        whole = model.graph_cost(selection_graph(e.g, trial, e.roots, names)) - current;
      } catch (const std::logic_error&) {
        EXPECT_THROW(windows.delta(trial), std::logic_error);  // the same cycle
        continue;
      }
      out.emplace_back(windows.delta(trial), whole);
    }
  }
  return out;
}

TEST(Window, AnUnboundedRadiusGivesTheWholeGraphsDelta) {
  // Under the GPU plan's costs (elementwise chains fused into one step, so
  // a switch changes what its neighbours cost), a window that reaches every
  // class is the two whole graphs; and under a cost that is a sum of
  // operators, a window of radius 1 is exact already.
  optimizer::PlanCostModel plan("test device", {});  // the roofline per step
  TableCost table;
  table.by_op = {{"relu", 1.0}, {"tanh", 2.0}, {"exp", 3.5}, {"neg", 0.5}, {"add", 1.5}, {"mul", 2.5}, {"sub", 4.0}};
  std::mt19937 rng(2026);
  size_t moves = 0, fused_differs = 0;
  for (int round = 0; round < 100; ++round) {
    const std::optional<RandomEGraph> e = random_egraph(rng);
    if (!e) continue;
    for (const auto& [window, whole] : window_and_whole_deltas(*e, plan, 1000)) {
      EXPECT_NEAR(window, whole, 1e-9) << "round " << round;
      ++moves;
    }
    for (const auto& [window, whole] : window_and_whole_deltas(*e, table, 1)) EXPECT_NEAR(window, whole, 1e-9);
    for (const auto& [window, whole] : window_and_whole_deltas(*e, plan, 1))
      if (std::abs(window - whole) > 1e-9) ++fused_differs;
  }
  EXPECT_GT(moves, 100u);
  // The fused plan's deltas at radius 1 are a screen, not exact: some moves
  // differ (which is why refinement confirms each by the whole graph).
  EXPECT_GT(fused_differs, 0u);
}

TEST(Window, AChangeReachesOnlyItsNeighbourhood) {
  // A chain of 20 operators with one alternative in the middle (relu or
  // tanh of class 10's operand): the window of radius 2 around a switch
  // there holds that class and at most two steps either side of it.
  Graph m;
  ValueRef v = m.add_input("x", {4, 8});
  std::vector<ValueRef> chain;
  for (int k = 0; k < 20; ++k) {
    v = m.apply(k % 2 ? "neg" : "exp", {v});
    chain.push_back(v);
  }
  m.add_output(v, "y");
  EGraph g;
  const std::vector<ClassId> roots = g.add_graph(m);
  // The class of chain[10] gets a second e-node: tanh of chain[9]'s class.
  ClassId middle = roots[0];
  for (int k = 19; k > 10; --k) middle = g.find(g.eclass(middle).nodes[0].children[0]);
  const ClassId below = g.find(g.eclass(middle).nodes[0].children[0]);
  const ClassId alternative = g.add_op(op("tanh"), op("tanh").make_params(), {below});
  g.merge(middle, alternative);
  g.rebuild();
  middle = g.find(middle);
  TableCost table;
  table.by_op = {{"exp", 1.0}, {"neg", 1.0}, {"tanh", 0.5}};
  const NodeCosts costs(g, &table);
  Selection current = input_selection(g, costs);
  ASSERT_EQ(g.eclass(middle).nodes.size(), 2u);
  const int32_t exp_node = g.op_of(g.eclass(middle).nodes[0])->name == "exp" ? 0 : 1;
  current.choice[middle] = exp_node;
  Selection trial = current;
  trial.choice[middle] = 1 - exp_node;
  SelectionWindows windows(g, {g.find(roots[0])}, table, 2);
  windows.reset(current);
  const std::vector<ClassId> window = windows.window(trial);
  EXPECT_EQ(window.size(), 5u);  // the switched class, two below, two above
  EXPECT_NE(std::find(window.begin(), window.end(), middle), window.end());
  EXPECT_EQ(std::find(window.begin(), window.end(), g.find(roots[0])), window.end());
  EXPECT_NEAR(windows.delta(trial), -0.5, 1e-12);  // tanh for exp
  EXPECT_THROW(SelectionWindows(g, roots, table, 0), std::invalid_argument);
}

TEST(Extraction, TheIlpCountsASharedMergedProductOnce) {
  // Two products of x, merged into one product and a split: alone, each
  // projection costs the whole merged product (tree costs: greedy keeps
  // the two products); shared, one product serves both.
  const auto rules =
      rules_of({{"(matmul(x0, w0), matmul(x0, w1)) => (split[axis=1, sizes=4x5](matmul(x0, "
                 "concat[axis=1](w0, w1))).0, split[axis=1, sizes=4x5](matmul(x0, concat[axis=1](w0, "
                 "w1))).1)",
                 "x0=2x3,w0=3x4,w1=3x5"}});
  Graph m;
  const ValueRef x = m.add_input("x", {64, 256});
  m.add_output(m.apply("matmul", {x, weight(m, {256, 256}, 1)}), "q");
  m.add_output(m.apply("matmul", {x, weight(m, {256, 256}, 2)}), "k");
  optimizer::AnalyticCostModel cost;
  optimizer::InstanceProver instances(prover(), proof_options());
  SaturationOptions options;
  options.runner.time_limit_s = 60;
  options.runner.iteration_limit = 2;  // one merge and what it enables next
  const SaturationResult r = saturate_and_extract(m, rules, cost, instances, options);
  EXPECT_LT(r.best_cost, r.initial_cost);
  EXPECT_LT(r.stats.ilp.objective, r.stats.greedy_cost);
  EXPECT_LT(r.stats.shared_cost, r.stats.greedy_cost);  // share_tuples reads both outputs through one split
  EXPECT_EQ(r.stats.extractor, "ilp");
  const Graph folded = optimizer::fold_constants(r.best);
  EXPECT_EQ(count_ops(folded, "matmul"), 1);
  ASSERT_EQ(r.applied.size(), 1u);
  EXPECT_EQ(r.applied[0].id, 1);
  expect_same_outputs(m, folded);
}

TEST(Extraction, SharingReachesAMergedProductReadThroughAnActivation) {
  // Merged, one output is the split's part and the other relu of a part
  // (conv + bias merges with one activated branch, as ResNet's downsample
  // and first convolution): no class but one reads the tuple through a
  // projection, so sharing must look through the relu. Greedy extraction
  // and share_tuples only (no ILP).
  const auto rules = rules_of(
      {{"(matmul(x0, w0), relu(matmul(x0, w1))) => (split[axis=1, sizes=4x5](matmul(x0, concat[axis=1](w0, w1))).0, "
        "relu(split[axis=1, sizes=4x5](matmul(x0, concat[axis=1](w0, w1))).1))",
        "x0=2x3,w0=3x4,w1=3x5"}});
  Graph m;
  const ValueRef x = m.add_input("x", {64, 256});
  m.add_output(m.apply("matmul", {x, weight(m, {256, 256}, 1)}), "a");
  m.add_output(m.apply("relu", {m.apply("matmul", {x, weight(m, {256, 256}, 2)})}), "b");
  optimizer::AnalyticCostModel cost;
  optimizer::InstanceProver instances(prover(), proof_options());
  SaturationOptions options;
  options.runner.time_limit_s = 60;
  options.runner.iteration_limit = 1;
  options.use_ilp = false;
  const SaturationResult r = saturate_and_extract(m, rules, cost, instances, options);
  EXPECT_LT(r.stats.shared_cost, r.stats.greedy_cost);
  EXPECT_LT(r.best_cost, r.initial_cost);
  const Graph folded = optimizer::fold_constants(r.best);
  EXPECT_EQ(count_ops(folded, "matmul"), 1);
  expect_same_outputs(m, folded);
}

// --- the runner ------------------------------------------------------------------------

// A rule that reorders sums (with add's commutativity, every order and
// bracketing of a chain: exponentially many; generate finds it, r3 #1021).
std::vector<DirectedRule> reordering_rules() {
  return rules_of({{"add(add(x0, x1), x2) => add(add(x0, x2), x1)", "x0=2x4,x1=2x4,x2=2x4"}});
}

Graph add_chain(int n) {
  Graph m;
  auto input = [&](int i) {
    std::string name = "x";
    name += std::to_string(i);
    return m.add_input(std::move(name), {2, 4});
  };
  ValueRef acc = input(0);
  for (int i = 1; i < n; ++i) acc = m.apply("add", {acc, input(i)});
  m.add_output(acc);
  return m;
}

TEST(Runner, ATimeLimitIsReportedAsTheStopReason) {
  EGraph g;
  g.add_graph(add_chain(16));
  optimizer::InstanceProver instances(prover(), proof_options());
  RunnerOptions options;
  options.time_limit_s = 0.5;
  options.iteration_limit = 1000000;
  options.node_limit = 100000000;
  const auto rules = reordering_rules();
  Runner runner(g, rules, instances, options);
  const RunnerStats stats = runner.run();
  EXPECT_EQ(stats.stop, StopReason::kTimeLimit);
  EXPECT_GE(stats.iterations, 1);
  EXPECT_LT(stats.seconds, options.time_limit_s + 5.0);  // stops near the limit (a proof in flight may finish)
  EXPECT_EQ(stop_reason_name(stats.stop), "time_limit");
}

TEST(Runner, TheSearchTimeoutLeavesExtractionItsShare) {
  SaturationOptions options;
  options.use_ilp = true;
  options.ilp.time_limit_s = 1.5;
  EXPECT_DOUBLE_EQ(saturation_time_limit(8, options), 5);      // kSaturationShare
  EXPECT_DOUBLE_EQ(saturation_time_limit(20, options), 12.5);  // not 18.5: the refinement keeps its share
  EXPECT_DOUBLE_EQ(saturation_time_limit(3, options), 1.5);    // the ILP's limit first, half the timeout at least
  EXPECT_DOUBLE_EQ(saturation_time_limit(2, options), 1.0);
  options.use_ilp = false;
  EXPECT_DOUBLE_EQ(saturation_time_limit(8, options), 5);
}

TEST(Runner, IterationAndNodeLimitsAndSaturationAreReported) {
  optimizer::InstanceProver instances(prover(), proof_options());
  const auto rules = reordering_rules();
  {
    EGraph g;
    g.add_graph(add_chain(4));
    RunnerOptions options;
    options.time_limit_s = 120;
    options.iteration_limit = 2;
    options.node_limit = 1000000;
    const RunnerStats stats = Runner(g, rules, instances, options).run();
    EXPECT_EQ(stats.stop, StopReason::kIterationLimit);
    EXPECT_EQ(stats.iterations, 2);
  }
  {
    EGraph g;
    g.add_graph(add_chain(6));
    RunnerOptions options;
    options.time_limit_s = 120;
    options.node_limit = 30;
    const RunnerStats stats = Runner(g, rules, instances, options).run();
    EXPECT_EQ(stats.stop, StopReason::kNodeLimit);
  }
  {
    // A short chain has few orders: they run out.
    EGraph g;
    g.add_graph(add_chain(3));
    RunnerOptions options;
    options.time_limit_s = 120;
    const RunnerStats stats = Runner(g, rules, instances, options).run();
    EXPECT_EQ(stats.stop, StopReason::kSaturated);
    EXPECT_GE(stats.unions, 1);
  }
}

TEST(Runner, TheNodeLimitFollowsTheModelsSize) {
  RunnerOptions options;
  options.node_limit = 50000;
  EXPECT_EQ(effective_node_limit(options, 300), 50000u);  // growth_limit 0: node_limit alone
  options.growth_limit = 80;
  options.min_node_limit = 5000;
  EXPECT_EQ(effective_node_limit(options, 200), 16000u);  // 80 x 200
  EXPECT_EQ(effective_node_limit(options, 20), 5000u);    // at least min_node_limit
  EXPECT_EQ(effective_node_limit(options, 1000), 50000u);  // at most node_limit
  options.node_limit = 3000;
  EXPECT_EQ(effective_node_limit(options, 20), 3000u);  // node_limit wins over the floor

  // A run keeps to the scaled limit and reports it: a chain whose orders
  // outgrow 10 x its e-nodes stops there, where the absolute limit alone
  // would let it go on.
  optimizer::InstanceProver instances(prover(), proof_options());
  const auto rules = reordering_rules();
  EGraph g;
  g.add_graph(add_chain(6));
  const size_t start = g.num_nodes();
  RunnerOptions scaled;
  scaled.time_limit_s = 120;
  scaled.node_limit = 1000000;
  scaled.growth_limit = 10;
  scaled.min_node_limit = 1;
  const RunnerStats stats = Runner(g, rules, instances, scaled).run();
  EXPECT_EQ(stats.node_limit, 10 * start);
  EXPECT_EQ(stats.stop, StopReason::kNodeLimit);
  EXPECT_GE(g.num_nodes(), stats.node_limit);
}

TEST(Runner, TheBackoffSchedulerBansARuleThatFloods) {
  optimizer::InstanceProver instances(prover(), proof_options());
  EGraph g;
  g.add_graph(add_chain(10));
  RunnerOptions options;
  options.time_limit_s = 120;
  options.iteration_limit = 3;
  options.match_limit = 2;
  const auto rules = reordering_rules();
  const RunnerStats stats = Runner(g, rules, instances, options).run();
  EXPECT_GE(stats.bans, 1);
  EXPECT_GE(stats.dropped_matches, 1);
  ASSERT_GE(stats.per_iteration.size(), 2u);
  EXPECT_EQ(stats.per_iteration[0].matches, 2);  // the limit's worth kept
  EXPECT_EQ(stats.per_iteration[1].matches, 0);  // banned next iteration
}

TEST(Runner, ShippedRulesHaveTheirOwnMatchLimit) {
  optimizer::InstanceProver instances(prover(), proof_options());
  for (bool shipped : {false, true}) {
    EGraph g;
    g.add_graph(add_chain(10));
    RunnerOptions options;
    options.time_limit_s = 120;
    options.iteration_limit = 1;
    options.match_limit = 2;
    options.shipped_match_limit = 1000;
    std::vector<DirectedRule> rules = reordering_rules();
    rules[0].shipped = shipped;
    const RunnerStats stats = Runner(g, rules, instances, options).run();
    EXPECT_EQ(stats.bans, shipped ? 0 : 1) << (shipped ? "shipped" : "not shipped");
  }
}

// A staged run (the shipped rules first) with time enough to saturate.
RunnerOptions staged_options() {
  RunnerOptions options;
  options.time_limit_s = 120;
  options.shipped_rules_first = true;
  return options;
}

TEST(Runner, TheShippedRulesRunAloneUntilTheySaturateThenAllRules) {
  optimizer::InstanceProver instances(prover(), proof_options());
  std::vector<DirectedRule> rules = reordering_rules();  // saturates a chain of three quickly
  for (DirectedRule& r : rules) r.shipped = true;
  for (DirectedRule& r : rules_of({{"add(x0, x1) => add(x1, x0)", "x0=2x4,x1=2x4"}})) rules.push_back(std::move(r));
  EGraph g;
  g.add_graph(add_chain(3));
  Runner runner(g, rules, instances, staged_options());
  const RunnerStats stats = runner.run();
  EXPECT_EQ(stats.stop, StopReason::kSaturated);
  ASSERT_GE(stats.lead_iterations, 1);
  ASSERT_GT(stats.iterations, stats.lead_iterations);
  // Applications are numbered in order: those of the lead iterations come
  // first, all of the lead set; then the other set's rules join in.
  int64_t lead_applied = 0, applied = 0;
  for (int i = 0; i < stats.iterations; ++i)
    (i < stats.lead_iterations ? lead_applied : applied) += stats.per_iteration[i].applied;
  ASSERT_GE(lead_applied, 1);
  for (int64_t origin = 1; origin <= lead_applied; ++origin)
    EXPECT_TRUE(rules[runner.rule_of(static_cast<uint32_t>(origin))].shipped) << "application " << origin;
  int64_t not_shipped = 0;
  for (int64_t origin = lead_applied + 1; origin <= lead_applied + applied; ++origin)
    not_shipped += !rules[runner.rule_of(static_cast<uint32_t>(origin))].shipped;
  EXPECT_GE(not_shipped, 1);
}

TEST(Runner, AShippedRuleADatabaseHoldsUnderOtherNamesRunsInTheShippedStage) {
  // The database's rule comes first in the rules' order; the shipped one
  // reads the same up to variable names. One of the two is matched, the
  // shipped one, so the lead stage applies it as it would without a database.
  optimizer::InstanceProver instances(prover(), proof_options());
  std::vector<DirectedRule> rules = reordering_rules();
  const size_t database_directions = rules.size();
  for (DirectedRule& r : rules_of({{"add(add(x3, x4), x5) => add(add(x3, x5), x4)", "x3=2x4,x4=2x4,x5=2x4"}})) {
    r.shipped = true;
    rules.push_back(std::move(r));
  }
  EGraph g;
  g.add_graph(add_chain(3));
  Runner runner(g, rules, instances, staged_options());
  const RunnerStats stats = runner.run();
  EXPECT_GE(stats.renamed_rules, static_cast<int64_t>(database_directions));
  ASSERT_GE(stats.lead_iterations, 1);
  ASSERT_GE(stats.per_iteration[0].applied, 1);
  const int64_t applied = std::accumulate(stats.per_iteration.begin(), stats.per_iteration.end(), int64_t{0},
                                          [](int64_t n, const IterationStats& it) { return n + it.applied; });
  for (int64_t origin = 1; origin <= applied; ++origin)
    EXPECT_TRUE(rules[runner.rule_of(static_cast<uint32_t>(origin))].shipped) << "application " << origin;
}

TEST(Runner, AStageAtItsNodeLimitHandsOnToTheNext) {
  // The shipped reordering outgrows the chain's scaled limit in the first
  // stage; the database's stage still runs after it, up to the absolute
  // limit. An absolute limit of the first stage's size stops the run there.
  optimizer::InstanceProver instances(prover(), proof_options());
  std::vector<DirectedRule> rules = reordering_rules();
  for (DirectedRule& r : rules) r.shipped = true;
  for (DirectedRule& r : rules_of({{"add(x0, x1) => add(x1, x0)", "x0=2x4,x1=2x4"}})) rules.push_back(std::move(r));
  RunnerOptions options = staged_options();
  options.growth_limit = 3;
  options.min_node_limit = 1;
  EGraph g;
  g.add_graph(add_chain(6));
  const size_t start = g.num_nodes();
  options.node_limit = 8 * start;
  Runner runner(g, rules, instances, options);
  const RunnerStats stats = runner.run();
  ASSERT_GE(stats.lead_iterations, 1);
  EXPECT_GE(stats.per_iteration[static_cast<size_t>(stats.lead_iterations) - 1].nodes, 3 * start);
  ASSERT_GT(stats.iterations, stats.lead_iterations);
  EXPECT_EQ(stats.stop, StopReason::kNodeLimit);
  // The last stage's limit is the absolute one, and the e-graph reached it.
  EXPECT_EQ(stats.node_limit, 8 * start);
  EXPECT_GE(g.num_nodes(), 8 * start);

  EGraph h;
  h.add_graph(add_chain(6));
  RunnerOptions absolute = options;
  absolute.growth_limit = 0;
  absolute.node_limit = 3 * start;
  const RunnerStats capped = Runner(h, rules, instances, absolute).run();
  EXPECT_EQ(capped.stop, StopReason::kNodeLimit);
  EXPECT_EQ(capped.iterations, capped.lead_iterations);
}

TEST(Runner, ADatabasesSmallRulesRunBeforeItsLargeOnes) {
  // Shipped: reassociation (2 operators a side); the database: commutativity
  // (1) and a reordering of four adds (4). Stages: the shipped rule alone,
  // then with commutativity, then all.
  optimizer::InstanceProver instances(prover(), proof_options());
  std::vector<DirectedRule> rules = reordering_rules();
  for (DirectedRule& r : rules) r.shipped = true;
  for (DirectedRule& r : rules_of({{"add(x0, x1) => add(x1, x0)", "x0=2x4,x1=2x4"},
                                   {"add(add(add(add(x0, x1), x2), x3), x4) => add(x4, add(x3, add(x2, add(x1, x0))))",
                                    "x0=2x4,x1=2x4,x2=2x4,x3=2x4,x4=2x4"}}))
    rules.push_back(std::move(r));
  ASSERT_EQ(rules.back().graphs.source.num_ops(), 4);
  EGraph g;
  g.add_graph(add_chain(5));
  RunnerOptions options = staged_options();
  options.iteration_limit = 200;
  Runner runner(g, rules, instances, options);
  const RunnerStats stats = runner.run();
  EXPECT_EQ(stop_reason_name(stats.stop), "saturated");
  ASSERT_GE(stats.lead_iterations, 1);
  ASSERT_GT(stats.small_rule_iterations, stats.lead_iterations);
  EXPECT_GT(stats.iterations, stats.small_rule_iterations);  // the last stage ran
  // No application of the four-operator rule before the last stage.
  int64_t before_last = 0;
  for (int i = 0; i < stats.small_rule_iterations; ++i) before_last += stats.per_iteration[i].applied;
  for (int64_t origin = 1; origin <= before_last; ++origin)
    EXPECT_LT(rules[runner.rule_of(static_cast<uint32_t>(origin))].graphs.source.num_ops(), 4)
        << "application " << origin;
}

TEST(Runner, MatchesOnWeightsOnlyAreSkipped) {
  // add(w0, w1) is folded at export whatever its form: rewriting it cannot
  // change a cost. add(x, ...) is a real operator and is rewritten.
  Graph m;
  const ValueRef x = m.add_input("x", {2, 4});
  m.add_output(m.apply("add", {x, m.apply("add", {weight(m, {2, 4}, 1), weight(m, {2, 4}, 2)})}));
  optimizer::InstanceProver instances(prover(), proof_options());
  const auto rules = rules_of({{"add(x0, x1) => add(x1, x0)", "x0=2x4,x1=2x4"}});
  EGraph g;
  g.add_graph(m);
  RunnerOptions options;
  options.time_limit_s = 120;
  const RunnerStats stats = Runner(g, rules, instances, options).run();
  EXPECT_GE(stats.weight_only_matches, 1);
  EXPECT_GE(stats.unions, 1);
  // x, the two weights, add(w0, w1), add(x, ...) and add(..., x): no add(w1, w0).
  EXPECT_EQ(g.num_nodes(), 6u);
}

// Products of one input, merged pairwise: the rule's two outputs read alike
// with their variables renamed, so each pair is one rewrite in either order.
std::vector<DirectedRule> product_merge_rules() {
  return rules_of({{"(matmul(x0, w0), matmul(x0, w1)) => (split[axis=1, sizes=4x5](matmul(x0, "
                    "concat[axis=1](w0, w1))).0, split[axis=1, sizes=4x5](matmul(x0, concat[axis=1](w0, "
                    "w1))).1)",
                    "x0=2x3,w0=3x4,w1=3x5"}});
}

// `per_input` products of each of `inputs` inputs.
Graph products(int inputs, int per_input) {
  Graph m;
  int seed = 1;
  for (int i = 0; i < inputs; ++i) {
    std::string name = "x";  // not "x" + to_string: GCC 12's -Wrestrict misfires on it
    name += std::to_string(i);
    const ValueRef x = m.add_input(std::move(name), {8, 16});
    for (int p = 0; p < per_input; ++p) m.add_output(m.apply("matmul", {x, weight(m, {16, 16}, seed++)}));
  }
  return m;
}

TEST(Runner, ASymmetricTwoOutputRuleMatchesEachPairInOneOrder) {
  EGraph g;
  g.add_graph(products(1, 3));
  g.rebuild();
  const auto rules = product_merge_rules();
  EXPECT_EQ(Pattern(rules[0]).search(g, 64).size(), 6u);  // three pairs, each in both orders
  optimizer::InstanceProver instances(prover(), proof_options());
  RunnerOptions options;
  options.time_limit_s = 120;
  options.iteration_limit = 1;
  const RunnerStats stats = Runner(g, rules, instances, options).run();
  EXPECT_EQ(stats.mirrored_matches, 3);
  EXPECT_EQ(stats.per_iteration.at(0).matches, 3);
  EXPECT_EQ(stats.proved, 3);
}

// The merge of a biased convolution with relu beside one without (ResNet's
// first convolution and its downsampling path).
std::vector<DirectedRule> relu_on_one_branch_rules() {
  return rules_of(
      {{"(relu(add(conv2d(i0, k0), b0)), add(conv2d(i0, k1), b1)) => (relu(split[axis=1, "
        "sizes=2x3](add(conv2d(i0, concat[axis=0](k0, k1)), concat[axis=1](b0, b1))).0), split[axis=1, "
        "sizes=2x3](add(conv2d(i0, concat[axis=0](k0, k1)), concat[axis=1](b0, b1))).1)",
        "i0=1x4x5x5,k0=2x4x3x3,k1=3x4x3x3,b0=1x2x1x1,b1=1x3x1x1"}});
}

// `x` through a 3 x 3 convolution of `out` channels with a bias, and relu if `relu`.
ValueRef biased_conv(Graph& m, ValueRef x, int64_t out, bool relu, uint64_t seed) {
  const ValueRef y =
      m.apply("add", {m.apply("conv2d", {x, weight(m, {out, 4, 3, 3}, seed)}), weight(m, {1, out, 1, 1}, seed + 1)});
  return relu ? m.apply("relu", {y}) : y;
}

TEST(Pattern, AMergeOfAComputationWithItselfIsNotMatched) {
  // One convolution with relu: its relu and its own add would be the two
  // branches (one add, one convolution), a merge of it with itself.
  const auto rules = relu_on_one_branch_rules();
  Graph one;
  one.add_output(biased_conv(one, one.add_input("x", {1, 4, 6, 6}), 2, true, 1));
  EGraph g;
  g.add_graph(one);
  g.rebuild();
  EXPECT_TRUE(Pattern(rules[0]).search(g, 64).empty());
  // Two convolutions of one input, relu on the first: one match, merged.
  Graph two;
  const ValueRef x = two.add_input("x", {1, 4, 6, 6});
  two.add_output(biased_conv(two, x, 2, true, 1));
  two.add_output(biased_conv(two, x, 3, false, 3));
  EGraph h;
  h.add_graph(two);
  h.rebuild();
  EXPECT_EQ(Pattern(rules[0]).search(h, 64).size(), 1u);
  optimizer::InstanceProver instances(prover(), proof_options());
  RunnerOptions options;
  options.time_limit_s = 120;
  options.iteration_limit = 1;
  const RunnerStats merged = Runner(h, rules, instances, options).run();
  EXPECT_EQ(merged.per_iteration.at(0).matches, 1);
  EXPECT_EQ(merged.proved, 1);
  // A single-output pattern may still bind two operator nodes to one class:
  // add(relu(x0), relu(x1)) on add(relu(x), relu(x)).
  Graph same;
  const ValueRef y = same.add_input("y", {4});
  const ValueRef r = same.apply("relu", {y});
  same.add_output(same.apply("add", {r, r}));
  EGraph k;
  k.add_graph(same);
  k.rebuild();
  EXPECT_FALSE(Pattern(rules_of({{"add(relu(x0), relu(x1)) => add(relu(x1), relu(x0))", "x0=4,x1=4"}})[0])
                   .search(k, 64)
                   .empty());
}

TEST(Runner, ABannedRuleKeepsMatchesSpreadOverTheModel) {
  // Two inputs with four products each: 6 pairs per input. A limit of 2
  // keeps one pair of each input, not the first input's two.
  const Graph m = products(2, 4);
  EGraph g;
  const std::vector<ClassId> outputs = g.add_graph(m);
  optimizer::InstanceProver instances(prover(), proof_options());
  RunnerOptions options;
  options.time_limit_s = 120;
  options.iteration_limit = 1;
  options.match_limit = 2;
  const auto rules = product_merge_rules();
  const RunnerStats stats = Runner(g, rules, instances, options).run();
  EXPECT_EQ(stats.bans, 1);
  EXPECT_EQ(stats.per_iteration.at(0).applied, 2);
  auto merged = [&](size_t first_output) {  // some product of that input gained a form
    for (size_t o = first_output; o < first_output + 4; ++o)
      if (g.eclass(g.find(outputs[o])).nodes.size() > 1) return true;
    return false;
  };
  EXPECT_TRUE(merged(0));
  EXPECT_TRUE(merged(4));
}

TEST(Runner, UnderACostThatFusesEveryRuleGetsAShareOfTheInstantiations) {
  // 300 relu(relu(x_i)): 300 matches of the rule that drops a relu (one
  // launch fewer: ranked first) and 600 of the rule that adds one (ranked
  // last), more than the first iteration's 256 places. Under a cost that
  // fuses operators, whose costs launches do not predict, a quarter of the
  // places go to every rule in turn, so the second rule is tried too; under
  // a sum of operators the places follow the ranking.
  Graph m;
  for (int i = 0; i < 300; ++i) {
    std::string name = "x";
    name += std::to_string(i);
    const ValueRef x = m.add_input(std::move(name), {2, 4});
    std::string out = "y";
    out += std::to_string(i);
    m.add_output(m.apply("relu", {m.apply("relu", {x})}), std::move(out));
  }
  const auto rules = rules_of({{"relu(relu(x0)) => relu(x0)", "x0=2x4"}, {"relu(x0) => relu(relu(x0))", "x0=2x4"}});
  struct FusingTable : TableCost {
    bool fuses_operators() const override { return true; }
  };
  auto applied_by_rule = [&](optimizer::CostModel& cost) {
    EGraph g;
    g.add_graph(m);
    optimizer::InstanceProver instances(prover(), proof_options());
    RunnerOptions options;
    options.time_limit_s = 120;
    options.iteration_limit = 1;
    Runner runner(g, rules, instances, options, &cost);
    const RunnerStats stats = runner.run();
    std::vector<int> count(rules.size(), 0);
    for (int64_t origin = 1; origin <= stats.per_iteration.at(0).applied; ++origin)
      ++count.at(runner.rule_of(static_cast<uint32_t>(origin)));
    return count;
  };
  FusingTable fusing;
  fusing.by_op = {{"relu", 1.0}};
  const std::vector<int> shared = applied_by_rule(fusing);
  EXPECT_GT(shared[0], 0);
  EXPECT_GT(shared[1], 0);  // the rule that adds a launch had places
  TableCost sum;
  sum.by_op = {{"relu", 1.0}};
  const std::vector<int> ranked = applied_by_rule(sum);
  EXPECT_GT(ranked[0], 0);
  EXPECT_EQ(ranked[1], 0);  // every place went to the rule ranked first
}

// --- saturation against backtracking ------------------------------------------------------

TEST(Saturation, FindsAGraphTheBacktrackingSearchMissesWithTheSameRules) {
  // add(conv 1x1, conv 3x3) of one input, compute-bound: enlarging the 1x1
  // kernel makes its convolution cost about as much as the 3x3 one, a graph
  // over 20% dearer, which the backtracking search (alpha 1.05) prunes; only
  // then do both convolutions merge into one. Saturation keeps both forms in
  // the e-graph and extracts the merged one.
  const auto rules = rules_of(
      {{"conv2d(i0, enlarge[size=3x3](p0)) => conv2d(i0, p0)", "i0=1x2x4x4,p0=2x2x1x1"},
       {"add(conv2d(i0, k0), conv2d(i0, k1)) => conv2d(i0, add(k0, k1))", "i0=1x2x4x4,k0=2x2x3x3,k1=2x2x3x3"}});
  Graph m;
  const ValueRef x = m.add_input("x", {1, 64, 56, 56});
  m.add_output(m.apply("add", {m.apply("conv2d", {x, weight(m, {64, 64, 1, 1}, 1)}),
                               m.apply("conv2d", {x, weight(m, {64, 64, 3, 3}, 2)})}));
  optimizer::AnalyticCostModel cost;
  optimizer::InstanceProver instances(prover(), proof_options());
  optimizer::BacktrackingOptions search_options;  // the defaults: budget 100, alpha 1.05
  search_options.timeout_s = 60;
  const optimizer::BacktrackingResult backtracked =
      optimizer::backtracking_search(m, rules, cost, instances, search_options);
  SaturationOptions options;
  options.runner.time_limit_s = 60;
  const SaturationResult saturated = saturate_and_extract(m, rules, cost, instances, options);
  EXPECT_EQ(backtracked.best_cost, backtracked.initial_cost);  // nothing found
  EXPECT_LT(saturated.best_cost, backtracked.best_cost);
  const Graph folded = optimizer::fold_constants(saturated.best);
  EXPECT_EQ(count_ops(folded, "conv2d"), 1);
  EXPECT_EQ(count_ops(folded, "add"), 0);
  ASSERT_EQ(saturated.applied.size(), 2u);
  expect_same_outputs(m, folded);
}

}  // namespace
}  // namespace tgr::saturation
