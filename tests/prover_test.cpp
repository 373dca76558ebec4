// The prover (verifier/prover.h): well-known rules are proved with the
// axioms one expects, false rules are refuted by evaluation and never
// proved by the axioms alone, and what Z3 is given is what the search found.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "verifier/axioms.h"
#include "verifier/prover.h"
#include "verifier/rewrites.h"
#include "verifier/verify_db.h"
#include "verifier/z3_check.h"

namespace tgr::verifier {
namespace {

const Prover& prover() {
  static const Prover p(axioms::load_axioms(TGR_SPECS_DIR));
  return p;
}

ProofResult prove(const std::string& rule, const std::string& shapes, int refute_trials = 3) {
  ProofOptions options;
  options.refute_trials = refute_trials;
  return prover().prove(build_rule(rule, parse_shape_map(shapes)), options);
}

bool cites(const ProofResult& r, const std::string& axiom) {
  return std::find(r.axioms.begin(), r.axioms.end(), axiom) != r.axioms.end();
}

// The six rules of the generator issue, at the generator's shapes.
struct WellKnown {
  const char* rule;
  const char* shapes;
  const char* axiom;  // an axiom the proof must cite
};
const WellKnown kWellKnown[] = {
    {"matmul(matmul(x0, w0), w1) => matmul(x0, matmul(w0, w1))", "x0=2x4,w0=4x4,w1=4x4", "matmul_associative"},
    {"add(conv2d(i0, k0), conv2d(i0, k1)) => conv2d(i0, add(k0, k1))", "i0=1x2x4x4,k0=2x2x3x3,k1=2x2x3x3",
     "conv2d_distributes_kernel"},
    {"concat[axis=1](conv2d(i0, k0), conv2d(i0, k1)) => conv2d(i0, concat[axis=0](k0, k1))",
     "i0=1x2x4x4,k0=2x2x3x3,k1=2x2x3x3", "conv2d_concat_kernels"},
    {"relu(conv2d(i0, k0)) => conv2d[act=relu](i0, k0)", "i0=1x2x4x4,k0=2x2x3x3", "conv2d_relu_fusion"},
    {"mul(add(x0, x1), x2) => add(mul(x0, x2), mul(x1, x2))", "x0=2x4,x1=2x4,x2=2x4", "mul_distributes_over_add"},
    {"transpose(matmul(x0, w0)) => matmul(transpose(w0), transpose(x0))", "x0=2x4,w0=4x4", "transpose_matmul"},
};

TEST(Prover, ProvesTheSixWellKnownRules) {
  for (const WellKnown& w : kWellKnown) {
    const ProofResult r = prove(w.rule, w.shapes);
    EXPECT_EQ(r.status, ProofStatus::kProved) << w.rule << ": " << r.reason;
    EXPECT_TRUE(cites(r, w.axiom)) << w.rule;
    EXPECT_FALSE(r.instances.empty()) << w.rule;
  }
}

TEST(Prover, ProofOfSeveralStepsCitesEachAxiomUsed) {
  // (I + w0) w1 = I w1 + w0 w1 = w1 + w0 w1 = w0 w1 + w1
  const ProofResult r = prove("add(matmul(w0, w1), w1) => matmul(add(eye[n=4](), w0), w1)", "w0=4x4,w1=4x4");
  ASSERT_EQ(r.status, ProofStatus::kProved) << r.reason;
  EXPECT_EQ(r.axioms, (std::vector<std::string>{"add_commutative", "matmul_distributes_right", "matmul_eye_left"}));
}

// Planted false rules: refuted by evaluation, and not provable from the
// axioms even when the evaluation is skipped.
const std::pair<const char*, const char*> kPlantedFalse[] = {
    {"matmul(x0, w0) => matmul(w0, x0)", "x0=3x3,w0=3x3"},  // matmul commutativity
    // a 2x2 grid of blocks joined along the wrong axes (b and c exchanged)
    {"concat[axis=0](concat[axis=1](a, b), concat[axis=1](c, d)) => concat[axis=1](concat[axis=0](a, b), "
     "concat[axis=0](c, d))",
     "a=2x2,b=2x2,c=2x2,d=2x2"},
    // the pieces of a concatenation given back in the wrong order
    {"(split[axis=0, sizes=2x2](concat[axis=0](a, b)).0, split[axis=0, sizes=2x2](concat[axis=0](a, b)).1) => (b, a)",
     "a=2x4,b=2x4"},
    // conv2d with the stacked kernels swapped
    {"conv2d(i0, concat[axis=0](k0, k1)) => concat[axis=1](conv2d(i0, k1), conv2d(i0, k0))",
     "i0=1x2x4x4,k0=2x2x3x3,k1=2x2x3x3"},
};

TEST(Prover, RefutesPlantedFalseRules) {
  for (const auto& [rule, shapes] : kPlantedFalse) {
    const ProofResult r = prove(rule, shapes);
    EXPECT_EQ(r.status, ProofStatus::kRefuted) << rule;
    EXPECT_NE(r.counterexample.find("float64 inputs"), std::string::npos) << r.counterexample;
  }
}

TEST(Prover, NeverProvesPlantedFalseRulesFromTheAxioms) {
  for (const auto& [rule, shapes] : kPlantedFalse) {
    const ProofResult r = prove(rule, shapes, /*refute_trials=*/0);
    EXPECT_EQ(r.status, ProofStatus::kUnknown) << rule;
    EXPECT_FALSE(r.reason.empty());
  }
}

TEST(Prover, TrueRuleWithoutItsAxiomIsUnknownWithAReason) {
  // True (both sides are w0's diagonal), but no axiom speaks of eye * w.
  const ProofResult r = prove("mul(eye[n=4](), transpose(w0)) => mul(eye[n=4](), w0)", "w0=4x4");
  EXPECT_EQ(r.status, ProofStatus::kUnknown);
  EXPECT_NE(r.reason.find("no proof"), std::string::npos) << r.reason;
}

TEST(Prover, ARestrictedSearchProvesWithTheAxiomsItIsGivenOnly) {
  // Two convolutions of one input merged: the proof's own axioms suffice,
  // and the search restricted to them visits fewer forms than the full one.
  const std::string rule =
      "(conv2d(i0, k0), conv2d(i0, k1)) => (split[axis=1, sizes=48x64](conv2d(i0, concat[axis=0](k0, k1))).0, "
      "split[axis=1, sizes=48x64](conv2d(i0, concat[axis=0](k0, k1))).1)";
  const Rule at_model_shapes = build_rule(rule, parse_shape_map("i0=1x192x35x35,k0=48x192x1x1,k1=64x192x1x1"));
  ProofOptions options;
  options.refute_trials = 0;
  const ProofResult full = prover().prove(at_model_shapes, options);
  ASSERT_EQ(full.status, ProofStatus::kProved) << full.reason;
  options.only_axioms = full.axioms;
  const ProofResult replay = prover().prove(at_model_shapes, options);
  ASSERT_EQ(replay.status, ProofStatus::kProved) << replay.reason;
  EXPECT_EQ(replay.axioms, full.axioms);
  EXPECT_LT(replay.states, full.states);
  // Without the axiom that splits a convolution's kernels, no proof.
  options.only_axioms = {"split_concat"};
  EXPECT_NE(prover().prove(at_model_shapes, options).status, ProofStatus::kProved);
}

TEST(Prover, ClosedTermsOfLayoutOperatorsAreEvaluated) {
  const ProofResult r = prove("concat[axis=0](ones[shape=2x4](), concat[axis=0](ones[shape=2x4](), w0)) => "
                              "concat[axis=0](ones[shape=4x4](), w0)",
                              "w0=4x4");
  ASSERT_EQ(r.status, ProofStatus::kProved) << r.reason;
  EXPECT_TRUE(cites(r, "evaluation"));
  EXPECT_TRUE(cites(r, "concat_associative"));
}

// The same rule at shapes whose closed terms are too large to evaluate (more
// than 2^22 elements; an instance at a model's shapes can hold an identity
// matrix of 9216 x 9216): they are left as terms, and the proof may not
// cite the evaluation.
TEST(Prover, ClosedTermsTooLargeToEvaluateStayTerms) {
  const ProofResult r = prove(
      "concat[axis=0](ones[shape=4096x2048](), concat[axis=0](ones[shape=4096x2048](), w0)) => "
      "concat[axis=0](ones[shape=8192x2048](), w0)",
      "w0=2x2048", /*refute_trials=*/0);
  EXPECT_FALSE(cites(r, "evaluation"));
  EXPECT_NE(r.status, ProofStatus::kRefuted);
}

TEST(Prover, ShapeConditionsKeepAxiomsFromFalseInstances) {
  // split_concat gives the pieces back only when the cut is where they meet.
  const ProofResult met = prove("split[axis=0, sizes=2x2](concat[axis=0](a, b)).0 => a", "a=2x4,b=2x4");
  EXPECT_EQ(met.status, ProofStatus::kProved) << met.reason;
  const ProofResult elsewhere =
      prove("split[axis=0, sizes=1x3](concat[axis=0](a, b)).1 => concat[axis=0](split[axis=0, sizes=1x1](a).1, b)",
            "a=2x4,b=2x4", 0);
  // True, but needs a cut the axioms do not state; what matters is that the
  // mismatched split_concat instance is not used to "prove" it wrongly.
  EXPECT_NE(elsewhere.status, ProofStatus::kRefuted);
  for (const std::string& inst : elsewhere.instances) EXPECT_EQ(inst.find("split_concat["), std::string::npos) << inst;
}

TEST(Prover, OutputsEqualInDifferentFormsAreProvedFromEveryInstance) {
  // No form has both outputs of the target (each pair of outputs meets in
  // forms of its own): the search finds no common form, and Z3 proves the
  // rule from every instance found (the congruence closure must let it).
  const ProofResult r = prove(
      "(concat[axis=1](i0, conv2d[act=relu](i0, k0)), concat[axis=1](i1, conv2d[act=relu](i1, k0))) => "
      "(split[axis=0, sizes=1x1](concat[axis=1](concat[axis=0](i0, i1), conv2d[act=relu](concat[axis=0](i0, i1), "
      "k0))).0, split[axis=0, sizes=1x1](concat[axis=1](concat[axis=0](i0, i1), conv2d[act=relu](concat[axis=0](i0, "
      "i1), k0))).1)",
      "i0=1x2x4x4,i1=1x2x4x4,k0=2x2x3x3");
  ASSERT_EQ(r.status, ProofStatus::kProved) << r.reason;
  EXPECT_TRUE(cites(r, "conv2d_split_batch"));
  EXPECT_GT(r.instances_found, r.instances.size());
}

TEST(Prover, KeepsTheQueryGivenToZ3) {
  ProofOptions options;
  options.smt2 = true;
  const ProofResult r = prover().prove(
      build_rule("relu(conv2d(i0, k0)) => conv2d[act=relu](i0, k0)", parse_shape_map("i0=1x2x4x4,k0=2x2x3x3")), options);
  ASSERT_EQ(r.status, ProofStatus::kProved);
  EXPECT_NE(r.smt2.find("(declare-sort Tensor"), std::string::npos) << r.smt2;
  EXPECT_NE(r.smt2.find("conv2d_relu_fusion"), std::string::npos) << r.smt2;
}

// The axioms and note columns are JSON arrays in compact form: databases
// written before the JSON library hold the same text, and `rules list`,
// rules.md5 fingerprints and readers of the database depend on it.
TEST(StoreResult, ProvedRulesKeepAxiomsAndInstancesAsCompactJsonArrays) {
  ProofResult proved;
  proved.status = ProofStatus::kProved;
  proved.ms = 12.5;
  proved.axioms = {"conv2d_distributes_kernel", "enlarge_identity"};
  proved.instances = {"conv2d_distributes_kernel", "enlarge_identity[KH=3, KW=3]", "quote\"back\\slash"};
  rules_db::RuleRecord record;
  record.counterexample = "stale";
  store_result(proved, record);
  EXPECT_EQ(record.status, "proved");
  EXPECT_EQ(record.axioms, std::optional<std::string>(R"(["conv2d_distributes_kernel","enlarge_identity"])"));
  EXPECT_EQ(record.note,
            std::optional<std::string>(
                R"(instances: ["conv2d_distributes_kernel","enlarge_identity[KH=3, KW=3]","quote\"back\\slash"])"));
  EXPECT_FALSE(record.counterexample);
}

TEST(Rewrites, EveryAxiomWithoutValueConditionsGivesARewrite) {
  const auto all = axioms::load_axioms(TGR_SPECS_DIR);
  const RewriteSet rewrites(all);
  EXPECT_GT(rewrites.size(), all.size());
  for (const auto& [name, why] : rewrites.unused())
    EXPECT_EQ(why, "has a condition on values, which terms cannot decide") << name;
}

// The prover skips Z3 when congruence closure says the instances cannot make
// the sides equal, so the closure must agree with Z3 on every query: random
// term graphs (repeated terms, operators with parameters and with several
// outputs, equal constants) with random equations, each decided both ways.
TEST(Congruence, AgreesWithZ3OnRandomGroundEquations) {
  std::mt19937 random(7);
  auto pick = [&random](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(random); };
  const OpTable& ops = OpTable::instance();
  size_t congruent = 0, not_congruent = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Graph g;
    std::vector<ValueRef> square{g.add_input("a", {2, 2}), g.add_input("b", {2, 2}), g.add_input("c", {2, 2})};
    // Two nodes of one value: Z3 names a constant by its hash, so they are one term.
    for (int copy = 0; copy < 2; ++copy)
      square.push_back(g.add_constant(ConstantValue(Tensor<float>({2, 2}, {1, 2, 3, 4}))));
    std::vector<ValueRef> pieces;  // split's outputs (1x2 or 2x1)
    const ValueRef two = g.add_constant(ConstantValue(Tensor<float>({}, {2})));
    for (int step = 0; step < 12; ++step) {
      const ValueRef x = square[pick(square.size())], y = square[pick(square.size())];
      // apply never merges: repeated terms are separate nodes
      switch (pick(5)) {
        case 0:
          square.push_back(g.apply("relu", {x}));
          break;
        case 1:
          square.push_back(g.apply("add", {x, y}));
          break;
        case 2:
          square.push_back(g.apply("mul", {x, y}));
          break;
        case 3:
          square.push_back(g.apply("scalar_mul", {x, two}));
          break;
        default: {  // one operator with other parameters is another function
          const OpDef& split = ops.get("split");
          const auto axis = static_cast<int64_t>(pick(2));
          for (ValueRef piece :
               g.add_op(split, split.make_params({{"axis", axis}, {"sizes", std::vector<int64_t>{1, 1}}}), {x}))
            pieces.push_back(piece);
        }
      }
    }
    std::vector<ValueRef> values = square;
    values.insert(values.end(), pieces.begin(), pieces.end());
    // Equations mostly between the leaves, so that congruence has work to do.
    auto any = [&] { return pick(3) == 0 ? values[pick(values.size())] : square[pick(5)]; };
    std::vector<AxiomInstance> instances(pick(5));
    std::vector<const AxiomInstance*> given;
    for (AxiomInstance& inst : instances) {
      inst.equations.push_back({any(), any()});
      given.push_back(&inst);
    }
    // Sides of one operator are more often equal.
    const ValueRef source = values[pick(values.size())];
    ValueRef target = values[pick(values.size())];
    for (ValueRef v : values)
      if (pick(4) == 0 && g.node(v.node).op == g.node(source.node).op && v.output == source.output) target = v;
    const bool closure = outputs_congruent(g, {source}, {target}, given);
    const Z3Answer z3 = z3_check_equal(g, {source}, {target}, given, 5000);
    ASSERT_NE(z3.result, Z3Answer::Result::kUnknown) << z3.reason;
    EXPECT_EQ(closure, z3.result == Z3Answer::Result::kUnsat) << "trial " << trial;
    (closure ? congruent : not_congruent)++;
  }
  // Both answers occur often enough for the comparison to mean something.
  EXPECT_GT(congruent, 50u);
  EXPECT_GT(not_congruent, 50u);
}

}  // namespace
}  // namespace tgr::verifier
