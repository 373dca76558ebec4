// Reductions over a set of axes: reduce_sum, reduce_mean, reduce_max and
// reduce_min (the last two have no field semantics: the field has no order).
#include <cmath>
#include <stdexcept>

#include "ir/ops/families.h"
#include "ir/ops/op_helpers.h"

namespace tgr {
namespace {

std::vector<Shape> reduce_shapes(const OpCall& call) {
  const Shape& x = call.input_shapes[0];
  const auto& axes = call.params.get_ints("axes");
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] >= static_cast<int64_t>(x.size()))
      throw ShapeError(call.op.name + ": axis " + std::to_string(axes[i]) + " out of range for " + shape_to_string(x));
    if (i > 0 && axes[i] <= axes[i - 1])
      throw ShapeError(call.op.name + ": axes " + param_value_to_string(axes) + " must be increasing");
  }
  const bool keep = call.params.get_int("keepdims") != 0;
  Shape out;
  for (size_t d = 0; d < x.size(); ++d) {
    const bool reduced = std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end();
    if (!reduced) out.push_back(x[d]);
    else if (keep) out.push_back(1);
  }
  return {out};
}

// Calls f(i, o) for each element i of x, in order, with o the index of the
// output element it reduces into: its index with the reduced axes dropped
// (or zeroed).
template <class T, class F>
void for_each_reduced(const OpCall& call, const Tensor<T>& x, F&& f) {
  const auto& axes = call.params.get_ints("axes");
  const int rank = x.rank();
  std::vector<int64_t> out_stride(rank, 0);
  int64_t st = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (std::find(axes.begin(), axes.end(), d) != axes.end()) continue;
    out_stride[d] = st;
    st *= x.shape[d];
  }
  std::vector<int64_t> idx(rank, 0);
  int64_t o = 0;
  for (int64_t i = 0; i < x.size(); ++i) {
    f(i, o);
    for (int ax = rank - 1; ax >= 0; --ax) {
      o += out_stride[ax];
      if (++idx[ax] < x.shape[ax]) break;
      o -= out_stride[ax] * x.shape[ax];
      idx[ax] = 0;
    }
  }
}

// Sums x into out.
template <class T>
void sum_into(const OpCall& call, const Tensor<T>& x, Tensor<T>& out) {
  std::fill(out.data.begin(), out.data.end(), T{});
  for_each_reduced(call, x, [&](int64_t i, int64_t o) { out.data[o] += x.data[i]; });
}

template <class T>
void reduce_sum_kernel(const OpCall& call, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  sum_into(call, *in[0], out[0]);
}

template <class T>
void reduce_mean_kernel(const OpCall& call, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  sum_into(call, *in[0], out[0]);
  const T scale = T(1) / T(in[0]->size() / std::max<int64_t>(out[0].size(), 1));
  for (T& v : out[0].data) v *= scale;
}

// The largest (kMax) or smallest element over the reduced axes; NaN
// propagates, as in ONNX Runtime. An empty reduction is an error (ONNX
// gives the identity -inf / +inf, which int64 lacks).
template <class T, bool kMax>
void extreme_into(const OpCall& call, const Tensor<T>& x, Tensor<T>& out) {
  if constexpr (kIsField<T>) {
    throw UndefinedSemantics(call.op.name +
                             ": the largest or smallest field element has no meaning (the field has no order)");
  } else {
    if (x.size() == 0 && out.size() > 0) throw std::domain_error(call.op.name + ": reducing an empty axis");
    std::vector<char> seen(out.data.size(), 0);
    for_each_reduced(call, x, [&](int64_t i, int64_t o) {
      const T v = x.data[i];
      T& acc = out.data[o];
      if (!seen[o]) {
        acc = v;
        seen[o] = 1;
      } else if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(v) || (!std::isnan(acc) && (kMax ? v > acc : v < acc))) acc = v;
      } else if (kMax ? v > acc : v < acc) {
        acc = v;
      }
    });
  }
}

template <class T>
void reduce_max_kernel(const OpCall& call, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  extreme_into<T, true>(call, *in[0], out[0]);
}

template <class T>
void reduce_min_kernel(const OpCall& call, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  extreme_into<T, false>(call, *in[0], out[0]);
}

}  // namespace

void register_reduction_ops(OpTable& table) {
  using namespace ops;
  auto params = [] {
    return std::vector<ParamSpec>{ints_param("axes", std::nullopt, -1, 0, "the axes to reduce, increasing"),
                                  int_param("keepdims", 1, 0, 1, "1: keep reduced axes with size 1")};
  };
  table.add({.name = "reduce_sum",
             .summary = "sum over axes",
             .inputs = {"x"},
             .params = params(),
             .infer_shapes = reduce_shapes,
             .kernels = TGR_KERNELS_AND_INT64(reduce_sum_kernel),
             .multilinear = {true},
             .traits = {.needs_float32 = true},
             .cost = per_input_element_cost(1.0)});
  table.add({.name = "reduce_mean",
             .summary = "mean over axes",
             .inputs = {"x"},
             .params = params(),
             .infer_shapes = reduce_shapes,
             .kernels = TGR_KERNELS(reduce_mean_kernel),
             .field = FieldSemantics::kInverse,
             .multilinear = {true},
             .traits = {.needs_float32 = true},
             .cost = per_input_element_cost(1.0)});
  for (const char* name : {"reduce_max", "reduce_min"}) {
    const bool is_max = std::string_view(name) == "reduce_max";
    table.add({.name = name,
               .summary = is_max ? "largest element over axes (NaN propagates)"
                                 : "smallest element over axes (NaN propagates)",
               .inputs = {"x"},
               .params = params(),
               .infer_shapes = reduce_shapes,
               .kernels = is_max ? TGR_KERNELS_AND_INT64(reduce_max_kernel) : TGR_KERNELS_AND_INT64(reduce_min_kernel),
               .field = FieldSemantics::kUndefined,
               .multilinear = {false},
               .cost = per_input_element_cost(1.0)});
  }
}

}  // namespace tgr
