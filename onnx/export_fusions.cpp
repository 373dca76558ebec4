#include "onnx/export_fusions.h"

#include <algorithm>
#include <cmath>

#include "ir/geometry.h"

namespace tgr::onnx_io {
namespace {

// `shape` aligned right to rank 4 (NumPy broadcasting) is 1 x C' x 1 x 1 with
// C' 1 or `channels`: one value per output channel.
bool per_channel(const Shape& shape, int64_t channels) {
  if (shape.size() > 4) return false;
  Shape full(4 - shape.size(), 1);
  full.insert(full.end(), shape.begin(), shape.end());
  return full[0] == 1 && full[2] == 1 && full[3] == 1 && (full[1] == 1 || full[1] == channels);
}

bool is(const Node& n, OpKind kind) { return op_is(n.op, kind); }

// A zero (or, for maxpool, -infinity) padding of the two spatial axes of an
// NCHW value only, none negative.
bool spatial_only_pad(const Node& pad, double value) {
  if (!is(pad, OpKind::kPad) || pad.output_shapes[0].size() != 4) return false;
  const double v = pad.params.get_float("value");
  if (!(v == value)) return false;
  const auto& p = pad.params.get_ints("pads");  // begins of every axis, then ends
  return p.size() == 8 && p[0] == 0 && p[1] == 0 && p[4] == 0 && p[5] == 0;
}

// Whether a pool reading `pad` computes the same with the pad in its own
// `pads`: ONNX Runtime wants each pad below the kernel, and an average that
// leaves its own padding out of the count must have none.
bool pool_takes_pad(const Node& pool, const Node& pad) {
  const Shape& x = pad.output_shapes[0];
  const auto& kernel = pool.params.get_ints("kernel");
  const Window2d w = window_geometry(pool.op->name, pool.params, x[2], x[3], kernel[0], kernel[1], false);
  if (is(pool, OpKind::kAvgpool) && pool.params.get_int("include_pad") == 0 &&
      (w.pad_top || w.pad_left || w.pad_bottom || w.pad_right))
    return false;
  const std::vector<int64_t> extra = spatial_pads(pad);
  const int64_t top = w.pad_top + extra[0], left = w.pad_left + extra[1], bottom = w.pad_bottom + extra[2],
                right = w.pad_right + extra[3];
  return top < w.kernel_h && bottom < w.kernel_h && left < w.kernel_w && right < w.kernel_w;
}

// A reshape of `product` (matmul or batch_matmul, read only there) back to
// the leading axes its operands had before they were reshaped: the operands
// as they were, which one ONNX MatMul multiplies (it broadcasts a rank-2
// right operand over the left's leading axes), and the reshapes only the
// product read. Empty when it is not that.
struct Unreshaped {
  std::vector<ValueRef> operands;
  std::vector<int32_t> reshapes;
};
Unreshaped unreshaped_product(const Graph& graph, const Node& product, const Shape& result,
                              const std::vector<std::vector<int32_t>>& uses) {
  Unreshaped u;
  bool any = false;
  for (ValueRef v : product.inputs) {
    const Node& n = graph.node(v.node);
    if (is(n, OpKind::kReshape)) {
      u.operands.push_back(n.inputs[0]);
      any = true;
      if (uses[v.node][v.output] == 1) u.reshapes.push_back(v.node);
    } else {
      u.operands.push_back(v);
    }
  }
  if (!any) return {};
  const Shape& a = graph.shape(u.operands[0]);
  const Shape& b = graph.shape(u.operands[1]);
  const Shape& pa = graph.shape(product.inputs[0]);
  const Shape& pb = graph.shape(product.inputs[1]);
  if (a.size() < 2 || b.size() < 2) return {};
  const int64_t k = pa.back(), n = pb.back();
  Shape expected;
  if (is(product, OpKind::kMatmul)) {
    // [..., M, K] x [K, N]: the left's leading axes flattened into rows.
    if (a.size() < 3 || b != pb || a.back() != k) return {};
    expected.assign(a.begin(), a.end() - 1);
  } else {
    // [batch, M, K] x [batch, K, N], one batch axis flattened from the same axes of both.
    if (a.size() < 4 || a.size() != b.size() || !std::equal(a.begin(), a.end() - 2, b.begin()) ||
        a[a.size() - 2] != pa[1] || a.back() != k || b[b.size() - 2] != k || b.back() != n)
      return {};
    expected.assign(a.begin(), a.end() - 1);
  }
  expected.push_back(n);
  if (expected != result) return {};
  return u;
}

}  // namespace

std::vector<int64_t> spatial_pads(const Node& pad) {
  const auto& p = pad.params.get_ints("pads");
  return {p[2], p[3], p[6], p[7]};
}

ExportFusions find_export_fusions(const Graph& graph, const std::vector<bool>& constant) {
  ExportFusions f;
  const std::vector<std::vector<int32_t>> uses = graph.use_counts();
  auto only_reader = [&](ValueRef v) { return uses[v.node][v.output] == 1; };
  for (int32_t i : graph.topological_order()) {
    const Node& n = graph.node(i);
    if (!n.is_op()) continue;
    // conv2d / pools reading a pad they alone read, at input 0.
    if (is(n, OpKind::kConv2d) || is(n, OpKind::kAvgpool) || is(n, OpKind::kMaxpool)) {
      const ValueRef x = n.inputs[0];
      const Node& pad = graph.node(x.node);
      const bool max = is(n, OpKind::kMaxpool);
      if (only_reader(x) && spatial_only_pad(pad, max ? -HUGE_VAL : 0.0) && is_floating(graph.dtype(x)) &&
          (is(n, OpKind::kConv2d) || pool_takes_pad(n, pad)))
        f.absorb_pad(x.node, i);
    }
    if (is(n, OpKind::kReshape)) {
      const ValueRef product = n.inputs[0];
      const Node& p = graph.node(product.node);
      if ((is(p, OpKind::kMatmul) || is(p, OpKind::kBatchMatmul)) && only_reader(product) &&
          is_floating(graph.dtype(product))) {
        Unreshaped u = unreshaped_product(graph, p, n.output_shapes[0], uses);
        // A reshape already written as another product's result stays (written there).
        std::erase_if(u.reshapes, [&](int32_t r) { return f.product_of_reshape.contains(r); });
        const bool reads_absorbed =
            std::any_of(u.operands.begin(), u.operands.end(), [&](ValueRef v) { return f.absorbed(v.node); });
        if (!u.operands.empty() && !reads_absorbed)
          f.absorb_reshapes(i, product.node, std::move(u.operands), u.reshapes);
      }
      continue;
    }
    if (!is(n, OpKind::kAdd) || !is_floating(graph.dtype(ValueRef{i, 0}))) continue;
    for (int side = 0; side < 2; ++side) {
      const ValueRef product = n.inputs[side], other = n.inputs[1 - side];
      const Node& p = graph.node(product.node);
      if (product.node == other.node || !only_reader(product) || f.bias_add.contains(product.node)) continue;
      const Shape& out = n.output_shapes[0];
      if (graph.shape(product) != out) continue;  // the bias broadcasts into the product, never the reverse
      bool fuses = false;
      if (is(p, OpKind::kConv2d))
        fuses = p.params.get_word("act") != "relu" && constant[other.node] && per_channel(graph.shape(other), out[1]);
      else if (is(p, OpKind::kMatmul))
        fuses = graph.shape(p.inputs[0]).size() == 2 && graph.shape(p.inputs[1]).size() == 2 &&
                graph.shape(other).size() <= 2;
      if (!fuses) continue;
      f.bias_add[product.node] = i;
      f.product_of_add[i] = product.node;
      break;
    }
  }
  return f;
}

}  // namespace tgr::onnx_io
