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

// How an elementwise program computes an operator (ew_lowering).
enum class EwForm : uint8_t {
  kNone,       // not in a program: lowered elsewhere (lower.cpp's node_lowering) or not at all
  kUnary,      // one instruction on its input, parameters from its own (unary_parameters)
  kBinary,     // one instruction on two inputs, or on one with the other a scalar constant (folded_operand)
  kLogic,      // comparisons, logic and casts: any element types, computed in the program's type
  kBatchNorm,  // six instructions (NodeEmitter::batch_norm)
};
struct EwLowering {
  EwForm form = EwForm::kNone;
  EwOp op = EwOp::kAdd;  // the instruction of kUnary, kBinary and kLogic (kTrunc: cast)
};

// The elementwise program's registry, one case per kind without a default:
// an operator added to ir/op_list.def is a -Wswitch error here until it
// says how (or that) a program computes it.
EwLowering ew_lowering(OpKind kind) {
  switch (kind) {
    case OpKind::kNeg:
      return {EwForm::kUnary, EwOp::kNeg};
    case OpKind::kRelu:
      return {EwForm::kUnary, EwOp::kRelu};
    case OpKind::kSigmoid:
      return {EwForm::kUnary, EwOp::kSigmoid};
    case OpKind::kTanh:
      return {EwForm::kUnary, EwOp::kTanh};
    case OpKind::kAbs:
      return {EwForm::kUnary, EwOp::kAbs};
    case OpKind::kSqrt:
      return {EwForm::kUnary, EwOp::kSqrt};
    case OpKind::kExp:
      return {EwForm::kUnary, EwOp::kExp};
    case OpKind::kLog:
      return {EwForm::kUnary, EwOp::kLog};
    case OpKind::kErf:
      return {EwForm::kUnary, EwOp::kErf};
    case OpKind::kLeakyRelu:
      return {EwForm::kUnary, EwOp::kLeakyRelu};
    case OpKind::kHardSigmoid:
      return {EwForm::kUnary, EwOp::kHardSigmoid};
    case OpKind::kHardSwish:
      return {EwForm::kUnary, EwOp::kHardSwish};
    case OpKind::kClip:
      return {EwForm::kUnary, EwOp::kClip};
    case OpKind::kSoftplus:
      return {EwForm::kUnary, EwOp::kSoftplus};
    case OpKind::kFloor:
      return {EwForm::kUnary, EwOp::kFloor};
    case OpKind::kCeil:
      return {EwForm::kUnary, EwOp::kCeil};
    case OpKind::kCos:
      return {EwForm::kUnary, EwOp::kCos};
    case OpKind::kSin:
      return {EwForm::kUnary, EwOp::kSin};
    case OpKind::kAdd:
      return {EwForm::kBinary, EwOp::kAdd};
    case OpKind::kSub:
      return {EwForm::kBinary, EwOp::kSub};
    case OpKind::kMul:
      return {EwForm::kBinary, EwOp::kMul};
    case OpKind::kDiv:
      return {EwForm::kBinary, EwOp::kDiv};
    case OpKind::kPow:
      return {EwForm::kBinary, EwOp::kPow};
    case OpKind::kScalarMul:
      return {EwForm::kBinary, EwOp::kMul};
    case OpKind::kEqual:
      return {EwForm::kLogic, EwOp::kEqual};
    case OpKind::kLess:
      return {EwForm::kLogic, EwOp::kLess};
    case OpKind::kGreater:
      return {EwForm::kLogic, EwOp::kGreater};
    case OpKind::kLessEqual:
      return {EwForm::kLogic, EwOp::kLessEqual};
    case OpKind::kGreaterEqual:
      return {EwForm::kLogic, EwOp::kGreaterEqual};
    case OpKind::kIsNan:
      return {EwForm::kLogic, EwOp::kIsNan};
    case OpKind::kLogicalNot:
      return {EwForm::kLogic, EwOp::kNot};
    case OpKind::kWhere:
      return {EwForm::kLogic, EwOp::kWhere};
    case OpKind::kCast:
      return {EwForm::kLogic, EwOp::kTrunc};
    case OpKind::kBatchNorm:
      return {EwForm::kBatchNorm};
    case OpKind::kMatmul:
    case OpKind::kBatchMatmul:
    case OpKind::kConv2d:
    case OpKind::kEnlarge:
    case OpKind::kAvgpool:
    case OpKind::kMaxpool:
    case OpKind::kTranspose:
    case OpKind::kConcat:
    case OpKind::kSplit:
    case OpKind::kSlice:
    case OpKind::kExpand:
    case OpKind::kPad:
    case OpKind::kReshape:
    case OpKind::kEye:
    case OpKind::kConvIdentity:
    case OpKind::kPoolKernel:
    case OpKind::kOnes:
    case OpKind::kSoftmax:
    case OpKind::kLayerNorm:
    case OpKind::kReduceSum:
    case OpKind::kReduceMean:
    case OpKind::kReduceMax:
    case OpKind::kReduceMin:
    case OpKind::kGather:
    case OpKind::kGatherElements:
    case OpKind::kOpaque:
      return {};
  }
  return {};  // not an OpKind value
}

