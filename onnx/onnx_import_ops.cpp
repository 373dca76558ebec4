// The ONNX operator importers: one small function per ONNX operator, each
// mapping a node onto operators of the table (ir/ops/). Operand checks that
// the table's shape inference already makes are left to it.
#include <cmath>
#include <limits>
#include <numeric>

#include "ir/geometry.h"
#include "onnx/onnx_import_context.h"

namespace tgr::onnx_io {
namespace {

using Ints = std::vector<int64_t>;
using Ctx = ImportContext;

ConstantValue scalar_float(float v) { return ConstantValue(Tensor<float>({}, {v})); }

ConstantValue int_tensor(const Shape& shape, std::vector<int64_t> values, DType t = DType::kInt64) {
  return ConstantValue(t, Tensor<int64_t>(shape, std::move(values)));
}

// --- elementwise -------------------------------------------------------------

// A float operand that ONNX allows to be int (Pow's exponent) becomes float.
ValueRef as_float(Ctx& c, ValueRef v) {
  return c.dtype(v) == DType::kFloat ? v : c.emit("cast", {v}, {{"to", std::string("float")}});
}

OperatorImporter binary(const char* op) {
  return [op](Ctx& c) { c.set_output(0, c.emit(op, {c.input(0), c.input(1)})); };
}

OperatorImporter unary(const char* op) {
  return [op](Ctx& c) { c.set_output(0, c.emit(op, {c.input(0)})); };
}

void import_pow(Ctx& c) { c.set_output(0, c.emit("pow", {c.input(0), as_float(c, c.input(1))})); }

void import_leaky_relu(Ctx& c) {
  c.set_output(0, c.emit("leaky_relu", {c.input(0)}, {{"alpha", c.attr_float("alpha", 0.01)}}));
}

void import_hard_sigmoid(Ctx& c) {
  c.set_output(0, c.emit("hard_sigmoid", {c.input(0)},
                         {{"alpha", c.attr_float("alpha", 0.2)}, {"beta", c.attr_float("beta", 0.5)}}));
}

void import_clip(Ctx& c) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  double lo = -inf, hi = inf;
  if (c.opset() < 11) {
    lo = c.attr_float("min", -inf);
    hi = c.attr_float("max", inf);
  } else {
    if (c.has_input(1)) lo = c.constant_scalar(1, "min");
    if (c.has_input(2)) hi = c.constant_scalar(2, "max");
  }
  c.set_output(0, c.emit("clip", {c.input(0)}, {{"min", lo}, {"max", hi}}));
}

void import_identity(Ctx& c) { c.set_output(0, c.input(0)); }

void import_dropout(Ctx& c) {  // inference: the identity, and a mask of all true
  const ValueRef x = c.input(0);
  c.set_output(0, x);
  if (c.outputs().size() > 1)
    c.set_output(1, c.constant(int_tensor(c.shape(x), Ints(num_elements(c.shape(x)), 1), DType::kBool)));
}

// --- comparisons, cast, where --------------------------------------------------

void import_cast(Ctx& c) {
  const auto to = dtype_of_elem_type(static_cast<int32_t>(c.attr_int("to", 0)));
  if (!to) c.fail("casting to element type " + std::to_string(c.attr_int("to", 0)) + " is not supported");
  const ValueRef x = c.input(0);
  c.set_output(0, c.dtype(x) == *to ? x : c.emit("cast", {x}, {{"to", std::string(dtype_name(*to))}}));
}

void import_where(Ctx& c) { c.set_output(0, c.emit("where", {c.input(0), c.input(1), c.input(2)})); }

// --- normalisation ------------------------------------------------------------

void import_softmax(Ctx& c) {
  const ValueRef x = c.input(0);
  const int64_t rank = c.rank(x);
  const int64_t axis = c.axis(c.attr_int("axis", c.opset() < 13 ? 1 : -1), rank);
  if (c.opset() >= 13 || axis == rank - 1) {
    c.set_output(0, c.emit("softmax", {x}, {{"axis", axis}}));
    return;
  }
  // Before opset 13, Softmax normalised the input flattened to 2-D at `axis`.
  const Shape& s = c.shape(x);
  const int64_t outer = std::accumulate(s.begin(), s.begin() + axis, int64_t{1}, std::multiplies<>());
  const ValueRef flat = c.reshape(x, {outer, num_elements(s) / std::max<int64_t>(outer, 1)});
  c.set_output(0, c.reshape(c.emit("softmax", {flat}, {{"axis", int64_t{1}}}), s));
}

void import_layer_norm(Ctx& c) {
  const ValueRef x = c.input(0);
  const Shape& s = c.shape(x);
  const int64_t axis = c.axis(c.attr_int("axis", -1), c.rank(x));
  const Shape normalized(s.begin() + axis, s.end());
  auto operand = [&](size_t i, float fill) {
    if (!c.has_input(i)) return c.constant(ConstantValue(Tensor<float>(normalized, std::vector<float>(num_elements(normalized), fill))));
    const ValueRef v = c.input(i);
    return c.shape(v) == normalized ? v : c.emit("expand", {v}, {{"shape", Ints(normalized)}});
  };
  for (size_t k = 1; k < c.outputs().size(); ++k)
    if (!c.node().output(static_cast<int>(k)).empty()) c.fail("the Mean and InvStdDev outputs (training) are not supported");
  c.set_output(0, c.emit("layer_norm", {x, operand(1, 1.0f), operand(2, 0.0f)},
                         {{"axis", axis}, {"epsilon", c.attr_float("epsilon", 1e-5)}}));
}

void import_batch_norm(Ctx& c) {
  if (c.attr_int("training_mode", 0) != 0) c.fail("training mode is not supported");
  for (size_t k = 1; k < c.outputs().size(); ++k)
    if (!c.node().output(static_cast<int>(k)).empty()) c.fail("running-statistics outputs (training) are not supported");
  c.set_output(0, c.emit("batch_norm", {c.input(0), c.input(1), c.input(2), c.input(3), c.input(4)},
                         {{"epsilon", c.attr_float("epsilon", 1e-5)}}));
}

// --- convolution and pooling ------------------------------------------------------

// The `pad` parameter for ONNX auto_pad/pads on a 2-D window.
ParamValue window_padding(Ctx& c, const Shape& x, const Ints& kernel, const Ints& strides, const Ints& dilations) {
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER") return std::string("same");
  if (auto_pad == "VALID") return std::string("valid");
  if (auto_pad == "SAME_LOWER") {  // like same, the extra element at the beginning
    Ints pads(4);
    for (int a = 0; a < 2; ++a) {
      const int64_t in = x[2 + a], out = (in + strides[a] - 1) / strides[a];
      const int64_t total = std::max<int64_t>(0, (out - 1) * strides[a] + (kernel[a] - 1) * dilations[a] + 1 - in);
      pads[a] = total - total / 2;
      pads[a + 2] = total / 2;
    }
    return pads;
  }
  if (auto_pad != "NOTSET") c.fail("auto_pad '" + auto_pad + "' is not supported");
  Ints pads = c.attr_ints("pads", {0, 0, 0, 0});
  if (pads.size() != 4) c.fail("pads must have 4 entries for a 2-D window");
  return pads;  // ONNX order x1_begin, x2_begin, x1_end, x2_end = top, left, bottom, right
}

Ints two(Ctx& c, const char* name, Ints def) {
  Ints v = c.attr_ints(name, def);
  if (v.size() != 2) c.fail(std::string(name) + " must have 2 entries (only 2-D windows are supported)");
  return v;
}

void import_conv(Ctx& c) {
  const ValueRef x = c.input(0), w = c.input(1);
  if (c.rank(x) != 4) c.fail("only 2-D convolution (4-D input, NCHW) is supported");
  const Shape& ws = c.shape(w);
  const Ints strides = two(c, "strides", {1, 1}), dilations = two(c, "dilations", {1, 1});
  const int64_t group = c.attr_int("group", 1);
  if (ws.size() == 4 && ws[1] * group != c.shape(x)[1])
    c.fail("group " + std::to_string(group) + " does not match input channels " + std::to_string(c.shape(x)[1]) +
           " and weight " + shape_to_string(ws));
  ParamValue pad = window_padding(c, c.shape(x), {ws[2], ws[3]}, strides, dilations);
  // A 1 x 1 kernel reading no padding is imported as 'same', the form the
  // rules are generated in, so that they match without first spending
  // search steps on rewriting the padding.
  if (pointwise_without_padding(ws, pad)) pad = std::string("same");
  ValueRef y = c.emit("conv2d", {x, w}, {{"stride", strides}, {"pad", pad}, {"dilation", dilations}});
  if (c.has_input(2)) y = c.emit("add", {y, c.reshape(c.input(2), {1, ws[0], 1, 1})});
  c.set_output(0, y);
}

// ONNX's ceil_mode: extra end padding so that floor rounding gives the
// ceiling, keeping PyTorch's (and ONNX Runtime's) rule that the last window
// starts inside the input or its begin padding.
ParamValue pool_padding(Ctx& c, const Shape& x, const Ints& kernel, const Ints& strides, const Ints& dilations,
                        bool count_pad) {
  ParamValue pad = window_padding(c, x, kernel, strides, dilations);
  if (c.attr_int("ceil_mode", 0) == 0) return pad;
  auto* explicit_pads = std::get_if<Ints>(&pad);
  if (!explicit_pads) return pad;  // auto_pad ignores ceil_mode
  Ints p = *explicit_pads;
  for (int a = 0; a < 2; ++a) {
    const int64_t in = x[2 + a], padded = in + p[a] + p[a + 2], extent = (kernel[a] - 1) * dilations[a] + 1;
    int64_t out = (padded - extent + strides[a] - 1) / strides[a] + 1;
    if ((out - 1) * strides[a] >= in + p[a]) --out;
    const int64_t extra = (out - 1) * strides[a] + extent - padded;
    if (extra > 0) {
      if (count_pad) c.fail("ceil_mode with count_include_pad is not supported where it adds a window");
      p[a + 2] += extra;
    }
  }
  return p;
}

OperatorImporter pool(const char* op) {
  return [op](Ctx& c) {
    const ValueRef x = c.input(0);
    if (c.rank(x) != 4) c.fail("only 2-D pooling (4-D input, NCHW) is supported");
    if (c.outputs().size() > 1 && !c.node().output(1).empty()) c.fail("the Indices output is not supported");
    const Ints kernel = two(c, "kernel_shape", {}), strides = two(c, "strides", {1, 1});
    const Ints dilations = two(c, "dilations", {1, 1});
    const bool avg = std::string(op) == "avgpool";
    if (avg && dilations != Ints{1, 1}) c.fail("dilated average pooling is not supported");
    const bool count_pad = avg && c.attr_int("count_include_pad", 0) != 0;
    std::vector<std::pair<std::string, ParamValue>> params{
        {"kernel", kernel}, {"stride", strides}, {"pad", pool_padding(c, c.shape(x), kernel, strides, dilations, count_pad)}};
    if (avg) params.emplace_back("include_pad", int64_t{count_pad});
    else params.emplace_back("dilation", dilations);
    c.set_output(0, c.emit(op, {x}, params));
  };
}

void import_global_average_pool(Ctx& c) {
  const ValueRef x = c.input(0);
  if (c.rank(x) != 4) c.fail("only 4-D input (NCHW) is supported");
  const Shape& s = c.shape(x);
  c.set_output(0, c.emit("avgpool", {x}, {{"kernel", Ints{s[2], s[3]}}, {"pad", std::string("valid")}}));
}

// --- matrix products ------------------------------------------------------------

// MatMul with NumPy semantics, lowered to matmul / batch_matmul and reshapes.
ValueRef matmul_nd(Ctx& c, ValueRef a, ValueRef b) {
  Shape sa = c.shape(a), sb = c.shape(b);
  if (sa.empty() || sb.empty()) c.fail("MatMul operands must have rank >= 1");
  const bool vec_a = sa.size() == 1, vec_b = sb.size() == 1;
  if (vec_a) a = c.reshape(a, sa = {1, sa[0]});
  if (vec_b) b = c.reshape(b, sb = {sb[0], 1});
  const int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
  if (sb[sb.size() - 2] != K) c.fail("MatMul inner dimensions differ: " + shape_to_string(c.shape(a)) + " times " + shape_to_string(c.shape(b)));
  const Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  Shape result;
  ValueRef y;
  if (batch_b.empty()) {  // [..., M, K] x [K, N]: one matmul over all rows
    const int64_t rows = num_elements(batch_a) * M;
    y = c.emit("matmul", {c.reshape(a, {rows, K}), b});
    result = batch_a;
  } else {
    Shape batch = batch_a;  // broadcast the batch dimensions
    {
      const size_t r = std::max(batch_a.size(), batch_b.size());
      batch.assign(r, 1);
      for (size_t i = 0; i < r; ++i) {
        const int64_t da = i < r - batch_a.size() ? 1 : batch_a[i - (r - batch_a.size())];
        const int64_t db = i < r - batch_b.size() ? 1 : batch_b[i - (r - batch_b.size())];
        if (da != db && da != 1 && db != 1) c.fail("MatMul batch dimensions do not broadcast");
        batch[i] = std::max(da, db);
      }
    }
    auto to_batch = [&](ValueRef v, const Shape& s, int64_t r0, int64_t r1) {
      Shape full = batch;
      full.push_back(r0);
      full.push_back(r1);
      if (s != full) v = c.emit("expand", {v}, {{"shape", Ints(full)}});
      return c.reshape(v, {num_elements(batch), r0, r1});
    };
    y = c.emit("batch_matmul", {to_batch(a, sa, M, K), to_batch(b, sb, K, N)});
    result = batch;
  }
  if (!vec_a) result.push_back(M);
  if (!vec_b) result.push_back(N);
  return c.reshape(y, result);
}

void import_matmul(Ctx& c) { c.set_output(0, matmul_nd(c, c.input(0), c.input(1))); }

// Gemm: alpha * A' B' + beta * C.
void import_gemm(Ctx& c) {
  ValueRef a = c.input(0), b = c.input(1);
  if (c.attr_int("transA", 0)) a = c.emit("transpose", {a});
  if (c.attr_int("transB", 0)) b = c.emit("transpose", {b});
  ValueRef y = c.emit("matmul", {a, b});
  const double alpha = c.attr_float("alpha", 1.0), beta = c.attr_float("beta", 1.0);
  if (alpha != 1.0) y = c.emit("mul", {y, c.constant(scalar_float(static_cast<float>(alpha)))});
  if (c.has_input(2) && beta != 0.0) {
    ValueRef bias = c.input(2);
    if (beta != 1.0) bias = c.emit("mul", {bias, c.constant(scalar_float(static_cast<float>(beta)))});
    y = c.emit("add", {y, bias});
  }
  c.set_output(0, y);
}

// --- reductions -------------------------------------------------------------------

// axes from the attribute (before `input_since`) or input 1; sorted, normalised.
void import_reduce(Ctx& c, const char* op, int64_t input_since) {
  const ValueRef x = c.input(0);
  const int64_t rank = c.rank(x);
  Ints axes = c.opset() < input_since ? c.attr_ints("axes") : (c.has_input(1) ? c.constant_ints(1, "axes") : Ints{});
  if (axes.empty()) {
    if (c.opset() >= input_since && c.attr_int("noop_with_empty_axes", 0)) {
      c.set_output(0, x);
      return;
    }
    axes.resize(rank);
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (int64_t& a : axes) a = c.axis(a, rank);
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  c.set_output(0, c.emit(op, {x}, {{"axes", axes}, {"keepdims", c.attr_int("keepdims", 1) != 0 ? int64_t{1} : int64_t{0}}}));
}

// --- layout -------------------------------------------------------------------------

void import_reshape(Ctx& c) {
  const ValueRef x = c.input(0);
  const Shape& s = c.shape(x);
  Ints target = c.constant_ints(1, "shape");
  const bool allow_zero = c.attr_int("allowzero", 0) != 0;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allow_zero) {
      if (i >= s.size()) c.fail("shape entry 0 at " + std::to_string(i) + " has no input dimension to copy");
      target[i] = s[i];
    }
    if (target[i] == -1) {
      if (infer >= 0) c.fail("shape has more than one -1");
      infer = static_cast<int>(i);
    } else {
      // The model's numbers: no negative entry, and no product beyond int64 (fuzz_onnx_import found it).
      if (target[i] < 0) c.fail("shape entry " + std::to_string(target[i]) + " is negative");
      if (target[i] > 0 && known > std::numeric_limits<int64_t>::max() / target[i])
        c.fail("shape has too many elements");
      known *= target[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || num_elements(s) % known != 0) c.fail("cannot infer the -1 in the shape for " + shape_to_string(s));
    target[infer] = num_elements(s) / known;
  }
  c.set_output(0, c.reshape(x, target));
}

void import_flatten(Ctx& c) {
  const ValueRef x = c.input(0);
  const Shape& s = c.shape(x);
  const int64_t rank = c.rank(x);
  int64_t axis = c.attr_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) c.fail("axis out of range");
  const int64_t outer = std::accumulate(s.begin(), s.begin() + axis, int64_t{1}, std::multiplies<>());
  c.set_output(0, c.reshape(x, {outer, num_elements(s) / std::max<int64_t>(outer, 1)}));
}

