// The ONNX operator importers: one small function per ONNX operator, each
// mapping a node onto operators of the table (ir/ops/). Operand checks that
// the table's shape inference already makes are left to it.
#include <cctype>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>

#include "ir/float_types.h"
#include "ir/geometry.h"
#include "onnx/onnx_import_context.h"
#include "util/utf8.h"

namespace tgr::onnx_io {
namespace {

using Ints = std::vector<int64_t>;
using Ctx = ImportContext;

ConstantValue scalar_float(float v) { return ConstantValue(Tensor<float>({}, {v})); }

ConstantValue int_tensor(const Shape& shape, std::vector<int64_t> values, DType t = DType::kInt64) {
  return ConstantValue(t, Tensor<int64_t>(shape, std::move(values)));
}

// --- elementwise -------------------------------------------------------------

// An operand that ONNX allows another type than the operator's float type
// `t` (Pow's exponent: an integer or another float type) is cast to `t`.
ValueRef as_float(Ctx& c, ValueRef v, DType t) {
  return c.dtype(v) == t ? v : c.emit("cast", {v}, {{"to", std::string(dtype_name(t))}});
}

Shape broadcast_or_fail(Ctx& c, const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) c.fail(shape_to_string(a) + " does not broadcast with " + shape_to_string(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// A float constant of one element whose rank is at most the other
// operand's broadcasts exactly as a scalar would: it is imported as one (a
// [1] tensor is how exporters write attention's scale when they compute it
// from a shape), so that rules over scalar variables (`s0=scalar`) match it.
ValueRef scalar_if_one_element(Ctx& c, ValueRef v, ValueRef other) {
  const ConstantValue* value = c.constant_value(v);
  if (!value || !value->is_float() || value->real.data.size() != 1 || c.rank(v) == 0 || c.rank(v) > c.rank(other) ||
      c.constant_value(other))
    return v;
  return c.constant(scalar_float(value->real.data[0]));
}

OperatorImporter binary(const char* op) {
  return [op](Ctx& c) {
    const ValueRef a = c.input(0), b = c.input(1);
    c.set_output(0, c.emit(op, {scalar_if_one_element(c, a, b), scalar_if_one_element(c, b, a)}));
  };
}

OperatorImporter unary(const char* op) {
  return [op](Ctx& c) { c.set_output(0, c.emit(op, {c.input(0)})); };
}

// Reciprocal: 1 / x (the dynamo exporter writes RMS normalisation's rsqrt as
// Reciprocal(Sqrt(x))).
void import_reciprocal(Ctx& c) { c.set_output(0, c.emit("div", {c.constant(scalar_float(1)), c.input(0)})); }

void import_pow(Ctx& c) { c.set_output(0, c.emit("pow", {c.input(0), as_float(c, c.input(1), c.dtype(c.input(0)))})); }

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

// Sum and Mean of one or more inputs (with broadcasting): a chain of adds in
// input order, as ONNX Runtime sums; Mean then divides by the count.
ValueRef add_chain(Ctx& c) {
  ValueRef y = c.input(0);
  for (size_t i = 1; i < c.num_inputs(); ++i) y = c.emit("add", {y, c.input(i)});
  return y;
}

void import_sum(Ctx& c) { c.set_output(0, add_chain(c)); }

void import_mean(Ctx& c) {
  const ValueRef sum = add_chain(c);
  if (!is_floating(c.dtype(sum))) c.fail("Mean is defined on float tensors");
  const float n = static_cast<float>(c.num_inputs());
  c.set_output(0, c.num_inputs() == 1 ? sum : c.emit("div", {sum, c.constant(scalar_float(n))}));
}

// Min and Max of one or more inputs: a chain of selections,
// where(b < a, b, a) for Min, which is exact on floats and integers (a NaN
// operand gives NaN only in the first position, where ONNX Runtime always
// propagates it).
OperatorImporter select_chain(const char* compare) {
  return [compare](Ctx& c) {
    ValueRef y = c.input(0);
    for (size_t i = 1; i < c.num_inputs(); ++i) {
      const ValueRef b = c.input(i);
      y = c.emit("where", {c.emit(compare, {b, y}), b, y});
    }
    c.set_output(0, y);
  };
}

// Mod on integers: the truncated remainder a - b * (a / b) (fmod=1, C's %),
// or with fmod=0 the remainder with the divisor's sign (Python's %): a
// non-zero remainder whose sign differs from b's moves by b. Exact.
void import_mod(Ctx& c) {
  const ValueRef a = c.input(0), b = c.input(1);
  const bool fmod = c.attr_int("fmod", 0) != 0;
  if (is_floating(c.dtype(a))) {
    // Float Mod (fmod=1, C's fmod) has no exact form in the table's
    // operators; constants (shape arithmetic) are computed here.
    if (!fmod) c.fail("Mod of floats needs fmod=1");
    if (!c.constant_input(0) || !c.constant_input(1)) c.fail("Mod of float tensors is supported on constants only");
    const Ints out(broadcast_or_fail(c, c.shape(a), c.shape(b)));
    auto full = [&](ValueRef v) { return c.shape(v) == out ? v : c.emit("expand", {v}, {{"shape", out}}); };
    const ConstantValue* ea = c.constant_value(full(a));
    const ConstantValue* eb = c.constant_value(full(b));
    Tensor<float> r(out);
    for (size_t i = 0; i < r.data.size(); ++i) r.data[i] = std::fmod(ea->real.data[i], eb->real.data[i]);
    ++c.folded;
    ConstantValue m(std::move(r));
    m.dtype = c.dtype(a);  // fmod of two values of a type is exact in it
    c.set_output(0, c.constant(std::move(m)));
    return;
  }
  const ValueRef r = c.emit("sub", {a, c.emit("mul", {c.emit("div", {a, b}), b})});
  if (fmod) {
    c.set_output(0, r);
    return;
  }
  const ValueRef zero = c.constant(int_tensor({}, {0}));
  const ValueRef same_sign = c.emit("equal", {c.emit("less", {r, zero}), c.emit("less", {b, zero})});
  const ValueRef floored = c.emit("where", {same_sign, r, c.emit("add", {r, b})});
  c.set_output(0, c.emit("where", {c.emit("equal", {r, zero}), r, floored}));
}

// Gelu (opset 20) in the formula ONNX Runtime evaluates: x/2 (1 + erf(x/sqrt 2)),
// or with approximate="tanh", x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
void import_gelu(Ctx& c) {
  const ValueRef x = c.input(0);
  const std::string approximate = c.attr_string("approximate", "none");
  auto k = [&](double v) { return c.constant(scalar_float(static_cast<float>(v))); };
  ValueRef inner;
  if (approximate == "none") {
    inner = c.emit("erf", {c.emit("mul", {x, k(1.0 / std::numbers::sqrt2)})});
  } else if (approximate == "tanh") {
    const ValueRef cube = c.emit("mul", {c.emit("mul", {x, x}), x});
    const ValueRef poly = c.emit("add", {x, c.emit("mul", {cube, k(0.044715)})});
    inner = c.emit("tanh", {c.emit("mul", {poly, k(std::sqrt(2.0 / std::numbers::pi))})});
  } else {
    c.fail("approximate='" + approximate + "' is not 'none' or 'tanh'");
  }
  c.set_output(0, c.emit("mul", {c.emit("mul", {x, k(0.5)}), c.emit("add", {inner, k(1.0)})}));
}

// --- comparisons, cast, where --------------------------------------------------

void import_cast(Ctx& c) {
  const auto to = dtype_of_elem_type(static_cast<int32_t>(c.attr_int("to", 0)));
  if (!to) c.fail("casting to element type " + std::to_string(c.attr_int("to", 0)) + " is not supported");
  const ValueRef x = c.input(0);
  const ConstantValue* k = c.constant_input(0);
  if (k && k->is_float() && *to == DType::kInt64) {
    // ONNX leaves a float outside int64's range (and NaN) to the
    // implementation; folding follows ONNX Runtime on x86-64, which gives the
    // smallest int64 (a T5 encoder casts log(0) = -inf). The cast operator
    // itself refuses such values.
    Ints v(k->real.data.size());
    for (size_t i = 0; i < v.size(); ++i) {
      const float f = k->real.data[i];
      v[i] = f >= -9223372036854775808.0f && f < 9223372036854775808.0f ? static_cast<int64_t>(f)
                                                                        : std::numeric_limits<int64_t>::min();
    }
    ++c.folded;
    c.set_output(0, c.constant(int_tensor(k->shape(), std::move(v))));
    return;
  }
  c.set_output(0, c.dtype(x) == *to ? x : c.emit("cast", {x}, {{"to", std::string(dtype_name(*to))}}));
}

// CastLike: a Cast to the second input's element type (opset 15 on).
void import_cast_like(Ctx& c) {
  const ValueRef x = c.input(0);
  const DType to = c.dtype(c.input(1));
  c.set_output(0, c.dtype(x) == to ? x : c.emit("cast", {x}, {{"to", std::string(dtype_name(to))}}));
}

// Trilu: the upper (or lower) triangle of the last two axes from diagonal k,
// the rest zero: where(mask, x, 0) with a constant mask.
void import_trilu(Ctx& c) {
  const ValueRef x = c.input(0);
  const Shape& s = c.shape(x);
  if (s.size() < 2) c.fail("the input must have rank >= 2");
  const int64_t k = c.has_input(1) ? static_cast<int64_t>(c.constant_scalar(1, "k")) : 0;
  const bool upper = c.attr_int("upper", 1) != 0;
  const int64_t rows = s[s.size() - 2], cols = s.back();
  Ints mask(rows * cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) mask[i * cols + j] = upper ? j - i >= k : j - i <= k;
  const ValueRef zero =
      is_floating(c.dtype(x)) ? c.constant(scalar_float(0)) : c.constant(int_tensor({}, {0}, c.dtype(x)));
  c.set_output(0, c.emit("where", {c.constant(int_tensor({rows, cols}, mask, DType::kBool)), x, zero}));
}

void import_where(Ctx& c) { c.set_output(0, c.emit("where", {c.input(0), c.input(1), c.input(2)})); }

// And, Or and Xor of bool tensors as selections (exact):
// a and b = a ? b : false; a or b = a ? true : b; a xor b = a ? not b : b.
ValueRef bool_operand(Ctx& c, size_t i) {
  const ValueRef v = c.input(i);
  if (c.dtype(v) != DType::kBool) c.fail("operands must be bool, got " + std::string(dtype_name(c.dtype(v))));
  return v;
}

ValueRef bool_scalar(Ctx& c, bool value) { return c.constant(int_tensor({}, {value ? 1 : 0}, DType::kBool)); }

void import_and(Ctx& c) {
  c.set_output(0, c.emit("where", {bool_operand(c, 0), bool_operand(c, 1), bool_scalar(c, false)}));
}

void import_or(Ctx& c) {
  c.set_output(0, c.emit("where", {bool_operand(c, 0), bool_scalar(c, true), bool_operand(c, 1)}));
}

void import_xor(Ctx& c) {
  const ValueRef a = bool_operand(c, 0), b = bool_operand(c, 1);
  c.set_output(0, c.emit("where", {a, c.emit("logical_not", {b}), b}));
}

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

// 1-D windows (N x C x L) run as 2-D ones of height 1 (N x C x 1 x L): their
// attributes gain a leading entry for that axis.
struct Window {
  bool one_d = false;
  ValueRef x;  // the 4-D input
};

Window window_input(Ctx& c, const char* what) {
  const ValueRef x = c.input(0);
  const Shape& s = c.shape(x);
  if (s.size() == 3) return {true, c.reshape(x, {s[0], s[1], 1, s[2]})};
  if (s.size() != 4) c.fail(std::string("only 1-D and 2-D ") + what + " (3-D or 4-D input, NCL or NCHW) is supported");
  return {false, x};
}

// The 4-D result back in the input's rank.
ValueRef window_output(Ctx& c, const Window& w, ValueRef y) {
  if (!w.one_d) return y;
  const Shape& s = c.shape(y);
  return c.reshape(y, {s[0], s[1], s[3]});
}

// A per-axis attribute (strides, dilations, kernel_shape) for the 2-D window.
// A window attribute (kernel_shape, strides, dilations: each at least 1;
// output_padding: at least 0), checked here because the importer computes
// with it (pool_padding divides by the strides) before the operator's
// parameters are checked.
Ints two(Ctx& c, const Window& w, const char* name, Ints def, int64_t least = 1) {
  if (!c.has_attr(name)) return def;
  Ints v = c.attr_ints(name);
  if (v.size() != (w.one_d ? 1u : 2u))
    c.fail(std::string(name) + " must have " + (w.one_d ? "1 entry for a 1-D" : "2 entries for a 2-D") + " window");
  for (int64_t e : v)
    if (e < least)
      c.fail(std::string(name) + " has " + std::to_string(e) + "; each must be at least " + std::to_string(least));
  if (w.one_d) v.insert(v.begin(), 1);
  return v;
}

// The explicit pads attribute as top, left, bottom, right.
Ints explicit_pads(Ctx& c, const Window& w) {
  Ints pads = c.attr_ints("pads", Ints(w.one_d ? 2 : 4, 0));
  if (pads.size() != (w.one_d ? 2u : 4u))
    c.fail(std::string("pads must have ") + (w.one_d ? "2 entries for a 1-D" : "4 entries for a 2-D") + " window");
  if (w.one_d) return {0, pads[0], 0, pads[1]};
  return pads;  // ONNX order x1_begin, x2_begin, x1_end, x2_end = top, left, bottom, right
}

// The `pad` parameter for ONNX auto_pad/pads on a 2-D window.
ParamValue window_padding(Ctx& c, const Window& w, const Ints& kernel, const Ints& strides, const Ints& dilations) {
  const Shape& x = c.shape(w.x);
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
  return explicit_pads(c, w);
}

void import_conv(Ctx& c) {
  const Window win = window_input(c, "convolution");
  const ValueRef x = win.x;
  ValueRef w = c.input(1);
  if (win.one_d) {
    const Shape& s = c.shape(w);
    if (s.size() != 3) c.fail("a 1-D convolution's weight must have rank 3, got " + shape_to_string(s));
    w = c.reshape(w, {s[0], s[1], 1, s[2]});
  }
  const Shape& ws = c.shape(w);
  if (ws.size() != 4) c.fail("a 2-D convolution's weight must have rank 4, got " + shape_to_string(ws));
  const Ints strides = two(c, win, "strides", {1, 1}), dilations = two(c, win, "dilations", {1, 1});
  const int64_t group = c.attr_int("group", 1);
  if (ws[1] * group != c.shape(x)[1])
    c.fail("group " + std::to_string(group) + " does not match input channels " + std::to_string(c.shape(x)[1]) +
           " and weight " + shape_to_string(ws));
  ParamValue pad = window_padding(c, win, {ws[2], ws[3]}, strides, dilations);
  // A 1 x 1 kernel reading no padding is imported as 'same', the form the
  // rules are generated in, so that they match without first spending
  // search steps on rewriting the padding.
  if (pointwise_without_padding(ws, pad)) pad = std::string("same");
  ValueRef y = c.emit("conv2d", {x, w}, {{"stride", strides}, {"pad", pad}, {"dilation", dilations}});
  if (c.has_input(2)) y = c.emit("add", {y, c.reshape(c.input(2), {1, ws[0], 1, 1})});
  c.set_output(0, window_output(c, win, y));
}

// ConvTranspose as a convolution: the input spread out by the strides (s - 1
// zeros after each element), padded by (k - 1) d minus the pads (plus
// output_padding at the end), convolved at stride 1 with the kernel flipped
// and its two channel axes swapped per group. Negative padding (pads larger
// than the kernel's extent) crops the result instead.
void import_conv_transpose(Ctx& c) {
  const Window win = window_input(c, "transposed convolution");
  ValueRef x = win.x, w = c.input(1);
  if (win.one_d) {
    const Shape& s = c.shape(w);
    if (s.size() != 3) c.fail("a 1-D transposed convolution's weight must have rank 3, got " + shape_to_string(s));
    w = c.reshape(w, {s[0], s[1], 1, s[2]});
  }
  const Shape xs = c.shape(x), ws = c.shape(w);
  if (ws.size() != 4) c.fail("the weight must have rank 4, got " + shape_to_string(ws));
  const int64_t group = c.attr_int("group", 1);
  if (group < 1 || xs[1] != ws[0] || ws[0] % group != 0)
    c.fail("input channels " + std::to_string(xs[1]) + " do not match weight " + shape_to_string(ws) + " with group " +
           std::to_string(group));
  if (c.has_attr("output_shape")) c.fail("output_shape is not supported (give pads and output_padding)");
  const Ints strides = two(c, win, "strides", {1, 1}), dilations = two(c, win, "dilations", {1, 1});
  const Ints out_pad = two(c, win, "output_padding", {0, 0}, 0);
  const Ints kernel{ws[2], ws[3]};
  // Pads as top, left, bottom, right.
  Ints pads;
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    pads = explicit_pads(c, win);
  } else if (auto_pad == "VALID") {
    pads = {0, 0, 0, 0};
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {  // output = input * stride
    pads.assign(4, 0);
    for (int a = 0; a < 2; ++a) {
      const int64_t total = std::max<int64_t>(
          0, strides[a] * (xs[2 + a] - 1) + out_pad[a] + (kernel[a] - 1) * dilations[a] + 1 - xs[2 + a] * strides[a]);
      pads[auto_pad == "SAME_UPPER" ? a : a + 2] = total / 2;
      pads[auto_pad == "SAME_UPPER" ? a + 2 : a] = total - total / 2;
    }
  } else {
    c.fail("auto_pad '" + auto_pad + "' is not supported");
  }
  // Spread: N C H W -> N C H 1 W 1 -> padded to N C H sh W sw -> N C H*sh W*sw.
  const Shape spread_shape{xs[0], xs[1], xs[2] * strides[0], xs[3] * strides[1]};
  if (strides != Ints{1, 1}) {
    ValueRef t = c.reshape(x, {xs[0], xs[1], xs[2], 1, xs[3], 1});
    t = c.emit("pad", {t},
               {{"pads", Ints{0, 0, 0, 0, 0, 0, 0, 0, 0, strides[0] - 1, 0, strides[1] - 1}}, {"value", 0.0}});
    x = c.reshape(t, spread_shape);
  }
  // The kernel: [C, O/g, kh, kw] -> [g, C/g, O/g, kh, kw] -> [g, O/g, C/g, kh, kw] -> [O, C/g, kh, kw], flipped.
  const int64_t cin = ws[0] / group, cout = ws[1];
  ValueRef k = c.reshape(w, {group, cin, cout, kernel[0], kernel[1]});
  k = c.emit("transpose", {k}, {{"perm", Ints{0, 2, 1, 3, 4}}});
  k = c.reshape(k, {group * cout, cin, kernel[0], kernel[1]});
  k = c.emit("slice", {k},
             {{"starts", Ints{0, 0, kernel[0] - 1, kernel[1] - 1}},
              {"ends", Ints{group * cout, cin, -1, -1}},
              {"steps", Ints{1, 1, -1, -1}}});
  // Padding of the spread input: begin (k-1)d - pad_begin, end (k-1)d - pad_end
  // + output_padding - (s-1) (the spread's trailing zeros count toward it).
  Ints conv_pads(4), crop(4);
  for (int a = 0; a < 2; ++a) {
    const int64_t extent = (kernel[a] - 1) * dilations[a];
    const int64_t begin = extent - pads[a], end = extent - pads[a + 2] + out_pad[a] - (strides[a] - 1);
    conv_pads[a] = std::max<int64_t>(begin, 0);
    conv_pads[a + 2] = std::max<int64_t>(end, 0);
    crop[a] = std::max<int64_t>(-begin, 0);
    crop[a + 2] = std::max<int64_t>(-end, 0);
  }
  ValueRef y = c.emit("conv2d", {x, k}, {{"pad", conv_pads}, {"dilation", dilations}});
  if (crop != Ints{0, 0, 0, 0}) {
    const Shape ys = c.shape(y);
    if (crop[0] + crop[2] >= ys[2] || crop[1] + crop[3] >= ys[3]) c.fail("the pads leave an empty output");
    y = c.emit("slice", {y},
               {{"starts", Ints{0, 0, crop[0], crop[1]}},
                {"ends", Ints{ys[0], ys[1], ys[2] - crop[2], ys[3] - crop[3]}},
                {"steps", Ints{1, 1, 1, 1}}});
  }
  if (c.has_input(2)) y = c.emit("add", {y, c.reshape(c.input(2), {1, group * cout, 1, 1})});
  c.set_output(0, window_output(c, win, y));
}

// ONNX's ceil_mode: extra end padding so that floor rounding gives the
// ceiling, keeping PyTorch's (and ONNX Runtime's) rule that the last window
// starts inside the input or its begin padding.
ParamValue pool_padding(Ctx& c, const Window& win, const Ints& kernel, const Ints& strides, const Ints& dilations,
                        bool count_pad) {
  ParamValue pad = window_padding(c, win, kernel, strides, dilations);
  if (c.attr_int("ceil_mode", 0) == 0) return pad;
  auto* explicit_pads = std::get_if<Ints>(&pad);
  if (!explicit_pads) return pad;  // auto_pad ignores ceil_mode
  const Shape& x = c.shape(win.x);
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

OperatorImporter pool(OpKind kind) {
  return [kind](Ctx& c) {
    const Window win = window_input(c, "pooling");
    if (c.outputs().size() > 1 && !c.node().output(1).empty()) c.fail("the Indices output is not supported");
    if (!c.has_attr("kernel_shape")) c.fail("kernel_shape is required");
    const Ints kernel = two(c, win, "kernel_shape", {}), strides = two(c, win, "strides", {1, 1});
    const Ints dilations = two(c, win, "dilations", {1, 1});
    const bool avg = kind == OpKind::kAvgpool;
    if (avg && dilations != Ints{1, 1}) c.fail("dilated average pooling is not supported");
    const bool count_pad = avg && c.attr_int("count_include_pad", 0) != 0;
    std::vector<std::pair<std::string, ParamValue>> params{
        {"kernel", kernel}, {"stride", strides}, {"pad", pool_padding(c, win, kernel, strides, dilations, count_pad)}};
    if (avg) params.emplace_back("include_pad", int64_t{count_pad});
    else params.emplace_back("dilation", dilations);
    c.set_output(0, window_output(c, win, c.emit(op_def(kind).name, {win.x}, params)));
  };
}

OperatorImporter global_pool(const char* op) {
  return [op](Ctx& c) {
    const Window win = window_input(c, "pooling");
    const Shape& s = c.shape(win.x);
    c.set_output(
        0, window_output(c, win, c.emit(op, {win.x}, {{"kernel", Ints{s[2], s[3]}}, {"pad", std::string("valid")}})));
  };
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

// Einsum where it is a product: each operand's letters that nothing else
// reads are summed first (reduce_sum), then operands are contracted two at a
// time as one batch_matmul (batch letters, left letters, contracted letters,
// right letters, after transposes and reshapes), and the result is
// transposed to the output's order. A letter repeated within an operand
// takes the diagonal first (broadcast_and_diagonals), axes of size 1
// broadcast; a letter repeated in the output is an error.
struct Labelled {
  ValueRef v;
  std::string labels;  // one letter per axis
};

ValueRef transpose_to(Ctx& c, ValueRef v, const std::string& from, const std::string& to) {
  Ints perm;
  for (char l : to) perm.push_back(static_cast<int64_t>(from.find(l)));
  Ints identity(perm.size());
  std::iota(identity.begin(), identity.end(), 0);
  return perm == identity ? v : c.emit("transpose", {v}, {{"perm", perm}});
}

// Sums the axes of `t` whose letters are not in `keep`.
Labelled sum_unused(Ctx& c, Labelled t, const std::string& keep) {
  Ints axes;
  std::string left;
  for (size_t i = 0; i < t.labels.size(); ++i) {
    if (keep.find(t.labels[i]) == std::string::npos) axes.push_back(static_cast<int64_t>(i));
    else left += t.labels[i];
  }
  if (axes.empty()) return t;
  return {c.emit("reduce_sum", {t.v}, {{"axes", axes}, {"keepdims", int64_t{0}}}), left};
}

Labelled contract(Ctx& c, const Labelled& a, const Labelled& b, const std::string& keep,
                  std::map<char, int64_t>& size) {
  std::string batch, left, inner, right;
  for (char l : a.labels) {
    const bool in_b = b.labels.find(l) != std::string::npos, kept = keep.find(l) != std::string::npos;
    (in_b ? (kept ? batch : inner) : left) += l;
  }
  for (char l : b.labels)
    if (a.labels.find(l) == std::string::npos) right += l;
  auto product = [&](const std::string& ls) {
    int64_t n = 1;
    for (char l : ls) n *= size.at(l);
    return n;
  };
  const int64_t nb = product(batch), nl = product(left), nk = product(inner), nr = product(right);
  ValueRef y;
  if (batch.empty()) {
    y = c.emit("matmul", {c.reshape(transpose_to(c, a.v, a.labels, left + inner), {nl, nk}),
                          c.reshape(transpose_to(c, b.v, b.labels, inner + right), {nk, nr})});
  } else {
    y = c.emit("batch_matmul", {c.reshape(transpose_to(c, a.v, a.labels, batch + left + inner), {nb, nl, nk}),
                                c.reshape(transpose_to(c, b.v, b.labels, batch + inner + right), {nb, nk, nr})});
  }
  const std::string labels = batch + left + right;
  Shape shape;
  for (char l : labels) shape.push_back(size.at(l));
  if (shape.empty())  // a scalar (reshape has no rank-0 form): the sum of the one element
    return {c.emit("reduce_sum", {y}, {{"axes", Ints{0, 1}}, {"keepdims", int64_t{0}}}), labels};
  return {c.reshape(y, shape), labels};
}

// An operand's axes of size 1 whose letters are larger elsewhere are
// expanded (broadcasting), and each letter repeated within the operand is
// replaced by its diagonal: the repeated axes moved last and flattened,
// then the elements i * (1 + n + ... + n^(k-1)) gathered (a trace is the sum
// of a diagonal, which the caller makes).
Labelled broadcast_and_diagonals(Ctx& c, Labelled t, const std::map<char, int64_t>& size) {
  Shape full;
  for (char l : t.labels) full.push_back(size.at(l));
  if (full != c.shape(t.v)) t.v = c.emit("expand", {t.v}, {{"shape", Ints(full)}});
  for (size_t d = 0; d < t.labels.size(); ++d) {
    const char l = t.labels[d];
    if (t.labels.find(l, d + 1) == std::string::npos) continue;
    std::string rest;  // the other letters, in order
    int copies = 0;
    for (char m : t.labels) {
      if (m == l) ++copies;
      else rest += m;
    }
    const int64_t n = size.at(l);
    // Transpose: the other letters in order, then every copy of l.
    Ints perm;
    for (size_t k = 0; k < t.labels.size(); ++k)
      if (t.labels[k] != l) perm.push_back(static_cast<int64_t>(k));
    for (size_t k = 0; k < t.labels.size(); ++k)
      if (t.labels[k] == l) perm.push_back(static_cast<int64_t>(k));
    Ints identity(perm.size());
    std::iota(identity.begin(), identity.end(), 0);
    ValueRef v = perm == identity ? t.v : c.emit("transpose", {t.v}, {{"perm", perm}});
    Shape flat;
    for (char m : rest) flat.push_back(size.at(m));
    int64_t cells = 1, stride = 0;
    for (int k = 0; k < copies; ++k) {
      stride += cells;
      cells *= n;
    }
    flat.push_back(cells);
    Ints index(n);
    for (int64_t i = 0; i < n; ++i) index[i] = i * stride;
    v = c.emit("gather", {c.reshape(v, flat), c.constant(int_tensor({n}, index))},
               {{"axis", static_cast<int64_t>(rest.size())}});
    t = {v, rest + l};
    d = static_cast<size_t>(-1);  // the labels changed: look again from the start
  }
  return t;
}

void import_einsum(Ctx& c) {
  std::string eq;
  for (char ch : c.attr_string("equation", ""))
    if (ch != ' ') eq += ch;
  const size_t arrow = eq.find("->");
  std::vector<std::string> terms;
  {
    const std::string lhs = eq.substr(0, arrow);
    size_t pos = 0;
    for (size_t comma; (comma = lhs.find(',', pos)) != std::string::npos; pos = comma + 1)
      terms.push_back(lhs.substr(pos, comma - pos));
    terms.push_back(lhs.substr(pos));
  }
  if (terms.size() != c.num_inputs())
    c.fail("equation '" + eq + "' has " + std::to_string(terms.size()) + " operands, the node " +
           std::to_string(c.num_inputs()));
  // An ellipsis becomes placeholder labels ('0'...'7'), right-aligned.
  int64_t ellipsis_rank = 0;
  for (size_t i = 0; i < terms.size(); ++i)
    if (terms[i].find("...") != std::string::npos)
      ellipsis_rank = std::max<int64_t>(ellipsis_rank, c.rank(c.input(i)) - static_cast<int64_t>(terms[i].size() - 3));
  if (ellipsis_rank > 8) c.fail("an ellipsis of more than 8 axes");
  auto expand = [&](const std::string& term, int64_t rank) {
    const size_t at = term.find("...");
    if (at == std::string::npos) return term;
    std::string dots;
    for (int64_t k = ellipsis_rank - rank; k < ellipsis_rank; ++k) dots += static_cast<char>('0' + k);
    return term.substr(0, at) + dots + term.substr(at + 3);
  };
  std::map<char, int64_t> size;
  std::vector<Labelled> operands;
  std::string all;
  for (size_t i = 0; i < terms.size(); ++i) {
    const ValueRef v = c.input(i);
    const int64_t named = static_cast<int64_t>(terms[i].size()) - (terms[i].find("...") != std::string::npos ? 3 : 0);
    const std::string labels = expand(terms[i], c.rank(v) - named);
    if (static_cast<int64_t>(labels.size()) != c.rank(v))
      c.fail("operand " + std::to_string(i) + " '" + terms[i] + "' does not fit its shape " +
             shape_to_string(c.shape(v)));
    for (size_t d = 0; d < labels.size(); ++d) {
      const char l = labels[d];
      if (!std::isalpha(static_cast<unsigned char>(l)) && !std::isdigit(static_cast<unsigned char>(l)))
        c.fail("equation '" + eq + "' has an unexpected character '" +
               labels.substr(d, util::utf8_char_bytes(labels, d)) + "'");
      const int64_t n = c.shape(v)[d];
      auto [it, fresh] = size.emplace(l, n);
      if (fresh || it->second == n) continue;
      // A letter of size 1 in one place broadcasts (ellipses, NumPy's rule);
      // within one operand (a diagonal) the sizes must be equal.
      if (labels.find(l) != d || (it->second != 1 && n != 1))
        c.fail("the letter '" + std::string(1, l) + "' has sizes " + std::to_string(it->second) + " and " +
               std::to_string(n));
      it->second = std::max(it->second, n);
    }
    operands.push_back({v, labels});
    all += labels;
  }
  for (Labelled& t : operands) t = broadcast_and_diagonals(c, t, size);
  std::string out;
  if (arrow != std::string::npos) {
    out = expand(eq.substr(arrow + 2), ellipsis_rank);
  } else {  // implicit: the ellipsis, then the letters used once, in order
    for (int64_t k = 0; k < ellipsis_rank; ++k) out += static_cast<char>('0' + k);
    std::string once;
    for (char l : all)
      if (std::isalpha(static_cast<unsigned char>(l)) && std::count(all.begin(), all.end(), l) == 1) once += l;
    std::sort(once.begin(), once.end());
    out += once;
  }
  for (size_t d = 0; d < out.size(); ++d) {
    if (!size.count(out[d])) c.fail("the output letter '" + std::string(1, out[d]) + "' names no input axis");
    if (out.find(out[d]) != d) c.fail("the output letter '" + std::string(1, out[d]) + "' repeats; not supported");
  }
  // What must survive operand k: the output's letters and those of later operands.
  auto needed_after = [&](size_t k) {
    std::string keep = out;
    for (size_t j = k + 1; j < operands.size(); ++j) keep += operands[j].labels;
    return keep;
  };
  Labelled acc = sum_unused(c, operands[0], needed_after(0) + (operands.size() > 1 ? operands[1].labels : ""));
  for (size_t k = 1; k < operands.size(); ++k) {
    const std::string keep = needed_after(k);
    const Labelled b = sum_unused(c, operands[k], keep + acc.labels);
    acc = sum_unused(c, contract(c, acc, b, keep, size), keep);
  }
  acc = sum_unused(c, acc, out);
  c.set_output(0, transpose_to(c, acc.v, acc.labels, out));
}

// --- reductions -------------------------------------------------------------------

// A Reduce* node's axes (from the attribute before `input_since`, else
// input 1; sorted, normalised) and keepdims; nullopt when
// noop_with_empty_axes leaves the input as it is.
std::optional<std::vector<std::pair<std::string, ParamValue>>> reduce_params(Ctx& c, int64_t input_since) {
  const int64_t rank = c.rank(c.input(0));
  Ints axes = c.opset() < input_since ? c.attr_ints("axes") : (c.has_input(1) ? c.constant_ints(1, "axes") : Ints{});
  if (axes.empty()) {
    if (c.opset() >= input_since && c.attr_int("noop_with_empty_axes", 0)) return std::nullopt;
    axes.resize(rank);
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (int64_t& a : axes) a = c.axis(a, rank);
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return std::vector<std::pair<std::string, ParamValue>>{
      {"axes", axes}, {"keepdims", c.attr_int("keepdims", 1) != 0 ? int64_t{1} : int64_t{0}}};
}

// A reduction: `pre` applied to each element, reduced by `op`, then `post`
// (ReduceL2 = sqrt(reduce_sum(x * x))); both elementwise parts apply when
// noop_with_empty_axes skips the reduction.
void import_reduce(Ctx& c, const char* op, int64_t input_since, const std::function<ValueRef(ValueRef)>& pre = {},
                   const std::function<ValueRef(ValueRef)>& post = {}) {
  const auto params = reduce_params(c, input_since);
  ValueRef y = pre ? pre(c.input(0)) : c.input(0);
  if (params) y = c.emit(op, {y}, *params);
  c.set_output(0, post ? post(y) : y);
}

OperatorImporter reduce(const char* op, int64_t input_since) {
  return [op, input_since](Ctx& c) { import_reduce(c, op, input_since); };
}

void import_reduce_l1(Ctx& c) {
  import_reduce(c, "reduce_sum", 18, [&](ValueRef x) { return c.emit("abs", {x}); });
}

void import_reduce_l2(Ctx& c) {
  import_reduce(
      c, "reduce_sum", 18,
      [&](ValueRef x) {
        return c.emit("mul", {x, x});
      },
      [&](ValueRef y) { return c.emit("sqrt", {y}); });
}

void import_reduce_sum_square(Ctx& c) {
  import_reduce(c, "reduce_sum", 18, [&](ValueRef x) { return c.emit("mul", {x, x}); });
}

void import_reduce_log_sum(Ctx& c) {
  import_reduce(c, "reduce_sum", 18, {}, [&](ValueRef y) { return c.emit("log", {y}); });
}

// log(sum(exp(x))) as ONNX Runtime computes it, shifted by the maximum so
// that exp cannot overflow: log(sum(exp(x - m))) + m.
void import_reduce_log_sum_exp(Ctx& c) {
  const ValueRef x = c.input(0);
  auto params = reduce_params(c, 18);
  if (!params) {
    c.set_output(0, x);  // log(exp(x))
    return;
  }
  const ParamValue keepdims = params->back().second;
  params->back().second = int64_t{1};
  const ValueRef m = c.emit("reduce_max", {x}, *params);
  const ValueRef sum = c.emit("reduce_sum", {c.emit("exp", {c.emit("sub", {x, m})})}, *params);
  const ValueRef y = c.emit("add", {c.emit("log", {sum}), m});
  if (std::get<int64_t>(keepdims) != 0) {
    c.set_output(0, y);
    return;
  }
  Shape out;
  const Ints& axes = std::get<Ints>(params->front().second);
  for (int64_t d = 0; d < c.rank(x); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) out.push_back(c.shape(x)[d]);
  c.set_output(0, c.reshape(y, out));
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
  // The spec forbids an axis listed twice (after negative axes are counted
  // from the end); Unsqueeze would otherwise insert past the shape's end.
  Ints sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    c.fail("axes list axis " + std::to_string(*std::adjacent_find(sorted.begin(), sorted.end())) + " twice");
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
  if (c.rank(x) == 0) c.fail("input is a scalar (rank 0): nothing to split");
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
  if (rank == 0) c.fail("input is a scalar (rank 0): nothing to slice");  // (found by fuzz_onnx_import)
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
    if (rank == 0) c.fail("input is a scalar (rank 0): no axes to pad");
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

// CumSum as a prefix sum by doubling: y += y shifted by 1, 2, 4, ... along
// the axis (a slice padded with zeros in front), about log2(n) rounds of
// slice, pad and add; exact on integers (RoBERTa numbers its positions by a
// cumulative sum of the token mask) and a reordered sum on floats.
// `exclusive` shifts by one more; `reverse` sums from the end (reversed
// before and after by a slice of step -1).
void import_cumsum(Ctx& c) {
  ValueRef x = c.input(0);
  const Shape s = c.shape(x);
  const int64_t rank = c.rank(x);
  if (rank == 0) c.fail("input is a scalar (rank 0): no axis to sum along");
  const Ints axis_value = c.constant_ints(1, "axis");
  if (axis_value.size() != 1) c.fail("axis must hold one value");
  const int64_t axis = c.axis(axis_value[0], rank), n = s[axis];
  const bool reverse = c.attr_int("reverse", 0) != 0, exclusive = c.attr_int("exclusive", 0) != 0;
  Ints begin(rank, 0), full(s.begin(), s.end()), steps(rank, 1);
  auto flip = [&](ValueRef v) {
    Ints starts = begin, ends = full, st = steps;
    starts[axis] = n - 1;
    ends[axis] = -1;
    st[axis] = -1;
    return c.emit("slice", {v}, {{"starts", starts}, {"ends", ends}, {"steps", st}});
  };
  // v shifted toward the end of the axis by k, zeros in front.
  auto shift = [&](ValueRef v, int64_t k) {
    Ints ends = full, pads(2 * rank, 0);
    ends[axis] = n - k;
    pads[axis] = k;
    const ValueRef kept = c.emit("slice", {v}, {{"starts", begin}, {"ends", ends}, {"steps", steps}});
    return c.emit("pad", {kept}, {{"pads", pads}, {"value", 0.0}});
  };
  if (n == 0) {
    c.set_output(0, x);
    return;
  }
  if (reverse) x = flip(x);
  ValueRef y = x;
  for (int64_t k = 1; k < n; k *= 2) y = c.emit("add", {y, shift(y, k)});
  if (exclusive) y = shift(y, 1);
  c.set_output(0, reverse ? flip(y) : y);
}

// The row-major offset into the first k axes of `ds` of the u-th index
// tuple of ScatterND's or GatherND's constant indices (negative indices
// count from the end); an index out of range is an error naming it.
int64_t nd_offset(Ctx& c, const ConstantValue& indices, const Shape& ds, int64_t k, int64_t u) {
  int64_t offset = 0;
  for (int64_t j = 0; j < k; ++j) {
    int64_t i = indices.ints.data[u * k + j];
    if (i < 0) i += ds[j];
    if (i < 0 || i >= ds[j])
      c.fail("index " + std::to_string(indices.ints.data[u * k + j]) + " out of range for axis " + std::to_string(j) +
             " of size " + std::to_string(ds[j]));
    offset = offset * ds[j] + i;
  }
  return offset;
}

// ScatterND (reduction none) with constant indices: each output element is
// either an element of `updates` (where an index writes it) or of `data`, so
// out = where(written, gather(updates flattened, source), data) with the
// mask `written` and the map `source` computed here. Swin's shifted-window
// attention mask is built this way (then everything is constant and folds).
// Repeated indices: the last write wins, as in ONNX Runtime.
void import_scatter_nd(Ctx& c) {
  const ValueRef data = c.input(0), updates = c.input(2);
  if (c.attr_string("reduction", "none") != "none")
    c.fail("reduction '" + c.attr_string("reduction", "") + "' is not supported");
  const ConstantValue* indices = c.constant_input(1);
  if (!indices || indices->is_float()) c.fail("indices must be a constant int64 tensor");
  const Shape& ds = c.shape(data);
  const Shape& is = indices->shape();
  const int64_t rank = c.rank(data);
  if (is.empty() || is.back() < 1 || is.back() > rank)
    c.fail("indices " + shape_to_string(is) + " do not index data " + shape_to_string(ds));
  const int64_t k = is.back();
  Shape expected(is.begin(), is.end() - 1);
  expected.insert(expected.end(), ds.begin() + k, ds.end());
  if (c.shape(updates) != expected)
    c.fail("updates " + shape_to_string(c.shape(updates)) + " should be " + shape_to_string(expected));
  const int64_t slice = num_elements(Shape(ds.begin() + k, ds.end()));
  const int64_t count = num_elements(Shape(is.begin(), is.end() - 1));
  c.check_elements(ds);
  Ints source(num_elements(ds), 0), written(num_elements(ds), 0);
  for (int64_t u = 0; u < count; ++u) {
    const int64_t offset = nd_offset(c, *indices, ds, k, u);
    for (int64_t e = 0; e < slice; ++e) {
      source[offset * slice + e] = u * slice + e;
      written[offset * slice + e] = 1;
    }
  }
  if (count * slice == 0) {
    c.set_output(0, data);
    return;
  }
  const ValueRef flat = c.reshape(updates, {count * slice});
  const ValueRef picked =
      c.emit("gather", {flat, c.constant(int_tensor(ds, std::move(source)))}, {{"axis", int64_t{0}}});
  c.set_output(0, c.emit("where", {c.constant(int_tensor(ds, std::move(written), DType::kBool)), picked, data}));
}

void import_gather(Ctx& c) {
  const ValueRef data = c.input(0);
  c.set_output(0, c.emit("gather", {data, c.input(1)}, {{"axis", c.axis(c.attr_int("axis", 0), c.rank(data))}}));
}

// GatherND (batch_dims 0) with constant indices: the first k axes of data
// (k = the last dimension of indices) flattened into one, then a `gather`
// along it with the flat positions computed here. The dynamo exporter's
// attention-mask indexing (aten.index) is written this way.
void import_gather_nd(Ctx& c) {
  const ValueRef data = c.input(0);
  if (c.attr_int("batch_dims", 0) != 0) c.fail("batch_dims other than 0 is not supported");
  const ConstantValue* indices = c.constant_input(1);
  if (!indices || indices->is_float()) c.fail("indices must be a constant int64 tensor");
  const Shape& ds = c.shape(data);
  const Shape& is = indices->shape();
  if (is.empty() || is.back() < 1 || is.back() > c.rank(data))
    c.fail("indices " + shape_to_string(is) + " do not index data " + shape_to_string(ds));
  const int64_t k = is.back();
  const Shape rest(ds.begin() + k, ds.end());
  const Shape picked_shape(is.begin(), is.end() - 1);
  const int64_t count = num_elements(picked_shape);
  Ints flat_index(count);
  for (int64_t u = 0; u < count; ++u) {
    const int64_t offset = nd_offset(c, *indices, ds, k, u);
    flat_index[u] = offset;
  }
  Shape flat_shape{num_elements(Shape(ds.begin(), ds.begin() + k))};
  flat_shape.insert(flat_shape.end(), rest.begin(), rest.end());
  const ValueRef flat = c.reshape(data, flat_shape);
  c.set_output(
      0, c.emit("gather", {flat, c.constant(int_tensor(picked_shape, std::move(flat_index)))}, {{"axis", int64_t{0}}}));
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
  if (fill.is_float()) {
    ConstantValue filled(Tensor<float>(shape, std::vector<float>(n, fill.real.data.at(0))));
    filled.dtype = fill.dtype;
    c.set_output(0, c.constant(std::move(filled)));
  } else {
    c.set_output(0, c.constant(int_tensor(shape, Ints(n, fill.ints.data.at(0)), fill.dtype)));
  }
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
  const ConstantValue* limit_value = c.constant_input(1);
  const ConstantValue* delta_value = c.constant_input(2);
  if (!start || !limit_value || !delta_value) c.fail("start, limit and delta must be constants");
  // ONNX gives the three one type T; mixing them (an int start, a float limit)
  // has no defined element type, and the integer path below reads delta's ints.
  if (limit_value->dtype != start->dtype || delta_value->dtype != start->dtype)
    c.fail("start, limit and delta must have the same type");
  const double s = c.constant_scalar(0, "start"), limit = c.constant_scalar(1, "limit"), delta = c.constant_scalar(2, "delta");
  if (delta == 0) c.fail("delta is 0");
  double count = std::ceil((limit - s) / delta);
  if (!(count > 0)) count = 0;   // an empty range; NaN (an infinite or NaN bound) is empty too
  c.check_element_count(count);  // before allocating
  // Without import limits the count is still bounded by what an index can hold.
  if (!(count < 0x1p62)) c.fail("a range of " + std::to_string(count) + " elements is too large");
  const int64_t n = static_cast<int64_t>(count);
  if (start->is_float()) {
    std::vector<float> v(n);
    for (int64_t i = 0; i < n; ++i)
      v[i] = round_to_dtype(start->dtype, static_cast<float>(s + static_cast<double>(i) * delta));
    ConstantValue range(Tensor<float>({n}, v));
    range.dtype = start->dtype;
    c.set_output(0, c.constant(std::move(range)));
  } else {
    Ints v(n);
    const int64_t first = start->ints.data.at(0), step = delta_value->ints.data.at(0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t offset = 0;  // the count is computed in doubles, so the last element may step past int64
      if (__builtin_mul_overflow(i, step, &offset) || __builtin_add_overflow(first, offset, &v[i]))
        c.fail("the range overflows int64");
    }
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
      {"Mod", import_mod},
      {"Sum", import_sum},
      {"Mean", import_mean},
      {"Min", select_chain("less")},
      {"Max", select_chain("greater")},
      {"Gelu", import_gelu},
      {"Sqrt", unary("sqrt")},
      {"Reciprocal", import_reciprocal},
      {"Exp", unary("exp")},
      {"Log", unary("log")},
      {"Neg", unary("neg")},
      {"Abs", unary("abs")},
      {"Erf", unary("erf")},
      {"Cos", unary("cos")},
      {"Sin", unary("sin")},
      {"Softplus", unary("softplus")},
      {"Floor", unary("floor")},
      {"Ceil", unary("ceil")},
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
      {"ConvTranspose", import_conv_transpose},
      {"Gemm", import_gemm},
      {"MatMul", import_matmul},
      {"Einsum", import_einsum},
      {"MaxPool", pool(OpKind::kMaxpool)},
      {"AveragePool", pool(OpKind::kAvgpool)},
      {"GlobalAveragePool", global_pool("avgpool")},
      {"GlobalMaxPool", global_pool("maxpool")},
      {"ReduceMean", reduce("reduce_mean", 18)},
      {"ReduceSum", reduce("reduce_sum", 13)},
      {"ReduceMax", reduce("reduce_max", 18)},
      {"ReduceMin", reduce("reduce_min", 18)},
      {"ReduceLogSumExp", import_reduce_log_sum_exp},
      {"ReduceL1", import_reduce_l1},
      {"ReduceL2", import_reduce_l2},
      {"ReduceSumSquare", import_reduce_sum_square},
      {"ReduceLogSum", import_reduce_log_sum},
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
      {"And", import_and},
      {"Or", import_or},
      {"Xor", import_xor},
      {"Equal", binary("equal")},
      {"Less", binary("less")},
      {"Greater", binary("greater")},
      {"LessOrEqual", binary("less_equal")},
      {"GreaterOrEqual", binary("greater_equal")},
      {"IsNaN", unary("is_nan")},
      {"Not", unary("logical_not")},
      {"Cast", import_cast},
      {"CastLike", import_cast_like},
      {"Trilu", import_trilu},
      {"Identity", import_identity},
      {"Dropout", import_dropout},
      {"Constant", import_constant},
      {"ConstantOfShape", import_constant_of_shape},
      {"Shape", import_shape},
      {"Range", import_range},
      {"Pad", import_pad},
      {"Resize", import_resize},
      {"CumSum", import_cumsum},
      {"ScatterND", import_scatter_nd},
      {"GatherND", import_gather_nd},
  };
  return table;
}

}  // namespace tgr::onnx_io
