// The importer: what the graph looks like after import (constant subgraphs
// folded, ONNX operators mapped onto the table), and its errors. Values are
// checked against ONNX Runtime by the onnx_op.* and onnx_model.* ctest
// entries (`run --test-data`).
#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "ir/float_types.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"
#include "onnx/opaque_op.h"
#include "runtime/interpreter.h"

namespace tgr::onnx_io {
namespace {

const std::string kData = TGR_TEST_DATA;

std::map<std::string, int> op_counts(const Graph& g) {
  std::map<std::string, int> counts;
  for (int32_t i : g.topological_order())
    if (g.node(i).is_op()) ++counts[g.node(i).op->name];
  return counts;
}

std::string model(const std::string& name) { return kData + "/onnx_ops/" + name + "/model.onnx"; }

// The importer's error for a model it refuses; empty when it imports.
std::string error_of(const onnx::ModelProto& m) {
  try {
    import_model(m);
  } catch (const OnnxError& e) {
    return e.what();
  }
  return "";
}

TEST(OnnxImport, ShapeChainsFoldAway) {
  // Shape -> Gather -> Unsqueeze -> Concat -> Reshape: one reshape remains.
  const ImportedModel m = import_model_file(model("fold_shape_gather_reshape_op13"));
  const auto counts = op_counts(m.graph);
  EXPECT_EQ(counts.size(), 1u) << "operators left: " << counts.size();
  EXPECT_EQ(counts.count("reshape"), 1u);
  EXPECT_GT(m.folded_nodes, 0);
}

TEST(OnnxImport, AttentionMaskChainsFoldAway) {
  for (const char* name : {"fold_attention_mask_op13", "fold_attention_mask_bert_op11"}) {
    const ImportedModel m = import_model_file(model(name));
    const auto counts = op_counts(m.graph);
    for (const char* gone : {"equal", "where", "cast", "expand", "sub", "logical_not"})
      EXPECT_EQ(counts.count(gone), 0u) << name << " still has " << gone;
    EXPECT_GE(counts.count("add"), 1u) << name;
  }
}

TEST(OnnxImport, BertHoldsOnlyTheRealComputation) {
  const ImportedModel m = import_model_file(kData + "/models/bert_tiny.onnx");
  EXPECT_EQ(m.opset, 17);
  const auto counts = op_counts(m.graph);
  // What is left is the network itself; the mask and position machinery
  // (Shape, Equal, Where on constants, Expand, ConstantOfShape) is folded.
  const std::set<std::string> allowed = {"gather", "add", "layer_norm", "matmul", "reshape", "transpose", "batch_matmul",
                                         "mul", "div", "softmax", "is_nan", "where", "erf", "sub"};
  for (const auto& [op, n] : counts) EXPECT_TRUE(allowed.count(op)) << "unexpected " << op << " x" << n;
  EXPECT_EQ(counts.at("layer_norm"), 5);
  EXPECT_EQ(counts.at("softmax"), 2);
  EXPECT_EQ(counts.at("gather"), 1);  // the word embedding: its indices are the input
  ASSERT_EQ(m.graph.inputs().size(), 1u);
  EXPECT_EQ(m.graph.dtype({m.graph.inputs()[0], 0}), DType::kInt64);
  EXPECT_EQ(m.graph.output_names().at(0), "283");
}

TEST(OnnxImport, SqueezeNetMapsConvBiasAndPools) {
  const ImportedModel m = import_model_file(kData + "/models/squeezenet1_1.onnx");
  const auto counts = op_counts(m.graph);
  EXPECT_EQ(counts.at("conv2d"), 26);
  EXPECT_EQ(counts.at("add"), 26);  // each Conv's bias
  EXPECT_EQ(counts.at("relu"), 26);
  EXPECT_EQ(counts.at("maxpool"), 3);
  EXPECT_EQ(counts.at("avgpool"), 1);  // GlobalAveragePool
  EXPECT_EQ(counts.count("identity"), 0u);
  EXPECT_EQ(m.graph.node(m.graph.inputs()[0]).name, "input.1");
}

TEST(OnnxImport, NodesOutOfOrderAndExternalData) {
  const ImportedModel shuffled = import_model_file(model("unsorted_nodes_op13"));
  EXPECT_GE(shuffled.graph.num_ops(), 3);
  const ImportedModel external = import_model_file(model("external_data_matmul_add_op13"));
  EXPECT_GE(external.graph.num_ops(), 1);
}

TEST(OnnxImport, SymbolicDimensionsNeedAShape) {
  onnx::ModelProto m = load_model(kData + "/models/bert_tiny.onnx");
  auto* dim = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1);
  dim->set_dim_param("sequence");
  try {
    import_model(m);
    ADD_FAILURE() << "expected an error";
  } catch (const OnnxError& e) {
    EXPECT_NE(std::string(e.what()).find("symbolic dimension 'sequence'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--input-shape input.1=DIMS"), std::string::npos) << e.what();
  }
  ImportOptions options;
  options.input_shapes["input.1"] = {1, 64};
  EXPECT_NO_THROW(import_model(m, options));
  // A shape for a name that is not an input (here an initializer) is an error naming the inputs.
  options.input_shapes["bert.embeddings.word_embeddings.weight"] = {1000, 128};
  try {
    import_model(m, options);
    ADD_FAILURE() << "expected an error";
  } catch (const OnnxError& e) {
    EXPECT_NE(
        std::string(e.what()).find("a shape is given for 'bert.embeddings.word_embeddings.weight', which is not an "
                                   "input of the model (its inputs: 'input.1')"),
        std::string::npos)
        << e.what();
  }
}

// The operators exporters emit around ViT's, GPT-2's and T5's attention
// (Mod, Trilu, Min, a Cast of -inf to int64) act on constants and fold away.
TEST(OnnxImport, ExporterArithmeticFoldsAway) {
  for (const char* name : {"vit_tiny", "gpt2_tiny", "t5_encoder_tiny"}) {
    const ImportedModel m = import_model_file(kData + "/models/" + name + ".onnx");
    const auto counts = op_counts(m.graph);
    for (const char* gone : {"less", "equal", "greater", "cast"})
      EXPECT_EQ(counts.count(gone), 0u) << name << " still has " << gone;
    EXPECT_GE(counts.count("softmax"), 1u) << name;
    EXPECT_GT(m.folded_nodes, 0) << name;
  }
  // T5's relative-position bias is one constant gathered by nothing: the
  // bucket arithmetic (Log, Cast of -inf, Min, Where) left no where either.
  EXPECT_EQ(op_counts(import_model_file(kData + "/models/t5_encoder_tiny.onnx").graph).count("where"), 0u);
}

// Decoders of today's families (tools/export_decoders.py). From the legacy
// exporter, with the mask made inside the model and no positions given, the
// causal-mask chain (And, Equal, Where, Cast, ...) and the rotary
// embedding's Cos and Sin act on constants and fold; from the dynamo
// exporter, with the mask and positions as inputs, they run in the graph
// (And as a where, GatherND as a gather).
TEST(OnnxImport, DecoderExports) {
  auto count = [](const std::map<std::string, int>& counts, const char* op) {
    const auto it = counts.find(op);
    return it == counts.end() ? 0 : it->second;
  };
  for (const char* name : {"llama_tiny", "qwen2_tiny", "gemma_tiny", "mistral_tiny", "llama_tiny_op20"}) {
    const ImportedModel m = import_model_file(kData + "/models/" + name + ".onnx");
    const auto counts = op_counts(m.graph);
    for (const char* gone : {"cos", "sin", "equal", "less_equal", "cast"})
      EXPECT_EQ(count(counts, gone), 0) << name << " still has " << gone;
    EXPECT_EQ(count(counts, "softmax"), 2) << name;  // one per layer
    EXPECT_GT(m.folded_nodes, 0) << name;
  }
  for (const char* name : {"llama_tiny_dynamo", "gemma_tiny_dynamo"}) {
    const ImportedModel m = import_model_file(kData + "/models/" + name + ".onnx");
    const auto counts = op_counts(m.graph);
    EXPECT_EQ(m.graph.inputs().size(), 3u) << name;  // ids, mask, positions
    EXPECT_EQ(count(counts, "cos"), 1) << name;
    EXPECT_EQ(count(counts, "sin"), 1) << name;
    EXPECT_GE(count(counts, "where"), 1) << name;
    EXPECT_EQ(count(counts, "softmax"), 2) << name;
  }
}

TEST(OnnxImport, OneElementConstantsBroadcastAsScalars) {
  // ViT's attention scale is computed from a Shape, so it folds to a [1]
  // tensor; broadcast against q and k it is imported as a rank-0 constant,
  // the scalar that rules over `s0=scalar` match.
  const ImportedModel m = import_model_file(kData + "/models/vit_tiny.onnx");
  const Graph& g = m.graph;
  int scalars = 0;
  for (int32_t i : g.topological_order()) {
    const Node& n = g.node(i);
    if (!n.is_op() || n.op->name != "mul") continue;
    for (ValueRef in : n.inputs) {
      if (!g.node(in.node).is_constant() || num_elements(g.shape(in)) != 1) continue;
      EXPECT_TRUE(g.shape(in).empty()) << "mul node " << i << " reads a one-element constant of shape "
                                       << shape_to_string(g.shape(in));
      ++scalars;
    }
  }
  EXPECT_GE(scalars, 4);  // q's and k's scale in each of its two layers
}

// ConvTranspose becomes one conv2d whose kernel (flipped, channels swapped)
// is computed at import; 1-D windows are 2-D ones between reshapes.
TEST(OnnxImport, ConvTransposeAndOneDimensionalWindowsBecomeConv2d) {
  auto counts = op_counts(import_model_file(model("convtranspose_op11")).graph);
  EXPECT_EQ(counts, (std::map<std::string, int>{{"conv2d", 1}, {"add", 1}}));
  counts = op_counts(import_model_file(model("convtranspose_strides_pads_outpad_op13")).graph);
  EXPECT_EQ(counts.at("conv2d"), 1);
  EXPECT_EQ(counts.at("pad"), 1);  // the input spread out by the strides
  counts = op_counts(import_model_file(model("conv1d_pads_strides_op13")).graph);
  EXPECT_EQ(counts.at("conv2d"), 1);
  EXPECT_EQ(counts.at("reshape"), 2);
  counts = op_counts(import_model_file(model("maxpool1d_pads_strides_op13")).graph);
  EXPECT_EQ(counts, (std::map<std::string, int>{{"maxpool", 1}, {"reshape", 2}}));
}

TEST(OnnxImport, EinsumBecomesProducts) {
  auto counts = op_counts(import_model_file(model("einsum_attention_op13")).graph);
  EXPECT_EQ(counts.at("batch_matmul"), 1);
  EXPECT_EQ(counts.count("reduce_sum"), 0u);
  counts = op_counts(import_model_file(model("einsum_three_operands_op13")).graph);
  EXPECT_EQ(counts.count("matmul") + counts.count("batch_matmul"), 2u);
  // A diagonal is a gather of the flattened repeated axes; a trace sums it.
  counts = op_counts(import_model_file(model("einsum_trace_op13")).graph);
  EXPECT_EQ(counts, (std::map<std::string, int>{{"reshape", 1}, {"gather", 1}, {"reduce_sum", 1}}));
  // A letter repeated in the output is not a product of the inputs.
  onnx::ModelProto m = load_model(model("einsum_transpose_sum_op13"));
  m.mutable_graph()->mutable_node(0)->mutable_attribute(0)->set_s("ijk->kk");
  try {
    import_model(m);
    ADD_FAILURE() << "expected an error";
  } catch (const OnnxError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'einsum_0' (Einsum, opset 13): the output letter 'k' repeats"),
              std::string::npos)
        << e.what();
  }
}

