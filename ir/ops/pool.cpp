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
  Window2d w = window_geometry(op, call.params, x[2], x[3], kernel[0], kernel[1], false);
  // A window lying wholly in the padding would have no elements.
  if (w.pad_top >= w.kernel_h || w.pad_bottom >= w.kernel_h || w.pad_left >= w.kernel_w ||
      w.pad_right >= w.kernel_w)
    throw ShapeError(op + ": padding must be smaller than the " + shape_to_string(kernel) + " kernel");
  return w;
}

std::vector<Shape> pool_shapes(const OpCall& call) {
  const Shape& x = call.input_shapes[0];
  const Window2d w = pool_geometry(call, x);
  return {{x[0], x[1], w.out_h, w.out_w}};
}

// Calls reduce(plane, out_index, ih0, ih1, iw0, iw1) for every output element
// with the window clipped to the input; planes in parallel.
template <class T, class Reduce>
void for_each_window(const Tensor<T>& x, Tensor<T>& out, const Window2d& w, Reduce reduce) {
  const int64_t planes = x.shape[0] * x.shape[1];
  tbb::parallel_for(int64_t{0}, planes, [&](int64_t p) {
    const T* plane = x.data.data() + p * w.in_h * w.in_w;
    T* dst = out.data.data() + p * w.out_h * w.out_w;
    for (int64_t oh = 0; oh < w.out_h; ++oh) {
      const int64_t h0 = oh * w.stride_h - w.pad_top;
      const int64_t ih0 = std::max<int64_t>(h0, 0), ih1 = std::min(h0 + w.kernel_h, w.in_h);
      for (int64_t ow = 0; ow < w.out_w; ++ow) {
        const int64_t w0 = ow * w.stride_w - w.pad_left;
        const int64_t iw0 = std::max<int64_t>(w0, 0), iw1 = std::min(w0 + w.kernel_w, w.in_w);
        dst[oh * w.out_w + ow] = reduce(plane, ih0, ih1, iw0, iw1);
      }
    }
  });
}

template <class T>
void avgpool_kernel(const OpCall& call, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  const Window2d w = pool_geometry(call, in[0]->shape);
  const bool include_pad = call.params.get_int("include_pad") != 0;
  const int64_t width = w.in_w;
  for_each_window(*in[0], out[0], w, [&](const T* plane, int64_t ih0, int64_t ih1, int64_t iw0, int64_t iw1) {
    T sum{};
    for (int64_t i = ih0; i < ih1; ++i)
      for (int64_t j = iw0; j < iw1; ++j) sum += plane[i * width + j];
    const int64_t count = include_pad ? w.kernel_h * w.kernel_w : (ih1 - ih0) * (iw1 - iw0);
    return sum / T(count);  // in the field: times the inverse of count
  });
}

template <class T>
void maxpool_kernel(const OpCall& call, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  const Window2d w = pool_geometry(call, in[0]->shape);
  const int64_t width = w.in_w;
  for_each_window(*in[0], out[0], w, [&](const T* plane, int64_t ih0, int64_t ih1, int64_t iw0, int64_t iw1) {
    if constexpr (kIsField<T>) {
      // The field has no order: a fixed pseudo-random symmetric function of
      // the window, h(sum of g(x)), over the elements inside the input.
      static const uint64_t inner = field_salt("maxpool.element"), outer = field_salt("maxpool");
      T acc{};
      for (int64_t i = ih0; i < ih1; ++i)
        for (int64_t j = iw0; j < iw1; ++j) acc += field_random_function(inner, plane[i * width + j]);
      return field_random_function(outer, acc);
    } else {
      T best = -std::numeric_limits<T>::infinity();
      for (int64_t i = ih0; i < ih1; ++i)
        for (int64_t j = iw0; j < iw1; ++j) best = std::max(best, plane[i * width + j]);
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
             .multilinear = {true}});
  table.add({.name = "maxpool",
             .summary = "maximum over each window (padding never wins)",
             .inputs = {"x"},
             .params = pool_params(),
             .infer_shapes = pool_shapes,
             .kernels = TGR_KERNELS(maxpool_kernel),
             .field = FieldSemantics::kPseudoRandom,
             .multilinear = {false}});
}

}  // namespace tgr