Ints squeeze_axes(Ctx& c, int64_t rank) {
  Ints axes = c.opset() < 13 ? c.attr_ints("axes") : (c.has_input(1) ? c.constant_ints(1, "axes") : Ints{});
  for (int64_t& a : axes) a = c.axis(a, rank);
  return axes;
}

void import_squeeze(Ctx& c) {
  const ValueRef x = c.input(0);
  const Shape& s = c.shape(x);
  const Ints axes = squeeze_axes(c, c.rank(x));
  Shape out;
  for (size_t d = 0; d < s.size(); ++d) {
    const bool listed = std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end();
    if (listed && s[d] != 1) c.fail("cannot squeeze axis " + std::to_string(d) + " of size " + std::to_string(s[d]));
    if (!(listed || (axes.empty() && s[d] == 1))) out.push_back(s[d]);
  }
  c.set_output(0, c.reshape(x, out));
}

void import_unsqueeze(Ctx& c) {
  const ValueRef x = c.input(0);
  const Shape& s = c.shape(x);
  const int64_t rank = c.rank(x);
  Ints axes = squeeze_axes(c, rank + static_cast<int64_t>(c.opset() < 13 ? c.attr_ints("axes").size()
                                                                          : c.constant_ints(1, "axes").size()));
  std::sort(axes.begin(), axes.end());
  Shape out = s;
  for (int64_t a : axes) out.insert(out.begin() + a, 1);
  c.set_output(0, c.reshape(x, out));
}