// Resize becomes per-axis gathers with constant indices (nearest), weighted
// by constant factors and summed (linear: two taps, cubic: four); axes of
// scale 1 cost nothing. Unsupported attributes are errors naming the node.
TEST(OnnxImport, ResizeBecomesGathersAndWeightedSums) {
  auto counts = op_counts(import_model_file(model("resize_nearest_asymmetric_floor_op13")).graph);
  EXPECT_EQ(counts, (std::map<std::string, int>{{"gather", 2}}));
  counts = op_counts(import_model_file(model("resize_linear_align_corners_op13")).graph);
  EXPECT_EQ(counts, (std::map<std::string, int>{{"gather", 4}, {"mul", 4}, {"add", 2}}));
  counts = op_counts(import_model_file(model("resize_cubic_align_corners_op13")).graph);
  EXPECT_EQ(counts.at("gather"), 8);
  onnx::ModelProto m = load_model(model("resize_linear_align_corners_op13"));
  for (auto& a : *m.mutable_graph()->mutable_node(0)->mutable_attribute())
    if (a.name() == "coordinate_transformation_mode") a.set_s("tf_crop_and_resize");
  try {
    import_model(m);
    ADD_FAILURE() << "expected an error";
  } catch (const OnnxError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'resize_0' (Resize, opset 13): coordinate_transformation_mode "
                                         "'tf_crop_and_resize' is not supported"),
              std::string::npos)
        << e.what();
  }
}

