#include <gtest/gtest.h>
#include <functional>
#include <map>

#include "test_util.h"

namespace tgr {
namespace {

using test::expect_error;

const ShapeMap kShapes = {
    {"x0", {4, 5}}, {"x1", {4, 5}}, {"x2", {4, 5}}, {"w0", {5, 5}}, {"w1", {5, 5}},
    {"i0", {1, 3, 8, 8}}, {"k0", {4, 3, 3, 3}}, {"k1", {4, 3, 3, 3}}, {"k2", {4, 3, 1, 1}}, {"s0", {}},
};

std::string canonical(const std::string& text) { return to_text(build_rule(text, kShapes)); }

TEST(TextForm, IssueExamplesRoundTrip) {
  for (const char* rule : {
           "matmul(matmul(x0, w0), w1) => matmul(x0, matmul(w0, w1))",
           "add(conv2d(i0, k0), conv2d(i0, k1)) => conv2d(i0, add(k0, k1))",
           "concat[axis=1](conv2d(i0, k0), conv2d(i0, k1)) => conv2d(i0, concat[axis=0](k0, k1))",
           "relu(conv2d(i0, k0)) => conv2d[act=relu](i0, k0)",
           "mul(add(x0, x1), x2) => add(mul(x0, x2), mul(x1, x2))",
           "transpose(matmul(x0, w0)) => matmul(transpose(w0), transpose(x0))",
           "conv2d(i0, add(k0, enlarge[size=3x3](k2))) => add(conv2d(i0, k0), conv2d(i0, k2))",
           "scalar_mul(matmul(x0, w0), s0) => matmul(x0, scalar_mul(w0, s0))",
       })
    EXPECT_EQ(canonical(rule), rule);
}

TEST(TextForm, DefaultsAreOmittedAndSpacingNormalised) {
  EXPECT_EQ(canonical("conv2d[stride=1x1,pad=same,act=none](i0,k0)=>conv2d[ dilation = 1x1 ](i0 , k0)"),
            "conv2d(i0, k0) => conv2d(i0, k0)");
  EXPECT_EQ(canonical("conv2d[act=relu, stride=2x2](i0, k0) => conv2d[stride=2x2, act=relu](i0, k0)"),
            "conv2d[stride=2x2, act=relu](i0, k0) => conv2d[stride=2x2, act=relu](i0, k0)");
  // An explicit reversal of a 2-D transpose is the default.
  EXPECT_EQ(canonical("transpose[perm=1x0](x0) => transpose(x0)"), "transpose(x0) => transpose(x0)");
  const Graph g = build_graph("transpose[perm=0x2x1](x)", {{"x", {2, 3, 4}}});
  EXPECT_EQ(to_text(g), "transpose[perm=0x2x1](x)");
}

TEST(TextForm, MultiOutputRules) {
  const std::string rule =
      "(split[axis=1, sizes=2x3](concat[axis=1](x0, w0)).0, split[axis=1, sizes=2x3](concat[axis=1](x0, w0)).1)"
      " => (split[axis=1, sizes=2x3](concat[axis=1](x0, w0)).0, split[axis=1, sizes=2x3](concat[axis=1](x0, w0)).1)";
  const Rule r = build_rule(rule, {{"x0", {4, 2}}, {"w0", {4, 3}}});
  EXPECT_EQ(to_text(r), rule);
  EXPECT_EQ(r.source.outputs().size(), 2u);
  // The two outputs share one split node and one concat node.
  EXPECT_EQ(r.source.num_ops(), 2);
}

TEST(TextForm, RuleSidesShareInputsInOrderOfAppearance) {
  const Rule r = build_rule("add(x1, x0) => add(x0, x1)", kShapes);
  ASSERT_EQ(r.source.inputs().size(), 2u);
  EXPECT_EQ(r.source.node(r.source.inputs()[0]).name, "x1");
  EXPECT_EQ(r.target.node(r.target.inputs()[0]).name, "x1");
  // A variable on one side only is an input of both.
  const Rule z = build_rule("matmul(x0, w0) => matmul(x0, add(w0, scalar_mul(w1, s0)))", kShapes);
  EXPECT_EQ(z.source.inputs().size(), 4u);
}

TEST(TextForm, ParseErrorsPointAtThePosition) {
  auto position_of = [](const std::string& text, const ShapeMap& shapes) -> size_t {
    try {
      build_graph(text, shapes);
    } catch (const ParseError& e) {
      return e.position();
    }
    return std::string::npos;
  };
  EXPECT_EQ(position_of("relu(conv3d(i0, k0))", kShapes), 5u);
  EXPECT_EQ(position_of("relu(conv2d(i0, k0)", kShapes), 19u);
  EXPECT_EQ(position_of("conv2d[strde=2x2](i0, k0)", kShapes), 7u);
  EXPECT_EQ(position_of("conv2d[stride=0x2](i0, k0)", kShapes), 14u);
  EXPECT_EQ(position_of("add(x0, matmul(x0, k0))", kShapes), 8u);  // 4x5 times 4x3x3x3
  EXPECT_EQ(position_of("add(x0, zz)", kShapes), 8u);
  expect_error<ParseError>([] { build_graph("relu(conv3d(i0, k0))", kShapes); }, "unknown operator 'conv3d'");
  expect_error<ParseError>([] { build_graph("relu(conv2d(i0, k0)", kShapes); }, "expected ')'");
  expect_error<ParseError>([] { build_graph("conv2d[strde=2x2](i0, k0)", kShapes); },
                           "conv2d has no parameter 'strde' (it takes: stride, pad, dilation, act)");
  expect_error<ParseError>([] { build_graph("add(x0, matmul(x0, k0))", kShapes); }, "matmul: inputs must be 2-D");
  expect_error<ParseError>([] { build_graph("add(x0)", kShapes); }, "add takes 2 argument(s), given 1");
  expect_error<ParseError>([] { build_graph("add(x0, zz)", kShapes); }, "variable 'zz' has no shape");
  expect_error<ParseError>([] { build_graph("relu", kShapes); }, "'relu' is an operator");
  expect_error<ParseError>([] { build_graph("split[axis=0, sizes=2x2](x0)", kShapes); }, "select one with .k");
  expect_error<ParseError>([] { build_graph("split[axis=0, sizes=2x2](x0).2", kShapes); }, "has no output 2");
  expect_error<ParseError>([] { build_graph("relu(x0) x1", kShapes); }, "unexpected text after the end");
  expect_error<ParseError>([] { build_rule("relu(x0) => relu(w0)", kShapes); }, "4x5 on the left but 5x5 on the right");
  expect_error<ParseError>([] { build_rule("relu(x0) =>", kShapes); }, "expected a variable or an operator");
  // The message shows the text and a caret under the position.
  expect_error<ParseError>([] { build_graph("add(x0, zz)", kShapes); }, "\n  add(x0, zz)\n          ^");
}

TEST(TextForm, ShapeMaps) {
  const ShapeMap m = parse_shape_map("x0=1x3x8x8, k0=4x3x3x3 s=scalar");
  EXPECT_EQ(m.at("x0"), (Shape{1, 3, 8, 8}));
  EXPECT_EQ(m.at("k0"), (Shape{4, 3, 3, 3}));
  EXPECT_EQ(m.at("s"), Shape{});
  expect_error<std::invalid_argument>([] { parse_shape_map("x0=1x3xx8"); }, "bad shape '1x3xx8'");
  expect_error<std::invalid_argument>([] { parse_shape_map("x0"); }, "expected NAME=DIMS");
}

TEST(GraphFile, InputsLetsAndOutputs) {
  const Graph g = parse_graph_file(
      "# residual block\n"
      "input x 1x4x6x6\n"
      "input k0 4x4x3x3\n"
      "input k1 4x4x3x3\n"
      "let y = conv2d[act=relu](x, k0)   # first conv\n"
      "let z = conv2d(y, k1)\n"
      "output relu(add(z, x))\n");
  EXPECT_EQ(g.inputs().size(), 3u);
  EXPECT_EQ(g.num_ops(), 4);
  EXPECT_EQ(to_text(g), "relu(add(conv2d(conv2d[act=relu](x, k0), k1), x))");
  expect_error<ParseError>([] { parse_graph_file("input x 1x2\nlet y = relu(q)\noutput y\n"); },
                           "at line 2, column 14: variable 'q' has no shape");
  expect_error<ParseError>([] { parse_graph_file("input x 1x2\n"); }, "no 'output' line");
  expect_error<ParseError>([] { parse_graph_file("inptu x 1x2\n"); }, "expected 'input', 'let' or 'output'");
  expect_error<ParseError>([] { parse_graph_file("input x 1by2\n"); }, "bad shape");
}

}  // namespace
}  // namespace tgr

