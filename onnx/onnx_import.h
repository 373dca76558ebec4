// ONNX -> graph IR. Loads models as exporters write them (opsets 11 to 20,
// nodes in any order, external data), folds every subgraph that depends only
// on constants (the Shape/Gather/Concat chains around Reshape, attention
// masks), and maps each remaining node to operators of the table, so the
// graph holds the real computation with static shapes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "onnx/onnx_proto.h"
#include "util/limits.h"

namespace tgr::onnx_io {

// A node whose operator has no mapping; the message names the node, its
// operator (with the domain when not the default) and the opset.
class UnsupportedOperator : public OnnxError {
 public:
  using OnnxError::OnnxError;
};

// What a model may ask the importer for (a 145-byte model can ask for a
// ConstantOfShape of 2^31 elements): the largest tensor, in elements, any
// node may produce, and the total bytes of the constants import computes
// (folded nodes, ConstantOfShape, Range). Beyond either, the import fails
// naming the node and the limit (`run`/`optimize` --max-elements, --max-bytes).
// It is the one limits policy of util/limits.h: the model's initializers (as
// converted: an INT8 tensor takes 8 times its bytes as int64) count in
// max_bytes too, and load_model applies it to external data and unknown
// protobuf fields.
using ImportLimits = util::Limits;

struct ImportOptions {
  // Shapes for graph inputs, overriding (and required for) symbolic dims.
  std::map<std::string, Shape> input_shapes;
  // Keep nodes without a mapping as opaque operators (onnx/opaque_op.h)
  // instead of failing; their output shapes must be static in the model.
  bool keep_unsupported = false;
  ImportLimits limits;
};

struct ImportedModel {
  Graph graph;  // inputs and outputs keep the model's names
  int64_t opset = 0;
  int64_t ir_version = 0;
  std::string producer;
  int folded_nodes = 0;  // ONNX nodes computed at import (constant subgraphs)
  int opaque_nodes = 0;  // nodes kept as opaque operators (keep_unsupported)
  bool external_data = false;  // import_model_file: some weights were in files beside the model
  // What the graph does not hold but an export must write back:
  // model-local functions (ModelProto.functions, called by opaque nodes)
  // and the model's opsets of other domains than the default one; the
  // initializers also listed as graph inputs (defaults a caller may
  // override), in the order of the graph's inputs.
  std::vector<onnx::FunctionProto> functions;
  std::map<std::string, int64_t> domain_opsets;
  std::vector<std::string> overridable_initializers;
};

ImportedModel import_model(const onnx::ModelProto& model, const ImportOptions& options = {});
ImportedModel import_model_file(const std::string& path, const ImportOptions& options = {});

// The ONNX operators the importer maps (for messages and the README).
std::vector<std::string> supported_onnx_operators();

}  // namespace tgr::onnx_io
