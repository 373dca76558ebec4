// generate --compose (generator/composition.h): composites of proved merge
// rules, the branch merges with biases and activations that were written by
// hand before (issue 45).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "generator/composition.h"
#include "ir/canonical.h"
#include "ir/text.h"
#include "rules_db/rules_db.h"
#include "verifier/prover.h"

namespace tgr {
namespace {

// The merge space's rules (stored by `generate --space merge --max-ops 3`).
const gen::ComposableRule kConvMerge{
    17,
    "(conv2d(i0, k0), conv2d(i0, l0)) => (split[axis=1, sizes=2x3](conv2d(i0, concat[axis=0](k0, l0))).0, "
    "split[axis=1, sizes=2x3](conv2d(i0, concat[axis=0](k0, l0))).1)",
    "i0=1x4x5x5,k0=2x4x3x3,l0=3x4x3x3", ""};
const gen::ComposableRule kChannelBiasSplit{
    2,
    "(add(c0, split[axis=1, sizes=2x3](z0).0), add(d0, split[axis=1, sizes=2x3](z0).1)) => "
    "(split[axis=1, sizes=2x3](add(concat[axis=1](c0, d0), z0)).0, split[axis=1, sizes=2x3](add(concat[axis=1](c0, "
    "d0), z0)).1)",
    "c0=1x2x1x1,d0=1x3x1x1,z0=1x5x4x4", ""};
const gen::ComposableRule kReluSplit{
    21,
    "(relu(split[axis=1, sizes=2x3](z0).0), relu(split[axis=1, sizes=2x3](z0).1)) => (split[axis=1, "
    "sizes=2x3](relu(z0)).0, split[axis=1, sizes=2x3](relu(z0)).1)",
    "z0=1x5x4x4", ""};

// The rule rules/extra.rules wrote by hand for Inception's branches.
const char* kConvBiasMerge =
    "(add(conv2d(i0, k0), b0), add(conv2d(i0, k1), b1)) => (split[axis=1, sizes=2x3](add(conv2d(i0, "
    "concat[axis=0](k0, k1)), concat[axis=1](b0, b1))).0, split[axis=1, sizes=2x3](add(conv2d(i0, concat[axis=0](k0, "
    "k1)), concat[axis=1](b0, b1))).1)";
const char* kReluConvBiasMerge =
    "(relu(add(conv2d(i0, k0), b0)), relu(add(conv2d(i0, k1), b1))) => (split[axis=1, sizes=2x3](relu(add(conv2d(i0, "
    "concat[axis=0](k0, k1)), concat[axis=1](b0, b1)))).0, split[axis=1, sizes=2x3](relu(add(conv2d(i0, "
    "concat[axis=0](k0, k1)), concat[axis=1](b0, b1)))).1)";

// The canonical form with variable kinds dropped (b0 and c0 are both biases
// here; a kind is a name, not a meaning): every variable renamed v<N> first.
std::string up_to_kinds(const std::string& text) {
  RuleExpr r = parse_rule_expr(text);
  std::vector<std::string> names;
  for (const Expr& e : r.source) collect_variables(e, names);
  std::function<void(Expr&)> rename = [&](Expr& e) {
    if (e.kind == Expr::Kind::kVar)
      e.name = "v" + std::to_string(std::find(names.begin(), names.end(), e.name) - names.begin());
    for (Expr& a : e.args) rename(a);
  };
  for (auto* side : {&r.source, &r.target})
    for (Expr& e : *side) rename(e);
  return canonical_rule_text(r);
}

bool has_composite(const std::vector<gen::ComposedRule>& found, const std::string& rule) {
  const std::string want = up_to_kinds(rule);
  for (const gen::ComposedRule& c : found)
    if (up_to_kinds(c.text) == want) return true;
  return false;
}

const verifier::Prover& prover() {
  static const verifier::Prover p(axioms::load_axioms(TGR_SPECS_DIR));
  return p;
}

TEST(Composition, MergeRulesAreThoseWithOutputsOfOneSplit) {
  EXPECT_TRUE(gen::is_merge_rule(kConvMerge.text));
  EXPECT_TRUE(gen::is_merge_rule(kChannelBiasSplit.text));
  EXPECT_TRUE(gen::is_merge_rule(kReluSplit.text));
  // Two rules side by side (outputs that share a variable only) and one output: not merges.
  EXPECT_FALSE(gen::is_merge_rule("(transpose(transpose(t0)), relu(t0)) => (t0, relu(t0))"));
  EXPECT_FALSE(gen::is_merge_rule("relu(split[axis=1, sizes=2x3](z0).0) => split[axis=1, sizes=2x3](relu(z0)).0"));
}

TEST(Composition, TheConvolutionMergeThenTheSplitBiasIsInceptionsBranchMerge) {
  const std::vector<gen::ComposedRule> found = gen::compose_pair(kConvMerge, kChannelBiasSplit, 8, 1);
  ASSERT_TRUE(has_composite(found, kConvBiasMerge));
  for (const gen::ComposedRule& c : found)
    if (has_composite({c}, kConvBiasMerge)) {
      EXPECT_EQ(c.how, "#17 then #2");
      // Its variables keep their rules' shapes, and it is proved at them.
      verifier::ProofOptions o;
      o.timeout_ms = 20000;
      const verifier::ProofResult r = prover().prove(build_rule(c.text, parse_shape_map(c.shapes)), o);
      EXPECT_EQ(r.status, verifier::ProofStatus::kProved) << c.text << " | " << c.shapes << ": " << r.reason;
    }
}

TEST(Composition, ASecondRoundAddsTheRelu) {
  const std::vector<gen::ComposedRule> first = gen::compose_pair(kConvMerge, kChannelBiasSplit, 8, 1);
  bool found = false;
  for (const gen::ComposedRule& c : first) {
    if (!has_composite({c}, kConvBiasMerge)) continue;
    const std::vector<gen::ComposedRule> second = gen::compose_pair({0, c.text, c.shapes, c.how}, kReluSplit, 8, 1);
    found = found || has_composite(second, kReluConvBiasMerge);
  }
  EXPECT_TRUE(found);
  // The relu rule alone does not reach the biased merge from the plain one.
  EXPECT_FALSE(has_composite(gen::compose_pair(kConvMerge, kReluSplit, 8, 1), kReluConvBiasMerge));
}

// The hand-written rule for a relu on the first branch only (ResNet's first
// convolution beside its downsampling path).
const char* kReluOnFirstBranch =
    "(relu(add(conv2d(i0, k0), b0)), add(conv2d(i0, k1), b1)) => (relu(split[axis=1, sizes=2x3](add(conv2d(i0, "
    "concat[axis=0](k0, k1)), concat[axis=1](b0, b1))).0), split[axis=1, sizes=2x3](add(conv2d(i0, concat[axis=0](k0, "
    "k1)), concat[axis=1](b0, b1))).1)";

TEST(Composition, SplitActivationsAreTheActivationsOfSplitMerges) {
  EXPECT_EQ(gen::split_activations({kConvMerge, kChannelBiasSplit, kReluSplit}), std::set<std::string>{"relu"});
  // The bias and convolution merges carry no activation.
  EXPECT_TRUE(gen::split_activations({kConvMerge, kChannelBiasSplit}).empty());
}

TEST(Composition, AnActivationOnOneOutputIsTheReluOnOneBranchRule) {
  std::vector<gen::ComposedRule> biased;
  for (const gen::ComposedRule& c : gen::compose_pair(kConvMerge, kChannelBiasSplit, 8, 1))
    if (has_composite({c}, kConvBiasMerge)) biased.push_back(c);
  ASSERT_FALSE(biased.empty());
  const gen::ComposableRule merge{0, biased[0].text, biased[0].shapes, biased[0].how};
  const std::vector<gen::ComposedRule> one = gen::with_activation_on_one_output(merge, {"relu"}, 8, 1);
  ASSERT_EQ(one.size(), 2u);  // relu on output 0, relu on output 1
  EXPECT_TRUE(has_composite(one, kReluOnFirstBranch));
  for (const gen::ComposedRule& c : one) {
    EXPECT_NE(c.how.find("with relu on output"), std::string::npos) << c.how;
    verifier::ProofOptions o;
    o.timeout_ms = 20000;
    const verifier::ProofResult r = prover().prove(build_rule(c.text, parse_shape_map(c.shapes)), o);
    EXPECT_EQ(r.status, verifier::ProofStatus::kProved) << c.text << " | " << c.shapes << ": " << r.reason;
  }
  // Beyond the operator bound (5 a side with the relu), no activation, or a
  // rule of one output: nothing.
  EXPECT_TRUE(gen::with_activation_on_one_output(merge, {"relu"}, 4, 1).empty());
  EXPECT_TRUE(gen::with_activation_on_one_output(merge, {}, 8, 1).empty());
  const gen::ComposableRule single{0, "relu(relu(x0)) => relu(x0)", "x0=2x3", ""};
  EXPECT_TRUE(gen::with_activation_on_one_output(single, {"relu"}, 8, 1).empty());
}

TEST(Composition, SplitsOfOtherSizesDoNotCompose) {
  gen::ComposableRule other = kChannelBiasSplit;
  for (const char* from : {"sizes=2x3", "c0=1x2x1x1,d0=1x3x1x1"}) {
    const std::string to = std::string(from) == "sizes=2x3" ? "sizes=3x2" : "c0=1x3x1x1,d0=1x2x1x1";
    for (size_t at; (at = other.text.find(from)) != std::string::npos;) other.text.replace(at, std::strlen(from), to);
    for (size_t at; (at = other.shapes.find(from)) != std::string::npos;)
      other.shapes.replace(at, std::strlen(from), to);
  }
  EXPECT_TRUE(gen::compose_pair(kConvMerge, other, 8, 1).empty());
  // Nor beyond the operator bound (the composite has 4 and 5 a side).
  EXPECT_TRUE(gen::compose_pair(kConvMerge, kChannelBiasSplit, 4, 1).empty());
}

TEST(Composition, GenerateStoresCompositesOfProvedRulesOnly) {
  const std::string db_path = (std::filesystem::temp_directory_path() / "tgr_composition_test.db").string();
  std::filesystem::remove(db_path);
  {
    rules_db::RulesDb db = rules_db::RulesDb::open(db_path, true);
    for (const gen::ComposableRule* r : {&kConvMerge, &kChannelBiasSplit, &kReluSplit}) {
      rules_db::RuleRecord rec = rules_db::rule_record_from_text(r->text, r->shapes);
      rec.status = r == &kReluSplit ? "candidate" : "proved";
      ASSERT_EQ(db.insert_rules({rec}), 1);
    }
  }
  gen::CompositionOptions o;
  o.db = db_path;
  o.progress = false;
  const std::atomic<bool> stop{false};
  const gen::CompositionReport report = gen::generate_compositions(o, stop);
  EXPECT_EQ(report.proved_rules, 2);  // the relu split is a candidate: not composed
  EXPECT_GE(report.inserted, 1);
  rules_db::RulesDb db = rules_db::RulesDb::open(db_path, false);
  bool conv_bias = false, relu = false;
  for (const rules_db::RuleRecord& r : db.list_rules()) {
    if (r.id <= 3) continue;
    EXPECT_EQ(r.status, "candidate");
    EXPECT_NE(r.constraints.find("\"composition\""), std::string::npos) << r.constraints;
    EXPECT_EQ(r.generator_run, report.run);
    conv_bias = conv_bias || has_composite({{r.rule_text(), r.variables, ""}}, kConvBiasMerge);
    relu = relu || has_composite({{r.rule_text(), r.variables, ""}}, kReluConvBiasMerge);
  }
  EXPECT_TRUE(conv_bias);
  EXPECT_FALSE(relu);
  // A second run adds nothing: every composite is in the database.
  EXPECT_EQ(gen::generate_compositions(o, stop).inserted, 0);
  std::filesystem::remove(db_path);
}

}  // namespace
}  // namespace tgr