#include "ir/canonical.h"

namespace tgr {
namespace {

TEST(Canonical, RenamingCommutativityAndSides) {
  const std::string a = canonical_rule_text("matmul(matmul(x0, w0), w1) => matmul(x0, matmul(w0, w1))");
  EXPECT_EQ(canonical_rule_text("matmul(matmul(x7, w3), w1) => matmul(x7, matmul(w3, w1))"), a);
  EXPECT_EQ(canonical_rule_text("matmul(x0, matmul(w0, w1)) => matmul(matmul(x0, w0), w1)"), a);
  EXPECT_NE(canonical_rule_text("matmul(x0, matmul(w0, w1)) => matmul(matmul(x0, w0), w1)", false), a);
  // Renaming keeps kinds apart and follows first appearance.
  EXPECT_EQ(canonical_rule_text("add(x1, x0) => add(x0, x1)"), "add(x0, x1) => add(x0, x1)");
  // Commutative arguments in any order.
  const std::string d = canonical_rule_text("mul(add(x0, x1), x2) => add(mul(x0, x2), mul(x1, x2))");
  EXPECT_EQ(canonical_rule_text("mul(x2, add(x1, x0)) => add(mul(x2, x1), mul(x0, x2))"), d);
  // Non-commutative operators keep their order: matmul(a, b) != matmul(b, a).
  EXPECT_NE(canonical_rule_text("matmul(x0, w0) => matmul(w0, x0)"), canonical_rule_text("matmul(x0, w0) => matmul(x0, w0)"));
  // Defaults do not matter.
  EXPECT_EQ(canonical_rule_text("conv2d[pad=same, act=none](i0, k0) => conv2d(i0, k0)"), "conv2d(i0, k0) => conv2d(i0, k0)");
  EXPECT_EQ(canonical_text(parse_tuple("add(k3, i9)")), "add(i0, k0)");
}

}  // namespace
}  // namespace tgr

