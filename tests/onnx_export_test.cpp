// The ONNX exporter: the structure it writes for the tricky mappings (padding,
// slices, opset-dependent operands and decompositions), names, constants, and
// errors. tests/onnx_export_check.py runs the exported samples in
// onnxruntime (ctest: onnx_export_vs_onnxruntime).
#include "onnx/onnx_export.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>

#include "ir/text.h"

namespace tgr::onnx_io {
namespace {
using onnx::AttributeProto;
using onnx::ModelProto;
using onnx::NodeProto;
using onnx::TensorProto;

Graph graph(const std::string& text, const std::string& shapes) {
  DTypeMap dtypes;
  const ShapeMap s = parse_shape_map(shapes, &dtypes);
  return build_graph(text, s, dtypes);
}

// Every value defined once (inputs, initializers, node outputs), every node
// input defined before it is read (or empty: an omitted optional input),
// node names unique, every graph output produced.
void expect_well_formed(const ModelProto& m) {
  const onnx::GraphProto& g = m.graph();
  std::set<std::string> defined, node_names;
  auto define = [&](const std::string& name) { EXPECT_TRUE(defined.insert(name).second) << "defined twice: " << name; };
  for (const auto& i : g.input()) define(i.name());
  for (const auto& t : g.initializer()) define(t.name());
  for (const auto& n : g.node()) {
    for (const auto& in : n.input()) EXPECT_TRUE(in.empty() || defined.contains(in)) << n.name() << " reads " << in;
    for (const auto& out : n.output()) define(out);
    EXPECT_FALSE(n.name().empty());
    EXPECT_TRUE(node_names.insert(n.name()).second) << "node name twice: " << n.name();
  }
  for (const auto& o : g.output()) EXPECT_TRUE(defined.contains(o.name())) << "output not produced: " << o.name();
}

ModelProto export_at(const Graph& g, int64_t opset) {
  ExportOptions options;
  options.opset = opset;
  ModelProto m = export_graph(g, options);
  expect_well_formed(m);
  return m;
}

std::vector<const NodeProto*> nodes_of(const ModelProto& m, const std::string& type) {
  std::vector<const NodeProto*> out;
  for (const auto& n : m.graph().node())
    if (n.op_type() == type) out.push_back(&n);
  return out;
}

std::vector<std::string> op_types(const ModelProto& m) {
  std::vector<std::string> out;
  for (const auto& n : m.graph().node()) out.push_back(n.op_type());
  return out;
}

const NodeProto& only(const ModelProto& m, const std::string& type) {
  const auto nodes = nodes_of(m, type);
  if (nodes.size() != 1) throw std::runtime_error("expected one " + type + " node, found " + std::to_string(nodes.size()));
  return *nodes[0];
}

const AttributeProto* attr(const NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}
std::vector<int64_t> ints_attr(const NodeProto& n, const std::string& name) {
  const AttributeProto* a = attr(n, name);
  if (!a) throw std::runtime_error(n.op_type() + " has no attribute " + name);
  EXPECT_EQ(a->type(), AttributeProto::INTS);
  return {a->ints().begin(), a->ints().end()};
}
int64_t int_attr(const NodeProto& n, const std::string& name) {
  const AttributeProto* a = attr(n, name);
  if (!a) throw std::runtime_error(n.op_type() + " has no attribute " + name);
  EXPECT_EQ(a->type(), AttributeProto::INT);
  return a->i();
}
float float_attr(const NodeProto& n, const std::string& name) {
  const AttributeProto* a = attr(n, name);
  if (!a) throw std::runtime_error(n.op_type() + " has no attribute " + name);
  EXPECT_EQ(a->type(), AttributeProto::FLOAT);
  return a->f();
}

ConstantValue initializer(const ModelProto& m, const std::string& name) {
  for (const auto& t : m.graph().initializer())
    if (t.name() == name) return tensor_to_constant(t);
  throw std::runtime_error("no initializer " + name);
}
std::vector<int64_t> int64_initializer(const ModelProto& m, const std::string& name) {
  const ConstantValue v = initializer(m, name);
  EXPECT_EQ(v.dtype, DType::kInt64) << name;
  EXPECT_EQ(v.shape().size(), 1u) << name;
  return v.ints.data;
}

// Expects OnnxError mentioning every fragment.
template <class F>
void expect_error(F body, const std::vector<std::string>& fragments) {
  try {
    body();
    ADD_FAILURE() << "no OnnxError";
  } catch (const OnnxError& e) {
    for (const std::string& f : fragments)
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << "'" << f << "' not in: " << e.what();
  }
}

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(OnnxExport, EveryOperatorHasAMapping) {
  std::vector<std::string> table;
  for (const OpDef* op : OpTable::instance().all()) table.push_back(op->name);
  std::sort(table.begin(), table.end());
  EXPECT_EQ(exportable_ops(), table);
}

TEST(OnnxExport, ModelHeader) {
  ExportOptions options;
  options.opset = 13;
  options.ir_version = 7;
  options.graph_name = "g";
  options.producer_name = "me";
  const ModelProto m = export_graph(graph("relu(x)", "x=2"), options);
  EXPECT_EQ(m.ir_version(), 7);
  EXPECT_EQ(m.producer_name(), "me");
  EXPECT_EQ(m.graph().name(), "g");
  ASSERT_EQ(m.opset_import_size(), 1);
  EXPECT_EQ(m.opset_import(0).domain(), "");
  EXPECT_EQ(m.opset_import(0).version(), 13);
  EXPECT_EQ(default_opset(m), 13);
  EXPECT_EQ(export_graph(graph("relu(x)", "x=2")).opset_import(0).version(), 17);  // the default
}

TEST(OnnxExport, InputsAndOutputsKeepNamesTypesAndShapes) {
  const Graph g = graph("(gather(x, ids), logical_not(m), reduce_sum[axes=0, keepdims=0](s))",
                        "x=4x3,ids=int64:scalar,m=bool:2x2,s=5");
  const ModelProto m = export_at(g, 13);
  ASSERT_EQ(m.graph().input_size(), 4);
  const std::vector<std::tuple<std::string, int32_t, Shape>> inputs = {
      {"x", TensorProto::FLOAT, {4, 3}}, {"ids", TensorProto::INT64, {}}, {"m", TensorProto::BOOL, {2, 2}},
      {"s", TensorProto::FLOAT, {5}}};
  auto dims = [](const onnx::ValueInfoProto& v) {
    Shape s;
    for (const auto& d : v.type().tensor_type().shape().dim()) {
      EXPECT_TRUE(d.has_dim_value());
      s.push_back(d.dim_value());
    }
    return s;
  };
  for (int k = 0; k < 4; ++k) {
    const auto& in = m.graph().input(k);
    EXPECT_EQ(in.name(), std::get<0>(inputs[k]));
    EXPECT_EQ(in.type().tensor_type().elem_type(), std::get<1>(inputs[k]));
    EXPECT_TRUE(in.type().tensor_type().has_shape());  // a scalar has a shape of rank 0
    EXPECT_EQ(dims(in), std::get<2>(inputs[k]));
  }
  ASSERT_EQ(m.graph().output_size(), 3);
  EXPECT_EQ(m.graph().output(0).name(), "output_0");
  EXPECT_EQ(dims(m.graph().output(0)), (Shape{3}));
  EXPECT_EQ(m.graph().output(1).type().tensor_type().elem_type(), TensorProto::BOOL);
  EXPECT_TRUE(m.graph().output(2).type().tensor_type().has_shape());
  EXPECT_EQ(dims(m.graph().output(2)), Shape{});
  // Operator outputs are written under the output names directly.
  EXPECT_EQ(only(m, "Gather").output(0), "output_0");
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"Gather", "Not", "ReduceSum"}));
}