void import_transpose(Ctx& c) {
  const ValueRef x = c.input(0);
  c.set_output(0, c.emit("transpose", {x}, {{"perm", c.attr_ints("perm", {})}}));
}

void import_concat(Ctx& c) {
  std::vector<ValueRef> parts;
  for (size_t i = 0; i < c.num_inputs(); ++i) parts.push_back(c.input(i));
  if (parts.empty()) c.fail("Concat needs at least one input");
  const int64_t axis = c.axis(c.attr_int("axis", 0), c.rank(parts.at(0)));
  c.set_output(0, parts.size() == 1 ? parts[0] : c.emit("concat", parts, {{"axis", axis}}));
}

void import_split(Ctx& c) {
  const ValueRef x = c.input(0);
  const int64_t axis = c.axis(c.attr_int("axis", 0), c.rank(x));
  const int64_t dim = c.shape(x)[axis];
  Ints sizes = c.opset() < 13 ? c.attr_ints("split") : (c.has_input(1) ? c.constant_ints(1, "split") : Ints{});
  if (sizes.empty()) {
    const int64_t n = c.has_attr("num_outputs") ? c.attr_int("num_outputs", 1) : static_cast<int64_t>(c.outputs().size());
    if (n < 1) c.fail("num_outputs is " + std::to_string(n) + "; it must be at least 1");
    const int64_t chunk = c.has_attr("num_outputs") ? (dim + n - 1) / n : (n ? dim / n : 0);
    if (!c.has_attr("num_outputs") && chunk * n != dim) c.fail("axis of size " + std::to_string(dim) + " does not split evenly into " + std::to_string(n));
    for (int64_t left = dim; left > 0; left -= chunk) sizes.push_back(std::min(chunk, left));
  }
  const auto parts = sizes.size() == 1 ? std::vector<ValueRef>{x} : c.emit_multi("split", {x}, {{"axis", axis}, {"sizes", sizes}});
  for (size_t k = 0; k < parts.size(); ++k) c.set_output(k, parts[k]);
}