TEST(OnnxImport, UnsupportedOperatorsAndOpsetsAreNamed) {
  try {
    import_model_file(kData + "/onnx_bad/unsupported_op.onnx");
    ADD_FAILURE() << "expected an error";
  } catch (const UnsupportedOperator& e) {
    EXPECT_NE(std::string(e.what()).find("node 'my_det_node' (Det, opset 13): operator not supported"), std::string::npos)
        << e.what();
  }
  onnx::ModelProto m = load_model(kData + "/models/squeezenet1_1.onnx");
  for (auto& imp : *m.mutable_opset_import())
    if (imp.domain().empty()) imp.set_version(9);
  try {
    import_model(m);
    ADD_FAILURE() << "expected an error";
  } catch (const OnnxError& e) {
    EXPECT_NE(std::string(e.what()).find("opset 9 is not supported (opsets 11 to 20 are)"), std::string::npos)
        << e.what();
  }
  // A node reading a value nothing produces.
  onnx::ModelProto broken = load_model(kData + "/models/squeezenet1_1.onnx");
  broken.mutable_graph()->mutable_node(3)->set_input(0, "nowhere");
  try {
    import_model(broken);
    ADD_FAILURE() << "expected an error";
  } catch (const OnnxError& e) {
    EXPECT_NE(std::string(e.what()).find("reads 'nowhere', which no node, graph input or initializer produces"),
              std::string::npos)
        << e.what();
  }
  EXPECT_GE(supported_onnx_operators().size(), 80u);
}

