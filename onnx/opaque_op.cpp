#include "onnx/opaque_op.h"

#include <memory>

namespace tgr::onnx_io {
namespace {

constexpr std::string_view kOpaquePrefix = "opaque:";

// An opaque operator and the node it stands for, in one allocation that the
// graphs using it own (OpDef::run_time_owner): an importer that runs many
// times in one process (the Python bindings, a fuzzer) frees each model's
// opaque operators with its last graph.
struct OpaqueOp : OpDef {
  OpaqueNode node;
};

}  // namespace

std::shared_ptr<const OpDef> make_opaque_op(OpaqueNode node, std::vector<Shape> shapes, std::vector<DType> dtypes) {
  auto op = std::make_shared<OpaqueOp>();
  op->kind = OpKind::kOpaque;  // not the table's (ir/op_def.h)
  op->name = kOpaquePrefix;
  op->name += node.proto.op_type();
  op->summary = "an ONNX node kept as it is (no mapping)";
  op->inputs = {"inputs"};
  op->variadic = true;
  const int outputs = static_cast<int>(shapes.size());
  op->num_outputs = [outputs](const Params&) { return outputs; };
  op->infer_shapes = [shapes = std::move(shapes)](const OpCall&) { return shapes; };
  op->infer_dtypes = [dtypes = std::move(dtypes)](const OpCall&) { return dtypes; };
  op->multilinear = {false};
  op->field = FieldSemantics::kUndefined;
  op->node = std::move(node);
  op->run_time_owner = op;
  return op;
}

const OpaqueNode* find_opaque(const OpDef& op) {
  // Only make_opaque_op names an operator "opaque:..." and gives it an owner.
  if (op.kind != OpKind::kOpaque || !op.name.starts_with(kOpaquePrefix) || op.run_time_owner.expired()) return nullptr;
  return &static_cast<const OpaqueOp&>(op).node;
}

}  // namespace tgr::onnx_io