void import_slice(Ctx& c) {
  const ValueRef x = c.input(0);
  const Shape& s = c.shape(x);
  const int64_t rank = c.rank(x);
  const Ints starts = c.constant_ints(1, "starts"), ends = c.constant_ints(2, "ends");
  Ints axes = c.has_input(3) ? c.constant_ints(3, "axes") : Ints{};
  Ints steps = c.has_input(4) ? c.constant_ints(4, "steps") : Ints(starts.size(), 1);
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("starts, ends, axes and steps must have one entry each per sliced axis");
  Ints b(rank, 0), e(s.begin(), s.end()), st(rank, 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = c.axis(axes[i], rank), dim = s[a], step = steps[i];
    if (step == 0) c.fail("a step of 0");
    auto clamp = [](int64_t v, int64_t lo, int64_t hi) { return std::max(lo, std::min(v, hi)); };
    int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
    if (ends[i] <= INT64_MIN / 2) end = -1;  // "through index 0"
    if (step > 0) {
      start = clamp(start, 0, dim);
      end = clamp(end, start, dim);
    } else {
      start = clamp(start, 0, dim - 1);
      end = clamp(end, -1, start);
    }
    b[a] = start;
    e[a] = end;
    st[a] = step;
  }
  c.set_output(0, c.emit("slice", {x}, {{"starts", b}, {"ends", e}, {"steps", st}}));
}

