// The constant operators of TASO's generator. They take no inputs; their
// shape comes from their parameters. Their values are the same in every
// domain except pool_kernel's 1 / (KH * KW), which in the field is the inverse.
#include "ir/ops/families.h"
#include "ir/ops/op_helpers.h"

namespace tgr {
namespace {

std::vector<Shape> eye_shapes(const OpCall& call) {
  const int64_t n = call.params.get_int("n");
  return {{n, n}};
}

template <class T>
void eye_kernel(const OpCall&, std::span<const Tensor<T>* const>, std::span<Tensor<T>> out) {
  const int64_t n = out[0].shape[0];
  std::fill(out[0].data.begin(), out[0].data.end(), T{});
  for (int64_t i = 0; i < n; ++i) out[0].data[i * n + i] = T(1);
}

const std::vector<int64_t>& odd_kernel(const OpCall& call) {
  const auto& k = call.params.get_ints("kernel");
  if (k[0] % 2 == 0 || k[1] % 2 == 0)
    throw ShapeError(call.op.name + ": kernel " + shape_to_string(k) + " has no centre (sizes must be odd)");
  return k;
}

std::vector<Shape> conv_identity_shapes(const OpCall& call) {
  const auto& k = odd_kernel(call);
  const int64_t c = call.params.get_int("channels");
  return {{c, c, k[0], k[1]}};
}

// Identity convolution kernel: output channel c copies input channel c (a 1
// at the centre tap), so conv2d(x, conv_identity) == x under "same" padding.
template <class T>
void conv_identity_kernel(const OpCall&, std::span<const Tensor<T>* const>, std::span<Tensor<T>> out) {
  const Shape& s = out[0].shape;
  const int64_t c = s[0], kh = s[2], kw = s[3];
  std::fill(out[0].data.begin(), out[0].data.end(), T{});
  for (int64_t i = 0; i < c; ++i) out[0].data[((i * c + i) * kh + kh / 2) * kw + kw / 2] = T(1);
}

std::vector<Shape> pool_kernel_shapes(const OpCall& call) {
  const auto& k = call.params.get_ints("kernel");
  return {{call.params.get_int("channels"), 1, k[0], k[1]}};
}

// Depthwise averaging kernel: conv2d(x, pool_kernel) == avgpool[include_pad=1](x).
template <class T>
void pool_kernel_kernel(const OpCall&, std::span<const Tensor<T>* const>, std::span<Tensor<T>> out) {
  const Shape& s = out[0].shape;
  std::fill(out[0].data.begin(), out[0].data.end(), T(1) / T(s[2] * s[3]));
}

std::vector<Shape> ones_shapes(const OpCall& call) { return {call.params.get_ints("shape")}; }

template <class T>
void ones_kernel(const OpCall&, std::span<const Tensor<T>* const>, std::span<Tensor<T>> out) {
  std::fill(out[0].data.begin(), out[0].data.end(), T(1));
}

}  // namespace

void register_constant_ops(OpTable& table) {
  using namespace ops;
  auto channels = shape_dependent(int_param("channels", std::nullopt, 1, INT64_MAX, "number of channels"));
  auto kernel = shape_dependent(ints_param("kernel", std::nullopt, 2, 1, "rows x columns"));
  table.add({.name = "eye",
             .summary = "identity matrix n x n",
             .params = {shape_dependent(int_param("n", std::nullopt, 1, INT64_MAX, "size"))},
             .infer_shapes = eye_shapes,
             .kernels = TGR_KERNELS(eye_kernel),
             .traits = constant_traits(),
             .cost = per_output_element_cost()});
  table.add({.name = "conv_identity",
             .summary = "identity convolution kernel C x C x KH x KW (1 at the centre of channel c to c)",
             .params = {channels, kernel},
             .infer_shapes = [](const OpCall& call) { return conv_identity_shapes(call); },
             .kernels = TGR_KERNELS(conv_identity_kernel),
             .traits = constant_traits(),
             .cost = per_output_element_cost()});
  table.add({.name = "pool_kernel",
             .summary = "depthwise averaging kernel C x 1 x KH x KW, every value 1 / (KH * KW)",
             .params = {channels, kernel},
             .infer_shapes = pool_kernel_shapes,
             .kernels = TGR_KERNELS(pool_kernel_kernel),
             .field = FieldSemantics::kInverse,
             .traits = constant_traits(),
             .cost = per_output_element_cost()});
  table.add({.name = "ones",
             .summary = "a tensor of ones",
             .params = {shape_dependent(ints_param("shape", std::nullopt, -1, 1, "dimensions"))},
             .infer_shapes = ones_shapes,
             .kernels = TGR_KERNELS(ones_kernel),
             .traits = constant_traits(),
             .cost = per_output_element_cost()});
}

}  // namespace tgr
