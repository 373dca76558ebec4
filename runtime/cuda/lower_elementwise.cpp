// Elementwise tasks: one program (kernels.h, EwProgram) per chain of fused
// elementwise nodes; int64 arithmetic runs the same program on integers.
#include <algorithm>
#include <map>

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
                                                            {"ceil", EwOp::kCeil}};
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

}  // namespace

bool lowers_in_elementwise_program(std::string_view op) {
  // batch_norm expands into its own six instructions below.
  return unary_ops().count(op) > 0 || binary_ops().count(op) > 0 || op == known_ops::batch_norm().name;
}

std::function<void()> lower_elementwise(const LowerCtx& ctx, const Task& task) {
  const Graph& g = ctx.graph;
  const int32_t root = task.root();
  const Shape& out_shape = g.node(root).output_shapes[0];
  const bool ints = g.node(root).output_dtypes[0] != DType::kFloat;
  const Where where = ctx.where(root);
  EwProgram p;
  p.out = dims_of(out_shape);
  // Operands first (registers 0..inputs-1), then one register per instruction.
  std::vector<std::pair<ValueRef, bool>> operands;
  auto is_member = [&](int32_t n) { return std::find(task.nodes.begin(), task.nodes.end(), n) != task.nodes.end(); };
  for (int32_t m : task.nodes) {
    const Node& n = g.node(m);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (is_member(n.inputs[i].node)) continue;
      const std::pair<ValueRef, bool> o{n.inputs[i], n.op->traits.channel_operands && i > 0};
      if (std::find(operands.begin(), operands.end(), o) == operands.end()) operands.push_back(o);
    }
  }
  if (operands.size() > static_cast<size_t>(kMaxEwInputs)) fail(where, "too many inputs for one elementwise kernel");
  p.inputs = static_cast<int>(operands.size());
  for (size_t k = 0; k < operands.size(); ++k) {
    p.in[k] = operands[k].second ? channel_input(ctx.ptr(operands[k].first), out_shape)
                                 : view_input(ctx, operands[k].first, out_shape);
  }
  std::map<int32_t, int> reg_of;  // member node -> its result register
  int next = p.inputs;
  auto reg = [&](int32_t m, size_t i) -> uint8_t {
    const Node& n = g.node(m);
    const ValueRef in = n.inputs[i];
    if (is_member(in.node)) return static_cast<uint8_t>(reg_of.at(in.node));
    const std::pair<ValueRef, bool> o{in, n.op->traits.channel_operands && i > 0};
    return static_cast<uint8_t>(std::find(operands.begin(), operands.end(), o) - operands.begin());
  };
  auto emit = [&](EwOp op, uint8_t a, uint8_t b, float p0 = 0, float p1 = 0) -> uint8_t {
    if (p.instrs >= kMaxEwInstrs || next >= kMaxEwRegs) fail(where, "elementwise program too long");
    p.code[p.instrs++] = EwInstr{op, static_cast<uint8_t>(next), a, b, p0, p1};
    return static_cast<uint8_t>(next++);
  };
  for (int32_t m : task.nodes) {
    const Node& n = g.node(m);
    const std::string& op = n.op->name;
    int r;
    if (n.op == &known_ops::batch_norm()) {
      const float eps = static_cast<float>(n.params.get_float("epsilon"));
      const uint8_t x = reg(m, 0), scale = reg(m, 1), bias = reg(m, 2), mean = reg(m, 3), var = reg(m, 4);
      const uint8_t rs = emit(EwOp::kMul, emit(EwOp::kRsqrt, emit(EwOp::kAddConst, var, var, eps), 0), scale);
      r = emit(EwOp::kAdd, emit(EwOp::kMul, emit(EwOp::kSub, x, mean), rs), bias);
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
  void* out = ctx.ptr({root, 0});
  GpuContext* gpu = &ctx.gpu;
  if (ints)
    return [p, out, gpu, where] {
      launch_ew_int64(p, static_cast<int64_t*>(out), gpu->stream);
      check_launch("elementwise (int64)", where);
    };
  return [p, out, gpu, where] {
    launch_ew_float(p, static_cast<float*>(out), gpu->stream);
    check_launch("elementwise", where);
  };
}

}  // namespace tgr::gpu
