// Region rules of the sliding-window operators: conv2d (padding, stride,
// dilation, groups), avgpool, and enlarge (a kernel zero-padded, centred).
//
// Along a spatial axis, output position q's tap k reads input index
// q * stride - pad_begin + k * dilation. Two neighbouring positions are in one
// box when every tap lands in the same input interval (or in the padding) for
// both: then each term reads a fixed input box, at an index affine in q, and
// average pooling's divisor (the taps inside the input) is fixed too.
#include "ir/geometry.h"
#include "pet/regions.h"

namespace tgr::pet::rules {
namespace {

Cuts window_cuts(const Cuts& input_cuts, int64_t out, int64_t kernel, int64_t stride, int64_t pad_begin,
                 int64_t dilation) {
  return cuts_by_signature(out, [&](int64_t q, std::vector<int64_t>& sig) {
    for (int64_t k = 0; k < kernel; ++k) sig.push_back(interval_of(input_cuts, q * stride - pad_begin + k * dilation));
  });
}

// The input rows [first, last) that output rows [lo, hi) read, clipped to the
// input, and the padding that remains on each side.
struct AxisWindow {
  int64_t first = 0, last = 0, pad_begin = 0, pad_end = 0;
};
AxisWindow clip_axis(int64_t lo, int64_t hi, int64_t size, int64_t kernel, int64_t stride, int64_t pad_begin,
                     int64_t dilation) {
  const int64_t start = lo * stride - pad_begin;
  const int64_t end = (hi - 1) * stride - pad_begin + (kernel - 1) * dilation + 1;
  AxisWindow w;
  w.first = std::max<int64_t>(0, start);
  w.last = std::min(size, end);
  w.pad_begin = w.first - start;
  w.pad_end = end - w.last;
  return w;
}

Restriction whole_then_slice(const RegionCall& call, int output, const Box& box) {
  const OpDef* op = &call.op;
  Params params = call.params;
  std::vector<std::optional<Box>> boxes;
  for (const Shape& s : call.input_shapes) boxes.push_back(whole_box(s));
  return {boxes, [op, params, output, box](Graph& g, std::span<const ValueRef> ins) {
            ValueRef v = g.find_or_add_op(*op, params, std::vector<ValueRef>(ins.begin(), ins.end())).at(output);
            return slice_box(g, v, box);
          }};
}

std::vector<Partition> conv2d_propagate(const RegionCall& call, std::span<const Partition> in) {
  const Conv2dGeometry g = conv2d_geometry(call.params, call.input_shapes[0], call.input_shapes[1]);
  const Window2d& w = g.window;
  Partition p = Partition::whole(call.output_shapes[0]);
  p.axes[0] = in[0].axes[0];
  p.axes[1] = in[1].axes[0];
  // Across a group boundary the input channels read jump: not affine.
  if (g.groups > 1) p.axes[1] = merge_cuts(p.axes[1], regular_cuts(g.out_channels, g.out_channels_per_group()));
  p.axes[2] = window_cuts(in[0].axes[2], w.out_h, w.kernel_h, w.stride_h, w.pad_top, w.dilation_h);
  p.axes[3] = window_cuts(in[0].axes[3], w.out_w, w.kernel_w, w.stride_w, w.pad_left, w.dilation_w);
  return {p};
}

Restriction conv2d_restrict(const RegionCall& call, int output, const Box& box) {
  const Conv2dGeometry g = conv2d_geometry(call.params, call.input_shapes[0], call.input_shapes[1]);
  const Window2d& w = g.window;
  const AxisWindow rows = clip_axis(box.lo[2], box.hi[2], w.in_h, w.kernel_h, w.stride_h, w.pad_top, w.dilation_h);
  const AxisWindow cols = clip_axis(box.lo[3], box.hi[3], w.in_w, w.kernel_w, w.stride_w, w.pad_left, w.dilation_w);
  if (rows.last <= rows.first || cols.last <= cols.first) return whole_then_slice(call, output, box);
  // Output channels widened to whole groups when the box cuts a group.
  const int64_t og = g.out_channels_per_group(), cg = g.in_channels_per_group();
  const int64_t g0 = box.lo[1] / og, g1 = (box.hi[1] - 1) / og;
  const bool one_group = g0 == g1;
  const int64_t o_lo = one_group ? box.lo[1] : g0 * og, o_hi = one_group ? box.hi[1] : (g1 + 1) * og;
  Box x{{box.lo[0], g0 * cg, rows.first, cols.first}, {box.hi[0], (g1 + 1) * cg, rows.last, cols.last}};
  Box k = whole_box(call.input_shapes[1]);
  k.lo[0] = o_lo;
  k.hi[0] = o_hi;
  const Params params = call.params;
  const std::vector<int64_t> pads{rows.pad_begin, cols.pad_begin, rows.pad_end, cols.pad_end};
  Box keep = whole_box({box.hi[0] - box.lo[0], o_hi - o_lo, box.hi[2] - box.lo[2], box.hi[3] - box.lo[3]});
  keep.lo[1] = box.lo[1] - o_lo;
  keep.hi[1] = box.hi[1] - o_lo;
  return {{x, k}, [params, pads, keep](Graph& gr, std::span<const ValueRef> ins) {
            const ValueRef v = add_op(gr, "conv2d", {ins[0], ins[1]},
                                      {{"stride", params.get_ints("stride")},
                                       {"pad", pads},
                                       {"dilation", params.get_ints("dilation")},
                                       {"act", params.get_word("act")}});
            return slice_box(gr, v, keep);
          }};
}

Window2d pool_window(const RegionCall& call) {
  const Shape& x = call.input_shapes[0];
  const auto& kernel = call.params.get_ints("kernel");
  return window_geometry(call.op.name, call.params, x[2], x[3], kernel[0], kernel[1], false);
}

std::vector<Partition> avgpool_propagate(const RegionCall& call, std::span<const Partition> in) {
  const Window2d w = pool_window(call);
  Partition p = Partition::whole(call.output_shapes[0]);
  p.axes[0] = in[0].axes[0];
  p.axes[1] = in[0].axes[1];
  p.axes[2] = window_cuts(in[0].axes[2], w.out_h, w.kernel_h, w.stride_h, w.pad_top, 1);
  p.axes[3] = window_cuts(in[0].axes[3], w.out_w, w.kernel_w, w.stride_w, w.pad_left, 1);
  return {p};
}

Restriction avgpool_restrict(const RegionCall& call, int output, const Box& box) {
  const Window2d w = pool_window(call);
  const AxisWindow rows = clip_axis(box.lo[2], box.hi[2], w.in_h, w.kernel_h, w.stride_h, w.pad_top, 1);
  const AxisWindow cols = clip_axis(box.lo[3], box.hi[3], w.in_w, w.kernel_w, w.stride_w, w.pad_left, 1);
  if (rows.last <= rows.first || cols.last <= cols.first) return whole_then_slice(call, output, box);
  Box x{{box.lo[0], box.lo[1], rows.first, cols.first}, {box.hi[0], box.hi[1], rows.last, cols.last}};
  const Params params = call.params;
  const std::vector<int64_t> pads{rows.pad_begin, cols.pad_begin, rows.pad_end, cols.pad_end};
  return {{x}, [params, pads](Graph& g, std::span<const ValueRef> ins) {
            return add_op(g, "avgpool", {ins[0]},
                          {{"kernel", params.get_ints("kernel")},
                           {"stride", params.get_ints("stride")},
                           {"pad", pads},
                           {"include_pad", params.get_int("include_pad")}});
          }};
}

std::vector<Partition> enlarge_propagate(const RegionCall& call, std::span<const Partition> in) {
  const Shape& k = call.input_shapes[0];
  const Shape& out = call.output_shapes[0];
  Partition p = Partition::whole(out);
  p.axes[0] = in[0].axes[0];
  p.axes[1] = in[0].axes[1];
  for (int d = 2; d < 4; ++d) {
    const int64_t begin = (out[d] - k[d]) / 2;
    p.axes[d] = cuts_by_signature(out[d], [&](int64_t q, std::vector<int64_t>& sig) {
      sig.push_back(interval_of(in[0].axes[d], q - begin));
    });
  }
  return {p};
}

}  // namespace

void add_window_rules(std::vector<std::pair<std::string, RegionRule>>& table) {
  table.emplace_back("conv2d", RegionRule{conv2d_propagate, conv2d_restrict, true});
  table.emplace_back("avgpool", RegionRule{avgpool_propagate, avgpool_restrict});
  table.emplace_back("enlarge", RegionRule{enlarge_propagate, whole_then_slice});
}

}  // namespace tgr::pet::rules
