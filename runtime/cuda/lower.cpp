#include "runtime/cuda/lower.h"

#include <set>

namespace tgr::gpu {

void* LowerCtx::ptr(ValueRef v) const {
  const ValueSlot& s = plan.slot(v);
  switch (s.home) {
    case ValueSlot::Home::kInput:
    case ValueSlot::Home::kArena: return arena + s.offset;
    case ValueSlot::Home::kConstant: return weights + s.offset;
    case ValueSlot::Home::kNone: break;
  }
  fail(where(v.node), "value " + std::to_string(v.output) + " has no place in the memory plan");
}

Strides LowerCtx::strides(ValueRef v) const {
  const ValueSlot& s = plan.slot(v);
  if (s.strides.empty()) return gpu::row_major(shape(v));
  Strides out;
  for (size_t d = 0; d < s.strides.size(); ++d) out.s[d] = s.strides[d];
  return out;
}

Where LowerCtx::where(int32_t node) const {
  const Node& n = graph.node(node);
  return Where{n.is_op() ? n.op->name : "value", node, n.name};
}

Dims dims_of(const Shape& shape) {
  if (shape.size() > static_cast<size_t>(kMaxRank))
    throw GpuError("rank " + std::to_string(shape.size()) + " is above the GPU runtime's limit of 8");
  Dims d;
  d.rank = static_cast<int>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) d.size[i] = shape[i];
  return d;
}

Strides row_major(const Shape& shape) {
  Strides s;
  int64_t st = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    s.s[i] = st;
    st *= shape[i];
  }
  return s;
}

EwInput broadcast_input(const void* data, const Shape& in, const Shape& out) {
  EwInput e;
  e.data = data;
  e.contiguous = in == out;
  const int off = static_cast<int>(out.size()) - static_cast<int>(in.size());
  int64_t st = 1;
  for (int i = static_cast<int>(in.size()) - 1; i >= 0; --i) {
    e.strides.s[off + i] = in[i] == 1 ? 0 : st;
    st *= in[i];
  }
  return e;
}

EwInput view_input(const LowerCtx& ctx, ValueRef v, const Shape& out) {
  const Shape& in = ctx.shape(v);
  if (ctx.row_major(v)) return broadcast_input(ctx.ptr(v), in, out);
  const Strides st = ctx.strides(v);
  EwInput e;
  e.data = ctx.ptr(v);
  e.contiguous = false;
  const int off = static_cast<int>(out.size()) - static_cast<int>(in.size());
  for (size_t i = 0; i < in.size(); ++i) e.strides.s[off + static_cast<int>(i)] = in[i] == 1 ? 0 : st.s[i];
  return e;
}

namespace {

const std::set<std::string> kMatmul{"matmul", "batch_matmul"};
const std::set<std::string> kMixed{"equal", "less", "greater", "less_equal", "greater_equal", "is_nan",
                                   "logical_not", "cast", "where", "gather", "gather_elements"};
const std::set<std::string> kNormalization{"softmax", "layer_norm", "reduce_sum", "reduce_mean", "avgpool", "maxpool"};

}  // namespace

Step lower_task(const LowerCtx& ctx, const Task& task, size_t task_index) {
  Step step;
  step.label = task_label(ctx.graph, task);
  step.node = task.root();
  const Node& n = ctx.graph.node(task.root());
  switch (task.kind) {
    case Task::Kind::kAlias: return step;  // no work: the same bytes
    case Task::Kind::kElementwise: step.run = lower_elementwise(ctx, task); return step;
    case Task::Kind::kConv: {
      const int64_t off = ctx.plan.scratch_offsets.at(task_index);
      step.run = lower_conv(ctx, task, off >= 0 ? ctx.arena + off : nullptr);
      return step;
    }
    case Task::Kind::kNode: break;
  }
  const std::string& op = n.op->name;
  if (kMatmul.count(op)) step.run = lower_matmul(ctx, task.root());
  else if (is_strided_copy(n)) step.run = lower_layout(ctx, task.root());
  else if (kMixed.count(op)) step.run = lower_mixed(ctx, task.root());
  else if (kNormalization.count(op)) step.run = lower_normalization(ctx, task.root());
  else fail(ctx.where(task.root()), "operator not supported by the GPU runtime");
  return step;
}

}  // namespace tgr::gpu
