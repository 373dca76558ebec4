// Attention steps (Task::Kind::kAttention, runtime/attention.h): one launch
// of the runtime's fused kernel (kernels_attention.cu) at float32, the only
// element type of the runtime today. cuDNN's fused attention (its graph
// API's scaled-dot-product-attention node) takes half and bfloat16 operands
// only; a half-precision runtime plugs it in at attention_path below, with
// the same operand layouts (strides per batch sub-axis, row and column).
#include <vector>

#include "runtime/attention.h"
#include "runtime/cuda/lower.h"

namespace tgr::gpu {
namespace {

enum class AttentionPath { kOwnKernel };

// The implementation for an attention over values of `dtype`: float32 has no cuDNN path.
AttentionPath attention_path(DType dtype, const Where& where) {
  if (dtype != DType::kFloat) fail(where, "attention over non-float values");
  return AttentionPath::kOwnKernel;
}

std::vector<int64_t> stored_strides(const LowerCtx& ctx, ValueRef v) {
  const Strides s = ctx.strides(v);
  return std::vector<int64_t>(s.s, s.s + ctx.shape(v).size());
}

AttnOperand kernel_operand(const LowerCtx& ctx, ValueRef data, const std::optional<AttentionLayout>& layout,
                           const Where& where, const char* what) {
  if (!layout) fail(where, std::string("the attention's ") + what + " is not laid out as the kernel reads it");
  AttnOperand o;
  o.data = static_cast<const float*>(ctx.ptr(data));
  o.batch_axes = static_cast<int>(layout->batch.size());
  for (size_t i = 0; i < layout->batch.size(); ++i) {
    o.batch_size[i] = layout->batch[i].size;
    o.batch_stride[i] = layout->batch[i].stride;
  }
  o.row_stride = layout->row_stride;
  o.col_stride = layout->col_stride;
  return o;
}

// A one-element constant the plan computed at load (a scale).
float constant_value(const LowerCtx& ctx, ValueRef v, const Where& where) {
  const ValueSlot& slot = ctx.plan.slot(v);
  if (slot.home != ValueSlot::Home::kConstant || slot.constant < 0)
    fail(where, "the attention's scale is not a constant computed at load");
  const ConstantValue& c = ctx.plan.constants.at(static_cast<size_t>(slot.constant));
  if (!c.is_float() || c.real.data.size() != 1) fail(where, "the attention's scale is not one float");
  return c.real.data[0];
}

// Whether the mask is a constant that is causal (is_causal_mask): the kernel then skips masked key tiles.
bool causal_mask(const LowerCtx& ctx, const AttentionMatch& m) {
  if (!m.mask) return false;
  const ValueSlot& slot = ctx.plan.slot(*m.mask);
  if (slot.home != ValueSlot::Home::kConstant || slot.constant < 0) return false;
  const ConstantValue& c = ctx.plan.constants.at(static_cast<size_t>(slot.constant));
  return c.is_float() && is_causal_mask(c.real.shape, c.real.data, m.rows, m.keys);
}

}  // namespace

std::function<void()> lower_attention(const LowerCtx& ctx, const Task& task) {
  const Where where = ctx.where(task.root());
  if (!task.attention) fail(where, "an attention step without its match");
  const AttentionMatch& m = *task.attention;
  const ValueRef out{task.root(), 0};
  switch (attention_path(ctx.dtype(out), where)) {
    case AttentionPath::kOwnKernel:
      break;
  }
  if (m.head_dim > kMaxAttnHeadDim || m.value_dim > kMaxAttnHeadDim) fail(where, "head dimension above 128");
  if (m.batch > INT32_MAX || m.rows > 65535LL * 16) fail(where, "attention batch or rows above the kernel's grid");
  AttentionArgs a;
  const Graph& g = ctx.graph;
  a.q = kernel_operand(ctx, m.q.source, operand_layout(g, m.q, stored_strides(ctx, m.q.source)), where, "query");
  a.k = kernel_operand(ctx, m.k.source, operand_layout(g, m.k, stored_strides(ctx, m.k.source)), where, "key");
  a.v = kernel_operand(ctx, m.v.source, operand_layout(g, m.v, stored_strides(ctx, m.v.source)), where, "value");
  if (m.mask) a.mask = kernel_operand(ctx, *m.mask, mask_layout(g, m, stored_strides(ctx, *m.mask)), where, "mask");
  a.out = kernel_operand(ctx, out, attention_layout(strided_axes(ctx.shape(out), stored_strides(ctx, out))), where,
                         "output");
  a.batch = m.batch;
  a.rows = m.rows;
  a.keys = m.keys;
  a.head_dim = m.head_dim;
  a.value_dim = m.value_dim;
  double scale = 1;
  for (const auto& [c, divides] : m.scales)
    scale = divides ? scale / constant_value(ctx, c, where) : scale * constant_value(ctx, c, where);
  a.scale = static_cast<float>(scale);
  a.causal = causal_mask(ctx, m);
  a.nan_guard = m.nan_guard;
  GpuContext* gpu = &ctx.gpu;
  return [=] {
    launch_attention(a, gpu->stream);
    check_launch("attention", where);
  };
}

}  // namespace tgr::gpu
