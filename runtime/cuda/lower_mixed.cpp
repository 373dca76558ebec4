// Operators over mixed element types: comparisons, is_nan, logical_not,
// cast, where, gather, gather_elements.
#include <map>

#include "runtime/cuda/lower.h"

namespace tgr::gpu {

std::function<void()> lower_mixed(const LowerCtx& ctx, int32_t node) {
  const Node& n = ctx.graph.node(node);
  const std::string& op = n.op->name;
  const Where where = ctx.where(node);
  const Shape& out_shape = n.output_shapes[0];
  void* out = ctx.ptr({node, 0});
  const void* x = ctx.ptr(n.inputs[0]);
  const DType in_type = ctx.dtype(n.inputs[0]), out_type = n.output_dtypes[0];
  GpuContext* gpu = &ctx.gpu;
  static const std::map<std::string, CompareOp> compares{{"equal", CompareOp::kEqual},
                                                         {"less", CompareOp::kLess},
                                                         {"greater", CompareOp::kGreater},
                                                         {"less_equal", CompareOp::kLessEqual},
                                                         {"greater_equal", CompareOp::kGreaterEqual}};
  if (auto it = compares.find(op); it != compares.end()) {
    const EwInput a = broadcast_input(x, ctx.shape(n.inputs[0]), out_shape);
    const EwInput b = broadcast_input(ctx.ptr(n.inputs[1]), ctx.shape(n.inputs[1]), out_shape);
    const bool ints = in_type != DType::kFloat;
    const Dims dims = dims_of(out_shape);
    const CompareOp cmp = it->second;
    return [=] {
      launch_compare(cmp, ints, a, b, dims, static_cast<int64_t*>(out), gpu->stream);
      check_launch(op.c_str(), where);
    };
  }
  const int64_t count = num_elements(out_shape);
  if (op == "is_nan" || op == "logical_not" || op == "cast") {
    std::optional<CastKind> kind;
    if (op == "is_nan") kind = CastKind::kIsNan;
    else if (op == "logical_not") kind = CastKind::kLogicalNot;
    else if (in_type == DType::kFloat && out_type == DType::kInt64) kind = CastKind::kFloatToInt;
    else if (in_type == DType::kFloat && out_type == DType::kBool) kind = CastKind::kFloatToBool;
    else if (in_type != DType::kFloat && out_type == DType::kFloat) kind = CastKind::kIntToFloat;
    else if (in_type == DType::kInt64 && out_type == DType::kBool) kind = CastKind::kIntToBool;
    if (!kind) {  // the same storage: a copy
      const size_t bytes = static_cast<size_t>(count * device_element_bytes(out_type));
      return [=] { TGR_GPU_CHECK(cudaMemcpyAsync(out, x, bytes, cudaMemcpyDeviceToDevice, gpu->stream), where); };
    }
    const CastKind k = *kind;
    return [=] {
      launch_cast(k, x, out, count, gpu->stream);
      check_launch(op.c_str(), where);
    };
  }
  const int eb = static_cast<int>(device_element_bytes(out_type));
  if (op == "where") {
    const EwInput c = broadcast_input(x, ctx.shape(n.inputs[0]), out_shape);
    const EwInput a = broadcast_input(ctx.ptr(n.inputs[1]), ctx.shape(n.inputs[1]), out_shape);
    const EwInput b = broadcast_input(ctx.ptr(n.inputs[2]), ctx.shape(n.inputs[2]), out_shape);
    const Dims dims = dims_of(out_shape);
    return [=] {
      launch_where(c, a, b, dims, eb, out, gpu->stream);
      check_launch("where", where);
    };
  }
  const Shape& data = ctx.shape(n.inputs[0]);
  const int64_t axis = n.params.get_int("axis");
  const int64_t* indices = static_cast<const int64_t*>(ctx.ptr(n.inputs[1]));
  if (op == "gather") {
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= data[d];
    for (size_t d = axis + 1; d < data.size(); ++d) inner *= data[d];
    const int64_t idx_count = num_elements(ctx.shape(n.inputs[1])), size = data[axis];
    return [=] {
      launch_gather(x, indices, out, outer, size, idx_count, inner, eb, gpu->stream);
      check_launch("gather", where);
    };
  }
  if (op == "gather_elements") {
    const Dims dd = dims_of(data), id = dims_of(ctx.shape(n.inputs[1]));
    const int ax = static_cast<int>(axis);
    return [=] {
      launch_gather_elements(x, dd, indices, id, ax, out, eb, gpu->stream);
      check_launch("gather_elements", where);
    };
  }
  fail(where, "not a mixed-type operator");
}

}  // namespace tgr::gpu
