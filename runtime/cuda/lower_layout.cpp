// Layout operators as strided copies (kernels_layout.cu): transpose, slice,
// expand, concat, split, pad, enlarge, and reshape where it cannot be a view.
// Inputs may be strided views (runtime/views.h); split writes only the
// pieces that are not views, concat only the inputs not written in place.
#include <algorithm>
#include <numeric>
#include <optional>

#include "runtime/cuda/lower.h"

namespace tgr::gpu {
namespace {

struct Copy {
  const void* src;
  int64_t src_offset;
  Strides src_strides;
  void* dst;
  int64_t dst_offset;
  Strides dst_strides;
  Dims iter;
};

}  // namespace

// Input `k` of the concatenation `node` already sits where the
// concatenation puts it (its producer wrote it there: runtime/views.h), so
// copying it would copy its bytes onto themselves. Decided from the bytes
// themselves, so skipping the copy is right whatever the plan says; the
// plan's Task::in_place_inputs (what the step is costed as) comes from the
// same placement.
bool concat_input_in_place(const LowerCtx& ctx, const Node& n, int32_t node, size_t k) {
  const int64_t axis = n.params.get_int("axis");
  const Shape& out = n.output_shapes[0];
  const Strides os = row_major(out);
  int64_t at = 0;
  for (size_t j = 0; j < k; ++j) at += ctx.shape(n.inputs[j])[axis];
  const ValueRef in = n.inputs[k];
  const Shape& s = ctx.shape(in);
  const Strides is = ctx.strides(in);
  for (size_t d = 0; d < s.size(); ++d)
    if (s[d] != 1 && is.s[d] != os.s[d]) return false;
  const int64_t eb = ctx.element_bytes({node, 0});
  return ctx.ptr(in) == static_cast<const char*>(ctx.ptr({node, 0})) + at * os.s[axis] * eb;
}

namespace {

// What one layout operator does: strided copies, after filling its output
// with `fill_value` where `fill` (pad and enlarge: the border).
struct LayoutWork {
  std::vector<Copy> copies;
  bool fill = false;
  double fill_value = 0;
};

Copy transpose_copy(const LowerCtx& ctx, const Node& n, int32_t node) {
  const Shape& x = ctx.shape(n.inputs[0]);
  const Strides xs = ctx.strides(n.inputs[0]);
  std::vector<int64_t> perm = n.params.get_ints("perm");
  if (perm.empty()) {
    perm.resize(x.size());
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  const Shape& out = n.output_shapes[0];
  Strides src;
  for (size_t i = 0; i < perm.size(); ++i) src.s[i] = xs.s[perm[i]];
  return {ctx.ptr(n.inputs[0]), 0, src, ctx.ptr({node, 0}), 0, row_major(out), dims_of(out)};
}

Copy slice_copy(const LowerCtx& ctx, const Node& n, int32_t node) {
  const Shape& x = ctx.shape(n.inputs[0]);
  const Strides xs = ctx.strides(n.inputs[0]);
  const auto& starts = n.params.get_ints("starts");
  std::vector<int64_t> steps = n.params.get_ints("steps");
  if (steps.empty()) steps.assign(x.size(), 1);
  const Shape& out = n.output_shapes[0];
  Strides src;
  int64_t offset = 0;
  for (size_t d = 0; d < x.size(); ++d) {
    offset += starts[d] * xs.s[d];
    src.s[d] = steps[d] * xs.s[d];
  }
  return {ctx.ptr(n.inputs[0]), offset, src, ctx.ptr({node, 0}), 0, row_major(out), dims_of(out)};
}

Copy expand_copy(const LowerCtx& ctx, const Node& n, int32_t node) {
  const Shape& out = n.output_shapes[0];
  const EwInput in = view_input(ctx, n.inputs[0], out);
  Copy c{in.data, 0, in.strides, ctx.ptr({node, 0}), 0, row_major(out), dims_of(out)};
  if (in.contiguous) c.src_strides = row_major(out);
  return c;
}

// Each input not already in place, at its offset along the axis.
std::vector<Copy> concat_copies(const LowerCtx& ctx, const Node& n, int32_t node, const std::vector<char>& in_place) {
  const int64_t axis = n.params.get_int("axis");
  const Shape& out = n.output_shapes[0];
  const Strides os = row_major(out);
  std::vector<Copy> copies;
  int64_t at = 0;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const Shape& s = ctx.shape(n.inputs[k]);
    if (!in_place[k])
      copies.push_back(
          {ctx.ptr(n.inputs[k]), 0, ctx.strides(n.inputs[k]), ctx.ptr({node, 0}), at * os.s[axis], os, dims_of(s)});
    at += s[axis];
  }
  return copies;
}

// Each piece that is not a view of the input.
std::vector<Copy> split_copies(const LowerCtx& ctx, const Node& n, int32_t node) {
  const Strides xs = ctx.strides(n.inputs[0]);
  const int64_t axis = n.params.get_int("axis");
  std::vector<Copy> copies;
  int64_t at = 0;
  for (size_t k = 0; k < n.output_shapes.size(); ++k) {
    const Shape& s = n.output_shapes[k];
    const ValueRef piece{node, static_cast<int32_t>(k)};
    if (!ctx.plan.slot(piece).view)
      copies.push_back({ctx.ptr(n.inputs[0]), at * xs.s[axis], xs, ctx.ptr(piece), 0, row_major(s), dims_of(s)});
    at += s[axis];
  }
  return copies;
}

// Pad (begins from its pads, its fill value) and enlarge (the kernel centred, zeros around).
LayoutWork pad_work(const LowerCtx& ctx, const Node& n, int32_t node) {
  const Shape& x = ctx.shape(n.inputs[0]);
  const Shape& out = n.output_shapes[0];
  const Strides os = row_major(out);
  LayoutWork work;
  work.fill = true;
  std::vector<int64_t> begins(x.size(), 0);
  if (n.op->kind == OpKind::kPad) {
    const auto& pads = n.params.get_ints("pads");
    for (size_t d = 0; d < x.size(); ++d) begins[d] = pads[d];
    work.fill_value = n.params.get_float("value");
  } else {
    begins[2] = (out[2] - x[2]) / 2;
    begins[3] = (out[3] - x[3]) / 2;
  }
  int64_t offset = 0;
  for (size_t d = 0; d < x.size(); ++d) offset += begins[d] * os.s[d];
  work.copies.push_back(
      {ctx.ptr(n.inputs[0]), 0, ctx.strides(n.inputs[0]), ctx.ptr({node, 0}), offset, os, dims_of(x)});
  return work;
}

// A concatenation of row-major inputs, none in place, as one kernel for all
// inputs; nullopt where it is not one.
std::optional<std::function<void()>> one_kernel_concat(const LowerCtx& ctx, const Node& n, int32_t node,
                                                       const std::vector<char>& in_place, int eb) {
  if (n.inputs.size() > static_cast<size_t>(kMaxConcat) || num_elements(n.output_shapes[0]) >= (int64_t{1} << 31) ||
      !std::all_of(n.inputs.begin(), n.inputs.end(), [&](ValueRef in) { return ctx.row_major(in); }) ||
      std::any_of(in_place.begin(), in_place.end(), [](char c) { return c != 0; }))
    return std::nullopt;
  const Shape& x = ctx.shape(n.inputs[0]);
  const int64_t axis = n.params.get_int("axis");
  ConcatArgs args;
  for (int64_t d = 0; d < axis; ++d) args.outer *= x[d];
  for (ValueRef in : n.inputs) {
    const int64_t width = num_elements(ctx.shape(in)) / args.outer;
    args.src[args.inputs] = ctx.ptr(in);
    args.begin[args.inputs + 1] = args.begin[args.inputs] + width;
    ++args.inputs;
  }
  void* out = ctx.ptr({node, 0});
  GpuContext* gpu = &ctx.gpu;
  const Where where = ctx.where(node);
  return [=] {
    if (args.outer * args.begin[args.inputs] == 0) return;
    launch_concat(args, out, eb, gpu->stream);
    check_launch("concat", where);
  };
}

// The step that runs `work` into node's output.
std::function<void()> run_layout_work(const LowerCtx& ctx, const Node& n, int32_t node, LayoutWork work, int eb) {
  void* out = ctx.ptr({node, 0});
  const int64_t out_count = num_elements(n.output_shapes[0]);
  GpuContext* gpu = &ctx.gpu;
  const Where where = ctx.where(node);
  const std::string op = n.op->name;
  // A half type's fill value, as its bits.
  const DType stored = ctx.storage({node, 0});
  const auto v = static_cast<float>(work.fill_value);
  const uint16_t fill_bits = stored == DType::kFloat16    ? float16_bits(v)
                             : stored == DType::kBFloat16 ? bfloat16_bits(v)
                                                          : 0;
  return [=, work = std::move(work)] {
    if (work.fill && eb == 2) launch_fill_16(out, out_count, fill_bits, gpu->stream);
    else if (work.fill) launch_fill(out, out_count, work.fill_value, eb, gpu->stream);
    for (const Copy& c : work.copies)
      if (c.iter.count() > 0)
        launch_strided_copy(c.src, c.src_offset, c.src_strides, c.dst, c.dst_offset, c.dst_strides, c.iter, eb,
                            gpu->stream);
    check_launch(op.c_str(), where);
  };
}

}  // namespace

std::function<void()> lower_layout(const LowerCtx& ctx, int32_t node) {
  const Node& n = ctx.graph.node(node);
  const Where where = ctx.where(node);
  const int eb = ctx.element_bytes({node, 0});
  for (ValueRef in : n.inputs)
    if (is_floating(ctx.dtype(in)) && ctx.element_bytes(in) != eb)
      fail(where, "an input is stored in another type than the output");
  LayoutWork work;
  // The layout kinds of lower.cpp's registry (node_lowering); the others never come here.
  switch (n.op->kind) {
    case OpKind::kTranspose:
      work.copies.push_back(transpose_copy(ctx, n, node));
      break;
    case OpKind::kSlice:
      work.copies.push_back(slice_copy(ctx, n, node));
      break;
    case OpKind::kExpand:
      work.copies.push_back(expand_copy(ctx, n, node));
      break;
    case OpKind::kReshape: {  // of a strided view that no strides can reshape: copy out row-major
      const Shape& x = ctx.shape(n.inputs[0]);
      work.copies.push_back(
          {ctx.ptr(n.inputs[0]), 0, ctx.strides(n.inputs[0]), ctx.ptr({node, 0}), 0, row_major(x), dims_of(x)});
      break;
    }
    case OpKind::kConcat: {
      // Only the inputs not written in place are copied.
      std::vector<char> in_place;
      for (size_t k = 0; k < n.inputs.size(); ++k) in_place.push_back(concat_input_in_place(ctx, n, node, k));
      if (auto one_kernel = one_kernel_concat(ctx, n, node, in_place, eb)) return *one_kernel;
      work.copies = concat_copies(ctx, n, node, in_place);
      break;
    }
    case OpKind::kSplit:
      work.copies = split_copies(ctx, n, node);
      break;
    case OpKind::kPad:
    case OpKind::kEnlarge:
      work = pad_work(ctx, n, node);
      break;
    default:
      fail(where, "not a layout operator");
  }
  return run_layout_work(ctx, n, node, std::move(work), eb);
}

}  // namespace tgr::gpu