// An operator kept opaque lives as long as the graphs that hold it, not as
// long as the program: importing many models in one process (the Python
// bindings, the onnx_import fuzzer) must not keep every one's nodes.
TEST(OnnxImport, OpaqueOperatorsLiveAsLongAsTheirGraphs) {
  ImportOptions keep;
  keep.keep_unsupported = true;
  std::weak_ptr<const OpDef> det;
  std::optional<Graph> rebuilt;
  {
    ImportedModel imported = import_model_file(kData + "/onnx_bad/unsupported_op.onnx", keep);
    ASSERT_EQ(imported.opaque_nodes, 1);
    const Graph& g = imported.graph;
    for (const Node& n : g.nodes())
      if (n.is_op() && is_opaque(*n.op)) det = n.op->run_time_owner;
    ASSERT_FALSE(det.expired());
    EXPECT_EQ(find_opaque(*det.lock())->proto.name(), "my_det_node");
    // A graph a pass builds from it (here: every node again) holds it too.
    rebuilt.emplace();
    std::vector<ValueRef> values;
    for (const Node& n : g.nodes()) {
      if (n.is_input()) {
        values.push_back(rebuilt->add_input(n.name, n.output_shapes[0], n.output_dtypes[0]));
      } else if (n.is_constant()) {
        values.push_back(rebuilt->add_shared_constant(n));
      } else {
        std::vector<ValueRef> ins;
        for (ValueRef v : n.inputs) ins.push_back({values.at(v.node).node, v.output});
        values.push_back(rebuilt->add_op(*n.op, n.params, ins).at(0));
      }
    }
  }
  ASSERT_FALSE(det.expired()) << "the rebuilt graph holds the operator";
  Graph copy = *rebuilt;
  rebuilt.reset();
  ASSERT_FALSE(det.expired()) << "a copy of the graph holds the operator";
  copy = Graph{};
  EXPECT_TRUE(det.expired()) << "no graph holds the operator, and it is still alive";
}