void import_expand(Ctx& c) {
  const ValueRef x = c.input(0);
  const Ints target = c.constant_ints(1, "shape");
  const Shape& s = c.shape(x);
  const size_t r = std::max(s.size(), target.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t a = i < r - s.size() ? 1 : s[i - (r - s.size())];
    const int64_t b = i < r - target.size() ? 1 : target[i - (r - target.size())];
    if (a != b && a != 1 && b != 1) c.fail(shape_to_string(s) + " does not broadcast with " + shape_to_string(target));
    out[i] = a == 1 ? b : a;
  }
  c.set_output(0, out == s ? x : c.emit("expand", {x}, {{"shape", Ints(out)}}));
}

void import_pad(Ctx& c) {
  const ValueRef x = c.input(0);
  const int64_t rank = c.rank(x);
  if (c.attr_string("mode", "constant") != "constant") c.fail("only constant padding is supported");
  Ints pads = c.opset() < 11 ? c.attr_ints("pads") : c.constant_ints(1, "pads");
  if (c.has_input(3)) {  // opset 18: pads for the listed axes only
    const Ints axes = c.constant_ints(3, "axes");
    Ints full(2 * rank, 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t a = c.axis(axes[i], rank);
      full[a] = pads.at(i);
      full[a + rank] = pads.at(i + axes.size());
    }
    pads = full;
  }
  for (int64_t p : pads)
    if (p < 0) c.fail("negative pads (cropping) are not supported");
  const double value = c.opset() < 11 ? c.attr_float("value", 0.0) : (c.has_input(2) ? c.constant_scalar(2, "constant_value") : 0.0);
  c.set_output(0, c.emit("pad", {x}, {{"pads", pads}, {"value", value}}));
}

