// Spatial pooling over N x C x H x W: avgpool and maxpool.
#include <limits>

#include "ir/geometry.h"
#include "ir/ops/families.h"
#include "ir/ops/op_helpers.h"

namespace tgr {
namespace {

Window2d pool_geometry(const OpCall& call, const Shape& x) {
  const std::string& op = call.op.name;
  if (x.size() != 4) throw ShapeError(op + ": input must be 4-D (N x C x H x W), got " + shape_to_string(x));
  const auto& kernel = call.params.get_ints("kernel");
  Window2d w = window_geometry(op, call.params, x[2], x[3], kernel[0], kernel[1], call.op.find_param("dilation"));
  // A window lying wholly in the padding would have no elements.
  const int64_t extent_h = (w.kernel_h - 1) * w.dilation_h + 1, extent_w = (w.kernel_w - 1) * w.dilation_w + 1;
  if (w.pad_top >= extent_h || w.pad_bottom >= extent_h || w.pad_left >= extent_w || w.pad_right >= extent_w)
    throw ShapeError(op + ": padding must be smaller than the " + shape_to_string(kernel) + " kernel");
  return w;
}

std::vector<Shape> pool_shapes(const OpCall& call) {
  const Shape& x = call.input_shapes[0];
  const Window2d w = pool_geometry(call, x);
  return {{x[0], x[1], w.out_h, w.out_w}};
}

// The taps of one window along one axis that fall inside the input:
// first, first + dilation, ... (count of them).
struct Taps {
  int64_t first = 0, count = 0;
};

Taps clip_window(int64_t start, int64_t kernel, int64_t dilation, int64_t size) {
  const int64_t k0 = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
  const int64_t k1 = std::min(kernel, start >= size ? 0 : (size - start + dilation - 1) / dilation);
  return {start + k0 * dilation, std::max<int64_t>(0, k1 - k0)};
}

// Calls reduce(plane, rows, columns) for every output element with its
// window's taps inside the input; planes in parallel.
template <class T, class Reduce>
void for_each_window(const Tensor<T>& x, Tensor<T>& out, const Window2d& w, Reduce reduce) {
  const int64_t planes = x.shape[0] * x.shape[1];
  tbb::parallel_for(int64_t{0}, planes, [&](int64_t p) {
    const T* plane = x.data.data() + p * w.in_h * w.in_w;
    T* dst = out.data.data() + p * w.out_h * w.out_w;
    for (int64_t oh = 0; oh < w.out_h; ++oh) {
      const Taps rows = clip_window(oh * w.stride_h - w.pad_top, w.kernel_h, w.dilation_h, w.in_h);
      for (int64_t ow = 0; ow < w.out_w; ++ow) {
        const Taps cols = clip_window(ow * w.stride_w - w.pad_left, w.kernel_w, w.dilation_w, w.in_w);
        dst[oh * w.out_w + ow] = reduce(plane, rows, cols);
      }
    }
  });
}

template <class T>
void avgpool_kernel(const OpCall& call, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  const Window2d w = pool_geometry(call, in[0]->shape);
  const bool include_pad = call.params.get_int("include_pad") != 0;
  const int64_t width = w.in_w;
  for_each_window(*in[0], out[0], w, [&](const T* plane, Taps rows, Taps cols) {
    T sum{};
    for (int64_t i = rows.first; i < rows.first + rows.count; ++i)
      for (int64_t j = cols.first; j < cols.first + cols.count; ++j) sum += plane[i * width + j];
    const int64_t count = include_pad ? w.kernel_h * w.kernel_w : rows.count * cols.count;
    return sum / T(count);  // in the field: times the inverse of count
  });
}

template <class T>
void maxpool_kernel(const OpCall& call, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  const Window2d w = pool_geometry(call, in[0]->shape);
  const int64_t width = w.in_w;
  const int64_t dh = w.dilation_h, dw = w.dilation_w;
  for_each_window(*in[0], out[0], w, [&](const T* plane, Taps rows, Taps cols) {
    if constexpr (kIsField<T>) {
      // The field has no order: a fixed pseudo-random symmetric function of
      // the window, h(sum of g(x)), over the elements inside the input.
      static const uint64_t inner = field_salt("maxpool.element"), outer = field_salt("maxpool");
      T acc{};
      for (int64_t r = 0; r < rows.count; ++r)
        for (int64_t c = 0; c < cols.count; ++c)
          acc += field_random_function(inner, plane[(rows.first + r * dh) * width + cols.first + c * dw]);
      return field_random_function(outer, acc);
    } else {
      T best = -std::numeric_limits<T>::infinity();
      for (int64_t r = 0; r < rows.count; ++r)
        for (int64_t c = 0; c < cols.count; ++c) best = std::max(best, plane[(rows.first + r * dh) * width + cols.first + c * dw]);
      return best;
    }
  });
}

std::vector<ParamSpec> pool_params() {
  using namespace ops;
  return {ints_param("kernel", std::nullopt, 2, 1, "rows x columns"), stride_param(), padding_param()};
}

}  // namespace

void register_pooling_ops(OpTable& table) {
  using namespace ops;
  std::vector<ParamSpec> avg_params = pool_params();
  avg_params.push_back(int_param("include_pad", 0, 0, 1,
                                 "1: divide by the kernel area; 0: by the elements inside the input"));
  table.add({.name = "avgpool",
             .summary = "average over each window",
             .inputs = {"x"},
             .params = avg_params,
             .infer_shapes = pool_shapes,
             .kernels = TGR_KERNELS(avgpool_kernel),
             .field = FieldSemantics::kInverse,
             .multilinear = {true},
             .canonicalize = canonical_padding,
             .cost = per_input_element_cost(1.0)});
  std::vector<ParamSpec> max_params = pool_params();
  max_params.push_back(dilation_param());
  table.add({.name = "maxpool",
             .summary = "maximum over each window (padding never wins)",
             .inputs = {"x"},
             .params = max_params,
             .infer_shapes = pool_shapes,
             .kernels = TGR_KERNELS(maxpool_kernel),
             .field = FieldSemantics::kPseudoRandom,
             .multilinear = {false},
             .canonicalize = canonical_padding,
             .cost = per_input_element_cost(1.0)});
}

}  // namespace tgr
