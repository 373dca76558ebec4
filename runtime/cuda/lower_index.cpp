// Indexing operators: gather and gather_elements (float or int64 data, int64
// indices). Comparisons, is_nan, logical_not, cast and where, the other
// operators of mixed element types, run in elementwise programs
// (lower_elementwise.cpp).
#include "runtime/cuda/lower.h"

namespace tgr::gpu {

std::function<void()> lower_index(const LowerCtx& ctx, int32_t node) {
  const Node& n = ctx.graph.node(node);
  const Where where = ctx.where(node);
  void* out = ctx.ptr({node, 0});
  const void* x = ctx.ptr(n.inputs[0]);
  const int eb = ctx.element_bytes({node, 0});
  if (ctx.element_bytes(n.inputs[0]) != eb) fail(where, "the data is stored in another type than the output");
  GpuContext* gpu = &ctx.gpu;
  const Shape& data = ctx.shape(n.inputs[0]);
  const int64_t axis = n.params.get_int("axis");
  const int64_t* indices = static_cast<const int64_t*>(ctx.ptr(n.inputs[1]));
  if (n.op->kind == OpKind::kGather) {
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= data[d];
    for (size_t d = axis + 1; d < data.size(); ++d) inner *= data[d];
    const int64_t idx_count = num_elements(ctx.shape(n.inputs[1])), size = data[axis];
    return [=] {
      launch_gather(x, indices, out, outer, size, idx_count, inner, eb, gpu->stream);
      check_launch("gather", where);
    };
  }
  if (n.op->kind == OpKind::kGatherElements) {
    const Dims dd = dims_of(data), id = dims_of(ctx.shape(n.inputs[1]));
    const int ax = static_cast<int>(axis);
    return [=] {
      launch_gather_elements(x, dd, indices, id, ax, out, eb, gpu->stream);
      check_launch("gather_elements", where);
    };
  }
  fail(where, "not an indexing operator");
}

}  // namespace tgr::gpu