// A negative dimension has no size: an initializer with one is refused by
// name before its size is counted against the limits (the onnx_import
// fuzzer found the product of its dims, -9e30 bytes, converted to int64).
TEST(OnnxImport, InitializersWithANegativeDimensionAreNamed) {
  onnx::ModelProto m = load_model(kData + "/models/squeezenet1_1.onnx");
  onnx::TensorProto& init = *m.mutable_graph()->mutable_initializer(0);
  init.set_dims(0, -init.dims(0));
  const std::string error = error_of(m);
  EXPECT_NE(error.find("initializer '" + init.name() + "' has a negative dimension (" + std::to_string(init.dims(0)) +
                       ")"),
            std::string::npos)
      << error;
}

// Range's length is computed in doubles from the model's start, limit and
// delta; bounds that make it negative, NaN or huge, or that mix types, are
// errors or empty ranges, never an out-of-range conversion (UBSan found one
// through the fuzzer: an int64 start with a float64 limit of -7.8e35).
TEST(OnnxImport, RangeBoundsAreCheckedBeforeTheLengthIsComputed) {
  auto with_bounds = [](const char* name, double start, double limit, double delta, int data_type) {
    onnx::ModelProto m = load_model(model(name));
    for (auto& init : *m.mutable_graph()->mutable_initializer()) {
      const double v = init.name() == "start" ? start : init.name() == "limit" ? limit : delta;
      init.clear_raw_data();
      init.clear_float_data();
      init.clear_int64_data();
      init.clear_double_data();
      init.set_data_type(init.name() == "limit" ? data_type : init.data_type());
      if (init.data_type() == onnx::TensorProto::FLOAT) init.add_float_data(static_cast<float>(v));
      else if (init.data_type() == onnx::TensorProto::DOUBLE) init.add_double_data(v);
      else init.add_int64_data(static_cast<int64_t>(v));
    }
    return m;
  };
  EXPECT_NE(error_of(with_bounds("range_int64_add_op13", 0, -7.8e35, -1, onnx::TensorProto::DOUBLE))
                .find("start, limit and delta must have the same type"),
            std::string::npos);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (double limit : {-7.8e35, nan, -std::numeric_limits<double>::infinity()}) {
    // An empty range: Add then fails to broadcast it against x (2 x 5).
    const std::string e = error_of(with_bounds("range_float_add_op11", 0, limit, 1, onnx::TensorProto::FLOAT));
    EXPECT_NE(e.find("node 'add_1'"), std::string::npos) << limit << ": " << e;
  }
  EXPECT_NE(error_of(with_bounds("range_float_add_op11", 0, 7.8e35, 1, onnx::TensorProto::FLOAT))
                .find("elements is larger than the limit"),
            std::string::npos);
  // Within the limits it is still the range it was (the ctest onnx_op entries check its values).
  EXPECT_EQ(error_of(with_bounds("range_float_add_op11", 1, 3.5, 0.5, onnx::TensorProto::FLOAT)), "");
}

