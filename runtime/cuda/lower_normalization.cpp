// softmax, layer_norm, reductions and pooling (own kernels), on floats of
// the value's storage type (float32 accumulation) or int64 (reductions).
#include "ir/geometry.h"
#include "runtime/cuda/lower.h"

namespace tgr::gpu {
namespace {

// What every kernel of the family reads: the first input, the output, their
// float type (one for both: checked by lower_normalization).
struct NormArgs {
  const Node& n;
  Where where;
  Shape x;
  const void* in;
  void* out;
  GpuContext* gpu;
  FloatType type;
};

std::function<void()> softmax_run(const NormArgs& a) {
  const Shape& x = a.x;
  const void* in = a.in;
  void* out = a.out;
  GpuContext* gpu = a.gpu;
  const FloatType type = a.type;
  const Where where = a.where;
  const int64_t axis = a.n.params.get_int("axis");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x[d];
  for (size_t d = axis + 1; d < x.size(); ++d) inner *= x[d];
  const int64_t len = x[axis];
  return [=] {
    if (outer * inner * len == 0) return;
    launch_softmax(in, out, outer, len, inner, type, gpu->stream);
    check_launch("softmax", where);
  };
}

std::function<void()> layer_norm_run(const LowerCtx& ctx, int32_t node, const NormArgs& a) {
  const Node& n = a.n;
  const void* in = a.in;
  void* out = a.out;
  GpuContext* gpu = a.gpu;
  const FloatType type = a.type;
  const Where where = a.where;
  const int64_t len = num_elements(ctx.shape(n.inputs[1]));
  const int64_t rows = len ? num_elements(a.x) / len : 0;
  const float eps = static_cast<float>(n.params.get_float("epsilon"));
  if (ctx.float_type(n.inputs[1]) != type || ctx.float_type(n.inputs[2]) != type)
    fail(where, "the scale and bias are stored in another float type than the input");
  const void* scale = ctx.ptr(n.inputs[1]);
  const void* bias = ctx.ptr(n.inputs[2]);
  const ValueRef result{node, 0};
  if (!ctx.row_major(n.inputs[0]) || !ctx.row_major(result)) {
    // A strided view the analysis let it read, or an output it placed in
    // a later value's bytes (views.h): both ChannelStridedRows.
    std::optional<ChannelStridedRows> read, written;
    if (!ctx.row_major(n.inputs[0])) {
      read = layer_norm_strided_input(ctx.graph, n, ctx.plan.slot(n.inputs[0]).strides);
      if (!read) fail(where, "the input's strides are not ones the layer norm kernel reads");
    }
    if (!ctx.row_major(result)) {
      written = layer_norm_strided_output(ctx.graph, n, ctx.plan.slot(result).strides);
      if (!written) fail(where, "the output's strides are not ones the layer norm kernel writes");
    }
    const ChannelStridedRows r = read ? *read : *written;
    if (read && written && (read->batches != written->batches || read->positions != written->positions))
      fail(where, "the layer norm's input and output split their rows into batches and positions differently");
    auto layout = [&](const std::optional<ChannelStridedRows>& strided) {
      return strided ? RowsLayout{strided->batch_stride, 1, strided->channel_stride}
                     : RowsLayout{r.positions * r.channels, r.channels, 1};  // row-major rows
    };
    const RowsLayout in_layout = layout(read), out_layout = layout(written);
    return [=] {
      launch_layer_norm_strided(in, scale, bias, out, r.batches, r.positions, r.channels, in_layout, out_layout, eps,
                                type, gpu->stream);
      check_launch("layer_norm", where);
    };
  }
  return [=] {
    if (rows == 0) return;
    launch_layer_norm(in, scale, bias, out, rows, len, eps, type, gpu->stream);
    check_launch("layer_norm", where);
  };
}

std::function<void()> reduce_run(const LowerCtx& ctx, const NormArgs& a, ReduceKind kind) {
  const std::string op = a.n.op->name;
  const void* in = a.in;
  void* out = a.out;
  GpuContext* gpu = a.gpu;
  const FloatType type = a.type;
  const Where where = a.where;
  const auto& axes = a.n.params.get_ints("axes");
  std::vector<char> mask(a.x.size(), 0);
  for (int64_t axis : axes) mask[axis] = 1;
  const Dims dims = dims_of(a.x);
  const bool ints = !is_floating(ctx.dtype(a.n.inputs[0]));
  return [=] {
    bool reduced[kMaxRank] = {};
    for (size_t d = 0; d < mask.size(); ++d) reduced[d] = mask[d] != 0;
    launch_reduce(in, out, dims, reduced, kind, ints, type, gpu->stream);
    check_launch(op.c_str(), where);
  };
}

std::function<void()> pool_run(const NormArgs& a, bool is_max) {
  const Node& n = a.n;
  const Shape& x = a.x;
  const std::string op = n.op->name;
  const void* in = a.in;
  void* out = a.out;
  GpuContext* gpu = a.gpu;
  const FloatType type = a.type;
  const Where where = a.where;
  const auto& kernel = n.params.get_ints("kernel");
  const Window2d w = window_geometry(op, n.params, x[2], x[3], kernel[0], kernel[1], is_max);
  PoolGeometry g;
  g.planes = x[0] * x[1];
  g.in_h = w.in_h, g.in_w = w.in_w, g.out_h = w.out_h, g.out_w = w.out_w;
  g.kernel_h = w.kernel_h, g.kernel_w = w.kernel_w, g.stride_h = w.stride_h, g.stride_w = w.stride_w;
  g.dilation_h = w.dilation_h, g.dilation_w = w.dilation_w, g.pad_top = w.pad_top, g.pad_left = w.pad_left;
  g.include_pad = !is_max && n.params.get_int("include_pad") != 0;
  return [=] {
    if (is_max) launch_maxpool(in, out, g, type, gpu->stream);
    else launch_avgpool(in, out, g, type, gpu->stream);
    check_launch(op.c_str(), where);
  };
}

}  // namespace

std::function<void()> lower_normalization(const LowerCtx& ctx, int32_t node) {
  const Node& n = ctx.graph.node(node);
  const NormArgs a{n,
                   ctx.where(node),
                   ctx.shape(n.inputs[0]),
                   ctx.ptr(n.inputs[0]),
                   ctx.ptr({node, 0}),
                   &ctx.gpu,
                   ctx.float_type(n.inputs[0])};
  if (is_floating(ctx.dtype(n.inputs[0])) && ctx.float_type({node, 0}) != a.type)
    fail(a.where, "the input and output are stored in different float types");
  // The normalisation kinds of lower.cpp's registry (node_lowering); the others never come here.
  switch (n.op->kind) {
    case OpKind::kSoftmax:
      return softmax_run(a);
    case OpKind::kLayerNorm:
      return layer_norm_run(ctx, node, a);
    case OpKind::kReduceSum:
      return reduce_run(ctx, a, ReduceKind::kSum);
    case OpKind::kReduceMean:
      return reduce_run(ctx, a, ReduceKind::kMean);
    case OpKind::kReduceMax:
      return reduce_run(ctx, a, ReduceKind::kMax);
    case OpKind::kReduceMin:
      return reduce_run(ctx, a, ReduceKind::kMin);
    case OpKind::kAvgpool:
      return pool_run(a, false);
    case OpKind::kMaxpool:
      return pool_run(a, true);
    default:
      fail(a.where, "not a normalisation, reduction or pooling operator");
  }
}

}  // namespace tgr::gpu