namespace tgr {
namespace {

TEST(Canonical, OutputsInAnyOrder) {
  const std::string a = canonical_rule_text(
      "(split[axis=1, sizes=2x2](matmul(x0, w0)).0, split[axis=1, sizes=2x2](matmul(x0, w0)).1) => "
      "(matmul(x0, split[axis=1, sizes=2x2](w0).0), matmul(x0, split[axis=1, sizes=2x2](w0).1))");
  const std::string b = canonical_rule_text(
      "(split[axis=1, sizes=2x2](matmul(x0, w0)).1, split[axis=1, sizes=2x2](matmul(x0, w0)).0) => "
      "(matmul(x0, split[axis=1, sizes=2x2](w0).1), matmul(x0, split[axis=1, sizes=2x2](w0).0))");
  EXPECT_EQ(a, b);
  // Permuting one side only is another rule.
  const std::string c = canonical_rule_text(
      "(split[axis=1, sizes=2x2](matmul(x0, w0)).1, split[axis=1, sizes=2x2](matmul(x0, w0)).0) => "
      "(matmul(x0, split[axis=1, sizes=2x2](w0).0), matmul(x0, split[axis=1, sizes=2x2](w0).1))");
  EXPECT_NE(a, c);
  EXPECT_EQ(canonical_text(parse_tuple("(relu(x1), tanh(x0))")), canonical_text(parse_tuple("(tanh(x0), relu(x1))")));
}

}  // namespace
}  // namespace tgr