// A per-channel vector [C] of batch_norm viewed against N x C x ...
EwInput channel_input(const void* data, const Shape& out) {
  EwInput e;
  e.data = data;
  e.contiguous = false;
  if (out.size() >= 2) e.strides.s[1] = 1;
  return e;
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
  if (n.inputs.size() != 2 || ew_lowering(n.op->kind).form != EwForm::kBinary) return -1;
  if (scalar_constant(g, n.inputs[1])) return 1;
  if (n.op->kind != OpKind::kPow && scalar_constant(g, n.inputs[0])) return 0;
  return -1;
}

// The instruction of binary `op` (EwForm::kBinary's instruction) with its
// operand `folded` (0 or 1) the constant c.
EwInstr constant_instruction(EwOp op, int folded, float c) {
  EwInstr ins;
  ins.p0 = c;
  if (op == EwOp::kAdd) ins.op = EwOp::kAddConst;
  else if (op == EwOp::kMul) ins.op = EwOp::kMulConst;                              // mul, scalar_mul
  else if (op == EwOp::kSub && folded == 1) ins.op = EwOp::kAddConst, ins.p0 = -c;  // x - c == x + (-c) exactly
  else if (op == EwOp::kSub) ins.op = EwOp::kRSubConst;
  else if (op == EwOp::kDiv && folded == 1) ins.op = EwOp::kDivConst;
  else if (op == EwOp::kDiv) ins.op = EwOp::kRDivConst;
  else ins.op = EwOp::kPowConst;  // pow(x, c)
  return ins;
}

