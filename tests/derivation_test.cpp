// Tensor-algebra expressions of the operators (ir/expression.h), the
// derivation rules (generator/derivation.h), kernel matching
// (generator/derivation_match.h) and the derived rules' proofs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "generator/derivation.h"
#include "generator/derivation_match.h"
#include "generator/derivation_run.h"
#include "ir/op_def.h"
#include "ir/text.h"
#include "rules_db/rules_db.h"
#include "runtime/interpreter.h"
#include "verifier/prover.h"

namespace tgr {
namespace {

const verifier::Prover& prover() {
  static const verifier::Prover p(axioms::load_axioms(TGR_SPECS_DIR));
  return p;
}

// The expression of the one operator of `program` (output `output`), evaluated
// directly, against the interpreter on the same random inputs.
void expect_expression_agrees(const std::string& program, const std::string& shapes, int output = 0) {
  SCOPED_TRACE(program + " | " + shapes);
  const Graph g = build_graph(program, parse_shape_map(shapes));
  const Node* op = nullptr;
  std::vector<const Node*> inputs;
  for (const Node& n : g.nodes())
    if (n.op) op = &n;
  ASSERT_NE(op, nullptr);
  const expr::ExpressionHooks* hooks = expr::expression_hooks(*op->op);
  ASSERT_NE(hooks, nullptr);
  std::vector<Shape> in_shapes;
  for (ValueRef v : op->inputs) in_shapes.push_back(g.shape(v));
  const std::vector<DType> floats(in_shapes.size(), DType::kFloat);
  const expr::TensorExpr e =
      hooks->expression(OpCall{*op->op, op->params, in_shapes, floats, op->output_shapes}, output);
  const std::vector<Tensor<double>> in = random_inputs<double>(g, 7);
  const std::vector<Tensor<double>> want = evaluate<double>(g, std::span<const Tensor<double>>(in));
  // The graph's inputs are its variables in order of first appearance; the
  // operator reads them in its own order.
  std::vector<const Tensor<double>*> args;
  for (ValueRef v : op->inputs) {
    size_t k = 0;
    for (const Node& n : g.nodes()) {
      if (&n == &g.node(v.node)) break;
      if (n.is_input()) ++k;
    }
    args.push_back(&in[k]);
  }
  const Tensor<double> got = expr::evaluate(e, args);
  ASSERT_EQ(got.shape, want[0].shape) << expr::to_string(e);
  for (size_t i = 0; i < got.data.size(); ++i)
    ASSERT_NEAR(got.data[i], want[0].data[i], 1e-9 * (1 + std::fabs(want[0].data[i]))) << "element " << i;
}

TEST(Expression, AgreesWithTheInterpreter) {
  expect_expression_agrees("conv2d(i0, k0)", "i0=1x4x5x5,k0=3x4x3x3");
  expect_expression_agrees("conv2d[stride=2x2, pad=1x1x1x1](i0, k0)", "i0=2x4x6x6,k0=3x4x3x3");
  expect_expression_agrees("conv2d[pad=same, dilation=2x2, act=relu](i0, k0)", "i0=1x2x7x7,k0=3x2x3x3");
  expect_expression_agrees("conv2d(i0, k0)", "i0=1x4x5x5,k0=6x2x3x3");  // two groups
  expect_expression_agrees("matmul(x0, x1)", "x0=3x4,x1=4x5");
  expect_expression_agrees("batch_matmul(x0, x1)", "x0=2x3x4,x1=2x4x5");
  expect_expression_agrees("transpose[perm=0x2x3x1](i0)", "i0=1x2x3x4");
  expect_expression_agrees("transpose(x0)", "x0=3x4");
  expect_expression_agrees("reshape[shape=4x6](i0)", "i0=2x3x4");
  expect_expression_agrees("concat[axis=1](x0, x1)", "x0=2x3,x1=2x4");
  expect_expression_agrees("split[axis=1, sizes=2x3x1](x0).1", "x0=2x6", 1);
  expect_expression_agrees("add(x0, x1)", "x0=2x3,x1=3");
  expect_expression_agrees("mul(x0, x1)", "x0=2x3,x1=2x3");
  expect_expression_agrees("relu(x0)", "x0=2x3");
  expect_expression_agrees("erf(x0)", "x0=2x3");
  expect_expression_agrees("sigmoid(i0)", "i0=1x2x3x4");
}

// Every rule keeps the program's value: each program derived from a
// convolution (four rules deep), a product under a transpose and a product
// of a transposed tensor,
// evaluated stage by stage, equals the start on random inputs.
TEST(Derivation, EveryDerivedProgramKeepsTheValue) {
  for (const auto& [program, shapes] :
       {std::pair{"conv2d[stride=2x2, pad=1x1x1x1](i0, k0)", "i0=1x4x6x6,k0=3x4x3x3"},
        std::pair{"transpose(matmul(x0, x1))", "x0=2x4,x1=4x3"}, std::pair{"conv2d(i0, k0)", "i0=1x2x3x4,k0=5x2x1x1"},
        std::pair{"mul(transpose[perm=0x2x3x1](i0), i1)", "i0=1x2x3x4,i1=1x3x4x2"}}) {
    SCOPED_TRACE(program);
    const Graph g = build_graph(program, parse_shape_map(shapes));
    const std::vector<Tensor<double>> in = random_inputs<double>(g, 3);
    const Tensor<double> want = evaluate<double>(g, std::span<const Tensor<double>>(in))[0];
    gen::Program start;
    std::map<int32_t, int> tensor;
    for (int32_t i = 0; i < static_cast<int32_t>(g.nodes().size()); ++i) {
      const Node& n = g.node(i);
      if (n.is_input()) {
        tensor[i] = -1 - static_cast<int>(start.inputs.size());
        start.inputs.push_back(n.output_shapes[0]);
        continue;
      }
      gen::Stage st;
      std::vector<Shape> in_shapes;
      for (ValueRef v : n.inputs) {
        in_shapes.push_back(g.shape(v));
        st.reads.push_back(tensor.at(v.node));
      }
      const std::vector<DType> floats(in_shapes.size(), DType::kFloat);
      st.expr =
          expr::expression_hooks(*n.op)->expression(OpCall{*n.op, n.params, in_shapes, floats, n.output_shapes}, 0);
      tensor[i] = static_cast<int>(start.stages.size());
      start.stages.push_back(st);
    }
    start.output = static_cast<int>(start.stages.size()) - 1;
    gen::DerivationStats stats;
    const auto programs = gen::derive(start, {.max_depth = 4, .max_programs = 20000}, stats);
    ASSERT_GE(programs.size(), 4u);  // the product of a transpose: a few (inline, permute-iterators)
    for (const gen::Program& p : programs) {
      const Tensor<double> got = gen::evaluate(p, in);
      ASSERT_EQ(got.shape, want.shape) << gen::program_key(p);
      for (size_t i = 0; i < got.data.size(); ++i)
        ASSERT_NEAR(got.data[i], want.data[i], 1e-9 * (1 + std::fabs(want.data[i]))) << gen::program_key(p);
    }
  }
}

// The first derived rule whose canonical text is that of `rule`.
const gen::DerivedRule* find_rule(const std::vector<gen::DerivedRule>& rules, const std::string& rule) {
  const std::string want = rules_db::rule_record_from_text(rule).canonical;
  for (const gen::DerivedRule& r : rules)
    if (rules_db::rule_record_from_text(r.text).canonical == want) return &r;
  return nullptr;
}

void expect_proved(const std::string& rule, const std::string& shapes) {
  verifier::ProofOptions o;
  o.timeout_ms = 20000;
  const verifier::ProofResult r = prover().prove(build_rule(rule, parse_shape_map(shapes)), o);
  EXPECT_EQ(r.status, verifier::ProofStatus::kProved) << rule << ": " << r.reason;
}

TEST(Derivation, FindsSplitKInTwoGroups) {
  gen::DerivationCounts counts;
  const auto rules = gen::derive_rules({"conv", "conv2d(i0, k0)", "i0=1x4x5x5,k0=3x4x3x3"}, {}, 1, counts);
  const std::string split_k =
      "conv2d(i0, k0) => add(split[axis=1, sizes=3x3](conv2d(i0, concat[axis=0](split[axis=1, sizes=2x2](k0).0, "
      "split[axis=1, sizes=2x2](k0).1))).0, split[axis=1, sizes=3x3](conv2d(i0, concat[axis=0](split[axis=1, "
      "sizes=2x2](k0).0, split[axis=1, sizes=2x2](k0).1))).1)";
  const gen::DerivedRule* r = find_rule(rules, split_k);
  ASSERT_NE(r, nullptr) << rules.size() << " rules derived";
  EXPECT_EQ(r->kind, "split-summation+merge-stages+merge-iterators");
  expect_proved(split_k, "i0=1x4x5x5,k0=3x4x3x3");
}

TEST(Derivation, FindsThePointwiseConvolutionAsAProduct) {
  gen::DerivationCounts counts;
  const auto rules = gen::derive_rules({"1x1", "conv2d(i0, k0)", "i0=1x2x3x4,k0=5x2x1x1"}, {}, 1, counts);
  const std::string as_matmul =
      "conv2d(i0, k0) => reshape[shape=1x5x3x4](matmul(reshape[shape=5x2](k0), reshape[shape=2x12](i0)))";
  const gen::DerivedRule* r = find_rule(rules, as_matmul);
  ASSERT_NE(r, nullptr) << rules.size() << " rules derived";
  // h and w merged into one iterator, the unit ones (n, r, s) dropped, in either order
  EXPECT_TRUE(r->kind == "drop-units+merge-iterators" || r->kind == "merge-iterators+drop-units") << r->kind;
  expect_proved(as_matmul, "i0=1x2x3x4,k0=5x2x1x1");
}

// A producer and its consumer: the transpose inlined into the product, which
// then matches a product of transposed operands.
TEST(Derivation, InlinesALayoutConsumerIntoItsProducer) {
  gen::DerivationCounts counts;
  const auto rules = gen::derive_rules({"pair", "transpose(matmul(x0, x1))", "x0=2x4,x1=4x3"}, {}, 1, counts);
  const std::string swapped = "transpose(matmul(x0, x1)) => matmul(transpose(x1), transpose(x0))";
  const gen::DerivedRule* r = find_rule(rules, swapped);
  ASSERT_NE(r, nullptr) << rules.size() << " rules derived";
  EXPECT_EQ(r->kind, "inline");
  expect_proved(swapped, "x0=2x4,x1=4x3");
}

// The transpose inlined into relu, then relu's iterators permuted so that
// it reads its input in order: relu moved under the transpose.
TEST(Derivation, MovesAnElementwiseOperatorUnderATranspose) {
  gen::DerivationCounts counts;
  const auto rules = gen::derive_rules({"pair", "relu(transpose[perm=0x2x3x1](i0))", "i0=1x2x3x4"}, {}, 1, counts);
  const std::string moved = "relu(transpose[perm=0x2x3x1](i0)) => transpose[perm=0x2x3x1](relu(i0))";
  const gen::DerivedRule* r = find_rule(rules, moved);
  ASSERT_NE(r, nullptr) << rules.size() << " rules derived";
  EXPECT_EQ(r->kind, "inline+permute-iterators");
  expect_proved(moved, "i0=1x2x3x4");
}

// A space's pairs: a consumer over a producer where one of them only moves elements.
TEST(Derivation, ASpaceGivesPairsWithALayoutOperator) {
  const auto sources = gen::space_derivation_sources("layout");
  auto has = [&](const std::string& program) {
    return std::any_of(sources.begin(), sources.end(), [&](const auto& s) { return s.program == program; });
  };
  EXPECT_TRUE(has("relu(t0)"));
  EXPECT_TRUE(has("relu(transpose[perm=0x2x3x1](t0))"));
  EXPECT_TRUE(has("transpose[perm=0x2x1x3](transpose[perm=0x1x3x2](t0))"));
  EXPECT_FALSE(has("relu(relu(t0))"));  // neither moves elements: nothing to inline
}

// A summation split whose second piece starts one channel late (an
// off-by-one range) matches no operators.
TEST(Derivation, AnOffByOneSplitMatchesNothing) {
  const Graph g = build_graph("conv2d(i0, k0)", parse_shape_map("i0=1x4x5x5,k0=3x4x3x3"));
  const Node& conv = g.node(g.outputs()[0].node);
  const std::vector<Shape> shapes{g.shape(conv.inputs[0]), g.shape(conv.inputs[1])};
  const std::vector<DType> floats(2, DType::kFloat);
  const gen::Program start = gen::initial_program(expr::expression_hooks(*conv.op)->expression(
      OpCall{*conv.op, conv.params, shapes, floats, conv.output_shapes}, 0));
  std::vector<gen::Program> split = gen::split_summation(start, 0);
  ASSERT_FALSE(split.empty());
  gen::Program wrong = split[0];  // split-summation(c,2): stages 1 and 2 are the pieces
  ASSERT_EQ(wrong.steps[0], "split-summation(c,2)");
  bool shifted = false;
  for (expr::Term& t : wrong.stages[2].expr.terms)
    for (expr::Access& a : t.factors)
      if (a.index.size() == 4 && a.tensor == 0) {
        a.index[1].offset += 1;  // input channels 3..4 instead of 2..3
        shifted = true;
      }
  ASSERT_TRUE(shifted);
  const auto right_text = gen::match_program(split[0], {"i0", "k0"}, &conv.params);
  const auto wrong_text = gen::match_program(wrong, {"i0", "k0"}, &conv.params);
  ASSERT_TRUE(right_text.has_value());
  // The shifted piece reads one channel past the input, a zero that no
  // layout operator gives: nothing matches, so no rule comes of it.
  EXPECT_EQ(wrong_text, std::nullopt);
  EXPECT_TRUE(gen::match_program(split[0], {"i0", "k0"}, &conv.params).has_value());
}

// A summation range one short: the pieces cover channels 0..2 only. The
// derived program matches operators (slices of the input and kernel) and
// the rule is refuted.
TEST(Derivation, ARangeOneShortIsRefuted) {
  const Graph g = build_graph("conv2d(i0, k0)", parse_shape_map("i0=1x4x5x5,k0=3x4x3x3"));
  const Node& conv = g.node(g.outputs()[0].node);
  const std::vector<Shape> shapes{g.shape(conv.inputs[0]), g.shape(conv.inputs[1])};
  const std::vector<DType> floats(2, DType::kFloat);
  gen::Program start = gen::initial_program(expr::expression_hooks(*conv.op)->expression(
      OpCall{*conv.op, conv.params, shapes, floats, conv.output_shapes}, 0));
  std::vector<gen::Program> split = gen::split_summation(start, 0);
  ASSERT_FALSE(split.empty());
  gen::Program wrong = split[0];
  wrong.stages[2].expr.iterators[4].range = 1;  // the second half sums channel 2 only
  const auto text = gen::match_program(wrong, {"i0", "k0"}, &conv.params);
  ASSERT_TRUE(text.has_value());
  const std::string rule = "conv2d(i0, k0) => " + *text;
  EXPECT_EQ(prover().prove(build_rule(rule, parse_shape_map("i0=1x4x5x5,k0=3x4x3x3")), {}).status,
            verifier::ProofStatus::kRefuted)
      << rule;
}

TEST(Derivation, LayoutMatchingReadsTheInterpreter) {
  // x: 2x3, y = transpose(x): y[i][j] = x[j][i]
  std::vector<int64_t> map;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 2; ++j) map.push_back(j * 3 + i);
  EXPECT_EQ(gen::match_layout(map, {2, 3}, {3, 2}, "x0"), "transpose(x0)");
  map.assign(6, -2);
  map[0] = 0;
  EXPECT_EQ(gen::match_layout(map, {6}, {2, 3}, "x0"), "reshape[shape=2x3](x0)");
  map.assign(6, -1);  // zeros: no layout operator gives them
  EXPECT_EQ(gen::match_layout(map, {6}, {2, 3}, "x0"), std::nullopt);
}

}  // namespace
}  // namespace tgr