// Unsqueeze's axes, counted from the end when negative, must not repeat: the
// fuzzer found axes {-1, -1} inserting past the end of the shape.
TEST(OnnxImport, UnsqueezeAxesListedTwiceAreNamed) {
  onnx::ModelProto m = load_model(model("unsqueeze_axes_input_op13"));
  bool changed = false;
  for (auto& init : *m.mutable_graph()->mutable_initializer()) {
    if (init.name() != "axes") continue;
    init.clear_raw_data();
    init.clear_int64_data();
    init.add_int64_data(-1);
    init.add_int64_data(-1);
    changed = true;
  }
  ASSERT_TRUE(changed);
  try {
    import_model(m);
    FAIL() << "axes {-1, -1} were accepted";
  } catch (const OnnxError& e) {
    EXPECT_NE(std::string(e.what()).find("axes list axis 3 twice"), std::string::npos) << e.what();
  }
}

// GatherND's indices must be constant, in range and without batch axes;
// And's operands bool: each error names the node and what is wrong.
TEST(OnnxImport, GatherNdAndLogicOperandsAreChecked) {
  auto with_index = [](int64_t first) {
    onnx::ModelProto m = load_model(model("gathernd_rows_op13"));
    onnx::TensorProto& i = *m.mutable_graph()->mutable_initializer(0);
    i.clear_raw_data();
    for (int64_t v : {first, int64_t{0}, int64_t{-1}, int64_t{1}}) i.add_int64_data(v);
    return m;
  };
  EXPECT_EQ(error_of(with_index(2)), "");
  EXPECT_NE(error_of(with_index(3)).find("index 3 out of range for axis 0 of size 3"), std::string::npos);
  EXPECT_NE(error_of(with_index(-4)).find("index -4 out of range for axis 0 of size 3"), std::string::npos);
  onnx::ModelProto batched = with_index(2);
  onnx::AttributeProto& b = *batched.mutable_graph()->mutable_node(0)->add_attribute();
  b.set_name("batch_dims");
  b.set_type(onnx::AttributeProto::INT);
  b.set_i(1);
  EXPECT_NE(error_of(batched).find("batch_dims other than 0 is not supported"), std::string::npos);
  onnx::ModelProto computed = load_model(model("gathernd_rows_op13"));  // indices a graph input
  onnx::ValueInfoProto& in = *computed.mutable_graph()->add_input();
  in.set_name("i");
  in.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  for (int64_t d : {2, 2, 1}) in.mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  computed.mutable_graph()->clear_initializer();
  EXPECT_NE(error_of(computed).find("indices must be a constant int64 tensor"), std::string::npos);
  onnx::ModelProto floats = load_model(model("and_bcast_op13"));
  floats.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  EXPECT_NE(error_of(floats).find("operands must be bool, got float"), std::string::npos) << error_of(floats);
}

// Window attributes are checked before the importer computes with them:
// the fuzzer found strides of 0 dividing by zero in ceil_mode's padding.
TEST(OnnxImport, WindowAttributesBelowOneAreNamed) {
  auto error_with = [](const char* attribute, int64_t value) -> std::string {
    onnx::ModelProto m = load_model(model("avgpool_ceil_exclude_op11"));
    for (auto& a : *m.mutable_graph()->mutable_node(0)->mutable_attribute())
      if (a.name() == attribute)
        for (auto& v : *a.mutable_ints()) v = value;
    try {
      import_model(m);
    } catch (const OnnxError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_with("strides", 0).find("strides has 0; each must be at least 1"), std::string::npos)
      << error_with("strides", 0);
  EXPECT_NE(error_with("kernel_shape", -2).find("kernel_shape has -2"), std::string::npos);
  EXPECT_EQ(error_with("strides", 2), "");  // the model as it is
}

}  // namespace
}  // namespace tgr::onnx_io

#include "onnx/onnx_export.h"

