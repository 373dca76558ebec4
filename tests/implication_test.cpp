// Which rules follow from others (generator/implication.h): each way a rule
// can follow, and what must not count (other shapes, a rule of its own).
#include <gtest/gtest.h>

#include "generator/implication.h"
#include "ir/canonical.h"

namespace tgr {
namespace {

ImplicationIndex index_of(const std::vector<std::pair<std::string, std::string>>& rules) {
  ImplicationIndex index;
  int64_t id = 1;
  for (const auto& [rule, variables] : rules) {
    // The database's texts are canonical; the variables keep their names
    // here, as each rule is written with its canonical names.
    EXPECT_EQ(canonical_rule_text(rule), rule);
    EXPECT_TRUE(index.add(id++, rule, variables)) << rule;
  }
  return index;
}

const ShapeMap kMatrices{{"x0", {2, 4}}, {"x1", {2, 4}}, {"w0", {4, 4}}, {"w1", {4, 4}}, {"w2", {4, 4}}};

TEST(Implication, SubstitutionOfAnExpressionOrAMergedVariable) {
  const auto index = index_of({{"matmul(matmul(x0, w0), w1) => matmul(x0, matmul(w0, w1))", "x0=2x4,w0=4x4,w1=4x4"}});
  // x0 := relu(x0): TASO's common subgraph.
  auto how = index.explain("matmul(matmul(relu(x0), w0), w1) => matmul(relu(x0), matmul(w0, w1))", kMatrices);
  ASSERT_TRUE(how);
  EXPECT_EQ(how->by, std::vector<int64_t>{1});
  EXPECT_EQ(how->pass, "substitution");
  EXPECT_EQ(how->detail, "x0 := relu(x0)");
  // Two variables become one; the sides may be swapped and renamed.
  how = index.explain("matmul(x1, matmul(w1, w1)) => matmul(matmul(x1, w1), w1)", kMatrices);
  ASSERT_TRUE(how);
  EXPECT_EQ(how->detail, "w1 := w0");
  // The rule itself is not its own instance.
  EXPECT_FALSE(index.explain("matmul(matmul(x0, w0), w1) => matmul(x0, matmul(w0, w1))", kMatrices));
}

TEST(Implication, ShapesMustAgree) {
  const auto index = index_of({{"matmul(matmul(x0, w0), w1) => matmul(x0, matmul(w0, w1))", "x0=2x4,w0=4x4,w1=4x4"}});
  // transpose(x0) is 4x2, not the 2x4 the stored rule holds at.
  EXPECT_FALSE(
      index.explain("matmul(matmul(transpose(x0), x0), w0) => matmul(transpose(x0), matmul(x0, w0))", kMatrices));
  // The same text at other sizes is not implied by a rule found at these.
  EXPECT_FALSE(
      index.explain("matmul(matmul(x0, w0), w0) => matmul(x0, matmul(w0, w0))", {{"x0", {3, 6}}, {"w0", {6, 6}}}));
  EXPECT_TRUE(index.explain("matmul(matmul(x0, w0), w0) => matmul(x0, matmul(w0, w0))", kMatrices));
}

TEST(Implication, CommutativeArgumentsMatchInEitherOrder) {
  const auto index = index_of({{"add(mul(w0, x0), mul(w0, x1)) => mul(add(x0, x1), w0)", "x0=4x4,x1=4x4,w0=4x4"}});
  const ShapeMap square{{"x0", {4, 4}}, {"w0", {4, 4}}, {"w1", {4, 4}}};
  auto how = index.explain("mul(w1, add(relu(w0), x0)) => add(mul(x0, w1), mul(w1, relu(w0)))", square);
  ASSERT_TRUE(how);
  EXPECT_EQ(how->pass, "substitution");
}

TEST(Implication, CommonSupergraphAndTransitivity) {
  const auto index = index_of({{"conv2d[act=relu](i0, k0) => relu(conv2d(i0, k0))", "i0=1x2x4x4,k0=2x2x3x3"},
                               {"transpose(transpose(x0)) => x0", "x0=2x4"},
                               {"relu(transpose(transpose(x0))) => relu(x0)", "x0=2x4"},
                               {"relu(x0) => transpose(transpose(relu(x0)))", "x0=2x4"}});
  const ShapeMap images{{"i0", {1, 2, 4, 4}}, {"k0", {2, 2, 3, 3}}};
  auto how = index.explain("relu(relu(conv2d(i0, k0))) => relu(conv2d[act=relu](i0, k0))", images);
  ASSERT_TRUE(how);
  EXPECT_EQ(how->by, std::vector<int64_t>{1});
  EXPECT_EQ(how->pass, "common supergraph");
  // A shared output on both sides is context too.
  how = index.explain("(relu(conv2d(i0, k0)), i0) => (conv2d[act=relu](i0, k0), i0)", images);
  ASSERT_TRUE(how);
  EXPECT_EQ(how->by, std::vector<int64_t>{1});
  // relu(transpose(transpose(x0))) => transpose(transpose(relu(x0))) through relu(x0).
  how = index.explain("relu(transpose(transpose(x0))) => transpose(transpose(relu(x0)))", {{"x0", {2, 4}}},
                      {"transitivity"});
  ASSERT_TRUE(how);
  EXPECT_EQ(how->pass, "transitivity");
  EXPECT_EQ(how->by, (std::vector<int64_t>{3, 4}));
}

TEST(Implication, UnrelatedRulesAreNotImplied) {
  const auto index = index_of({{"transpose(transpose(x0)) => x0", "x0=2x4"}});
  EXPECT_FALSE(index.explain("matmul(w0, w1) => matmul(w1, w0)", kMatrices));
  EXPECT_FALSE(index.explain("relu(relu(x0)) => relu(x0)", kMatrices));
  EXPECT_EQ(index.shapes_by_kind().at("x"), (Shape{2, 4}));
  EXPECT_EQ(shapes_from_kinds("relu(x1) => x0", index.shapes_by_kind())->at("x1"), (Shape{2, 4}));
  EXPECT_FALSE(shapes_from_kinds("relu(w0) => w0", index.shapes_by_kind()));
}

}  // namespace
}  // namespace tgr