TEST(OnnxExport, UnusedInputsAreStillInputs) {
  Graph g;
  const ValueRef x = g.add_input("x", {2});
  g.add_input("unused", {3}, DType::kInt64);
  g.add_output(g.apply("relu", {x}), "y");
  const ModelProto m = export_at(g, 17);
  ASSERT_EQ(m.graph().input_size(), 2);
  EXPECT_EQ(m.graph().input(1).name(), "unused");
}

TEST(OnnxExport, OutputsThatAreInputsConstantsOrRepeated) {
  Graph g;
  const ValueRef x = g.add_input("x", {2, 3});
  const ValueRef b = g.add_input("b", {3});
  const ValueRef c = g.add_constant(ConstantValue(Tensor<float>({3}, {1, 2, 3})), "c");
  const ValueRef r = g.apply("relu", {g.apply("add", {x, b})});
  g.add_output(x, "x");        // the input under its own name: no node
  g.add_output(b, "b_out");    // an input under another name: Identity
  g.add_output(r, "r");        // written directly
  g.add_output(r, "r2");       // the same value again: Identity
  g.add_output(c, "c_out");    // a constant: Identity from its initializer
  const ModelProto m = export_at(g, 17);
  ASSERT_EQ(m.graph().output_size(), 5);
  const std::vector<std::string> names = {"x", "b_out", "r", "r2", "c_out"};
  for (int k = 0; k < 5; ++k) EXPECT_EQ(m.graph().output(k).name(), names[k]);
  EXPECT_EQ(only(m, "Relu").output(0), "r");
  const auto ids = nodes_of(m, "Identity");
  ASSERT_EQ(ids.size(), 3u);
  std::map<std::string, std::string> identity;  // output -> input
  for (const NodeProto* n : ids) identity[n->output(0)] = n->input(0);
  EXPECT_EQ(identity["b_out"], "b");
  EXPECT_EQ(identity["r2"], "r");
  EXPECT_EQ(identity["c_out"], "c");
  EXPECT_EQ(initializer(m, "c").real.data, (std::vector<float>{1, 2, 3}));
}

TEST(OnnxExport, NameClashes) {
  Graph g;
  const ValueRef x = g.add_input("x", {2});
  // A constant named like an output, two constants of one name, a node label
  // and an output named like values the exporter would generate.
  const ValueRef c1 = g.add_constant(ConstantValue(Tensor<float>({2}, {1, 2})), "y");
  const ValueRef c2 = g.add_constant(ConstantValue(Tensor<float>({2}, {3, 4})), "k");
  const ValueRef c3 = g.add_constant(ConstantValue(Tensor<float>({2}, {5, 6})), "k");
  const ValueRef a = g.add_op(OpTable::instance().get("add"), OpTable::instance().get("add").make_params(), {x, c1},
                              "my_add")[0];
  const ValueRef s = g.add_op(OpTable::instance().get("mul"), OpTable::instance().get("mul").make_params(), {a, c2},
                              "my_add")[0];  // a repeated label
  const ValueRef t = g.apply("sub", {s, c3});
  g.add_output(t, "y");
  g.add_output(g.apply("neg", {t}), "v5_0");
  const ModelProto m = export_at(g, 17);
  EXPECT_EQ(m.graph().output(0).name(), "y");
  EXPECT_EQ(only(m, "Sub").output(0), "y");
  EXPECT_EQ(only(m, "Neg").output(0), "v5_0");
  // The constant "y" lost its name to the output; "k" goes to the first constant.
  EXPECT_NE(only(m, "Add").input(1), "y");
  EXPECT_EQ(initializer(m, only(m, "Add").input(1)).real.data, (std::vector<float>{1, 2}));
  EXPECT_EQ(only(m, "Mul").input(1), "k");
  EXPECT_EQ(initializer(m, "k").real.data, (std::vector<float>{3, 4}));
  EXPECT_NE(only(m, "Sub").input(1), "k");
  EXPECT_EQ(initializer(m, only(m, "Sub").input(1)).real.data, (std::vector<float>{5, 6}));
  // The first node labelled my_add keeps the label.
  EXPECT_EQ(only(m, "Add").name(), "my_add");
  EXPECT_NE(only(m, "Mul").name(), "my_add");
}