// The parameters of a unary instruction (EwInstr p0, p1) from its node's.
std::pair<float, float> unary_parameters(const Node& n) {
  auto param = [&](const char* name) { return static_cast<float>(n.params.get_float(name)); };
  switch (n.op->kind) {
    case OpKind::kLeakyRelu:
      return {param("alpha"), 0.0f};
    case OpKind::kHardSigmoid:
      return {param("alpha"), param("beta")};
    case OpKind::kClip:
      return {param("min"), param("max")};
    default:
      return {0.0f, 0.0f};  // the others take none
  }
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

bool lowers_in_elementwise_program(OpKind kind) { return ew_lowering(kind).form != EwForm::kNone; }

namespace {

// The operands of a task's program, in register order (registers
// 0..inputs-1): each value read from outside the task once, with whether it
// is a per-channel vector (OpTraits::channel_operands). Scalar float
// constants of a float program are instruction parameters instead.
using Operand = std::pair<ValueRef, bool>;
bool in_task(const Task& task, int32_t node) {
  return std::find(task.nodes.begin(), task.nodes.end(), node) != task.nodes.end();
}
std::vector<Operand> program_operands(const Graph& g, const Task& task, bool ints) {
  std::vector<Operand> operands;
  for (int32_t m : task.nodes) {
    const Node& n = g.node(m);
    const int folded = ints ? -1 : folded_operand(g, n);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (in_task(task, n.inputs[i].node) || folded == static_cast<int>(i)) continue;
      const Operand o{n.inputs[i], n.op->traits.channel_operands && i > 0};
      if (std::find(operands.begin(), operands.end(), o) == operands.end()) operands.push_back(o);
    }
  }
  return operands;
}

// Appends the instructions of a task's nodes to a program whose operands
// are set, one register per instruction after the operands'.
class NodeEmitter {
 public:
  NodeEmitter(const Graph& g, const Task& task, const std::vector<Operand>& operands, bool ints, const Where& where,
              EwProgram& p)
      : g_(g), task_(task), operands_(operands), ints_(ints), where_(where), p_(p), next_(p.inputs) {}

  // The node's instructions; returns the register of its result.
  int node(int32_t m) {
    const Node& n = g_.node(m);
    const EwLowering l = ew_lowering(n.op->kind);
    int r = 0;
    switch (l.form) {
      case EwForm::kLogic:
        r = logic(m, n, l.op);
        break;
      case EwForm::kBatchNorm:
        r = batch_norm(m, n);
        break;
      case EwForm::kBinary:
      case EwForm::kUnary:
        r = arithmetic(m, n, l);
        break;
      case EwForm::kNone:
        fail(where_, "operator '" + n.op->name + "' is not in elementwise programs");
    }
    reg_of_[m] = r;
    return r;
  }

 private:
  // The register of input i of member node m.
  uint8_t reg(int32_t m, size_t i) const {
    const Node& n = g_.node(m);
    const ValueRef in = n.inputs[i];
    if (in_task(task_, in.node)) return static_cast<uint8_t>(reg_of_.at(in.node));
    const Operand o{in, n.op->traits.channel_operands && i > 0};
    return static_cast<uint8_t>(std::find(operands_.begin(), operands_.end(), o) - operands_.begin());
  }
  uint8_t emit(EwOp op, uint8_t a, uint8_t b, float p0 = 0, float p1 = 0, uint8_t c = 0) {
    if (p_.instrs >= kMaxEwInstrs || next_ >= kMaxEwRegs) fail(where_, "elementwise program too long");
    p_.code[p_.instrs++] = EwInstr{op, static_cast<uint8_t>(next_), a, b, c, p0, p1};
    return static_cast<uint8_t>(next_++);
  }
  int logic(int32_t m, const Node& n, EwOp op) {
    const DType from = g_.dtype(n.inputs[0]), to = n.output_dtypes[0];
    if (op == EwOp::kWhere) return emit(EwOp::kWhere, reg(m, 0), reg(m, 1), 0, 0, reg(m, 2));
    if (op != EwOp::kTrunc) return n.inputs.size() == 2 ? emit(op, reg(m, 0), reg(m, 1)) : emit(op, reg(m, 0), 0);
    if (to == DType::kBool && from != DType::kBool) return emit(EwOp::kNonZero, reg(m, 0), 0);
    if (to == DType::kInt64 && is_floating(from)) return emit(EwOp::kTrunc, reg(m, 0), 0);
    return reg(m, 0);  // the same value in the program's type (int64 or bool to float, bool to int64, same type)
  }
  int batch_norm(int32_t m, const Node& n) {
    const float eps = static_cast<float>(n.params.get_float("epsilon"));
    const uint8_t x = reg(m, 0), scale = reg(m, 1), bias = reg(m, 2), mean = reg(m, 3), var = reg(m, 4);
    const uint8_t rs = emit(EwOp::kMul, emit(EwOp::kRsqrt, emit(EwOp::kAddConst, var, var, eps), 0), scale);
    return emit(EwOp::kAdd, emit(EwOp::kMul, emit(EwOp::kSub, x, mean), rs), bias);
  }
  int arithmetic(int32_t m, const Node& n, EwLowering l) {
    // Scalar float constants of a float program are instruction parameters.
    if (const int f = ints_ ? -1 : folded_operand(g_, n); f >= 0) {
      const EwInstr k = constant_instruction(l.op, f, *scalar_constant(g_, n.inputs[f]));
      return emit(k.op, reg(m, 1 - f), 0, k.p0);
    }
    if (n.inputs.size() == 2) return emit(l.op, reg(m, 0), reg(m, 1));
    const auto [p0, p1] = unary_parameters(n);
    return emit(l.op, reg(m, 0), 0, p0, p1);
  }

  const Graph& g_;
  const Task& task_;
  const std::vector<Operand>& operands_;
  const bool ints_;
  const Where& where_;
  EwProgram& p_;
  int next_;
  std::map<int32_t, int> reg_of_;  // member node -> its result register
};

}  // namespace

std::function<void()> lower_elementwise(const LowerCtx& ctx, const Task& task) {
  const Graph& g = ctx.graph;
  const int32_t root = task.root();
  const Shape& out_shape = g.node(root).output_shapes[0];
  const bool ints =
      std::none_of(task.nodes.begin(), task.nodes.end(), [&](int32_t m) { return is_float_node(g, g.node(m)); });
  const Where where = ctx.where(root);
  EwProgram p;
  p.out = dims_of(out_shape);
  const std::vector<Operand> operands = program_operands(g, task, ints);
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
  NodeEmitter emitter(g, task, operands, ints, where, p);
  for (int32_t m : task.nodes) {
    const int r = emitter.node(m);
    if (m == root) p.result = r;
  }
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
