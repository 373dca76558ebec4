// Helpers shared by the optimizer's and the saturation's tests
// (tests/optimizer_test.cpp, tests/saturation_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "optimizer/rule_set.h"
#include "runtime/interpreter.h"
#include "verifier/axioms.h"
#include "verifier/prover.h"

namespace tgr::optimizer::testing {

// The prover over the specs' axioms, one per test program (the test
// programs that include this header define TGR_SPECS_DIR).
inline const verifier::Prover& prover() {
  static const verifier::Prover p(axioms::load_axioms(TGR_SPECS_DIR));
  return p;
}

// Instance proofs as optimize makes them: no refutation trials first.
inline verifier::ProofOptions proof_options() {
  verifier::ProofOptions o;
  o.refute_trials = 0;
  return o;
}

#ifdef TGR_DEFAULT_RULES
// The default rules (build/default_rules.db: rules/default.rules and
// rules/generated.rules, proved when the database was built), for the test
// programs that define TGR_DEFAULT_RULES.
inline const std::vector<DirectedRule>& default_rules() {
  static const std::vector<DirectedRule> rules = load_rules(TGR_DEFAULT_RULES);
  return rules;
}
#endif

// The applicable directions of the rule "SRC => DST" at the generator's
// shapes `shapes` ("x0=2x4,w0=4x4"), built as load_rules builds a database's.
// A text this build cannot parse is a test failure, not an empty result.
inline std::vector<DirectedRule> directions_of(const std::string& text, const std::string& shapes, int64_t id = 1) {
  const auto arrow = text.find(" => ");
  const std::string source = text.substr(0, arrow), target = text.substr(arrow + 4);
  RuleLoadStats stats;
  auto out = build_directed_rules(
      {{id, false, false, source + " => " + target, shapes}, {id, true, false, target + " => " + source, shapes}},
      std::span<RuleLoadStats>(&stats, 1));
  EXPECT_EQ(stats.skipped_unparsable, 0) << "cannot parse the rule " << text << " at " << shapes;
  return out;
}

// Directed rules from "SRC => DST" texts and the shapes they hold at, with
// ids 1, 2, ... in order.
inline std::vector<DirectedRule> rules_of(const std::vector<std::pair<std::string, std::string>>& texts) {
  std::vector<DirectedRule> out;
  int64_t id = 0;
  for (const auto& [text, shapes] : texts)
    for (auto& d : directions_of(text, shapes, ++id)) out.push_back(std::move(d));
  return out;
}

inline ValueRef weight(Graph& g, const Shape& shape, uint64_t seed) {
  return g.add_constant(ConstantValue(random_tensor<float>(shape, seed)));
}

inline int count_ops(const Graph& g, const std::string& op) {
  int n = 0;
  for (int32_t i : g.topological_order())
    if (g.node(i).is_op() && g.node(i).op->name == op) ++n;
  return n;
}

// The outputs of both graphs agree on random inputs (float32), each element
// within relative_tolerance * (1 + |a's value|).
inline void expect_same_outputs(const Graph& a, const Graph& b, double relative_tolerance) {
  const auto inputs = random_inputs<float>(a, 7);
  const auto ya = evaluate<float>(a, std::span<const Tensor<float>>(inputs));
  const auto yb = evaluate<float>(b, std::span<const Tensor<float>>(inputs));
  ASSERT_EQ(ya.size(), yb.size());
  for (size_t k = 0; k < ya.size(); ++k) {
    ASSERT_EQ(ya[k].shape, yb[k].shape);
    for (size_t i = 0; i < ya[k].data.size(); ++i)
      ASSERT_NEAR(ya[k].data[i], yb[k].data[i], relative_tolerance * (1 + std::abs(ya[k].data[i])))
          << "output " << k << " at " << i;
  }
}

}  // namespace tgr::optimizer::testing