namespace tgr::onnx_io {
namespace {

// import -> export -> import: the same graph (structural hash, so the same
// operators, parameters, constants and names) and the same outputs.
TEST(OnnxRoundTrip, ImportExportImportIsTheSameGraph) {
  const std::vector<std::string> paths = {
      kData + "/models/squeezenet1_1.onnx", kData + "/models/bert_tiny.onnx", model("conv_groups_dilation_op11"),
      model("gemm_transab_alpha_beta_op13"), model("maxpool_ceil_changes_op11"), model("fold_attention_mask_op13"),
      model("layernorm_axis1_op17"), model("split_input_op13"), model("slice_neg_axes_steps_op13")};
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    if (!std::filesystem::exists(path)) {
      ADD_FAILURE() << "missing test model";
      continue;
    }
    const ImportedModel first = import_model_file(path);
    ExportOptions options;
    options.opset = first.opset;
    const onnx::ModelProto exported = export_graph(first.graph, options);
    EXPECT_EQ(default_opset(exported), first.opset);
    const ImportedModel second = import_model(exported);
    EXPECT_EQ(second.graph.num_ops(), first.graph.num_ops());
    EXPECT_EQ(second.graph.structural_hash(), first.graph.structural_hash());
    ASSERT_EQ(second.graph.inputs().size(), first.graph.inputs().size());
    std::vector<Value<float>> inputs;
    for (size_t i = 0; i < first.graph.inputs().size(); ++i) {
      const Node& in = first.graph.node(first.graph.inputs()[i]);
      EXPECT_EQ(second.graph.node(second.graph.inputs()[i]).name, in.name);
      if (in.output_dtypes[0] == DType::kFloat) {
        inputs.emplace_back(random_tensor<float>(in.output_shapes[0], 5 + i));
      } else {
        Tensor<int64_t> ids(in.output_shapes[0]);
        for (size_t k = 0; k < ids.data.size(); ++k) ids.data[k] = static_cast<int64_t>(k % 2);
        inputs.emplace_back(in.output_dtypes[0], ids);
      }
    }
    EXPECT_EQ(second.graph.output_names(), first.graph.output_names());
    const auto a = evaluate_values<float>(first.graph, inputs), b = evaluate_values<float>(second.graph, inputs);
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k) {
      EXPECT_EQ(a[k].real.data, b[k].real.data);
      EXPECT_EQ(a[k].ints.data, b[k].ints.data);
    }
  }
}

