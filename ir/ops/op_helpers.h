// Building blocks shared by the operator families in ir/ops/: parameter
// declarations, elementwise loops, broadcasting. Private to ir/.
#pragma once

#include <tbb/parallel_for.h>

#include <array>
#include <string>
#include <vector>

#include "ir/op_def.h"

namespace tgr::ops {

inline ParamSpec int_param(std::string name, std::optional<int64_t> def, int64_t min, int64_t max,
                           std::string doc) {
  ParamSpec p{.name = std::move(name), .kind = ParamKind::kInt, .min = min, .max = max, .doc = std::move(doc)};
  if (def) p.default_value = *def;
  return p;
}

inline ParamSpec ints_param(std::string name, std::optional<std::vector<int64_t>> def, int length,
                            int64_t min, std::string doc) {
  ParamSpec p{.name = std::move(name), .kind = ParamKind::kInts, .min = min, .length = length,
              .doc = std::move(doc)};
  if (def) p.default_value = *def;
  return p;
}

inline ParamSpec enum_param(std::string name, std::string def, std::vector<std::string> choices,
                            std::string doc) {
  return ParamSpec{.name = std::move(name), .kind = ParamKind::kEnum, .default_value = std::move(def),
                   .choices = std::move(choices), .doc = std::move(doc)};
}

// A parameter whose value follows from the shapes (ParamSpec::shape_dependent).
inline ParamSpec shape_dependent(ParamSpec p) {
  p.shape_dependent = true;
  return p;
}

// Traits bundled by family (OpTraits in ir/op_def.h).
inline OpTraits elementwise_traits() { return OpTraits{.elementwise = true}; }
// Layout operators: the prover evaluates them, the GPU runs them as strided copies.
inline OpTraits layout_traits(ViewKind view = ViewKind::kNone) {
  return OpTraits{.moves_elements = true, .strided_copy = true, .view = view};
}
// Constant operators (no inputs): built from 0s and 1s, evaluated by the prover.
inline OpTraits constant_traits() { return OpTraits{.moves_elements = true}; }

// Analytic costs (OpCost in ir/op_def.h): the roofline model of
// optimizer/cost_model.h charges FLOPs against peak compute and bytes
// against bandwidth, as float32 on the device except that float16 and
// bfloat16 values move 2 bytes an element (float32, int64 and bool count 4,
// as they always have, so float32 costs are unchanged).
inline double output_elements(const OpCall& call) {
  double n = 0;
  for (const Shape& s : call.output_shapes) n += static_cast<double>(num_elements(s));
  return n;
}
inline double first_input_elements(const OpCall& call) {
  return static_cast<double>(num_elements(call.input_shapes[0]));
}
inline double cost_element_bytes(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16 ? 2.0 : 4.0; }
// Every input read once and every output written once; outputs are taken to
// have the first input's element size (an operator keeps its inputs' type).
inline double operand_bytes(const OpCall& call) {
  auto bytes = [&](size_t i) { return i < call.input_dtypes.size() ? cost_element_bytes(call.input_dtypes[i]) : 4.0; };
  double n = 0;
  for (size_t i = 0; i < call.input_shapes.size(); ++i)
    n += static_cast<double>(num_elements(call.input_shapes[i])) * bytes(i);
  for (const Shape& s : call.output_shapes) n += static_cast<double>(num_elements(s)) * bytes(0);
  return n;
}
// One operation per output element (elementwise, layout, constants, indexing).
inline OpCost per_output_element_cost() { return OpCost{.flops = output_elements, .bytes = operand_bytes}; }
// `ops_per_element` operations per element of the first input (reductions
// and pools: one; softmax and layer_norm: five).
inline OpCost per_input_element_cost(double ops_per_element) {
  return OpCost{.flops = [ops_per_element](const OpCall& call) { return first_input_elements(call) * ops_per_element; },
                .bytes = operand_bytes};
}

// The `axis` parameter, checked against the rank of the first input:
// "OP: axis A out of range for SHAPE".
inline int64_t checked_axis(const OpCall& call) {
  const int64_t axis = call.params.get_int("axis");
  if (axis >= static_cast<int64_t>(call.input_shapes[0].size()))
    throw ShapeError(call.op.name + ": axis " + std::to_string(axis) + " out of range for " +
                     shape_to_string(call.input_shapes[0]));
  return axis;
}

// The window parameters shared by conv2d and the pools.
inline ParamSpec stride_param() { return ints_param("stride", std::vector<int64_t>{1, 1}, 2, 1, "rows x columns"); }
inline ParamSpec dilation_param() { return ints_param("dilation", std::vector<int64_t>{1, 1}, 2, 1, "rows x columns"); }
inline ParamSpec padding_param() {
  return ParamSpec{.name = "pad", .kind = ParamKind::kPadding, .default_value = std::string("same"),
                   .min = 0, .doc = "explicit order: top x left x bottom x right"};
}

// out[i] = f(in[i]), in parallel for large tensors.
template <class T, class F>
void map_elements(const Tensor<T>& in, Tensor<T>& out, F f) {
  const T* src = in.data.data();
  T* dst = out.data.data();
  const int64_t n = in.size();
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, 1 << 15), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t i = r.begin(); i < r.end(); ++i) dst[i] = f(src[i]);
  });
}

