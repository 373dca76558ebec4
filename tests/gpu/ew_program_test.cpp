// Fused elementwise programs (runtime/cuda/kernels.h EwProgram): how the
// lowering simplifies them (host only: these run without a GPU), and
// programs with scalar constants and GELU's erf chain on the GPU against the
// CPU reference interpreter; producers of a smaller shape fused into their
// consumer.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "ir/text.h"
#include "runtime/cuda/lower.h"
#include "runtime/execution_plan.h"
#include "tests/gpu/gpu_test_util.h"

namespace tgr {
namespace {

using gpu::EwInstr;
using gpu::EwOp;
using gpu::EwProgram;

EwInstr instr(EwOp op, int dst, int a, int b = 0, float p0 = 0) {
  return EwInstr{op, static_cast<uint8_t>(dst), static_cast<uint8_t>(a), static_cast<uint8_t>(b), 0, p0, 0};
}

EwProgram program(int inputs, std::vector<EwInstr> code, int result) {
  EwProgram p;
  p.inputs = inputs;
  static float data[8];
  for (int k = 0; k < inputs; ++k) {
    p.in[k].data = &data[k];
    p.in[k].contiguous = true;
  }
  p.instrs = static_cast<int>(code.size());
  for (size_t c = 0; c < code.size(); ++c) p.code[c] = code[c];
  p.result = result;
  return p;
}

const float kSqrt2 = static_cast<float>(std::sqrt(2.0));
const float kHalfSqrt2 = static_cast<float>(std::sqrt(0.5));

// u = erf argument from x (register 0), then erf(u) + 1 in register 3.
std::vector<EwInstr> erf_plus_one(bool divide) {
  return {divide ? instr(EwOp::kDivConst, 1, 0, 0, kSqrt2) : instr(EwOp::kMulConst, 1, 0, 0, kHalfSqrt2),
          instr(EwOp::kErf, 2, 1), instr(EwOp::kAddConst, 3, 2, 0, 1.f)};
}

void expect_one_gelu(const EwProgram& p) {
  EXPECT_EQ(p.inputs, 1);
  ASSERT_EQ(p.instrs, 1);
  EXPECT_EQ(p.code[0].op, EwOp::kGelu);
  EXPECT_EQ(p.code[0].a, 0);
  EXPECT_EQ(p.code[0].dst, 1);
  EXPECT_EQ(p.result, 1);
  EXPECT_EQ(p.registers, 2);
}

TEST(EwProgram, GeluErfChainInEveryExportedOrderBecomesOneInstruction) {
  // The two instructions after erf(u) + 1 (register 3), x in register 0.
  const std::vector<std::pair<EwInstr, EwInstr>> tails = {
      {instr(EwOp::kMul, 4, 0, 3), instr(EwOp::kMulConst, 5, 4, 0, 0.5f)},  // (x * t) * 0.5
      {instr(EwOp::kMul, 4, 3, 0), instr(EwOp::kDivConst, 5, 4, 0, 2.f)},   // (t * x) / 2
      {instr(EwOp::kMulConst, 4, 0, 0, 0.5f), instr(EwOp::kMul, 5, 4, 3)},  // (x * 0.5) * t
      {instr(EwOp::kDivConst, 4, 0, 0, 2.f), instr(EwOp::kMul, 5, 3, 4)},   // t * (x / 2)
  };
  for (bool divide : {true, false})
    for (const auto& [product, last] : tails) {
      auto code = erf_plus_one(divide);
      code.push_back(product);
      code.push_back(last);
      EwProgram p = program(1, code, 5);
      gpu::simplify_program(p);
      expect_one_gelu(p);
    }
}

TEST(EwProgram, ChainsThatAreNotGeluStay) {
  // erf(x / sqrt 2) + 2: not GELU's constant
  auto code = erf_plus_one(true);
  code[2].p0 = 2.f;
  code.push_back(instr(EwOp::kMul, 4, 0, 3));
  code.push_back(instr(EwOp::kMulConst, 5, 4, 0, 0.5f));
  EwProgram p = program(1, code, 5);
  gpu::simplify_program(p);
  EXPECT_EQ(p.instrs, 5);
  for (int c = 0; c < p.instrs; ++c) EXPECT_NE(p.code[c].op, EwOp::kGelu);

  // x * (erf(y / sqrt 2) + 1) * 0.5 with x and y different inputs
  code = {instr(EwOp::kDivConst, 2, 1, 0, kSqrt2), instr(EwOp::kErf, 3, 2), instr(EwOp::kAddConst, 4, 3, 0, 1.f),
          instr(EwOp::kMul, 5, 0, 4), instr(EwOp::kMulConst, 6, 5, 0, 0.5f)};
  p = program(2, code, 6);
  gpu::simplify_program(p);
  EXPECT_EQ(p.instrs, 5);
  EXPECT_EQ(p.inputs, 2);
}

TEST(EwProgram, GeluKeepsTheIntermediatesOthersRead) {
  // gelu(x) + erf(x / sqrt 2): the erf and its argument stay, the rest goes
  auto code = erf_plus_one(true);
  code.push_back(instr(EwOp::kMul, 4, 0, 3));
  code.push_back(instr(EwOp::kMulConst, 5, 4, 0, 0.5f));
  code.push_back(instr(EwOp::kAdd, 6, 5, 2));
  EwProgram p = program(1, code, 6);
  gpu::simplify_program(p);
  ASSERT_EQ(p.instrs, 4);
  EXPECT_EQ(p.code[0].op, EwOp::kDivConst);
  EXPECT_EQ(p.code[1].op, EwOp::kErf);
  EXPECT_EQ(p.code[2].op, EwOp::kGelu);
  EXPECT_EQ(p.code[3].op, EwOp::kAdd);
  EXPECT_EQ(p.code[3].a, p.code[2].dst);
  EXPECT_EQ(p.code[3].b, p.code[1].dst);
  EXPECT_EQ(p.result, p.code[3].dst);
  EXPECT_EQ(p.registers, 5);
}

TEST(EwProgram, UnreadInputsAndInstructionsAreDroppedAndRegistersRenumbered) {
  // inputs a, b, c; result relu(c) + c; a and b, and exp(a), unread
  EwProgram p = program(3, {instr(EwOp::kExp, 3, 0), instr(EwOp::kRelu, 4, 2), instr(EwOp::kAdd, 5, 4, 2)}, 5);
  const void* c_data = p.in[2].data;
  gpu::simplify_program(p);
  ASSERT_EQ(p.inputs, 1);
  EXPECT_EQ(p.in[0].data, c_data);
  ASSERT_EQ(p.instrs, 2);
  EXPECT_EQ(p.code[0].op, EwOp::kRelu);
  EXPECT_EQ(p.code[0].a, 0);
  EXPECT_EQ(p.code[0].dst, 1);
  EXPECT_EQ(p.code[1].a, 1);
  EXPECT_EQ(p.code[1].b, 0);
  EXPECT_EQ(p.result, 2);
  EXPECT_EQ(p.registers, 3);
  // where reads three registers
  p = program(3, {instr(EwOp::kWhere, 3, 0, 1)}, 3);
  p.code[0].c = 2;
  gpu::simplify_program(p);
  EXPECT_EQ(p.inputs, 3);
  EXPECT_EQ(p.code[0].c, 2);
}

// --- on the GPU --------------------------------------------------------------

struct ConstantCase {
  std::string name;
  std::function<ValueRef(Graph&, ValueRef x, ValueRef y)> build;  // x: 7x130, y: 130
  double tolerance = 1e-5;
};

std::ostream& operator<<(std::ostream& os, const ConstantCase& c) { return os << c.name; }

ValueRef scalar(Graph& g, float v, Shape shape = {}) {
  return g.add_constant(ConstantValue(Tensor<float>(shape, std::vector<float>{v})));
}

ValueRef erf_plus_one(Graph& g, ValueRef x, bool divide) {
  const ValueRef u = divide ? g.apply("div", {x, scalar(g, kSqrt2)}) : g.apply("mul", {scalar(g, kHalfSqrt2), x});
  return g.apply("add", {scalar(g, 1.f), g.apply("erf", {u})});
}

const ConstantCase kConstantCases[] = {
    {"gelu_x_t_half",
     [](Graph& g, ValueRef x, ValueRef) {
       return g.apply("mul", {g.apply("mul", {x, erf_plus_one(g, x, true)}), scalar(g, 0.5f)});
     }},
    {"gelu_half_x_t",
     [](Graph& g, ValueRef x, ValueRef) {
       return g.apply("mul", {g.apply("mul", {x, scalar(g, 0.5f)}), erf_plus_one(g, x, false)});
     }},
    {"gelu_t_x_over_2",
     [](Graph& g, ValueRef x, ValueRef) {
       return g.apply("div", {g.apply("mul", {erf_plus_one(g, x, true), x}), scalar(g, 2.f, {1, 1})});
     }},
    {"gelu_plus_its_erf",
     [](Graph& g, ValueRef x, ValueRef) {  // an intermediate read twice
       const ValueRef t = erf_plus_one(g, x, true);
       return g.apply("add", {g.apply("mul", {g.apply("mul", {x, t}), scalar(g, 0.5f)}), t});
     }},
    {"constant_minus_x_over_y",
     [](Graph& g, ValueRef x, ValueRef y) {
       return g.apply("div", {g.apply("sub", {scalar(g, 3.f), x}), g.apply("add", {y, scalar(g, 4.f)})});
     }},
    {"x_minus_constant_then_constant_over",
     [](Graph& g, ValueRef x, ValueRef) {
       return g.apply("div", {scalar(g, 2.f), g.apply("sub", {g.apply("abs", {x}), scalar(g, -1.5f)})});
     }},
    {"pow_constant",
     [](Graph& g, ValueRef x, ValueRef y) {
       return g.apply("add", {g.apply("pow", {g.apply("abs", {x}), scalar(g, 1.5f)}), y});
     }},
    {"long_program",
     [](Graph& g, ValueRef x, ValueRef y) {  // more registers than kEwFewRegs
       ValueRef v = x;
       for (int k = 0; k < 6; ++k) v = g.apply("add", {g.apply("mul", {v, y}), g.apply("tanh", {v})});
       return v;
     }},
    {"both_operands_constant",
     [](Graph& g, ValueRef x, ValueRef) {
       return g.apply("add", {x, g.apply("mul", {scalar(g, 2.f), scalar(g, 3.f)})});
     }},
};

class GpuConstantPrograms : public ::testing::TestWithParam<ConstantCase> {};

TEST_P(GpuConstantPrograms, MatchTheCpuReference) {
  SKIP_WITHOUT_GPU();
  const ConstantCase& c = GetParam();
  Graph g;
  const ValueRef x = g.add_input("x", {7, 130}), y = g.add_input("y", {130});
  g.add_output(c.build(g, x, y));
  const std::vector<ConstantValue> inputs = test::random_values(g, 3, 3);
  const std::vector<ConstantValue> expected = evaluate_values<float>(g, inputs);
  test::expect_fused_and_unfused_match(g, inputs, expected, c.tolerance, c.name);
}

INSTANTIATE_TEST_SUITE_P(Programs, GpuConstantPrograms, ::testing::ValuesIn(kConstantCases),
                         [](const auto& test_info) { return test_info.param.name; });

// Producers of a smaller shape computed inside their consumer's program
// (execution_plan.cpp, fusable_shape): squeeze-and-excitation gates and a
// chain over a per-row vector, against the CPU reference, fused and not.
TEST(GpuBroadcastProducers, MatchTheCpuReference) {
  SKIP_WITHOUT_GPU();
  const struct {
    const char* text;
    const char* shapes;
  } cases[] = {
      {"mul(relu(x), sigmoid(add(s, t)))", "x=1x16x9x9,s=1x16x1x1,t=1x16x1x1"},
      {"mul(sigmoid(s), x)", "x=2x16x7x5,s=2x16x1x1"},
      {"add(x, tanh(mul(r, r)))", "x=1x4x9x33,r=1x1x9x1"},
  };
  for (const auto& c : cases) {
    const Graph g = build_graph(c.text, parse_shape_map(c.shapes));
    ASSERT_EQ(make_execution_plan(g).tasks.size(), 1u) << c.text;
    const std::vector<ConstantValue> inputs = test::random_values(g, 5, 3);
    const std::vector<ConstantValue> expected = evaluate_values<float>(g, inputs);
    test::expect_fused_and_unfused_match(g, inputs, expected, 1e-5, c.text);
  }
}

}  // namespace
}  // namespace tgr