namespace tgr {
namespace {

// The commutative nodes (add, mul) of a tuple, in pre-order.
void commutative_nodes(std::vector<Expr>& tuple, std::vector<Expr*>& out) {
  for (Expr& e : tuple) {
    if (e.kind != Expr::Kind::kCall) continue;
    if (e.name == "add" || e.name == "mul") out.push_back(&e);
    commutative_nodes(e.args, out);
  }
}

// Every argument order of every commutative node of both sides, each side
// first, gives one canonical text and renames the variables alike (the
// search that tries the target's orders only with the source's smallest
// ones must find what trying all combinations finds).
TEST(Canonical, EveryCommutativeOrderOfBothSides) {
  for (const char* text : {"mul(add(x0, x1), x2) => add(mul(x0, x2), mul(x1, x2))",
                           "add(add(x0, x1), add(x2, x0)) => add(x0, add(x0, add(x1, x2)))",
                           "mul(add(relu(x0), x1), add(x1, relu(x0))) => mul(add(x1, relu(x0)), add(relu(x0), x1))",
                           "(add(x0, w0), mul(x1, x0)) => (add(w0, x0), mul(x0, x1))",
                           // Source orders of one text, naming the variables differently: the
                           // target decides between them.
                           "mul(add(x1, x0), x2) => where(x0, x1, x2)"}) {
    const RuleExpr rule = parse_rule_expr(text);
    std::map<std::string, std::string> expected_renaming;
    const std::string expected = canonical_rule_text(rule, true, true, &expected_renaming);
    SCOPED_TRACE(text);
    RuleExpr variant = rule;
    std::vector<Expr*> nodes;
    commutative_nodes(variant.source, nodes);
    commutative_nodes(variant.target, nodes);
    ASSERT_GE(nodes.size(), 2u);
    for (uint64_t mask = 0; mask < (uint64_t{1} << nodes.size()); ++mask) {
      RuleExpr swapped = rule;
      std::vector<Expr*> swapped_nodes;
      commutative_nodes(swapped.source, swapped_nodes);
      commutative_nodes(swapped.target, swapped_nodes);
      for (size_t i = swapped_nodes.size(); i-- > 0;)
        if ((mask >> i & 1) != 0) std::swap(swapped_nodes[i]->args[0], swapped_nodes[i]->args[1]);
      EXPECT_EQ(canonical_rule_text(swapped), expected) << "mask " << mask;
      EXPECT_EQ(canonical_rule_text(RuleExpr{swapped.target, swapped.source}), expected) << "mask " << mask;
    }
    // The renaming is the smallest text's: the rule, renamed by it, is
    // written as that text in one of its orders.
    std::function<void(Expr&)> rename = [&](Expr& e) {
      if (e.kind == Expr::Kind::kVar) e.name = expected_renaming.at(e.name);
      for (Expr& a : e.args) rename(a);
    };
    bool written = false;
    for (uint64_t mask = 0; mask < (uint64_t{1} << nodes.size()); ++mask) {
      RuleExpr renamed = rule;
      for (Expr& e : renamed.source) rename(e);
      for (Expr& e : renamed.target) rename(e);
      std::vector<Expr*> renamed_nodes;
      commutative_nodes(renamed.source, renamed_nodes);
      commutative_nodes(renamed.target, renamed_nodes);
      for (size_t i = renamed_nodes.size(); i-- > 0;)
        if ((mask >> i & 1) != 0) std::swap(renamed_nodes[i]->args[0], renamed_nodes[i]->args[1]);
      for (const std::string& candidate : {to_text(renamed.source) + " => " + to_text(renamed.target),
                                           to_text(renamed.target) + " => " + to_text(renamed.source)})
        written = written || candidate == expected;
    }
    EXPECT_TRUE(written) << expected;
  }
}

}  // namespace
}  // namespace tgr