inline ParamSpec float_param(std::string name, std::optional<double> def, double min, double max, std::string doc) {
  ParamSpec p{.name = std::move(name), .kind = ParamKind::kFloat, .min_float = min, .max_float = max, .doc = std::move(doc)};
  if (def) p.default_value = *def;
  return p;
}

// The salt of an operator's pseudo-random field function: its name and
// parameters, so leaky_relu[alpha=0.1] and [alpha=0.2] are different functions.
inline uint64_t call_salt(const OpCall& call) {
  std::string key = call.op.name;
  for (const auto& [k, v] : call.params.entries()) key += "," + k + "=" + param_value_to_string(v);
  return field_salt(key);
}

// The field semantics of a non-linear elementwise operator: the fixed
// pseudo-random function of its salt.
inline void field_unary(const OpCall& call, const Tensor<Fp>& in, Tensor<Fp>& out) {
  const uint64_t salt = call_salt(call);
  map_elements(in, out, [salt](Fp x) { return field_random_function(salt, x); });
}

// Multidirectional (NumPy/ONNX) broadcasting of two shapes; ShapeError otherwise.
Shape broadcast_shapes(std::string_view op, const Shape& a, const Shape& b);

// Calls f(out_index, offsets) for every element of `out`, where offsets[k]
// is the flat index of the element of input k broadcast (NumPy/ONNX) to it.
template <size_t N, class F>
void for_each_broadcast(const Shape& out, const std::array<const Shape*, N>& ins, F f) {
  // Nothing to visit in an empty output; its inputs' strides could overflow
  // (an input with an empty axis and huge others, which broadcasts to it).
  const int64_t total = num_elements(out);
  if (total == 0) return;
  const int rank = static_cast<int>(out.size());
  std::array<std::vector<int64_t>, N> strides;  // 0 along broadcast axes
  for (size_t k = 0; k < N; ++k) {
    const Shape& s = *ins[k];
    strides[k].assign(rank, 0);
    const int off = rank - static_cast<int>(s.size());
    int64_t st = 1;
    for (int i = static_cast<int>(s.size()) - 1; i >= 0; --i) {
      strides[k][off + i] = s[i] == 1 ? 0 : st;
      st *= s[i];
    }
  }
  std::vector<int64_t> idx(rank, 0);
  std::array<int64_t, N> offsets{};
  for (int64_t o = 0; o < total; ++o) {
    f(o, offsets);
    for (int ax = rank - 1; ax >= 0; --ax) {  // odometer increment
      for (size_t k = 0; k < N; ++k) offsets[k] += strides[k][ax];
      if (++idx[ax] < out[ax]) break;
      for (size_t k = 0; k < N; ++k) offsets[k] -= strides[k][ax] * out[ax];
      idx[ax] = 0;
    }
  }
}

// out[i] = f(a[ia], b[ib]) with a and b broadcast to out's shape.
template <class T, class U, class V, class F>
void map_broadcast(const Tensor<T>& a, const Tensor<U>& b, Tensor<V>& out, F f) {
  if (a.shape == b.shape) {
    const T* pa = a.data.data();
    const U* pb = b.data.data();
    V* po = out.data.data();
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, out.size(), 1 << 15),
                      [&](const tbb::blocked_range<int64_t>& r) {
                        for (int64_t i = r.begin(); i < r.end(); ++i) po[i] = f(pa[i], pb[i]);
                      });
    return;
  }
  for_each_broadcast<2>(out.shape, {&a.shape, &b.shape},
                        [&](int64_t o, const std::array<int64_t, 2>& at) { out.data[o] = f(a.data[at[0]], b.data[at[1]]); });
}

// The activations, defined once: used by relu/sigmoid/tanh and by the fused
// activation of conv2d, so that `relu(conv2d(x, k))` and
// `conv2d[act=relu](x, k)` agree in every domain.
template <class T>
T relu_value(T x) {
  if constexpr (kIsField<T>) {
    static const uint64_t salt = field_salt("relu");
    return field_random_function(salt, x);
  } else {
    return x > T(0) ? x : T(0);
  }
}

}  // namespace tgr::ops
