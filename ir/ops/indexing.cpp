// gather and gather_elements: select along an axis by int64 indices
// (negative indices count from the end, as in ONNX).
#include <stdexcept>

#include "ir/ops/families.h"
#include "ir/ops/op_helpers.h"

namespace tgr {
namespace {

std::vector<DType> data_dtype_with_int_indices(const OpCall& call) {
  if (call.input_dtypes[1] != DType::kInt64)
    throw ShapeError(call.op.name + ": indices must be int64, got " + std::string(dtype_name(call.input_dtypes[1])));
  return {call.input_dtypes[0]};
}

using ops::checked_axis;

int64_t wrap_index(const char* op, int64_t index, int64_t size) {
  const int64_t i = index < 0 ? index + size : index;
  if (i < 0 || i >= size)
    throw std::out_of_range(std::string(op) + ": index " + std::to_string(index) + " out of range for an axis of size " +
                            std::to_string(size));
  return i;
}

// Moves elements of `data` (real or integer storage alike).
template <class T, class Select>
void move_elements(const Value<T>& data, Value<T>& out, Select select) {
  if (out.is_float()) select(data.real.data, out.real.data);
  else select(data.ints.data, out.ints.data);
}

std::vector<Shape> gather_shapes(const OpCall& call) {
  const Shape& data = call.input_shapes[0];
  const int64_t axis = checked_axis(call);
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), call.input_shapes[1].begin(), call.input_shapes[1].end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  return {out};
}

// out[outer, idx..., inner] = data[outer, indices[idx...], inner]
template <class T>
void gather_kernel(const OpCall& call, std::span<const Value<T>* const> in, std::span<Value<T>> out) {
  const Shape& shape = in[0]->shape();
  const int64_t axis = call.params.get_int("axis");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  const std::vector<int64_t>& indices = in[1]->ints.data;
  const int64_t n = static_cast<int64_t>(indices.size()), size = shape[axis];
  move_elements(*in[0], out[0], [&](const auto& src, auto& dst) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < n; ++k) {
        const int64_t i = wrap_index("gather", indices[k], size);
        std::copy_n(src.begin() + (o * size + i) * inner, inner, dst.begin() + (o * n + k) * inner);
      }
  });
}

std::vector<Shape> gather_elements_shapes(const OpCall& call) {
  const Shape& data = call.input_shapes[0];
  const Shape& indices = call.input_shapes[1];
  const int64_t axis = checked_axis(call);
  bool ok = data.size() == indices.size();
  for (size_t d = 0; ok && d < data.size(); ++d) ok = static_cast<int64_t>(d) == axis || indices[d] <= data[d];
  if (!ok)
    throw ShapeError("gather_elements: indices " + shape_to_string(indices) + " do not fit data " + shape_to_string(data) +
                     " outside axis " + std::to_string(axis));
  return {indices};
}

// out[i0, ..., ik, ...] = data[i0, ..., indices[i0, ..., ik, ...], ...] (at `axis`)
template <class T>
void gather_elements_kernel(const OpCall& call, std::span<const Value<T>* const> in, std::span<Value<T>> out) {
  const Shape& data_shape = in[0]->shape();
  const Tensor<int64_t>& indices = in[1]->ints;
  const int64_t axis = call.params.get_int("axis");
  const int rank = static_cast<int>(data_shape.size());
  const std::vector<int64_t> strides = row_major_strides(data_shape);
  move_elements(*in[0], out[0], [&](const auto& src, auto& dst) {
    std::vector<int64_t> idx(rank, 0);
    for (int64_t o = 0; o < indices.size(); ++o) {
      int64_t offset = 0;
      for (int d = 0; d < rank; ++d)
        offset += (d == axis ? wrap_index("gather_elements", indices.data[o], data_shape[d]) : idx[d]) * strides[d];
      dst[o] = src[offset];
      for (int ax = rank - 1; ax >= 0; --ax) {
        if (++idx[ax] < indices.shape[ax]) break;
        idx[ax] = 0;
      }
    }
  });
}

}  // namespace

void register_indexing_ops(OpTable& table) {
  using namespace ops;
  table.add({.name = "gather",
             .summary = "pick slices along an axis by int64 indices (embedding lookup)",
             .inputs = {"data", "indices"},
             .params = {int_param("axis", 0, 0, INT64_MAX, "the axis to index")},
             .infer_shapes = gather_shapes,
             .infer_dtypes = data_dtype_with_int_indices,
             .mixed_kernels = TGR_MIXED_KERNELS(gather_kernel),
             .multilinear = {true, false},
             .cost = per_output_element_cost()});
  table.add({.name = "gather_elements",
             .summary = "pick single elements along an axis by int64 indices of the output's shape",
             .inputs = {"data", "indices"},
             .params = {int_param("axis", 0, 0, INT64_MAX, "the axis to index")},
             .infer_shapes = gather_elements_shapes,
             .infer_dtypes = data_dtype_with_int_indices,
             .mixed_kernels = TGR_MIXED_KERNELS(gather_elements_kernel),
             .multilinear = {true, false},
             .cost = per_output_element_cost()});
}

}  // namespace tgr
