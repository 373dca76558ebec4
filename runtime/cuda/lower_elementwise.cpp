// Elementwise tasks: one program (kernels.h, EwProgram) per chain of fused
// elementwise nodes, comparisons, is_nan, logical_not, cast and where among
// them (BERT's where(is_nan(p), 0, p) is one program). A program that touches
// a float value computes in float (bools are 0 and 1; int64 and bool inputs
// are converted on load, an int64 or bool result is stored as int64); one
// that touches none runs the same program on int64. Float values stored in
// a half type (runtime/precision.h) are widened on load and rounded on store.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <vector>

#include "runtime/cuda/lower.h"

namespace tgr::gpu {
namespace {

const std::map<std::string, EwOp, std::less<>>& unary_ops() {
  static const std::map<std::string, EwOp, std::less<>> ops{{"neg", EwOp::kNeg},
                                                            {"relu", EwOp::kRelu},
                                                            {"sigmoid", EwOp::kSigmoid},
                                                            {"tanh", EwOp::kTanh},
                                                            {"abs", EwOp::kAbs},
                                                            {"sqrt", EwOp::kSqrt},
                                                            {"exp", EwOp::kExp},
                                                            {"log", EwOp::kLog},
                                                            {"erf", EwOp::kErf},
                                                            {"leaky_relu", EwOp::kLeakyRelu},
                                                            {"hard_sigmoid", EwOp::kHardSigmoid},
                                                            {"hard_swish", EwOp::kHardSwish},
                                                            {"clip", EwOp::kClip},
                                                            {"softplus", EwOp::kSoftplus},
                                                            {"floor", EwOp::kFloor},
                                                            {"ceil", EwOp::kCeil},
                                                            {"cos", EwOp::kCos},
                                                            {"sin", EwOp::kSin}};
  return ops;
}
EwOp unary_op(const std::string& op) { return unary_ops().at(op); }

const std::map<std::string, EwOp, std::less<>>& binary_ops() {
  static const std::map<std::string, EwOp, std::less<>> ops{{"add", EwOp::kAdd}, {"sub", EwOp::kSub},
                                                            {"mul", EwOp::kMul}, {"div", EwOp::kDiv},
                                                            {"pow", EwOp::kPow}, {"scalar_mul", EwOp::kMul}};
  return ops;
}
EwOp binary_op(const std::string& op) { return binary_ops().at(op); }

// A per-channel vector [C] of batch_norm viewed against N x C x ...
EwInput channel_input(const void* data, const Shape& out) {
  EwInput e;
  e.data = data;
  e.contiguous = false;
  if (out.size() >= 2) e.strides.s[1] = 1;
  return e;
}

// Comparisons, logic and casts (any element types: they compute in the program's type).
const std::map<std::string, EwOp, std::less<>>& logic_ops() {
  static const std::map<std::string, EwOp, std::less<>> ops{{"equal", EwOp::kEqual},
                                                            {"less", EwOp::kLess},
                                                            {"greater", EwOp::kGreater},
                                                            {"less_equal", EwOp::kLessEqual},
                                                            {"greater_equal", EwOp::kGreaterEqual},
                                                            {"is_nan", EwOp::kIsNan},
                                                            {"logical_not", EwOp::kNot},
                                                            {"where", EwOp::kWhere},
                                                            {"cast", EwOp::kTrunc}};
  return ops;
}

// The node touches a float value: its program computes in float.
bool is_float_node(const Graph& g, const Node& n) {
  if (is_floating(n.output_dtypes[0])) return true;
  return std::any_of(n.inputs.begin(), n.inputs.end(), [&](ValueRef v) { return is_floating(g.dtype(v)); });
}

// The value of a float constant of one element (any rank: it broadcasts).
std::optional<float> scalar_constant(const Graph& g, ValueRef v) {
  const Node& n = g.node(v.node);
  if (!n.is_constant() || !n.constant->is_float() || n.constant->real.size() != 1) return std::nullopt;
  return n.constant->real.data[0];
}

// Which operand of a binary node becomes an instruction parameter instead of
// an input: the second if it is a scalar constant, else the first if that
// is one (sub, div: the reversed instructions); -1 for none. Pow takes only
// its exponent.
int folded_operand(const Graph& g, const Node& n) {
  if (n.inputs.size() != 2 || binary_ops().count(n.op->name) == 0) return -1;
  if (scalar_constant(g, n.inputs[1])) return 1;
  if (n.op->name != "pow" && scalar_constant(g, n.inputs[0])) return 0;
  return -1;
}

// The instruction of binary `op` with its operand `folded` (0 or 1) the constant c.
EwInstr constant_instruction(const std::string& op, int folded, float c) {
  EwInstr ins;
  ins.p0 = c;
  if (op == "add") ins.op = EwOp::kAddConst;
  else if (op == "mul" || op == "scalar_mul") ins.op = EwOp::kMulConst;
  else if (op == "sub" && folded == 1) ins.op = EwOp::kAddConst, ins.p0 = -c;  // x - c == x + (-c) exactly
  else if (op == "sub") ins.op = EwOp::kRSubConst;
  else if (op == "div" && folded == 1) ins.op = EwOp::kDivConst;
  else if (op == "div") ins.op = EwOp::kRDivConst;
  else ins.op = EwOp::kPowConst;  // pow(x, c)
  return ins;
}

bool near(float v, double want) { return std::abs(v - want) <= 1e-6 * std::abs(want); }

// GELU's erf chain as one instruction. Exporters and our Gelu import write
// x/2 (1 + erf(x / sqrt 2)) in several orders; after constant folding they
// are (u = x / sqrt2 or x * (1 / sqrt2); t = erf(u) + 1):
//   (x * t) * 0.5, (x * t) / 2, (x * 0.5) * t, (x / 2) * t  (products in either order).
// The instruction replaces the last one; the others die if nothing else reads them.
void fuse_gelu(EwProgram& p) {
  std::vector<int> def(kMaxEwRegs, -1);  // register -> the instruction writing it
  for (int c = 0; c < p.instrs; ++c) def[p.code[c].dst] = c;
  auto instr = [&](int reg) -> const EwInstr* { return def[reg] < 0 ? nullptr : &p.code[def[reg]]; };
  // t == erf(x / sqrt 2) + 1: returns x, or -1.
  auto one_plus_erf = [&](int t) -> int {
    const EwInstr* add = instr(t);
    if (!add || add->op != EwOp::kAddConst || !near(add->p0, 1.0)) return -1;
    const EwInstr* erf = instr(add->a);
    if (!erf || erf->op != EwOp::kErf) return -1;
    const EwInstr* u = instr(erf->a);
    if (!u) return -1;
    if ((u->op == EwOp::kDivConst && near(u->p0, std::sqrt(2.0))) ||
        (u->op == EwOp::kMulConst && near(u->p0, std::sqrt(0.5))))
      return u->a;
    return -1;
  };
  auto is_half = [](const EwInstr& i) {
    return (i.op == EwOp::kMulConst && near(i.p0, 0.5)) || (i.op == EwOp::kDivConst && near(i.p0, 2.0));
  };
  for (int c = 0; c < p.instrs; ++c) {
    EwInstr& last = p.code[c];
    int x = -1;
    if (is_half(last)) {  // (x * t) * 0.5
      const EwInstr* mul = instr(last.a);
      if (mul && mul->op == EwOp::kMul) {
        if (one_plus_erf(mul->b) == mul->a) x = mul->a;
        else if (one_plus_erf(mul->a) == mul->b) x = mul->b;
      }
    } else if (last.op == EwOp::kMul) {  // (x * 0.5) * t
      for (auto [h, t] : {std::pair{last.a, last.b}, std::pair{last.b, last.a}}) {
        const EwInstr* half = instr(h);
        if (half && is_half(*half) && one_plus_erf(t) == half->a) x = half->a;
      }
    }
    if (x >= 0) last = EwInstr{EwOp::kGelu, last.dst, static_cast<uint8_t>(x), 0, 0, 0, 0};
  }
}

// Whether instruction `ins` reads operand b (c: kWhere only). Every EwOp is
// listed, without a default: a new one is a build error (-Wswitch) here
// rather than an operand the dead-code pass drops.
bool reads_b(const EwInstr& ins) {
  switch (ins.op) {
    case EwOp::kAdd:
    case EwOp::kSub:
    case EwOp::kMul:
    case EwOp::kDiv:
    case EwOp::kPow:
    case EwOp::kMax:
    case EwOp::kEqual:
    case EwOp::kLess:
    case EwOp::kGreater:
    case EwOp::kLessEqual:
    case EwOp::kGreaterEqual:
    case EwOp::kWhere:
      return true;
    case EwOp::kNeg:
    case EwOp::kRelu:
    case EwOp::kSigmoid:
    case EwOp::kTanh:
    case EwOp::kAbs:
    case EwOp::kSqrt:
    case EwOp::kExp:
    case EwOp::kLog:
    case EwOp::kErf:
    case EwOp::kRsqrt:
    case EwOp::kLeakyRelu:
    case EwOp::kHardSigmoid:
    case EwOp::kHardSwish:
    case EwOp::kClip:
    case EwOp::kSoftplus:
    case EwOp::kFloor:
    case EwOp::kCeil:
    case EwOp::kCos:
    case EwOp::kSin:
    case EwOp::kAddConst:
    case EwOp::kMulConst:
    case EwOp::kDivConst:
    case EwOp::kRSubConst:
    case EwOp::kRDivConst:
    case EwOp::kPowConst:
    case EwOp::kGelu:
    case EwOp::kIsNan:
    case EwOp::kNot:
    case EwOp::kNonZero:
    case EwOp::kTrunc:
      return false;
  }
  return false;  // not an EwOp value
}

}  // namespace

void simplify_program(EwProgram& p) {
  fuse_gelu(p);
  // Live registers, from the result back; then inputs and instructions renumbered densely.
  std::vector<bool> live(kMaxEwRegs, false);
  live[p.result] = true;
  for (int c = p.instrs - 1; c >= 0; --c) {
    const EwInstr& ins = p.code[c];
    if (!live[ins.dst]) continue;
    live[ins.a] = true;
    if (reads_b(ins)) live[ins.b] = true;
    if (ins.op == EwOp::kWhere) live[ins.c] = true;
  }
  std::vector<uint8_t> renamed(kMaxEwRegs, 0);
  EwProgram q = p;
  q.inputs = 0;
  for (int k = 0; k < p.inputs; ++k)
    if (live[k]) {
      renamed[k] = static_cast<uint8_t>(q.inputs);
      q.in[q.inputs++] = p.in[k];
    }
  int next = q.inputs;
  q.instrs = 0;
  for (int c = 0; c < p.instrs; ++c) {
    EwInstr ins = p.code[c];
    if (!live[ins.dst]) continue;
    ins.a = renamed[ins.a];
    ins.b = reads_b(ins) ? renamed[ins.b] : 0;
    ins.c = ins.op == EwOp::kWhere ? renamed[ins.c] : 0;
    renamed[ins.dst] = static_cast<uint8_t>(next);
    ins.dst = static_cast<uint8_t>(next++);
    q.code[q.instrs++] = ins;
  }
  q.result = renamed[p.result];
  q.registers = next;
  p = q;
}

bool lowers_in_elementwise_program(std::string_view op) {
  // batch_norm expands into its own six instructions below.
  return unary_ops().count(op) > 0 || binary_ops().count(op) > 0 || logic_ops().count(op) > 0 ||
         op == known_ops::batch_norm().name;
}

std::function<void()> lower_elementwise(const LowerCtx& ctx, const Task& task) {
  const Graph& g = ctx.graph;
  const int32_t root = task.root();
  const Shape& out_shape = g.node(root).output_shapes[0];
  const bool ints =
      std::none_of(task.nodes.begin(), task.nodes.end(), [&](int32_t m) { return is_float_node(g, g.node(m)); });
  const Where where = ctx.where(root);
  EwProgram p;
  p.out = dims_of(out_shape);
  // Operands first (registers 0..inputs-1), then one register per instruction.
  std::vector<std::pair<ValueRef, bool>> operands;
  auto is_member = [&](int32_t n) { return std::find(task.nodes.begin(), task.nodes.end(), n) != task.nodes.end(); };
  // Scalar float constants of a float program are instruction parameters.
  auto folded = [&](const Node& n) { return ints ? -1 : folded_operand(g, n); };
  for (int32_t m : task.nodes) {
    const Node& n = g.node(m);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (is_member(n.inputs[i].node) || folded(n) == static_cast<int>(i)) continue;
      const std::pair<ValueRef, bool> o{n.inputs[i], n.op->traits.channel_operands && i > 0};
      if (std::find(operands.begin(), operands.end(), o) == operands.end()) operands.push_back(o);
    }
  }
  if (operands.size() > static_cast<size_t>(kMaxEwInputs)) fail(where, "too many inputs for one elementwise kernel");
  p.inputs = static_cast<int>(operands.size());
  for (size_t k = 0; k < operands.size(); ++k) {
    p.in[k] = operands[k].second ? channel_input(ctx.ptr(operands[k].first), out_shape)
                                 : view_input(ctx, operands[k].first, out_shape);
    p.in[k].int64 = !ints && !is_floating(ctx.dtype(operands[k].first));
    p.in[k].type = ctx.float_type(operands[k].first);
  }
  p.int64_out = !ints && !is_floating(g.node(root).output_dtypes[0]);
  p.out_type = ctx.float_type({root, 0});
  std::map<int32_t, int> reg_of;  // member node -> its result register
  int next = p.inputs;
  auto reg = [&](int32_t m, size_t i) -> uint8_t {
    const Node& n = g.node(m);
    const ValueRef in = n.inputs[i];
    if (is_member(in.node)) return static_cast<uint8_t>(reg_of.at(in.node));
    const std::pair<ValueRef, bool> o{in, n.op->traits.channel_operands && i > 0};
    return static_cast<uint8_t>(std::find(operands.begin(), operands.end(), o) - operands.begin());
  };
  auto emit = [&](EwOp op, uint8_t a, uint8_t b, float p0 = 0, float p1 = 0, uint8_t c = 0) -> uint8_t {
    if (p.instrs >= kMaxEwInstrs || next >= kMaxEwRegs) fail(where, "elementwise program too long");
    p.code[p.instrs++] = EwInstr{op, static_cast<uint8_t>(next), a, b, c, p0, p1};
    return static_cast<uint8_t>(next++);
  };
  for (int32_t m : task.nodes) {
    const Node& n = g.node(m);
    const std::string& op = n.op->name;
    int r;
    if (auto logic = logic_ops().find(op); logic != logic_ops().end()) {
      const DType from = g.dtype(n.inputs[0]), to = n.output_dtypes[0];
      if (logic->second == EwOp::kWhere) {
        r = emit(EwOp::kWhere, reg(m, 0), reg(m, 1), 0, 0, reg(m, 2));
      } else if (logic->second != EwOp::kTrunc) {
        r = n.inputs.size() == 2 ? emit(logic->second, reg(m, 0), reg(m, 1)) : emit(logic->second, reg(m, 0), 0);
      } else if (to == DType::kBool && from != DType::kBool) {
        r = emit(EwOp::kNonZero, reg(m, 0), 0);
      } else if (to == DType::kInt64 && is_floating(from)) {
        r = emit(EwOp::kTrunc, reg(m, 0), 0);
      } else {
        r = reg(m, 0);  // the same value in the program's type (int64 or bool to float, bool to int64, same type)
      }
    } else if (n.op == &known_ops::batch_norm()) {
      const float eps = static_cast<float>(n.params.get_float("epsilon"));
      const uint8_t x = reg(m, 0), scale = reg(m, 1), bias = reg(m, 2), mean = reg(m, 3), var = reg(m, 4);
      const uint8_t rs = emit(EwOp::kMul, emit(EwOp::kRsqrt, emit(EwOp::kAddConst, var, var, eps), 0), scale);
      r = emit(EwOp::kAdd, emit(EwOp::kMul, emit(EwOp::kSub, x, mean), rs), bias);
    } else if (const int f = folded(n); f >= 0) {
      const EwInstr k = constant_instruction(op, f, *scalar_constant(g, n.inputs[f]));
      r = emit(k.op, reg(m, 1 - f), 0, k.p0);
    } else if (n.inputs.size() == 2) {
      r = emit(binary_op(op), reg(m, 0), reg(m, 1));
    } else {
      float p0 = 0, p1 = 0;
      if (op == "leaky_relu") p0 = static_cast<float>(n.params.get_float("alpha"));
      if (op == "hard_sigmoid") {
        p0 = static_cast<float>(n.params.get_float("alpha"));
        p1 = static_cast<float>(n.params.get_float("beta"));
      }
      if (op == "clip") {
        p0 = static_cast<float>(n.params.get_float("min"));
        p1 = static_cast<float>(n.params.get_float("max"));
      }
      r = emit(unary_op(op), reg(m, 0), 0, p0, p1);
    }
    reg_of[m] = r;
  }
  p.result = reg_of.at(root);
  simplify_program(p);
  void* out = ctx.ptr({root, 0});
  GpuContext* gpu = &ctx.gpu;
  const EwLauncher launcher = ctx.elementwise_launcher(p, ints);
  return [launcher, out, gpu, where, ints] {
    launcher.launch(out, gpu->stream);
    check_launch(ints ? "elementwise (int64)" : "elementwise", where);
  };
}

}  // namespace tgr::gpu
