// Derivations (saturation/derive.h): a rule that follows from a small rule
// set by a chain of instances proved at its own shapes, the chain it
// reports, a false rule that is not derived, the limit that stopped a
// search, a rule with two outputs, and the e-graph's union log they read.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "ir/text.h"
#include "saturation/derive.h"
#include "saturation/egraph.h"
#include "tests/optimizer_test_util.h"

namespace tgr::saturation {
namespace {

using optimizer::testing::proof_options;
using optimizer::testing::prover;
using optimizer::testing::rules_of;

// Two rules at the generator's square shapes: #1 associativity of matmul,
// #2 the transpose of a product.
const std::vector<optimizer::DirectedRule>& small_rules() {
  static const std::vector<optimizer::DirectedRule> rules =
      rules_of({{"matmul(matmul(x0, w0), w1) => matmul(x0, matmul(w0, w1))", "x0=2x4,w0=4x4,w1=4x4"},
                {"transpose(matmul(x0, w0)) => matmul(transpose(w0), transpose(x0))", "x0=2x4,w0=4x4"}});
  return rules;
}

Rule query(const std::string& text, const std::string& shapes) {
  DTypeMap dtypes;
  const ShapeMap map = parse_shape_map(shapes, &dtypes);
  return build_rule(text, map, dtypes);
}

DeriveOptions sequential() {
  DeriveOptions o;
  o.parallel = false;  // the same applications in the same order every run
  return o;
}

std::vector<int64_t> chain_ids(const Derivation& d) {
  std::vector<int64_t> ids;
  for (const ChainStep& s : d.chain) ids.push_back(s.rule_id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

// The transpose of a product of three, at shapes no rule was stored at:
// the transpose rule twice and associativity once.
const char* kThreeSteps =
    "transpose(matmul(matmul(x0, w0), w1)) => matmul(matmul(transpose(w1), transpose(w0)), transpose(x0))";
const char* kThreeStepShapes = "x0=3x5,w0=5x2,w1=2x6";

TEST(Derive, ChainOfThreeApplicationsAtOtherShapes) {
  optimizer::InstanceProver instances(prover(), proof_options());
  const Derivation d = derive_rule(query(kThreeSteps, kThreeStepShapes), small_rules(), instances, sequential());
  ASSERT_TRUE(d.derived) << not_derived_reason(d);
  EXPECT_EQ(d.stop, StopReason::kGoal);
  EXPECT_TRUE(d.confirmed);
  EXPECT_EQ(chain_ids(d), (std::vector<int64_t>{1, 2, 2}));
  for (const ChainStep& s : d.chain) {
    // Each step names the instance proved at the query's shapes, not the rule's.
    EXPECT_NE(s.instance.find(" | "), std::string::npos) << s.instance;
    EXPECT_EQ(s.instance.find("4x4"), std::string::npos) << s.instance;
  }
}

TEST(Derive, FalseRuleIsNotDerived) {
  optimizer::InstanceProver instances(prover(), proof_options());
  // The factors in the wrong order (square shapes, so both sides type-check).
  const Derivation d =
      derive_rule(query("transpose(matmul(x0, w0)) => matmul(transpose(x0), transpose(w0))", "x0=3x3,w0=3x3"),
                  small_rules(), instances, sequential());
  EXPECT_FALSE(d.derived);
  EXPECT_NE(d.stop, StopReason::kGoal);
  EXPECT_TRUE(d.chain.empty());
}

TEST(Derive, ReportsTheLimitThatStoppedIt) {
  optimizer::InstanceProver instances(prover(), proof_options());
  DeriveOptions one = sequential();
  one.iteration_limit = 1;  // the chain needs two rounds at least
  const Derivation by_iterations = derive_rule(query(kThreeSteps, kThreeStepShapes), small_rules(), instances, one);
  EXPECT_FALSE(by_iterations.derived);
  EXPECT_EQ(by_iterations.stop, StopReason::kIterationLimit);
  EXPECT_NE(not_derived_reason(by_iterations).find("within 1 iterations (iteration limit"), std::string::npos)
      << not_derived_reason(by_iterations);

  DeriveOptions small = sequential();
  small.node_limit = 12;  // the two sides alone hold 11 e-nodes
  const Derivation by_nodes = derive_rule(query(kThreeSteps, kThreeStepShapes), small_rules(), instances, small);
  EXPECT_FALSE(by_nodes.derived);
  EXPECT_EQ(by_nodes.stop, StopReason::kNodeLimit);
  EXPECT_NE(not_derived_reason(by_nodes).find("within 12 e-nodes (node limit"), std::string::npos)
      << not_derived_reason(by_nodes);
}

TEST(Derive, SaturatedWhenNoRuleApplies) {
  optimizer::InstanceProver instances(prover(), proof_options());
  const Derivation d =
      derive_rule(query("relu(x0) => relu(relu(x0))", "x0=2x3"), small_rules(), instances, sequential());
  EXPECT_FALSE(d.derived);
  EXPECT_EQ(d.stop, StopReason::kSaturated);
  EXPECT_NE(not_derived_reason(d).find("saturated after"), std::string::npos);
}

TEST(Derive, MultiOutputRuleNeedsEveryPair) {
  optimizer::InstanceProver instances(prover(), proof_options());
  const Derivation both = derive_rule(query("(transpose(matmul(x0, w0)), matmul(matmul(x0, w0), w1)) => "
                                            "(matmul(transpose(w0), transpose(x0)), matmul(x0, matmul(w0, w1)))",
                                            "x0=3x5,w0=5x2,w1=2x6"),
                                      small_rules(), instances, sequential());
  ASSERT_TRUE(both.derived) << not_derived_reason(both);
  EXPECT_EQ(chain_ids(both), (std::vector<int64_t>{1, 2}));
  // The first pair holds, the second (the product's factors swapped) does not.
  const Derivation one = derive_rule(query("(transpose(matmul(x0, w0)), matmul(matmul(x0, w0), w1)) => "
                                           "(matmul(transpose(w0), transpose(x0)), matmul(x0, matmul(w1, w0)))",
                                           "x0=3x4,w0=4x4,w1=4x4"),
                                     small_rules(), instances, sequential());
  EXPECT_FALSE(one.derived);
}

// A rule whose target is a bare variable joins a class with one it reads
// (cycle filtering would refuse it): four transposes cancel by the rule
// for two, applied once or twice (congruence may do the rest).
TEST(Derive, TargetThatIsAVariable) {
  optimizer::InstanceProver instances(prover(), proof_options());
  const auto rules = rules_of({{"transpose(transpose(x0)) => x0", "x0=2x4"}});
  const Derivation d = derive_rule(query("transpose(transpose(transpose(transpose(x0)))) => x0", "x0=3x5"), rules,
                                   instances, sequential());
  ASSERT_TRUE(d.derived) << not_derived_reason(d);
  EXPECT_TRUE(d.confirmed);
  ASSERT_FALSE(d.chain.empty());
  EXPECT_LE(d.chain.size(), 2u);
  for (const ChainStep& s : d.chain) EXPECT_EQ(s.rule_id, 1);
}

// The union log: a union joining two classes is logged once with the ids it
// was given; a congruence it causes is logged between the two e-nodes' own
// ids (ENode::self), whose children as added pair up across the union.
TEST(UnionLog, LogsUnionsAndTheCongruencesTheyCause) {
  const OpDef& relu = OpTable::instance().get("relu");
  EGraph g;
  g.log_unions();
  Node x, y;
  x.name = "x";
  y.name = "y";
  x.output_shapes = y.output_shapes = {Shape({2, 3})};
  x.output_dtypes = y.output_dtypes = {DType::kFloat};
  const ClassId cx = g.add_input(x), cy = g.add_input(y);
  const ClassId rx = g.add_op(relu, relu.make_params(), {cx});
  const ClassId ry = g.add_op(relu, relu.make_params(), {cy});
  g.rebuild();
  EXPECT_TRUE(g.merge(cx, cy, 7));
  EXPECT_FALSE(g.merge(cy, cx, 8));  // one class already: not logged
  g.rebuild();
  EXPECT_EQ(g.find(rx), g.find(ry));
  ASSERT_EQ(g.union_log().size(), 2u);
  EXPECT_EQ(g.union_log()[0].a, cx);
  EXPECT_EQ(g.union_log()[0].b, cy);
  EXPECT_EQ(g.union_log()[0].origin, 7u);
  const UnionRecord& congruence = g.union_log()[1];
  EXPECT_EQ(congruence.origin, 0u);
  EXPECT_EQ(std::set<ClassId>({congruence.a, congruence.b}), std::set<ClassId>({rx, ry}));
  EXPECT_EQ(g.original_node(rx).children, std::vector<ClassId>{cx});
  EXPECT_EQ(g.original_node(ry).children, std::vector<ClassId>{cy});
}

}  // namespace
}  // namespace tgr::saturation