TEST(OnnxExport, ConstantsBecomeInitializers) {
  Graph g;
  const ValueRef x = g.add_input("x", {2, 2});
  const ValueRef ids = g.add_input("ids", {3}, DType::kInt64);
  const ValueRef w = g.add_constant(ConstantValue(Tensor<float>({2, 2}, {1, -2, 0.5f, 4})), "weight");
  const ValueRef off = g.add_constant(ConstantValue(DType::kInt64, Tensor<int64_t>({3}, {7, -1, 0})));
  const ValueRef mask = g.add_constant(ConstantValue(DType::kBool, Tensor<int64_t>({2, 2}, {1, 0, 0, 1})), "mask");
  const ValueRef eye = g.apply("eye", {}, {{"n", int64_t{2}}});
  g.add_output(g.apply("where", {mask, g.apply("matmul", {g.apply("mul", {x, w}), eye}), x}), "y");
  g.add_output(g.apply("add", {ids, off}), "z");
  const ModelProto m = export_at(g, 13);
  EXPECT_EQ(m.graph().input_size(), 2);  // initializers are not inputs
  const ConstantValue weight = initializer(m, "weight");
  EXPECT_EQ(weight.dtype, DType::kFloat);
  EXPECT_EQ(weight.shape(), (Shape{2, 2}));
  EXPECT_EQ(weight.real.data, (std::vector<float>{1, -2, 0.5f, 4}));
  const ConstantValue m2 = initializer(m, "mask");
  EXPECT_EQ(m2.dtype, DType::kBool);
  EXPECT_EQ(m2.ints.data, (std::vector<int64_t>{1, 0, 0, 1}));
  const std::string off_name = only(m, "Add").input(1);
  EXPECT_FALSE(off_name.empty());
  EXPECT_EQ(int64_initializer(m, off_name), (std::vector<int64_t>{7, -1, 0}));
  // eye[n=2]() is evaluated into an initializer, not a node.
  const ConstantValue e = initializer(m, only(m, "MatMul").input(1));
  EXPECT_EQ(e.shape(), (Shape{2, 2}));
  EXPECT_EQ(e.real.data, (std::vector<float>{1, 0, 0, 1}));
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"Mul", "MatMul", "Where", "Add"}));
}

TEST(OnnxExport, ConstantOperatorsAreEvaluated) {
  const Graph g = graph("(pool_kernel[channels=2, kernel=1x2](), conv_identity[channels=1, kernel=3x1](), ones[shape=2]())", "");
  const ModelProto m = export_at(g, 11);
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"Identity", "Identity", "Identity"}));
  const auto ids = nodes_of(m, "Identity");
  EXPECT_EQ(initializer(m, ids[0]->input(0)).real.data, (std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f}));
  EXPECT_EQ(initializer(m, ids[0]->input(0)).shape(), (Shape{2, 1, 1, 2}));
  EXPECT_EQ(initializer(m, ids[1]->input(0)).real.data, (std::vector<float>{0, 1, 0}));
  EXPECT_EQ(initializer(m, ids[2]->input(0)).real.data, (std::vector<float>{1, 1}));
}

