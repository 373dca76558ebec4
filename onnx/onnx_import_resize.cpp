// ONNX Resize (opsets 11 to 19) where the output shape is static: modes
// nearest, linear and cubic, every coordinate transformation but
// tf_crop_and_resize.
//
// Resize is a lowering, not an operator of the table. Along one axis it
// reads, for each output position, one input position (nearest) or a
// weighted sum of two (linear) or four (cubic); positions and weights depend
// on the shapes and attributes only, so they are known at import. Each
// resized axis becomes `gather` with constant indices, times a constant
// weight per output position, summed over the taps: `gather`, `mul` and
// `add`, which the interpreter, the GPU runtime (no new kernel), the
// exporter and the rules already cover. As an operator, Resize would need
// its own kernels in three domains, a GPU kernel, axioms (or an exclusion
// from `verify --check-axioms`) and export code, for a computation these
// three operators state exactly. Linear and cubic resizing are separable, so
// resizing axis by axis equals ONNX's N-linear (N-cubic) interpolation up to
// the rounding order of the sum (ONNX Runtime sums the 2-D taps in one
// expression).
//
// Positions and weights follow ONNX Runtime's CPU kernel (upsamplebase.h,
// upsample.cc), computed in float as it does: the coordinate
// transformations, the nearest-mode rounding, linear's clamping of the
// source coordinate into the input, and cubic's clamping of tap indices
// (with exclude_outside: zero weight outside, renormalised).
#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "onnx/onnx_import_context.h"