void import_gather(Ctx& c) {
  const ValueRef data = c.input(0);
  c.set_output(0, c.emit("gather", {data, c.input(1)}, {{"axis", c.axis(c.attr_int("axis", 0), c.rank(data))}}));
}

void import_gather_elements(Ctx& c) {
  const ValueRef data = c.input(0);
  c.set_output(0, c.emit("gather_elements", {data, c.input(1)}, {{"axis", c.axis(c.attr_int("axis", 0), c.rank(data))}}));
}

// --- constants and shapes (always folded: shapes are static) ------------------------

void import_constant(Ctx& c) {
  if (const onnx::TensorProto* t = c.attr_tensor("value")) {
    c.set_output(0, c.constant(tensor_to_constant(*t)));
  } else if (c.has_attr("value_float")) {
    c.set_output(0, c.constant(scalar_float(static_cast<float>(c.attr_float("value_float", 0)))));
  } else if (c.has_attr("value_int")) {
    c.set_output(0, c.constant(int_tensor({}, {c.attr_int("value_int", 0)})));
  } else if (c.has_attr("value_ints")) {
    const Ints v = c.attr_ints("value_ints");
    c.set_output(0, c.constant(int_tensor({static_cast<int64_t>(v.size())}, v)));
  } else if (c.has_attr("value_floats")) {
    const auto& a = c.node().attribute();
    std::vector<float> v;
    for (const auto& at : a)
      if (at.name() == "value_floats") v.assign(at.floats().begin(), at.floats().end());
    c.set_output(0, c.constant(ConstantValue(Tensor<float>({static_cast<int64_t>(v.size())}, v))));
  } else {
    c.fail("only tensor, float and int constants are supported");
  }
}