TEST(OnnxExport, ConvSamePaddingBecomesExplicitPads) {
  // Rows: 8 in, kernel 3, stride 2 -> 4 out, total padding 1, at the end (SAME_UPPER).
  const ModelProto m = export_at(graph("conv2d[stride=2x2](x, w)", "x=1x4x8x9,w=6x2x3x5"), 17);
  const NodeProto& conv = only(m, "Conv");
  // Columns: 9 in, kernel 5, stride 2 -> 5 out, total padding 4, split evenly.
  EXPECT_EQ(ints_attr(conv, "pads"), (std::vector<int64_t>{0, 2, 1, 2}));  // top, left, bottom, right
  EXPECT_EQ(ints_attr(conv, "strides"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ints_attr(conv, "dilations"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(ints_attr(conv, "kernel_shape"), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(int_attr(conv, "group"), 2);  // 4 input channels / 2 per group
  EXPECT_EQ(attr(conv, "auto_pad"), nullptr);
  EXPECT_EQ(conv.input(0), "x");
  EXPECT_EQ(conv.input(1), "w");
  EXPECT_EQ(conv.output(0), "output_0");
}

TEST(OnnxExport, ConvExplicitPaddingAndFusedRelu) {
  const ModelProto m = export_at(graph("conv2d[pad=1x2x0x3, dilation=2x1, act=relu](x, w)", "x=1x3x8x8,w=4x3x3x3"), 11);
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"Conv", "Relu"}));
  EXPECT_EQ(ints_attr(only(m, "Conv"), "pads"), (std::vector<int64_t>{1, 2, 0, 3}));
  EXPECT_EQ(ints_attr(only(m, "Conv"), "dilations"), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(only(m, "Relu").input(0), only(m, "Conv").output(0));
  EXPECT_EQ(only(m, "Relu").output(0), "output_0");
  const ModelProto valid = export_at(graph("conv2d[pad=valid](x, w)", "x=1x3x8x8,w=4x3x3x3"), 11);
  EXPECT_EQ(ints_attr(only(valid, "Conv"), "pads"), (std::vector<int64_t>{0, 0, 0, 0}));
}

TEST(OnnxExport, Pools) {
  const ModelProto m = export_at(
      graph("(avgpool[kernel=3x3, stride=2x2, include_pad=1](x), avgpool[kernel=2x2](x), maxpool[kernel=3x2, pad=1x0x1x1](x))",
            "x=1x2x7x6"),
      13);
  const auto avg = nodes_of(m, "AveragePool");
  ASSERT_EQ(avg.size(), 2u);
  EXPECT_EQ(ints_attr(*avg[0], "pads"), (std::vector<int64_t>{1, 0, 1, 1}));  // same: 7 -> 4, 6 -> 3
  EXPECT_EQ(ints_attr(*avg[0], "strides"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(int_attr(*avg[0], "count_include_pad"), 1);
  EXPECT_EQ(int_attr(*avg[0], "ceil_mode"), 0);
  EXPECT_EQ(ints_attr(*avg[1], "pads"), (std::vector<int64_t>{0, 0, 1, 1}));  // the extra element at the end
  EXPECT_EQ(int_attr(*avg[1], "count_include_pad"), 0);
  const NodeProto& max = only(m, "MaxPool");
  EXPECT_EQ(ints_attr(max, "kernel_shape"), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(ints_attr(max, "pads"), (std::vector<int64_t>{1, 0, 1, 1}));
  EXPECT_EQ(max.output_size(), 1);
}

TEST(OnnxExport, EnlargeIsACentredPad) {
  const ModelProto m = export_at(graph("enlarge[size=5x3](k)", "k=4x2x1x3"), 13);
  const NodeProto& pad = only(m, "Pad");
  EXPECT_EQ(int64_initializer(m, pad.input(1)), (std::vector<int64_t>{0, 0, 2, 0, 0, 0, 2, 0}));
  EXPECT_EQ(initializer(m, pad.input(2)).real.data, std::vector<float>{0});
}

// onnxruntime's PadFusion folds a zero Pad into the Conv it feeds whatever
// the input, so a padded conv weight is written as Concat with zero blocks.
TEST(OnnxExport, PaddedConvWeightsAreConcatenatedWithZeros) {
  const ModelProto m =
      export_at(graph("(conv2d(x, enlarge[size=3x3](k)), conv2d(pad[pads=0x0x0x1x0x0x0x1](x), k))", "x=1x2x6x6,k=3x2x3x1"), 13);
  // The weight: zero columns on both sides; the data input's pad is the second Conv's pads.
  EXPECT_TRUE(nodes_of(m, "Pad").empty());
  EXPECT_EQ(nodes_of(m, "Conv")[1]->input(0), "x");
  EXPECT_EQ(ints_attr(*nodes_of(m, "Conv")[1], "pads"),
            (std::vector<int64_t>{1, 1, 1, 1}));  // 1x3 kernel: same is 1 row
  EXPECT_EQ(nodes_of(m, "ConstantOfShape").size(), 2u);
  const NodeProto& concat = only(m, "Concat");
  EXPECT_EQ(int_attr(concat, "axis"), 3);
  ASSERT_EQ(concat.input_size(), 3);
  EXPECT_EQ(concat.input(1), "k");
  for (const NodeProto* fill : nodes_of(m, "ConstantOfShape"))
    EXPECT_EQ(int64_initializer(m, fill->input(0)), (std::vector<int64_t>{3, 2, 3, 1}));
  EXPECT_EQ(nodes_of(m, "Conv")[0]->input(1), concat.output(0));
}

// The forms runtimes fuse (onnx/export_fusions.h): a bias add is a Conv's B
// (one value per output channel, 1-D), a 2-D product's bias add a Gemm.
TEST(OnnxExport, ConvBiasAddIsTheConvsB) {
  Graph g;
  const ValueRef x = g.add_input("x", {1, 2, 5, 5});
  const ValueRef w = g.add_input("w", {3, 2, 3, 3});
  const ValueRef b = g.add_constant(ConstantValue(Tensor<float>({1, 3, 1, 1}, {1, 2, 3})), "b");
  g.add_output(g.apply("relu", {g.apply("add", {g.apply("conv2d", {x, w}), b})}), "y");
  const ModelProto m = export_at(g, 13);
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"Conv", "Relu"}));
  const NodeProto& conv = only(m, "Conv");
  ASSERT_EQ(conv.input_size(), 3);
  const ConstantValue bias = initializer(m, conv.input(2));
  EXPECT_EQ(bias.shape(), (Shape{3}));
  EXPECT_EQ(bias.real.data, (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(m.graph().initializer_size(), 1);  // the 1 x 3 x 1 x 1 form is not written as well
  EXPECT_EQ(only(m, "Relu").input(0), conv.output(0));
}

TEST(OnnxExport, BiasAddsThatStayAdds) {
  // The conv's result read twice; a fused relu before the add; a bias that is
  // not a constant; a bias over rows, not channels.
  Graph g;
  const ValueRef x = g.add_input("x", {1, 2, 5, 5});
  const ValueRef w = g.add_input("w", {3, 2, 3, 3});
  const ValueRef v = g.add_input("v", {1, 3, 1, 1});
  const ValueRef b = g.add_constant(ConstantValue(Tensor<float>({1, 3, 1, 1}, {1, 2, 3})), "b");
  const ValueRef rows = g.add_constant(ConstantValue(Tensor<float>({5, 1}, {1, 2, 3, 4, 5})), "rows");
  const ValueRef twice = g.apply("conv2d", {x, w});
  g.add_output(g.apply("add", {twice, b}), "a");
  g.add_output(twice, "conv");
  g.add_output(g.apply("add", {g.apply("conv2d", {x, w}, {{"act", std::string("relu")}}), b}), "after_relu");
  g.add_output(g.apply("add", {g.apply("conv2d", {x, w}, {{"stride", std::vector<int64_t>{2, 1}}}), v}), "input_bias");
  g.add_output(g.apply("add", {g.apply("conv2d", {x, w}, {{"dilation", std::vector<int64_t>{2, 1}}}), rows}),
               "row_bias");
  const ModelProto m = export_at(g, 13);
  EXPECT_EQ(nodes_of(m, "Add").size(), 4u);
  for (const NodeProto* conv : nodes_of(m, "Conv")) EXPECT_EQ(conv->input_size(), 2);
}

TEST(OnnxExport, MatmulBiasAddOfRank2IsAGemm) {
  const ModelProto m = export_at(graph("(add(matmul(a, b), c), add(d, matmul(a, e)), add(batch_matmul(f, g), c))",
                                       "a=3x4,b=4x5,c=5,d=3x5,e=4x5,f=2x3x4,g=2x4x5"),
                                 17);
  const auto gemms = nodes_of(m, "Gemm");
  ASSERT_EQ(gemms.size(), 2u);
  EXPECT_EQ(gemms[0]->input(0), "a");
  EXPECT_EQ(gemms[0]->input(1), "b");
  EXPECT_EQ(gemms[0]->input(2), "c");
  EXPECT_EQ(gemms[0]->output(0), "output_0");
  EXPECT_EQ(gemms[1]->input(2), "d");          // the bias may be the add's first operand
  EXPECT_EQ(only(m, "MatMul").input(0), "f");  // rank 3: MatMul and Add
  EXPECT_EQ(only(m, "Add").output(0), "output_2");
}

// The importer flattens a MatMul of rank > 2 into a product between
// reshapes; written back, it is one MatMul of the original operands.
TEST(OnnxExport, ProductsBetweenReshapesAreOneMatMul) {
  const ModelProto m =
      export_at(graph("(reshape[shape=2x3x5](matmul(reshape[shape=6x4](x), w)), "
                      "reshape[shape=2x3x4x6](batch_matmul(reshape[shape=6x4x5](a), reshape[shape=6x5x6](b))))",
                      "x=2x3x4,w=4x5,a=2x3x4x5,b=2x3x5x6"),
                17);
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"MatMul", "MatMul"}));
  EXPECT_EQ(m.graph().node(0).input(0), "x");
  EXPECT_EQ(m.graph().node(0).input(1), "w");
  EXPECT_EQ(m.graph().node(0).output(0), "output_0");
  EXPECT_EQ(m.graph().node(1).input(0), "a");
  EXPECT_EQ(m.graph().node(1).input(1), "b");
  // Reshaped to other axes, or the flattened operand also read elsewhere: the reshapes stay.
  const ModelProto other = export_at(
      graph(
          "(reshape[shape=3x10](matmul(reshape[shape=6x4](x), w)), reshape[shape=2x3x5](matmul(reshape[shape=6x4](x), "
          "v)), reshape[shape=6x4](x))",
          "x=2x3x4,w=4x5,v=4x5"),
      17);
  EXPECT_EQ(nodes_of(other, "Reshape").size(), 2u);  // the flattening (read elsewhere too), the one to other axes
  EXPECT_EQ(nodes_of(other, "MatMul")[1]->input(0), "x");
}

TEST(OnnxExport, PadsOfTheDataInputAreTheConvsAndPoolsPads) {
  const ModelProto m = export_at(graph("(conv2d[pad=1x0x0x1](pad[pads=0x0x1x2x0x0x3x4](x), w), "
                                       "avgpool[kernel=3x3, pad=valid](pad[pads=0x0x1x1x0x0x1x1](x)), "
                                       "maxpool[kernel=3x3, pad=valid](pad[pads=0x0x2x1x0x0x0x1, value=-inf](x)))",
                                       "x=1x2x6x6,w=3x2x3x3"),
                                 13);
  EXPECT_TRUE(nodes_of(m, "Pad").empty());
  EXPECT_EQ(only(m, "Conv").input(0), "x");
  EXPECT_EQ(ints_attr(only(m, "Conv"), "pads"), (std::vector<int64_t>{2, 2, 3, 5}));
  EXPECT_EQ(ints_attr(only(m, "AveragePool"), "pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(int_attr(only(m, "AveragePool"), "count_include_pad"), 1);  // the padded zeros are averaged
  EXPECT_EQ(ints_attr(only(m, "MaxPool"), "pads"), (std::vector<int64_t>{2, 1, 0, 1}));
}

TEST(OnnxExport, PadsThatStayPads) {
  // Over the channels; a zero pad before a maximum; a pad a pool's kernel
  // cannot hold (ONNX Runtime wants pads below the kernel); an average that
  // leaves its own padding out of the count; a pad also read elsewhere.
  const ModelProto m =
      export_at(graph("(conv2d(pad[pads=0x1x0x0x0x0x0x0](x), w), maxpool[kernel=3x3](pad[pads=0x0x1x1x0x0x0x0](x)), "
                      "avgpool[kernel=2x2, pad=valid](pad[pads=0x0x2x0x0x0x0x0](x)), "
                      "avgpool[kernel=3x3](pad[pads=0x0x0x1x0x0x0x0](x)), conv2d(pad[pads=0x0x0x0x0x0x1x0](x), k), "
                      "pad[pads=0x0x0x0x0x0x1x0](x))",
                      "x=1x2x6x6,w=3x3x3x3,k=3x2x3x3"),
                13);
  EXPECT_EQ(nodes_of(m, "Pad").size(), 5u);
}

TEST(OnnxExport, TransposeWritesTheDefaultPerm) {
  const ModelProto m = export_at(graph("(transpose(x), transpose[perm=0x2x1](x))", "x=2x3x4"), 17);
  const auto t = nodes_of(m, "Transpose");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(ints_attr(*t[0], "perm"), (std::vector<int64_t>{2, 1, 0}));
  EXPECT_EQ(ints_attr(*t[1], "perm"), (std::vector<int64_t>{0, 2, 1}));
}

TEST(OnnxExport, SliceWithNegativeStepThroughZero) {
  const ModelProto m =
      export_at(graph("slice[starts=1x3x0, ends=-1x0x4, steps=-1x-2x3](x)", "x=2x4x5"), 13);
  const NodeProto& s = only(m, "Slice");
  ASSERT_EQ(s.input_size(), 5);
  EXPECT_EQ(int64_initializer(m, s.input(1)), (std::vector<int64_t>{1, 3, 0}));
  // -1 with a negative step means "through index 0": INT64_MIN, never -1 (the last element).
  EXPECT_EQ(int64_initializer(m, s.input(2)), (std::vector<int64_t>{kMin, 0, 4}));
  EXPECT_EQ(int64_initializer(m, s.input(3)), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(int64_initializer(m, s.input(4)), (std::vector<int64_t>{-1, -2, 3}));
  // Default steps are written as ones.
  const ModelProto d = export_at(graph("slice[starts=0x1, ends=2x3](y)", "y=2x4"), 11);
  EXPECT_EQ(int64_initializer(d, only(d, "Slice").input(4)), (std::vector<int64_t>{1, 1}));
}

TEST(OnnxExport, SplitSizesByOpset) {
  const Graph g = graph("(split[axis=1, sizes=2x3x1](x).0, split[axis=1, sizes=2x3x1](x).2)", "x=2x6");
  const ModelProto m11 = export_at(g, 11);
  const NodeProto& s11 = only(m11, "Split");
  EXPECT_EQ(s11.input_size(), 1);
  EXPECT_EQ(ints_attr(s11, "split"), (std::vector<int64_t>{2, 3, 1}));
  EXPECT_EQ(int_attr(s11, "axis"), 1);
  ASSERT_EQ(s11.output_size(), 3);  // one per piece, the unused one too
  EXPECT_EQ(s11.output(0), "output_0");
  EXPECT_EQ(s11.output(2), "output_1");
  for (int64_t opset : {13, 18}) {
    const ModelProto m = export_at(g, opset);
    const NodeProto& s = only(m, "Split");
    ASSERT_EQ(s.input_size(), 2);
    EXPECT_EQ(attr(s, "split"), nullptr);
    EXPECT_EQ(attr(s, "num_outputs"), nullptr);
    EXPECT_EQ(int64_initializer(m, s.input(1)), (std::vector<int64_t>{2, 3, 1}));
    EXPECT_EQ(s.output_size(), 3);
  }
}

TEST(OnnxExport, ReductionAxesByOpset) {
  const Graph g = graph("(reduce_mean[axes=0x2, keepdims=0](x), reduce_sum[axes=1](x))", "x=2x3x4");
  for (int64_t opset : {11, 12, 13, 17, 18}) {
    SCOPED_TRACE(opset);
    const ModelProto m = export_at(g, opset);
    const NodeProto& mean = only(m, "ReduceMean");
    const NodeProto& sum = only(m, "ReduceSum");
    EXPECT_EQ(int_attr(mean, "keepdims"), 0);
    EXPECT_EQ(int_attr(sum, "keepdims"), 1);
    if (opset >= 18) {
      ASSERT_EQ(mean.input_size(), 2);
      EXPECT_EQ(int64_initializer(m, mean.input(1)), (std::vector<int64_t>{0, 2}));
    } else {
      EXPECT_EQ(mean.input_size(), 1);
      EXPECT_EQ(ints_attr(mean, "axes"), (std::vector<int64_t>{0, 2}));
    }
    if (opset >= 13) {
      ASSERT_EQ(sum.input_size(), 2);
      EXPECT_EQ(int64_initializer(m, sum.input(1)), std::vector<int64_t>{1});
      EXPECT_EQ(attr(sum, "axes"), nullptr);
    } else {
      EXPECT_EQ(sum.input_size(), 1);
      EXPECT_EQ(ints_attr(sum, "axes"), std::vector<int64_t>{1});
    }
  }
}

TEST(OnnxExport, ShapeOperandsAreInt64Initializers) {
  const ModelProto m = export_at(
      graph("(reshape[shape=4x6](x), expand[shape=2x3x4](y), pad[pads=1x0x0x2, value=-1](a), pad[pads=0x1x0x0, value=0.5](y))",
            "x=2x3x4,y=3x1,a=int64:2x2"),
      13);
  EXPECT_EQ(int64_initializer(m, only(m, "Reshape").input(1)), (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(int64_initializer(m, only(m, "Expand").input(1)), (std::vector<int64_t>{2, 3, 4}));
  const auto pads = nodes_of(m, "Pad");
  ASSERT_EQ(pads.size(), 2u);
  EXPECT_EQ(int64_initializer(m, pads[0]->input(1)), (std::vector<int64_t>{1, 0, 0, 2}));
  // The pad value: a scalar of the input's element type.
  const ConstantValue iv = initializer(m, pads[0]->input(2));
  EXPECT_EQ(iv.dtype, DType::kInt64);
  EXPECT_EQ(iv.shape(), Shape{});
  EXPECT_EQ(iv.ints.data, std::vector<int64_t>{-1});
  const ConstantValue fv = initializer(m, pads[1]->input(2));
  EXPECT_EQ(fv.dtype, DType::kFloat);
  EXPECT_EQ(fv.real.data, std::vector<float>{0.5f});
  EXPECT_EQ(attr(*pads[0], "mode"), nullptr);  // constant, the default
}

TEST(OnnxExport, BoolPadBeforeOpset13) {
  const Graph g = graph("pad[pads=1x0x0x2, value=1](m)", "m=bool:2x3");
  EXPECT_EQ(op_types(export_at(g, 13)), std::vector<std::string>{"Pad"});
  const ModelProto m = export_at(g, 11);  // Pad-11 has no bool form
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"ConstantOfShape", "Concat", "ConstantOfShape", "Concat"}));
  const NodeProto& fill = *nodes_of(m, "ConstantOfShape")[0];
  EXPECT_EQ(int64_initializer(m, fill.input(0)), (std::vector<int64_t>{1, 3}));
  const ConstantValue value = tensor_to_constant(attr(fill, "value")->t());
  EXPECT_EQ(value.dtype, DType::kBool);
  EXPECT_EQ(value.ints.data, std::vector<int64_t>{1});
}

TEST(OnnxExport, ClipLeavesOutInfiniteBounds) {
  const ModelProto m = export_at(graph("(clip[min=-0.5, max=2](x), clip[min=-1](x), clip[max=3](x), clip(x))", "x=4"), 11);
  const auto clips = nodes_of(m, "Clip");
  ASSERT_EQ(clips.size(), 4u);
  ASSERT_EQ(clips[0]->input_size(), 3);
  EXPECT_EQ(initializer(m, clips[0]->input(1)).real.data, std::vector<float>{-0.5f});
  EXPECT_EQ(initializer(m, clips[0]->input(1)).shape(), Shape{});
  EXPECT_EQ(initializer(m, clips[0]->input(2)).real.data, std::vector<float>{2});
  EXPECT_EQ(clips[1]->input_size(), 2);
  ASSERT_EQ(clips[2]->input_size(), 3);
  EXPECT_EQ(clips[2]->input(1), "");
  EXPECT_EQ(initializer(m, clips[2]->input(2)).real.data, std::vector<float>{3});
  EXPECT_EQ(clips[3]->input_size(), 1);
}

TEST(OnnxExport, ActivationAttributes) {
  const Graph g = graph("(leaky_relu[alpha=0.3](x), hard_sigmoid[alpha=0.25, beta=0.4](x), hard_swish(x))", "x=4");
  const ModelProto m14 = export_at(g, 14);
  EXPECT_FLOAT_EQ(float_attr(only(m14, "LeakyRelu"), "alpha"), 0.3f);
  EXPECT_FLOAT_EQ(float_attr(only(m14, "HardSigmoid"), "alpha"), 0.25f);
  EXPECT_FLOAT_EQ(float_attr(only(m14, "HardSigmoid"), "beta"), 0.4f);
  EXPECT_EQ(nodes_of(m14, "HardSwish").size(), 1u);
  // Before opset 14: x * HardSigmoid(x, 1/6, 1/2).
  const ModelProto m13 = export_at(g, 13);
  EXPECT_TRUE(nodes_of(m13, "HardSwish").empty());
  const auto hs = nodes_of(m13, "HardSigmoid");
  ASSERT_EQ(hs.size(), 2u);
  EXPECT_FLOAT_EQ(float_attr(*hs[1], "alpha"), 1.0f / 6);
  EXPECT_FLOAT_EQ(float_attr(*hs[1], "beta"), 0.5f);
  const NodeProto& mul = only(m13, "Mul");
  EXPECT_EQ(mul.input(0), "x");
  EXPECT_EQ(mul.input(1), hs[1]->output(0));
  EXPECT_EQ(mul.output(0), "output_2");
}

TEST(OnnxExport, OrderedComparisonsBeforeOpset12) {
  const Graph g = graph("(less_equal(x, y), greater_equal(x, y))", "x=3,y=3");
  EXPECT_EQ(op_types(export_at(g, 12)), (std::vector<std::string>{"LessOrEqual", "GreaterOrEqual"}));
  // Or(Less, Equal): false for NaN, as the IR's a <= b (Not(Greater) would be true).
  EXPECT_EQ(op_types(export_at(g, 11)), (std::vector<std::string>{"Less", "Equal", "Or", "Greater", "Equal", "Or"}));
}

TEST(OnnxExport, MasksAndCasts) {
  const ModelProto m = export_at(
      graph("(cast[to=int64](x), cast[to=bool](x), cast[to=float](a), where(is_nan(x), a, b), equal(m, logical_not(m)))",
            "x=3,a=int64:3,b=int64:3,m=bool:3"),
      11);
  const auto casts = nodes_of(m, "Cast");
  ASSERT_EQ(casts.size(), 3u);
  EXPECT_EQ(int_attr(*casts[0], "to"), TensorProto::INT64);
  EXPECT_EQ(int_attr(*casts[1], "to"), TensorProto::BOOL);
  EXPECT_EQ(int_attr(*casts[2], "to"), TensorProto::FLOAT);
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"Cast", "Cast", "Cast", "IsNaN", "Where", "Not", "Equal"}));
}