namespace tgr::onnx_io {
namespace {

using Ints = std::vector<int64_t>;

// One tap of one axis: per output position, the input index and its weight.
struct Tap {
  Ints index;
  std::vector<float> weight;
};

// coordinate_transformation_mode: the source coordinate of output position
// x on an axis of `in` elements resized to `out` by `scale`.
float source_coordinate(const std::string& mode, float x, float scale, int64_t in, int64_t out) {
  const float fin = static_cast<float>(in), fout = static_cast<float>(out);
  if (mode == "half_pixel") return (x + 0.5f) / scale - 0.5f;
  if (mode == "pytorch_half_pixel") return out > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
  if (mode == "align_corners") return out == 1 ? 0.0f : x * (fin - 1) / (fout - 1);
  if (mode == "asymmetric") return x / scale;
  // half_pixel_symmetric (opset 19): half_pixel, centred when out is not in * scale.
  const float adjustment = fout / (scale * fin);
  const float offset = fin / 2 * (1 - adjustment);
  return offset + (x + 0.5f) / scale - 0.5f;
}

int64_t nearest_index(const std::string& mode, float x) {
  if (mode == "round_prefer_floor")
    return static_cast<int64_t>(x == static_cast<float>(static_cast<int64_t>(x)) + 0.5f ? std::floor(x)
                                                                                        : std::round(x));
  if (mode == "round_prefer_ceil") return static_cast<int64_t>(std::round(x));
  if (mode == "floor") return static_cast<int64_t>(std::floor(x));
  return static_cast<int64_t>(std::ceil(x));  // ceil
}

// ONNX Runtime's cubic convolution coefficients for taps -1, 0, 1, 2 at
// fractional offset s.
std::array<float, 4> cubic_coefficients(float s, float a) {
  s = std::fabs(s);
  return {((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a, ((a + 2) * s - (a + 3)) * s * s + 1,
          ((a + 2) * (1 - s) - (a + 3)) * (1 - s) * (1 - s) + 1,
          ((a * (2 - s) - 5 * a) * (2 - s) + 8 * a) * (2 - s) - 4 * a};
}

struct Settings {
  std::string mode, transform, nearest_mode;
  float cubic_a = -0.75f;
  bool exclude_outside = false;
};

std::vector<Tap> axis_taps(const Settings& s, int64_t in, int64_t out, float scale) {
  const int ntaps = s.mode == "nearest" ? 1 : s.mode == "linear" ? 2 : 4;
  std::vector<Tap> taps(ntaps, Tap{Ints(out), std::vector<float>(out)});
  auto clamp = [in](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  for (int64_t o = 0; o < out; ++o) {
    float x = source_coordinate(s.transform, static_cast<float>(o), scale, in, out);
    if (s.mode == "nearest") {
      taps[0].index[o] = clamp(nearest_index(s.nearest_mode, x));
      taps[0].weight[o] = 1;
    } else if (s.mode == "linear") {
      x = std::max(0.0f, std::min(x, static_cast<float>(in - 1)));
      const int64_t x1 = std::min(static_cast<int64_t>(x), in - 1), x2 = std::min(x1 + 1, in - 1);
      float d1 = std::fabs(x - static_cast<float>(x1)), d2 = std::fabs(x - static_cast<float>(x2));
      // At the last element both taps read it: ONNX Runtime weighs each by
      // 0.5, which is exactly 1 and 0 (and lets an identity axis drop a tap).
      if (x1 == x2) d1 = 0, d2 = 1;
      taps[0].index[o] = x1;
      taps[0].weight[o] = d2;
      taps[1].index[o] = x2;
      taps[1].weight[o] = d1;
    } else {  // cubic
      const float base = std::floor(x);
      const auto k = cubic_coefficients(x - base, s.cubic_a);
      float sum = 0;
      for (int t = 0; t < 4; ++t) {
        const int64_t i = static_cast<int64_t>(base) + t - 1;
        taps[t].index[o] = clamp(i);
        taps[t].weight[o] = s.exclude_outside && (i < 0 || i >= in) ? 0.0f : k[t];
        sum += taps[t].weight[o];
      }
      if (s.exclude_outside)
        for (int t = 0; t < 4; ++t) taps[t].weight[o] /= sum;
    }
  }
  // Taps of zero weight everywhere read nothing (linear and cubic at integer
  // coordinates, as in a resize by an integer factor with asymmetric).
  std::erase_if(
      taps, [](const Tap& t) { return std::all_of(t.weight.begin(), t.weight.end(), [](float w) { return w == 0; }); });
  return taps;
}

// Resizes axis `axis` of x to the taps' length: the sum over taps of
// gather(x, index) * weight (weight broadcast over the later axes).
ValueRef resize_axis(ImportContext& c, ValueRef x, int64_t axis, const std::vector<Tap>& taps) {
  const int64_t in = c.shape(x)[axis], out = static_cast<int64_t>(taps.at(0).index.size());
  Ints identity(in);
  std::iota(identity.begin(), identity.end(), 0);
  auto all = [](const std::vector<float>& w, float v) {
    return std::all_of(w.begin(), w.end(), [v](float e) { return e == v; });
  };
  if (taps.size() == 1 && taps[0].index == identity && all(taps[0].weight, 1)) return x;
  Shape weight_shape(c.rank(x) - axis, 1);
  weight_shape[0] = out;
  std::optional<ValueRef> sum;
  for (const Tap& t : taps) {
    ValueRef y = c.emit("gather", {x, c.constant(ConstantValue(DType::kInt64, Tensor<int64_t>({out}, t.index)))},
                        {{"axis", axis}});
    if (!all(t.weight, 1)) {
      if (!is_floating(c.dtype(y))) c.fail("linear and cubic modes need float data");
      y = c.emit("mul", {y, c.constant(ConstantValue(Tensor<float>(weight_shape, t.weight)))});
    }
    sum = sum ? c.emit("add", {*sum, y}) : y;
  }
  return *sum;
}

}  // namespace

void import_resize(ImportContext& c) {
  const ValueRef x = c.input(0);
  const Shape& in = c.shape(x);
  const int64_t rank = c.rank(x);
  Settings s;
  s.mode = c.attr_string("mode", "nearest");
  s.transform = c.attr_string("coordinate_transformation_mode", "half_pixel");
  s.nearest_mode = c.attr_string("nearest_mode", "round_prefer_floor");
  s.cubic_a = static_cast<float>(c.attr_float("cubic_coeff_a", -0.75));
  s.exclude_outside = c.attr_int("exclude_outside", 0) != 0;
  if (s.mode != "nearest" && s.mode != "linear" && s.mode != "cubic") c.fail("mode '" + s.mode + "' is not supported");
  static const std::vector<std::string> transforms{"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                                   "half_pixel_symmetric"};
  if (std::find(transforms.begin(), transforms.end(), s.transform) == transforms.end())
    c.fail("coordinate_transformation_mode '" + s.transform + "' is not supported");
  static const std::vector<std::string> roundings{"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  if (std::find(roundings.begin(), roundings.end(), s.nearest_mode) == roundings.end())
    c.fail("nearest_mode '" + s.nearest_mode + "' is not supported");
  if (c.attr_int("antialias", 0) != 0) c.fail("antialias=1 is not supported");
  if (c.attr_string("keep_aspect_ratio_policy", "stretch") != "stretch")
    c.fail("keep_aspect_ratio_policy '" + c.attr_string("keep_aspect_ratio_policy", "") + "' is not supported");

  // The axes that scales or sizes list (opset 18's `axes`; else all).
  Ints axes = c.attr_ints("axes");
  if (axes.empty()) {
    axes.resize(rank);
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (int64_t& a : axes) a = c.axis(a, rank);
  // Scales (input 2) or sizes (input 3), constant; an empty scales tensor is absent.
  const ConstantValue* scales = c.has_input(2) ? c.constant_input(2) : nullptr;
  if (c.has_input(2) && !scales) c.fail("scales must be a constant (static shapes)");
  if (scales && (!scales->is_float() || scales->real.data.empty())) scales = nullptr;
  Shape out = in;
  std::vector<float> scale(rank, 1.0f);
  if (c.has_input(3)) {
    if (scales) c.fail("give scales or sizes, not both");
    const Ints sizes = c.constant_ints(3, "sizes");
    if (sizes.size() != axes.size())
      c.fail("sizes has " + std::to_string(sizes.size()) + " entries for " + std::to_string(axes.size()) + " axes");
    for (size_t i = 0; i < axes.size(); ++i) {
      if (sizes[i] <= 0) c.fail("sizes entry " + std::to_string(sizes[i]) + " is not positive");
      out[axes[i]] = sizes[i];
      scale[axes[i]] = static_cast<float>(sizes[i]) / static_cast<float>(in[axes[i]]);
    }
  } else {
    if (!scales) c.fail("neither scales nor sizes is given");
    if (scales->real.data.size() != axes.size())
      c.fail("scales has " + std::to_string(scales->real.data.size()) + " entries for " + std::to_string(axes.size()) +
             " axes");
    for (size_t i = 0; i < axes.size(); ++i) {
      const float f = scales->real.data[i];
      if (!(f > 0)) c.fail("scale " + std::to_string(f) + " is not positive");
      scale[axes[i]] = f;
      out[axes[i]] = static_cast<int64_t>(f * static_cast<float>(in[axes[i]]));
      if (out[axes[i]] <= 0)
        c.fail("scale " + std::to_string(f) + " leaves axis " + std::to_string(axes[i]) + " empty");
    }
  }
  c.check_elements(out);
  // Shrinking axes first: each later gather moves fewer elements.
  std::vector<int64_t> order(axes);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return static_cast<double>(out[a]) / in[a] < static_cast<double>(out[b]) / in[b];
  });
  ValueRef y = x;
  for (int64_t a : order) {
    if (in[a] == 0) c.fail("axis " + std::to_string(a) + " is empty");
    y = resize_axis(c, y, a, axis_taps(s, in[a], out[a], scale[a]));
  }
  c.set_output(0, y);
}

}  // namespace tgr::onnx_io