// save_graph streams the large weights into the file after the rest of the
// graph: read back, the file is the model export_graph makes (protobuf
// serializes a parsed message in field order, so equal bytes are an equal
// model), large weights and small ones alike.
TEST(OnnxRoundTrip, SaveGraphWritesWhatExportGraphMakes) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "tgr_save_graph_test";
  std::filesystem::create_directories(dir);
  for (const char* name : {"squeezenet1_1", "bert_tiny"}) {
    SCOPED_TRACE(name);
    const ImportedModel imported = import_model_file(kData + "/models/" + name + ".onnx");
    ExportOptions options;
    options.opset = imported.opset;
    const onnx::ModelProto exported = export_graph(imported.graph, options);
    int64_t large = 0, small = 0;
    for (const auto& t : exported.graph().initializer()) ++(t.raw_data().size() >= 64 * 1024 ? large : small);
    EXPECT_GT(large, 0);
    EXPECT_GT(small, 0);
    const std::string path = (dir / (std::string(name) + ".onnx")).string();
    save_graph(imported.graph, options, path);
    EXPECT_TRUE(load_model(path).SerializeAsString() == exported.SerializeAsString());
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tgr::onnx_io

namespace tgr::onnx_io {
namespace {

// x (float16 2x3) @ w (float16 3x2, int32_data) -> Reciprocal -> Cast to
// float32; the importer's own constant (Reciprocal's 1) takes float16.
onnx::ModelProto float16_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  auto value = [](onnx::ValueInfoProto* v, const std::string& name, int32_t type, std::vector<int64_t> dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  value(g->add_input(), "x", onnx::TensorProto::FLOAT16, {2, 3});
  value(g->add_output(), "y", onnx::TensorProto::FLOAT, {2, 2});
  value(g->add_output(), "h", onnx::TensorProto::FLOAT16, {2, 2});
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT16);
  w->add_dims(3);
  w->add_dims(2);
  for (int bits : {0x3C00, 0x4000, 0x3800, 0xBC00, 0x3555, 0x0001}) w->add_int32_data(bits);  // 1 2 .5 -1 .333 2^-24
  auto node = [&](const std::string& op, std::vector<std::string> in, const std::string& out) {
    onnx::NodeProto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(out + "_node");
    for (auto& i : in) n->add_input(i);
    n->add_output(out);
    return n;
  };
  node("MatMul", {"x", "w"}, "p");
  node("Reciprocal", {"p"}, "h");
  onnx::AttributeProto* to = node("Cast", {"h"}, "y")->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::FLOAT);
  return m;
}

TEST(OnnxHalfTypes, Float16ModelImportsInItsTypesAndExportsThemBack) {
  const ImportedModel m = import_model(float16_model());
  const Graph& g = m.graph;
  EXPECT_EQ(g.node(g.inputs()[0]).output_dtypes[0], DType::kFloat16);
  ASSERT_EQ(g.outputs().size(), 2u);
  EXPECT_EQ(g.dtype(g.outputs()[0]), DType::kFloat);
  EXPECT_EQ(g.dtype(g.outputs()[1]), DType::kFloat16);
  for (int32_t i : g.topological_order())
    if (g.node(i).is_constant()) {
      EXPECT_EQ(g.node(i).output_dtypes[0], DType::kFloat16) << "constant " << i;
    }
  // Evaluated: the product rounded to float16, then 1 / it rounded again.
  Value<float> x(Tensor<float>({2, 3}, {1, 1, 1, 0.5f, 0.25f, 3}));
  x.dtype = DType::kFloat16;
  const std::vector<Value<float>> out = evaluate_values<float>(g, std::vector<Value<float>>{x});
  EXPECT_EQ(out[1].dtype, DType::kFloat16);
  // 1 + 0.5 + 0.33325195 (0x3555) = 1.83325195 is not a float16: the
  // product rounds to 1.8330078125, and its reciprocal rounds again.
  EXPECT_EQ(round_to_dtype(DType::kFloat16, 1.83325195f), 1.8330078125f);
  EXPECT_EQ(out[1].real.data[0], round_to_dtype(DType::kFloat16, 1.0f / 1.8330078125f));
  EXPECT_EQ(out[0].real.data, out[1].real.data);  // the cast to float32 is exact

  ExportOptions options;
  options.opset = m.opset;
  const onnx::ModelProto exported = export_graph(g, options);
  EXPECT_EQ(exported.graph().input(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(exported.graph().output(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(exported.graph().output(1).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT16);
  int64_t half_bytes = 0;
  for (const auto& t : exported.graph().initializer()) {
    EXPECT_EQ(t.data_type(), onnx::TensorProto::FLOAT16) << t.name();
    half_bytes += static_cast<int64_t>(t.raw_data().size());
  }
  EXPECT_EQ(half_bytes, 2 * (6 + 1));  // w and the 1, two bytes an element
  const ImportedModel again = import_model(exported);
  EXPECT_EQ(again.graph.structural_hash(), g.structural_hash());
}

TEST(OnnxHalfTypes, MixedFloatTypesOutsideACastAreNamed) {
  onnx::ModelProto m = float16_model();
  m.mutable_graph()->mutable_initializer(0)->set_data_type(onnx::TensorProto::BFLOAT16);
  const std::string error = error_of(m);
  EXPECT_NE(error.find("one element type, got float16 and bfloat16"), std::string::npos) << error;
}

}  // namespace
}  // namespace tgr::onnx_io
