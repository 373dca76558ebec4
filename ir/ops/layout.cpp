// Layout operators: transpose, concat, split, slice, expand, pad, reshape.
// They move elements without arithmetic, so every semantics (and int64)
// shares one kernel.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "ir/ops/families.h"
#include "ir/ops/op_helpers.h"

namespace tgr {
namespace {

std::vector<int64_t> effective_perm(const Params& p, size_t rank) {
  std::vector<int64_t> perm = p.get_ints("perm");
  if (perm.empty()) {  // default: reverse the axes
    perm.resize(rank);
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  return perm;
}

std::vector<Shape> transpose_shapes(const OpCall& call) {
  const Shape& x = call.input_shapes[0];
  const std::vector<int64_t> perm = effective_perm(call.params, x.size());
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(x.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (sorted != identity)
    throw ShapeError("transpose: perm " + param_value_to_string(perm) + " is not a permutation of the " +
                     std::to_string(x.size()) + " axes of " + shape_to_string(x));
  Shape out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[perm[i]];
  return {out};
}

template <class T>
void transpose_kernel(const OpCall& call, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  const Tensor<T>& x = *in[0];
  Tensor<T>& o = out[0];
  const int rank = x.rank();
  const std::vector<int64_t> perm = effective_perm(call.params, rank);
  const std::vector<int64_t> in_strides = row_major_strides(x.shape);
  std::vector<int64_t> stride(rank);  // input stride of each output axis
  for (int i = 0; i < rank; ++i) stride[i] = in_strides[perm[i]];
  std::vector<int64_t> idx(rank, 0);
  int64_t src = 0;
  for (int64_t dst = 0; dst < o.size(); ++dst) {
    o.data[dst] = x.data[src];
    for (int ax = rank - 1; ax >= 0; --ax) {
      src += stride[ax];
      if (++idx[ax] < o.shape[ax]) break;
      src -= stride[ax] * o.shape[ax];
      idx[ax] = 0;
    }
  }
}

std::vector<Shape> concat_shapes(const OpCall& call) {
  const int64_t axis = ops::checked_axis(call);
  Shape out = call.input_shapes[0];
  for (size_t i = 1; i < call.input_shapes.size(); ++i) {
    const Shape& s = call.input_shapes[i];
    bool match = s.size() == out.size();
    for (size_t d = 0; match && d < s.size(); ++d) match = static_cast<int64_t>(d) == axis || s[d] == out[d];
    if (!match)
      throw ShapeError("concat: input " + std::to_string(i) + " has shape " + shape_to_string(s) +
                       ", which differs from " + shape_to_string(call.input_shapes[0]) +
                       " outside axis " + std::to_string(axis));
    out[axis] += s[axis];
  }
  return {out};
}

// The tensor viewed as [outer, axis, inner] around `axis`.
struct AxisView {
  int64_t outer = 1, inner = 1;
  AxisView(const Shape& s, int64_t axis) {
    for (int64_t d = 0; d < axis; ++d) outer *= s[d];
    for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  }
};

template <class T>
void concat_kernel(const OpCall& call, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  const int64_t axis = call.params.get_int("axis");
  const AxisView view(out[0].shape, axis);
  const int64_t out_block = out[0].shape[axis] * view.inner;
  int64_t offset = 0;
  for (const Tensor<T>* t : in) {
    const int64_t block = t->shape[axis] * view.inner;
    for (int64_t o = 0; o < view.outer; ++o)
      std::copy_n(t->data.data() + o * block, block, out[0].data.data() + o * out_block + offset);
    offset += block;
  }
}

std::vector<Shape> split_shapes(const OpCall& call) {
  const Shape& x = call.input_shapes[0];
  const int64_t axis = ops::checked_axis(call);
  const auto& sizes = call.params.get_ints("sizes");
  // Each size (>= 1, checked with the parameters) within the axis, so that
  // their sum cannot overflow (the fuzzer found sizes near 2^62 from an ONNX Split).
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size > x[axis])
      throw ShapeError("split: size " + std::to_string(size) + " of " + param_value_to_string(sizes) +
                       " is larger than axis " + std::to_string(axis) + " of " + shape_to_string(x) + " (" +
                       std::to_string(x[axis]) + ")");
    if (total <= x[axis]) total += size;  // at most twice the axis: no overflow
  }
  if (total != x[axis])
    throw ShapeError("split: sizes " + param_value_to_string(sizes) + " add up to " +
                     (total > x[axis] ? "more than " + std::to_string(x[axis]) : std::to_string(total)) +
                     ", but axis " + std::to_string(axis) + " of " + shape_to_string(x) + " has " +
                     std::to_string(x[axis]));
  std::vector<Shape> out;
  for (int64_t size : sizes) {
    Shape s = x;
    s[axis] = size;
    out.push_back(s);
  }
  return out;
}

template <class T>
void split_kernel(const OpCall& call, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  const int64_t axis = call.params.get_int("axis");
  const Tensor<T>& x = *in[0];
  const AxisView view(x.shape, axis);
  const int64_t in_block = x.shape[axis] * view.inner;
  int64_t offset = 0;
  for (Tensor<T>& o : out) {
    const int64_t block = o.shape[axis] * view.inner;
    for (int64_t i = 0; i < view.outer; ++i)
      std::copy_n(x.data.data() + i * in_block + offset, block, o.data.data() + i * block);
    offset += block;
  }
}

std::vector<Shape> reshape_shapes(const OpCall& call) {
  const Shape& x = call.input_shapes[0];
  const auto& target = call.params.get_ints("shape");
  if (num_elements(target) != num_elements(x))
    throw ShapeError("reshape: cannot reshape " + shape_to_string(x) + " (" + std::to_string(num_elements(x)) +
                     " elements) to " + shape_to_string(target) + " (" +
                     std::to_string(num_elements(target)) + " elements)");
  return {target};
}

// slice: per axis, elements start, start + step, ... before end. Steps may be
// negative (then end may be -1: "through index 0").
// Counted in unsigned 64 bits, where end - start of any two int64 values is
// exact (the onnx_import fuzzer overflowed end - start + step - 1 in int64).
int64_t slice_count(int64_t start, int64_t end, int64_t step) {
  if (step > 0 ? end <= start : start <= end) return 0;
  const uint64_t span = step > 0 ? static_cast<uint64_t>(end) - static_cast<uint64_t>(start)
                                 : static_cast<uint64_t>(start) - static_cast<uint64_t>(end);
  const uint64_t stride = step > 0 ? static_cast<uint64_t>(step) : uint64_t{0} - static_cast<uint64_t>(step);
  const uint64_t count = span / stride + (span % stride != 0 ? 1 : 0);
  return static_cast<int64_t>(std::min<uint64_t>(count, std::numeric_limits<int64_t>::max()));
}

std::vector<int64_t> slice_steps(const Params& p, size_t rank) {
  std::vector<int64_t> steps = p.get_ints("steps");
  if (steps.empty()) steps.assign(rank, 1);
  return steps;
}

std::vector<Shape> slice_shapes(const OpCall& call) {
  const Shape& x = call.input_shapes[0];
  const auto& starts = call.params.get_ints("starts");
  const auto& ends = call.params.get_ints("ends");
  const std::vector<int64_t> steps = slice_steps(call.params, x.size());
  if (starts.size() != x.size() || ends.size() != x.size() || steps.size() != x.size())
    throw ShapeError("slice: starts, ends and steps need one entry per axis of " + shape_to_string(x));
  Shape out(x.size());
  for (size_t d = 0; d < x.size(); ++d) {
    const int64_t s = starts[d], e = ends[d], st = steps[d];
    const bool ok = st > 0 ? (s >= 0 && s <= x[d] && e >= s && e <= x[d])
                  : st < 0 ? (s >= 0 && s < x[d] && e >= -1 && e <= s)
                           : false;
    if (!ok)
      throw ShapeError("slice: axis " + std::to_string(d) + " of size " + std::to_string(x[d]) + ": start " +
                       std::to_string(s) + ", end " + std::to_string(e) + ", step " + std::to_string(st) +
                       " is not a normalised range");
    out[d] = slice_count(s, e, st);
  }
  return {out};
}

template <class T>
void slice_kernel(const OpCall& call, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  const Tensor<T>& x = *in[0];
  Tensor<T>& o = out[0];
  const int rank = x.rank();
  const auto& starts = call.params.get_ints("starts");
  const std::vector<int64_t> steps = slice_steps(call.params, rank);
  const std::vector<int64_t> strides = row_major_strides(x.shape);
  int64_t src = 0;
  std::vector<int64_t> step_stride(rank);
  for (int d = 0; d < rank; ++d) {
    src += starts[d] * strides[d];
    step_stride[d] = steps[d] * strides[d];
  }
  std::vector<int64_t> idx(rank, 0);
  for (int64_t dst = 0; dst < o.size(); ++dst) {
    o.data[dst] = x.data[src];
    for (int ax = rank - 1; ax >= 0; --ax) {
      src += step_stride[ax];
      if (++idx[ax] < o.shape[ax]) break;
      src -= step_stride[ax] * o.shape[ax];
      idx[ax] = 0;
    }
  }
}

std::vector<Shape> expand_shapes(const OpCall& call) {
  const auto& target = call.params.get_ints("shape");
  if (ops::broadcast_shapes("expand", call.input_shapes[0], target) != target)
    throw ShapeError("expand: " + shape_to_string(call.input_shapes[0]) + " does not broadcast to " +
                     shape_to_string(target));
  return {target};
}

template <class T>
void expand_kernel(const OpCall&, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  const Tensor<T>& x = *in[0];
  ops::for_each_broadcast<1>(out[0].shape, {&x.shape},
                             [&](int64_t o, const std::array<int64_t, 1>& at) { out[0].data[o] = x.data[at[0]]; });
}

std::vector<Shape> pad_shapes(const OpCall& call) {
  const Shape& x = call.input_shapes[0];
  const auto& pads = call.params.get_ints("pads");
  if (pads.size() != 2 * x.size())
    throw ShapeError("pad: pads needs " + std::to_string(2 * x.size()) + " entries (all begins, then all ends) for " +
                     shape_to_string(x) + ", got " + std::to_string(pads.size()));
  Shape out = x;
  for (size_t d = 0; d < x.size(); ++d) {
    int64_t size = 0;
    // Pads come from models: a sum beyond int64 is an error, not overflow.
    if (__builtin_add_overflow(pads[d], pads[d + x.size()], &size) || __builtin_add_overflow(out[d], size, &size) ||
        size < 0)
      throw ShapeError("pad: pads " + std::to_string(pads[d]) + " and " + std::to_string(pads[d + x.size()]) +
                       " on axis " + std::to_string(d) + " of " + shape_to_string(x) + " give no valid size");
    out[d] = size;
  }
  return {out};
}

template <class T>
void pad_kernel(const OpCall& call, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  const Tensor<T>& x = *in[0];
  Tensor<T>& o = out[0];
  const double value = call.params.get_float("value");
  std::fill(o.data.begin(), o.data.end(), from_real<T>(value));
  const auto& pads = call.params.get_ints("pads");
  const int rank = x.rank();
  const std::vector<int64_t> ostrides = row_major_strides(o.shape);
  int64_t dst = 0;
  for (int d = 0; d < rank; ++d) dst += pads[d] * ostrides[d];
  std::vector<int64_t> idx(rank, 0);
  for (int64_t src = 0; src < x.size(); ++src) {
    o.data[dst] = x.data[src];
    for (int ax = rank - 1; ax >= 0; --ax) {
      dst += ostrides[ax];
      if (++idx[ax] < x.shape[ax]) break;
      dst -= ostrides[ax] * x.shape[ax];
      idx[ax] = 0;
    }
  }
}

template <class T>
void copy_kernel(const OpCall&, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  out[0].data = in[0]->data;
}

// transpose: its default permutation (the axes reversed) canonical.
OpDef transpose_def() {
  using namespace ops;
  ParamSpec perm = ints_param("perm", std::vector<int64_t>{}, -1, 0, "output axis i is input axis perm[i]");
  perm.allow_empty = true;
  perm.doc += " (default: the axes reversed)";
  return OpDef{.name = "transpose",
               .summary = "permute the axes",
               .inputs = {"x"},
               .params = {perm},
               .infer_shapes = transpose_shapes,
               .kernels = TGR_KERNELS_AND_INT64(transpose_kernel),
               .multilinear = {true},
               .accepts_bool = true,
               .canonicalize =
                   [](Params& p, std::span<const Shape> shapes) {
                     // An explicit reversal prints as the default.
                     std::vector<int64_t> reversed(shapes[0].size());
                     std::iota(reversed.rbegin(), reversed.rend(), 0);
                     if (p.get_ints("perm") == reversed) p.set("perm", std::vector<int64_t>{});
                   },
               .traits = layout_traits(ViewKind::kPermute),
               .cost = per_output_element_cost()};
}

// pad: the fill value checked against the element type.
OpDef pad_def() {
  using namespace ops;
  return OpDef{.name = "pad",
               .summary = "surround with a constant value",
               .inputs = {"x"},
               .params = {ints_param("pads", std::nullopt, -1, 0, "the begins of every axis, then the ends"),
                          float_param("value", 0.0, -HUGE_VAL, HUGE_VAL, "the fill value")},
               .infer_shapes = pad_shapes,
               .infer_dtypes =
                   [](const OpCall& call) {
                     const DType t = call.input_dtypes[0];
                     const double v = call.params.get_float("value");
                     if (t == DType::kBool && v != 0 && v != 1)
                       throw ShapeError("pad: a bool tensor pads with 0 or 1, not " + param_value_to_string(v));
                     if (t == DType::kInt64 && v != std::trunc(v))
                       throw ShapeError("pad: an int64 tensor pads with an integer, not " + param_value_to_string(v));
                     return std::vector<DType>{t};
                   },
               .kernels = TGR_KERNELS_AND_INT64(pad_kernel),
               .multilinear = {true},
               .accepts_bool = true,
               .traits = layout_traits(),
               .cost = per_output_element_cost()};
}

}  // namespace

void register_layout_ops(OpTable& table) {
  using namespace ops;
  table.add(transpose_def());
  table.add({.name = "concat",
             .summary = "join the inputs along an axis",
             .inputs = {"inputs"},
             .variadic = true,
             .params = {int_param("axis", std::nullopt, 0, INT64_MAX, "the axis to join along")},
             .infer_shapes = concat_shapes,
             .kernels = TGR_KERNELS_AND_INT64(concat_kernel),
             .multilinear = {true},
             .accepts_bool = true,
             .traits = layout_traits(),
             .cost = per_output_element_cost()});
  table.add({.name = "split",
             .summary = "cut along an axis into pieces of the given sizes (one output each)",
             .inputs = {"x"},
             .params = {int_param("axis", std::nullopt, 0, INT64_MAX, "the axis to cut"),
                        shape_dependent(ints_param("sizes", std::nullopt, -1, 1, "size of each piece"))},
             .num_outputs = [](const Params& p) { return static_cast<int>(p.get_ints("sizes").size()); },
             .infer_shapes = split_shapes,
             .kernels = TGR_KERNELS_AND_INT64(split_kernel),
             .multilinear = {true},
             .accepts_bool = true,
             .traits = layout_traits(ViewKind::kPieces),
             .cost = per_output_element_cost()});
  ParamSpec steps = ints_param("steps", std::vector<int64_t>{}, -1, INT64_MIN, "per axis, non-zero (default: all 1)");
  steps.allow_empty = true;
  table.add({.name = "slice",
             .summary = "elements start, start + step, ... before end, per axis (normalised ranges)",
             .inputs = {"x"},
             .params = {ints_param("starts", std::nullopt, -1, 0, "per axis"),
                        ints_param("ends", std::nullopt, -1, -1, "per axis; -1 only with a negative step"), steps},
             .infer_shapes = slice_shapes,
             .kernels = TGR_KERNELS_AND_INT64(slice_kernel),
             .multilinear = {true},
             .accepts_bool = true,
             .traits = layout_traits(),
             .cost = per_output_element_cost()});
  table.add({.name = "expand",
             .summary = "broadcast to a shape",
             .inputs = {"x"},
             .params = {shape_dependent(ints_param("shape", std::nullopt, -1, 1, "the output shape"))},
             .infer_shapes = expand_shapes,
             .kernels = TGR_KERNELS_AND_INT64(expand_kernel),
             .multilinear = {true},
             .accepts_bool = true,
             // A strided copy on the GPU, but left out of the prover's exact
             // evaluation of closed layout terms (moves_elements), as before
             // these traits existed: an expanded constant may be far larger than its input.
             .traits = {.strided_copy = true},
             .cost = per_output_element_cost()});
  table.add(pad_def());
  table.add({.name = "reshape",
             .summary = "the same elements in row-major order under a new shape",
             .inputs = {"x"},
             .params = {shape_dependent(ints_param("shape", std::nullopt, -1, 1, "the new dimensions"))},
             .infer_shapes = reshape_shapes,
             .kernels = TGR_KERNELS_AND_INT64(copy_kernel),
             .multilinear = {true},
             .accepts_bool = true,
             .traits = layout_traits(ViewKind::kReshape),
             .cost = per_output_element_cost()});
}

}  // namespace tgr