TEST(OnnxExport, SoftmaxBeforeOpset13) {
  const Graph g = graph("(softmax[axis=1](x), softmax[axis=2](x))", "x=2x3x4");
  const ModelProto m13 = export_at(g, 13);
  EXPECT_EQ(op_types(m13), (std::vector<std::string>{"Softmax", "Softmax"}));
  EXPECT_EQ(int_attr(*nodes_of(m13, "Softmax")[0], "axis"), 1);
  // Opset 11 flattens from `axis` on: a middle axis goes to the end and back.
  const ModelProto m11 = export_at(g, 11);
  EXPECT_EQ(op_types(m11), (std::vector<std::string>{"Transpose", "Softmax", "Transpose", "Softmax"}));
  const auto t = nodes_of(m11, "Transpose");
  EXPECT_EQ(ints_attr(*t[0], "perm"), (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(ints_attr(*t[1], "perm"), (std::vector<int64_t>{0, 2, 1}));
  for (const NodeProto* s : nodes_of(m11, "Softmax")) EXPECT_EQ(int_attr(*s, "axis"), 2);
}

TEST(OnnxExport, LayerNormByOpset) {
  const Graph g = graph("layer_norm[axis=1, epsilon=0.001](x, s, b)", "x=2x3x4,s=3x4,b=3x4");
  const ModelProto m17 = export_at(g, 17);
  const NodeProto& ln = only(m17, "LayerNormalization");
  EXPECT_EQ(int_attr(ln, "axis"), 1);
  EXPECT_FLOAT_EQ(float_attr(ln, "epsilon"), 0.001f);
  EXPECT_EQ(ln.output_size(), 1);
  const ModelProto m16 = export_at(g, 16);
  EXPECT_TRUE(nodes_of(m16, "LayerNormalization").empty());
  EXPECT_EQ(op_types(m16),
            (std::vector<std::string>{"ReduceMean", "Sub", "Mul", "ReduceMean", "Add", "Sqrt", "Div", "Mul", "Add"}));
  for (const NodeProto* r : nodes_of(m16, "ReduceMean")) EXPECT_EQ(ints_attr(*r, "axes"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(m16.graph().node(8).output(0), "output_0");
}

TEST(OnnxExport, BatchNormAndIndexing) {
  const ModelProto m = export_at(graph("(batch_norm[epsilon=0.01](x, s, b, m, v), gather[axis=1](x, i), "
                                       "gather_elements[axis=2](x, j), concat[axis=3](x, x))",
                                       "x=2x3x4x5,s=3,b=3,m=3,v=3,i=int64:2,j=int64:2x3x4x1"),
                                 15);
  const NodeProto& bn = only(m, "BatchNormalization");
  EXPECT_EQ(bn.input_size(), 5);
  EXPECT_EQ(bn.output_size(), 1);
  EXPECT_FLOAT_EQ(float_attr(bn, "epsilon"), 0.01f);
  EXPECT_EQ(int_attr(only(m, "Gather"), "axis"), 1);
  EXPECT_EQ(int_attr(only(m, "GatherElements"), "axis"), 2);
  EXPECT_EQ(int_attr(only(m, "Concat"), "axis"), 3);
}

TEST(OnnxExport, ArithmeticAndMatmul) {
  const ModelProto m = export_at(graph("(scalar_mul(sub(div(x, y), pow(x, y)), s), batch_matmul(a, b), matmul(c, d))",
                                       "x=2x3,y=3,s=scalar,a=2x3x4,b=2x4x2,c=3x4,d=4x2"),
                                 13);
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"Div", "Pow", "Sub", "Mul", "MatMul", "MatMul"}));
}

TEST(OnnxExport, Errors) {
  const Graph g = graph("relu(x)", "x=2");
  expect_error([&] { export_at(g, 10); }, {"opset 10", "11"});
  // (Arithmetic on bool, which ONNX lacks, is already a type error in the IR.)
  // Output names: unique, and an input's name only for that input.
  Graph twice;
  const ValueRef x = twice.add_input("x", {2});
  twice.add_output(twice.apply("relu", {x}), "y");
  twice.add_output(twice.apply("neg", {x}), "y");
  expect_error([&] { export_at(twice, 17); }, {"two outputs", "'y'"});
  Graph shadow;
  const ValueRef z = shadow.add_input("z", {2});
  shadow.add_output(shadow.apply("relu", {z}), "z");
  expect_error([&] { export_at(shadow, 17); }, {"'z'", "input"});
}

// exports_in_type: the ONNX library's schemas at the opset decide. Conv has
// float16 but no bfloat16 form before opset 22; Relu has bfloat16 from
// opset 13 (Relu-6 has float16, float and double only).
TEST(OnnxExport, ExportsInTypeFollowsTheSchemas) {
  const Graph conv = graph("conv2d(x, w)", "x=1x3x8x8,w=4x3x3x3");
  const int32_t conv_node = conv.outputs()[0].node;
  EXPECT_TRUE(exports_in_type(conv, conv_node, DType::kFloat16, 18));
  EXPECT_FALSE(exports_in_type(conv, conv_node, DType::kBFloat16, 18));
  const Graph relu = graph("relu(x)", "x=2x3");
  EXPECT_TRUE(exports_in_type(relu, relu.outputs()[0].node, DType::kBFloat16, 13));
  EXPECT_FALSE(exports_in_type(relu, relu.outputs()[0].node, DType::kBFloat16, 11));
  EXPECT_TRUE(exports_in_type(relu, relu.outputs()[0].node, DType::kFloat16, 11));
}

TEST(OnnxExport, SavesAndLoads) {
  const ModelProto m = export_at(graph("relu(conv2d(x, w))", "x=1x3x8x8,w=4x3x3x3"), 17);
  const std::string path = (std::filesystem::temp_directory_path() / "tgr_onnx_export_test.onnx").string();
  save_model(m, path);
  const ModelProto back = load_model(path);
  std::filesystem::remove(path);
  EXPECT_EQ(back.SerializeAsString(), m.SerializeAsString());
}

}  // namespace
}  // namespace tgr::onnx_io
