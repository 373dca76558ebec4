// softmax, layer_norm, batch_norm. Their field semantics compose the exact
// field arithmetic with fixed pseudo-random functions for exp and 1/sqrt
// (ops::field_unary's idea), so equal programs still fingerprint equally.
#include <cmath>

#include "ir/ops/families.h"
#include "ir/ops/op_helpers.h"

namespace tgr {
namespace {

// exp and 1/sqrt in each domain.
template <class T>
T exp_of(T x) {
  if constexpr (kIsField<T>) {
    static const uint64_t salt = field_salt("exp");
    return field_random_function(salt, x);
  } else {
    return std::exp(x);
  }
}

template <class T>
T rsqrt_of(T x) {
  if constexpr (kIsField<T>) {
    static const uint64_t salt = field_salt("rsqrt");
    return field_random_function(salt, x);
  } else {
    return T(1) / std::sqrt(x);
  }
}

using ops::checked_axis;

// softmax along one axis: exp(x - max) / sum, the max subtracted for range.
template <class T>
void softmax_kernel(const OpCall& call, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  const Tensor<T>& x = *in[0];
  const int64_t axis = call.params.get_int("axis");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
  for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  const int64_t n = x.shape[axis];
  if (n == 0) return;  // nothing to normalise
  tbb::parallel_for(int64_t{0}, outer * inner, [&](int64_t task) {
    const int64_t base = (task / inner) * n * inner + task % inner;
    T shift{};
    if constexpr (!kIsField<T>) {
      shift = x.data[base];
      for (int64_t k = 1; k < n; ++k) shift = std::max(shift, x.data[base + k * inner]);
    }
    T sum{};
    for (int64_t k = 0; k < n; ++k) sum += out[0].data[base + k * inner] = exp_of(x.data[base + k * inner] - shift);
    const T scale = T(1) / sum;
    for (int64_t k = 0; k < n; ++k) out[0].data[base + k * inner] *= scale;
  });
}

std::vector<Shape> layer_norm_shapes(const OpCall& call) {
  const Shape& x = call.input_shapes[0];
  const int64_t axis = checked_axis(call);
  const Shape normalized(x.begin() + axis, x.end());
  for (int k = 1; k <= 2; ++k)
    if (call.input_shapes[k] != normalized)
      throw ShapeError("layer_norm: " + std::string(k == 1 ? "scale" : "bias") + " has shape " +
                       shape_to_string(call.input_shapes[k]) + ", expected " + shape_to_string(normalized) +
                       " (the axes from " + std::to_string(axis) + " on)");
  return {x};
}

// (x - mean) / sqrt(var + epsilon) * scale + bias over the axes from `axis` on.
template <class T>
void layer_norm_kernel(const OpCall& call, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  const Tensor<T>& x = *in[0];
  const T* scale = in[1]->data.data();
  const T* bias = in[2]->data.data();
  const int64_t n = in[1]->size();
  const T eps = from_real<T>(call.params.get_float("epsilon"));
  const T inv_n = T(1) / T(n);
  tbb::parallel_for(int64_t{0}, x.size() / std::max<int64_t>(n, 1), [&](int64_t row) {
    const T* src = x.data.data() + row * n;
    T* dst = out[0].data.data() + row * n;
    T mean{}, var{};
    for (int64_t k = 0; k < n; ++k) mean += src[k];
    mean *= inv_n;
    for (int64_t k = 0; k < n; ++k) var += (src[k] - mean) * (src[k] - mean);
    const T r = rsqrt_of(var * inv_n + eps);
    for (int64_t k = 0; k < n; ++k) dst[k] = (src[k] - mean) * r * scale[k] + bias[k];
  });
}

std::vector<Shape> batch_norm_shapes(const OpCall& call) {
  const Shape& x = call.input_shapes[0];
  if (x.size() < 2) throw ShapeError("batch_norm: input must have a channel axis (N x C x ...), got " + shape_to_string(x));
  for (size_t k = 1; k < 5; ++k)
    if (call.input_shapes[k] != Shape{x[1]})
      throw ShapeError("batch_norm: " + call.op.inputs[k] + " has shape " + shape_to_string(call.input_shapes[k]) +
                       ", expected " + std::to_string(x[1]) + " (one per channel)");
  return {x};
}

// Inference-mode batch normalisation over axis 1.
template <class T>
void batch_norm_kernel(const OpCall& call, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  const Tensor<T>& x = *in[0];
  const int64_t channels = x.shape[1];
  int64_t inner = 1;
  for (size_t d = 2; d < x.shape.size(); ++d) inner *= x.shape[d];
  const T eps = from_real<T>(call.params.get_float("epsilon"));
  tbb::parallel_for(int64_t{0}, x.shape[0] * channels, [&](int64_t plane) {
    const int64_t c = plane % channels;
    const T r = rsqrt_of(in[4]->data[c] + eps) * in[1]->data[c];
    const T mean = in[3]->data[c], bias = in[2]->data[c];
    for (int64_t k = 0; k < inner; ++k)
      out[0].data[plane * inner + k] = (x.data[plane * inner + k] - mean) * r + bias;
  });
}

}  // namespace

void register_normalization_ops(OpTable& table) {
  using namespace ops;
  table.add({.name = "softmax",
             .summary = "exp(x) / sum(exp(x)) along one axis",
             .inputs = {"x"},
             .params = {int_param("axis", std::nullopt, 0, INT64_MAX, "the axis to normalise")},
             .infer_shapes =
                 [](const OpCall& call) {
                   checked_axis(call);
                   return std::vector<Shape>{call.input_shapes[0]};
                 },
             .kernels = TGR_KERNELS(softmax_kernel),
             .field = FieldSemantics::kPseudoRandom,
             .multilinear = {false},
             .traits = {.needs_float32 = true},
             .cost = per_input_element_cost(5.0)});  // max, subtract, exp, sum, divide
  table.add({.name = "layer_norm",
             .summary = "(x - mean) / sqrt(var + epsilon) * scale + bias over the axes from `axis` on",
             .inputs = {"x", "scale", "bias"},
             .params = {int_param("axis", std::nullopt, 0, INT64_MAX, "first normalised axis"),
                        float_param("epsilon", 1e-5, 0, HUGE_VAL, "added to the variance")},
             .infer_shapes = layer_norm_shapes,
             .kernels = TGR_KERNELS(layer_norm_kernel),
             .field = FieldSemantics::kPseudoRandom,
             .multilinear = {false, true, true},
             .traits = {.needs_float32 = true},
             .cost = per_input_element_cost(5.0)});  // mean, variance, subtract, scale, shift
  table.add({.name = "batch_norm",
             .summary = "(x - mean) / sqrt(var + epsilon) * scale + bias per channel (inference)",
             .inputs = {"x", "scale", "bias", "mean", "var"},
             .params = {float_param("epsilon", 1e-5, 0, HUGE_VAL, "added to the variance")},
             .infer_shapes = batch_norm_shapes,
             .kernels = TGR_KERNELS(batch_norm_kernel),
             .field = FieldSemantics::kPseudoRandom,
             .multilinear = {true, true, true, true, false},
             .traits = {.elementwise = true, .channel_operands = true},
             .cost = per_output_element_cost()});
}

}  // namespace tgr
