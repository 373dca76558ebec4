// Graph -> ONNX: writes a tgr graph as an ONNX model (default domain only).
//
// Every live node becomes one or more ONNX nodes (the mapping of each IR
// operator lives in onnx_export.cpp, one section per family of ir/ops/);
// constants, and the constant operators (eye, conv_identity, pool_kernel,
// ones, evaluated here), become initializers; the graph's inputs (all of
// them, in declaration order) and outputs keep their names, element types and
// static shapes. Parameters that ONNX takes as tensors (Reshape's shape,
// Slice's ranges, Pad's pads, ...) become INT64 initializers.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "onnx/onnx_proto.h"

namespace tgr::onnx_io {

struct ExportOptions {
  int64_t opset = 17;  // the default-domain opset to write; 11 and later (11..18 tested against onnxruntime)
  int64_t ir_version = 8;
  std::string graph_name = "tgr";
  std::string producer_name = "tgr";
  // Written back from the source model (ImportedModel): its model-local
  // functions, its opsets of other domains, and the initializers it also
  // lists as graph inputs (each still written is listed again; one a rewrite
  // folded away is not).
  std::vector<onnx::FunctionProto> functions;
  std::map<std::string, int64_t> domain_opsets;
  std::vector<std::string> overridable_initializers;
};

// The oldest default-domain opset export_graph writes.
inline constexpr int64_t kMinExportOpset = 11;

// Writes every live node (Graph::topological_order) as ONNX nodes, constants
// as initializers, graph inputs and outputs with their names
// (Graph::node(i).name for inputs, Graph::output_names() for outputs),
// element types and static shapes.
//
// Names: graph input and output names are kept exactly; an output whose value
// is a graph input (under another name), a constant, or a value already
// written under another output name is produced by an Identity node. A
// constant's initializer takes the constant's name when it is set and free,
// otherwise a generated one; node outputs are named v<node>_<output> unless
// the IR node carries a free value name (Node::value_names: an imported
// model's), nodes n<node>_<op> unless the IR node carries a name (taken
// already: numbered, name_1, ...).
//
// Raises OnnxError for an opset below kMinExportOpset, for an operator that
// cannot be expressed at the requested opset (the message names the IR
// operator and the opset), and for output names that clash (two outputs of
// one name, or an output named like an input it is not).
onnx::ModelProto export_graph(const Graph& graph, const ExportOptions& options = {});

// save_model(export_graph(graph, options), path), but with the large weights
// written from the graph's constants straight into the file rather than
// copied into the model first (a copy of the weights' size, and its time,
// less: docs/benchmarks.md, "Measurements behind code comments").
void save_graph(const Graph& graph, const ExportOptions& options, const std::string& path);

// Whether ONNX defines the nodes that node `node` of `graph` exports to at
// `opset` with its float operands of type `t` (kFloat16 or kBFloat16): each
// node's schema in the ONNX library, where a type constraint that admits
// float32 must admit `t` too (Conv has no bfloat16 form before opset 22).
// The node is exported alone, its inputs of its shapes, its float ones of
// type `t`; false where that export fails.
bool exports_in_type(const Graph& graph, int32_t node, DType t, int64_t opset);

// The IR operators export_graph has a mapping for (at some opset): every
// operator of the table, which a test checks.
std::vector<std::string> exportable_ops();
// The table's operators deliberately without an ONNX form: (name, why).
const std::vector<std::pair<std::string, std::string>>& non_exportable_ops();

}  // namespace tgr::onnx_io