void import_constant_of_shape(Ctx& c) {
  const Ints shape = c.constant_ints(0, "shape");
  ConstantValue fill = c.attr_tensor("value") ? tensor_to_constant(*c.attr_tensor("value")) : scalar_float(0);
  c.check_elements(shape);  // before allocating: the shape is the model's to choose
  const int64_t n = num_elements(shape);
  if (fill.is_float())
    c.set_output(0, c.constant(ConstantValue(Tensor<float>(shape, std::vector<float>(n, fill.real.data.at(0))))));
  else
    c.set_output(0, c.constant(int_tensor(shape, Ints(n, fill.ints.data.at(0)), fill.dtype)));
}

void import_shape(Ctx& c) {
  const Shape& s = c.shape(c.input(0));
  const int64_t rank = static_cast<int64_t>(s.size());
  int64_t start = c.attr_int("start", 0), end = c.attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  const Ints dims(s.begin() + start, s.begin() + end);
  c.set_output(0, c.constant(int_tensor({static_cast<int64_t>(dims.size())}, dims)));
}

void import_range(Ctx& c) {
  const ConstantValue* start = c.constant_input(0);
  if (!start || !c.constant_input(1) || !c.constant_input(2)) c.fail("start, limit and delta must be constants");
  const double s = c.constant_scalar(0, "start"), limit = c.constant_scalar(1, "limit"), delta = c.constant_scalar(2, "delta");
  if (delta == 0) c.fail("delta is 0");
  c.check_element_count(std::max(0.0, std::ceil((limit - s) / delta)));  // before allocating
  const int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((limit - s) / delta)));
  if (start->is_float()) {
    std::vector<float> v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(s + static_cast<double>(i) * delta);
    c.set_output(0, c.constant(ConstantValue(Tensor<float>({n}, v))));
  } else {
    Ints v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = start->ints.data[0] + i * c.constant_input(2)->ints.data[0];
    c.set_output(0, c.constant(int_tensor({n}, v)));
  }
}

}  // namespace

const std::map<std::string, OperatorImporter>& operator_importers() {
  static const std::map<std::string, OperatorImporter> table = {
      {"Add", binary("add")},
      {"Sub", binary("sub")},
      {"Mul", binary("mul")},
      {"Div", binary("div")},
      {"Pow", import_pow},
      {"Sqrt", unary("sqrt")},
      {"Exp", unary("exp")},
      {"Log", unary("log")},
      {"Neg", unary("neg")},
      {"Abs", unary("abs")},
      {"Erf", unary("erf")},
      {"Tanh", unary("tanh")},
      {"Sigmoid", unary("sigmoid")},
      {"Relu", unary("relu")},
      {"LeakyRelu", import_leaky_relu},
      {"Clip", import_clip},
      {"HardSigmoid", import_hard_sigmoid},
      {"HardSwish", unary("hard_swish")},
      {"Softmax", import_softmax},
      {"LayerNormalization", import_layer_norm},
      {"BatchNormalization", import_batch_norm},
      {"Conv", import_conv},
      {"Gemm", import_gemm},
      {"MatMul", import_matmul},
      {"MaxPool", pool("maxpool")},
      {"AveragePool", pool("avgpool")},
      {"GlobalAveragePool", import_global_average_pool},
      {"ReduceMean", [](Ctx& c) { import_reduce(c, "reduce_mean", 18); }},
      {"ReduceSum", [](Ctx& c) { import_reduce(c, "reduce_sum", 13); }},
      {"Flatten", import_flatten},
      {"Reshape", import_reshape},
      {"Transpose", import_transpose},
      {"Concat", import_concat},
      {"Split", import_split},
      {"Slice", import_slice},
      {"Gather", import_gather},
      {"GatherElements", import_gather_elements},
      {"Squeeze", import_squeeze},
      {"Unsqueeze", import_unsqueeze},
      {"Expand", import_expand},
      {"Where", import_where},
      {"Equal", binary("equal")},
      {"Less", binary("less")},
      {"Greater", binary("greater")},
      {"LessOrEqual", binary("less_equal")},
      {"GreaterOrEqual", binary("greater_equal")},
      {"IsNaN", unary("is_nan")},
      {"Not", unary("logical_not")},
      {"Cast", import_cast},
      {"Identity", import_identity},
      {"Dropout", import_dropout},
      {"Constant", import_constant},
      {"ConstantOfShape", import_constant_of_shape},
      {"Shape", import_shape},
      {"Range", import_range},
      {"Pad", import_pad},
  };
  return table;
}

}  // namespace tgr::onnx_io
