// Opaque operators: ONNX nodes the importer has no mapping for, kept as they
// are when ImportOptions::keep_unsupported is set (what `optimize` does).
//
// Each one becomes a graph node of its own OpDef, named "opaque:OP_TYPE",
// of kind OpKind::kOpaque (the registries' switches over kinds say what
// they do with it), with no kernels and no rules: matching never touches it (no rule names
// it), the interpreter cannot run it, constant folding skips it, and the
// exporter writes the original NodeProto back (attributes, domain and name
// unchanged; only its input and output value names follow the export). Its
// output shapes and element types must be static in the model (graph
// outputs or value_info), since nothing else can tell them.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/op_def.h"

namespace tgr::onnx_io {

struct OpaqueNode {
  onnx::NodeProto proto;                 // as in the model
  std::vector<int> input_positions;      // per IR input: its index in proto.input()
  // The outer values its subgraphs (If's branches, Loop's body) read by
  // name: the IR inputs after those of input_positions, in this order, so
  // that their producers stay live and the export keeps these names.
  std::vector<std::string> captured;
  std::vector<int> output_positions;     // per IR output: its index in proto.output()
  int64_t domain_opset = -1;             // the model's opset of proto.domain()
};

// A new operator for one opaque node. Every Graph holding a node of it
// shares its ownership (OpDef::run_time_owner), so it lives as long as the
// graphs that use it: add it to one before dropping the returned pointer.
std::shared_ptr<const OpDef> make_opaque_op(OpaqueNode node, std::vector<Shape> shapes, std::vector<DType> dtypes);

// The node an opaque operator stands for; null for the table's operators.
const OpaqueNode* find_opaque(const OpDef& op);
inline bool is_opaque(const OpDef& op) { return find_opaque(op) != nullptr; }

}  // namespace tgr::onnx_io
