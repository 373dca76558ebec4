#include "onnx/onnx_export.h"

#include "ir/float_types.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include <onnx/defs/schema.h>
#include "ir/geometry.h"
#include "onnx/export_fusions.h"
#include "onnx/opaque_op.h"

namespace tgr::onnx_io {
namespace {

using onnx::AttributeProto;
using onnx::NodeProto;
using onnx::TensorProto;

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// "prefix" followed by a number (appended: GCC 12's -Wrestrict misfires on
// `"literal" + std::to_string(n)`).
std::string numbered(std::string prefix, int64_t n) { return prefix.append(std::to_string(n)); }

// --- attributes ---------------------------------------------------------------

void attr_int(NodeProto& n, const std::string& name, int64_t v) {
  AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(AttributeProto::INT);
  a->set_i(v);
}

void attr_ints(NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void attr_float(NodeProto& n, const std::string& name, double v) {
  AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(AttributeProto::FLOAT);
  a->set_f(static_cast<float>(v));
}

void set_value_info(onnx::ValueInfoProto& info, const std::string& name, DType dtype, const Shape& shape) {
  info.set_name(name);
  onnx::TypeProto::Tensor* t = info.mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx_elem_type(dtype));
  onnx::TensorShapeProto* s = t->mutable_shape();  // present even for scalars: rank 0, not unknown rank
  for (int64_t d : shape) s->add_dim()->set_dim_value(d);
}

// --- the exporter -------------------------------------------------------------

class Exporter;

// What the mapping of one IR operator application sees: the node, the ONNX
// names of its inputs, the names its outputs must get, and helpers that
// emit ONNX nodes and initializers under unique names.
struct OpContext {
  Exporter& ex;
  int32_t index;
  const Node& node;
  int64_t opset;
  std::vector<std::string> in;
  std::vector<std::string> out;
  int emitted = 0;
  int temps = 0;
  // When an add is written with its product (onnx/export_fusions.h): the
  // name of the Conv's B or the Gemm's C.
  std::string bias;
  // A pad folded into a Conv's or Pool's pads: {top, left, bottom, right}
  // added to the node's own (in_shape(0) is still the padded shape).
  std::vector<int64_t> extra_pads = {0, 0, 0, 0};

  const Params& params() const { return node.params; }
  const Shape& in_shape(size_t k) const;
  DType in_dtype(size_t k) const;
  const Shape& out_shape(size_t k) const { return node.output_shapes.at(k); }
  const std::string& op() const { return node.op->name; }
  bool pad_folded() const { return extra_pads != std::vector<int64_t>{0, 0, 0, 0}; }
  std::string base() const { return numbered("v", index); }

  // Appends an ONNX node; the first one of an application takes the IR node's name.
  NodeProto& emit(const std::string& type, std::vector<std::string> inputs, std::vector<std::string> outputs);
  // A fresh name for an intermediate value of a decomposition.
  std::string temp();
  // Initializers: a 1-D INT64 tensor (shape-like operands), a rank-0 tensor.
  std::string ints(const std::vector<int64_t>& values, const std::string& what);
  std::string scalar(DType dtype, double value, const std::string& what);
  // Whether an output of this application is read as a conv2d weight.
  bool output_feeds_conv_weight() const;

  [[noreturn]] void fail(const std::string& why) const {
    throw OnnxError("export: " + op() + " at opset " + std::to_string(opset) + ": " + why);
  }
  // ONNX's arithmetic operators have no bool form (the IR runs them on bools through its int64 kernel).
  void require_no_bool(const std::string& onnx_op) const {
    for (size_t k = 0; k < node.inputs.size(); ++k)
      if (in_dtype(k) == DType::kBool) fail("ONNX " + onnx_op + " is not defined on bool values");
  }
};

using Mapping = std::function<void(OpContext&)>;
const std::map<std::string, Mapping, std::less<>>& mappings();

// The bytes of a constant as an initializer's raw_data holds them: float32
// and int64 values (bool and half-type constants, stored as ints or float32
// numbers, are written otherwise, by constant_to_tensor: empty).
std::pair<const void*, size_t> raw_bytes(const ConstantValue& v) {
  if (v.dtype == DType::kFloat) return {v.real.data.data(), v.real.data.size() * sizeof(float)};
  if (v.dtype == DType::kInt64) return {v.ints.data.data(), v.ints.data.size() * sizeof(int64_t)};
  return {nullptr, 0};
}

// A graph constant whose initializer was written without its bytes, which
// save_graph streams from the constant itself into the file.
struct StreamedWeight {
  int initializer = 0;  // index in GraphProto::initializer
  std::shared_ptr<const ConstantValue> value;
};

struct OutputPlan;

class Exporter {
 public:
  // With `streamed`, large float and int64 graph constants are written as
  // initializers without raw_data and listed there instead.
  Exporter(const Graph& graph, const ExportOptions& options, onnx::GraphProto& out,
           std::vector<StreamedWeight>* streamed = nullptr)
      : graph_(graph), options_(options), out_(out), streamed_(streamed) {}

  // Writes the graph: its inputs, outputs and every node, names kept where free (onnx.md, "Export").
  void run();

  // Claims `base` as a value name, or base_1, base_2, ... when it is taken.
  std::string fresh_value(const std::string& base) { return fresh(value_names_, base); }
  std::string fresh_node(const std::string& base) { return fresh(node_names_, base); }
  NodeProto& add_node(const std::string& type, std::vector<std::string> inputs, std::vector<std::string> outputs,
                      const std::string& name) {
    NodeProto* n = out_.add_node();
    n->set_op_type(type);
    n->set_name(name);
    for (std::string& s : inputs) n->add_input(std::move(s));
    for (std::string& s : outputs) n->add_output(std::move(s));
    return *n;
  }
  // Writes an initializer under `name` (already claimed).
  void write_initializer(const ConstantValue& value, const std::string& name) {
    *out_.add_initializer() = constant_to_tensor(value, name);
  }
  // A constant of the graph: streamed (its bytes left out here) when large.
  void write_graph_constant(const std::shared_ptr<const ConstantValue>& value, const std::string& name) {
    constexpr size_t kStreamedFromBytes = 64 * 1024;
    if (!streamed_ || raw_bytes(*value).second < kStreamedFromBytes) return write_initializer(*value, name);
    onnx::TensorProto& t = *out_.add_initializer();
    t.set_name(name);
    for (int64_t d : value->shape()) t.add_dims(d);
    t.set_data_type(onnx_elem_type(value->dtype));
    streamed_->push_back({out_.initializer_size() - 1, value});
  }
  // The node name reserved for IR node `index` (its own name), if any.
  std::string reserved_node_name(int32_t index) const {
    auto it = reserved_node_names_.find(index);
    return it == reserved_node_names_.end() ? std::string() : it->second;
  }
  const Graph& graph() const { return graph_; }
  bool feeds_conv_weight(int32_t index) const { return conv_weight_producers_.contains(index); }

 private:
  static std::string fresh(std::unordered_set<std::string>& used, const std::string& base) {
    std::string name = base;
    for (int k = 1; used.contains(name); ++k) name = base + "_" + std::to_string(k);
    used.insert(name);
    return name;
  }
  // The initializer name of constant (or constant operator) node `index`.
  std::string constant_name(int32_t index) {
    auto it = reserved_constant_names_.find(index);
    return it != reserved_constant_names_.end() ? it->second : fresh_value(numbered("c", index));
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw OnnxError("export at opset " + std::to_string(options_.opset) + ": " + why);
  }
  // A per-channel bias constant as the 1-D initializer a Conv's B is (one
  // per constant node).
  std::string conv_bias(int32_t constant, int64_t channels) {
    if (auto it = conv_biases_.find(constant); it != conv_biases_.end()) return it->second;
    const ConstantValue& bias = *graph_.node(constant).constant;
    const Tensor<float>& b = bias.real;
    Tensor<float> v({channels});
    for (int64_t c = 0; c < channels; ++c) v.data[c] = b.data[b.data.size() == 1 ? 0 : c];
    const std::string name = fresh_value(numbered("c", constant).append("_bias"));
    ConstantValue channel_bias(std::move(v));
    channel_bias.dtype = bias.dtype;  // in the model's type
    write_initializer(channel_bias, name);
    return conv_biases_[constant] = name;
  }
  // The original node of an opaque operator, reading and writing the
  // exported names of its values.
  void write_opaque(const OpaqueNode& opaque, OpContext& ctx) {
    const size_t explicit_inputs = opaque.input_positions.size();
    for (size_t j = explicit_inputs; j < ctx.in.size(); ++j)
      bind_captured(opaque, opaque.captured.at(j - explicit_inputs), ctx.in[j]);
    NodeProto& n = *out_.add_node();
    n = opaque.proto;
    for (size_t j = 0; j < opaque.input_positions.size(); ++j) n.set_input(opaque.input_positions[j], ctx.in[j]);
    for (size_t j = 0; j < opaque.output_positions.size(); ++j) n.set_output(opaque.output_positions[j], ctx.out[j]);
    std::string name = reserved_node_name(ctx.index);  // the node's own name, where the IR kept it
    if (name.empty()) name = fresh_node(opaque.proto.name().empty() ? numbered("n", ctx.index) : opaque.proto.name());
    n.set_name(name);
  }

  // Makes the outer value `captured`, which a subgraph of `opaque` reads by
  // name, hold the value exported as `source`: an Identity when a rewrite
  // gave that value another name; an OnnxError when the name is another
  // value's.
  void bind_captured(const OpaqueNode& opaque, const std::string& captured, const std::string& source) {
    if (captured == source) return;
    if (auto it = captured_sources_.find(captured); it != captured_sources_.end()) {
      if (it->second == source) return;
    } else if (!value_names_.contains(captured)) {
      value_names_.insert(captured);
      captured_sources_.emplace(captured, source);
      add_node("Identity", {source}, {captured}, fresh_node("captured_" + captured));
      return;
    }
    fail("a subgraph of node " + quoted(opaque.proto.name()) + " (" + opaque.proto.op_type() + ") reads " +
         quoted(captured) + ", a name the optimized graph gives another value");
  }

  using ValueNames = std::map<std::pair<int32_t, int32_t>, std::string>;  // (node, output) -> name
  // The steps of run(), in order. Graph inputs: all of them, in declaration
  // order, under their names (into `names`).
  void claim_inputs(std::vector<std::vector<std::string>>& names);
  // Graph output names are kept exactly. An output that is an input under
  // its own name is that input; the first output of each operator value
  // names it directly; every other output is an Identity (write_outputs).
  OutputPlan claim_outputs();
  // Names the graph itself gives: constants' (initializer names) and
  // operator nodes' (node names), each kept when free.
  void reserve_graph_names(const std::vector<int32_t>& order);
  // Operators' value names (an imported model's), each kept when free.
  ValueNames reserve_value_names(const std::vector<int32_t>& order, const OutputPlan& plan);
  // Per constant node, how many of its reads are the bias of a fused Conv.
  std::unordered_map<int32_t, int32_t> conv_bias_reads(const ExportFusions& fusions) const;
  // Operator node `i` through its mapping (or as the fusion it is the last of), into names[i].
  void write_operator(int32_t i, const ExportFusions& fusions, const OutputPlan& plan,
                      const ValueNames& reserved_values, std::vector<std::vector<std::string>>& names);
  // The graph's outputs, an Identity for each not written under its name.
  void write_outputs(const OutputPlan& plan, const std::vector<std::vector<std::string>>& names);

  const Graph& graph_;
  const ExportOptions& options_;
  std::unordered_map<std::string, std::string> captured_sources_;  // captured name -> the value it was bound to
  onnx::GraphProto& out_;
  std::unordered_set<std::string> value_names_, node_names_;
  std::unordered_map<int32_t, std::string> reserved_constant_names_, reserved_node_names_;
  std::unordered_set<int32_t> conv_weight_producers_;  // nodes with an output read as a conv2d weight
  std::unordered_map<int32_t, std::string> conv_biases_;  // constant node -> its 1-D Conv bias initializer
  std::vector<StreamedWeight>* streamed_;
};

const Shape& OpContext::in_shape(size_t k) const { return ex.graph().shape(node.inputs.at(k)); }
DType OpContext::in_dtype(size_t k) const { return ex.graph().dtype(node.inputs.at(k)); }

NodeProto& OpContext::emit(const std::string& type, std::vector<std::string> inputs,
                           std::vector<std::string> outputs) {
  std::string name;
  if (emitted++ == 0) name = ex.reserved_node_name(index);
  // Another node of the same name (an ONNX node the importer split, a
  // decomposition here): the name numbered, name_1, name_2, ...
  if (name.empty() && !node.name.empty()) name = ex.fresh_node(node.name);
  if (name.empty())
    name = ex.fresh_node(numbered("n", index).append("_").append(op()).append(emitted > 1 ? numbered("_", emitted - 1) : ""));
  return ex.add_node(type, std::move(inputs), std::move(outputs), name);
}

std::string OpContext::temp() { return ex.fresh_value(base().append(numbered("_t", temps++))); }

std::string OpContext::ints(const std::vector<int64_t>& values, const std::string& what) {
  const std::string name = ex.fresh_value(base() + "_" + what);
  ex.write_initializer(ConstantValue(DType::kInt64, Tensor<int64_t>({static_cast<int64_t>(values.size())}, values)), name);
  return name;
}

// A tensor of `shape` filled with `value` in element type `dtype` (as the
// IR's kernels convert it: int64 truncates, bool is "not zero" of that).
ConstantValue filled_value(const OpContext& c, DType dtype, double value, const Shape& shape) {
  if (is_floating(dtype)) {
    Tensor<float> t(shape);
    std::fill(t.data.begin(), t.data.end(), round_to_dtype(dtype, static_cast<float>(value)));
    ConstantValue v(std::move(t));
    v.dtype = dtype;
    return v;
  }
  if (!(std::fabs(value) < 9.2e18))
    c.fail("the value " + std::to_string(value) + " has no " + std::string(dtype_name(dtype)) + " form");
  int64_t v = static_cast<int64_t>(value);
  if (dtype == DType::kBool) v = v != 0;
  Tensor<int64_t> t(shape);
  std::fill(t.data.begin(), t.data.end(), v);
  return ConstantValue(dtype, std::move(t));
}

std::string OpContext::scalar(DType dtype, double value, const std::string& what) {
  const std::string name = ex.fresh_value(base() + "_" + what);
  ex.write_initializer(filled_value(*this, dtype, value, Shape{}), name);
  return name;
}

bool OpContext::output_feeds_conv_weight() const { return ex.feeds_conv_weight(index); }

// What the graph's outputs are written as (Exporter::claim_outputs).
struct OutputPlan {
  std::vector<char> pass_through;                             // an input under its own name
  std::map<std::pair<int32_t, int32_t>, std::string> direct;  // operator value -> the output name it is written under
};

void Exporter::run() {
  if (options_.opset < kMinExportOpset)
    fail("the exporter writes opset " + std::to_string(kMinExportOpset) + " or later");
  std::vector<std::vector<std::string>> names(graph_.nodes().size());  // per node, its outputs' exported names
  claim_inputs(names);
  const OutputPlan plan = claim_outputs();
  const std::vector<int32_t> order = graph_.topological_order();
  reserve_graph_names(order);
  const ValueNames reserved_values = reserve_value_names(order, plan);
  for (int32_t i : order) {
    const Node& n = graph_.node(i);
    if (n.is_op() && op_is(n.op, OpKind::kConv2d)) conv_weight_producers_.insert(n.inputs.at(1).node);
  }

  // Conv + bias, Gemm, pads folded into Conv and Pool (onnx/export_fusions.h).
  std::vector<bool> constant(graph_.nodes().size());
  for (size_t i = 0; i < constant.size(); ++i) constant[i] = graph_.node(static_cast<int32_t>(i)).is_constant();
  const ExportFusions fusions = find_export_fusions(graph_, constant);
  // Constants read only as Conv biases are written in their 1-D form alone.
  const std::vector<std::vector<int32_t>> uses = graph_.use_counts();
  const std::unordered_map<int32_t, int32_t> bias_reads = conv_bias_reads(fusions);

  for (int32_t i : order) {
    const Node& n = graph_.node(i);
    if (n.is_input()) continue;
    if (n.is_constant()) {
      names[i] = {constant_name(i)};
      if (auto r = bias_reads.find(i); r == bias_reads.end() || r->second < uses[i][0])
        write_graph_constant(n.constant, names[i][0]);
      continue;
    }
    if (fusions.absorbed(i)) {  // written by its only reader
      names[i].assign(n.output_shapes.size(), "");
      continue;
    }
    write_operator(i, fusions, plan, reserved_values, names);
  }
  write_outputs(plan, names);
}

void Exporter::claim_inputs(std::vector<std::vector<std::string>>& names) {
  for (int32_t i : graph_.inputs()) {
    const Node& n = graph_.node(i);
    if (n.name.empty() || value_names_.contains(n.name)) fail("input name " + quoted(n.name) + " is empty or repeated");
    value_names_.insert(n.name);
    names[i] = {n.name};
    set_value_info(*out_.add_input(), n.name, n.output_dtypes[0], n.output_shapes[0]);
  }
}

OutputPlan Exporter::claim_outputs() {
  const auto& outputs = graph_.outputs();
  const auto& output_names = graph_.output_names();
  OutputPlan plan;
  plan.pass_through.assign(outputs.size(), 0);
  std::unordered_set<std::string> seen_outputs;
  for (size_t j = 0; j < outputs.size(); ++j) {
    const std::string& name = output_names[j];
    const ValueRef v = outputs[j];
    if (name.empty()) fail("output " + std::to_string(j) + " has no name");
    if (!seen_outputs.insert(name).second) fail("two outputs are named " + quoted(name));
    if (value_names_.contains(name)) {  // an input's name
      if (graph_.find_input(name) != v)
        fail("output " + quoted(name) + " has the name of an input but is a different value");
      plan.pass_through[j] = 1;
      continue;
    }
    value_names_.insert(name);
    const Node& producer = graph_.node(v.node);
    if (producer.is_op() && !producer.op->is_constant()) plan.direct.emplace(std::pair{v.node, v.output}, name);
  }
  return plan;
}

void Exporter::reserve_graph_names(const std::vector<int32_t>& order) {
  for (int32_t i : order) {
    const Node& n = graph_.node(i);
    if (n.name.empty() || n.is_input()) continue;
    const bool constant = n.is_constant() || n.op->is_constant();
    if (constant && !value_names_.contains(n.name)) {
      value_names_.insert(n.name);
      reserved_constant_names_[i] = n.name;
    } else if (!constant && !node_names_.contains(n.name)) {
      node_names_.insert(n.name);
      reserved_node_names_[i] = n.name;
    }
  }
}

Exporter::ValueNames Exporter::reserve_value_names(const std::vector<int32_t>& order, const OutputPlan& plan) {
  ValueNames reserved;
  for (int32_t i : order) {
    const Node& n = graph_.node(i);
    if (!n.is_op() || n.op->is_constant()) continue;
    for (int32_t k = 0; k < static_cast<int32_t>(n.value_names.size()); ++k) {
      const std::string& name = n.value_names[k];
      if (name.empty() || plan.direct.contains({i, k}) || value_names_.contains(name)) continue;
      value_names_.insert(name);
      reserved.emplace(std::pair{i, k}, name);
    }
  }
  return reserved;
}

std::unordered_map<int32_t, int32_t> Exporter::conv_bias_reads(const ExportFusions& fusions) const {
  std::unordered_map<int32_t, int32_t> reads;
  for (const auto& [add, product] : fusions.product_of_add)
    if (op_is(graph_.node(product).op, OpKind::kConv2d))
      for (ValueRef v : graph_.node(add).inputs)
        if (v.node != product) ++reads[v.node];
  return reads;
}

void Exporter::write_operator(int32_t i, const ExportFusions& fusions, const OutputPlan& plan,
                              const ValueNames& reserved_values, std::vector<std::vector<std::string>>& names) {
  const Node& n = graph_.node(i);
  // The node whose mapping writes this one: the product an add or a
  // reshape is written with, or itself.
  auto fused = fusions.product_of_add.find(i);
  auto reshaped = fusions.product_of_reshape.find(i);
  const int32_t source = fused != fusions.product_of_add.end()          ? fused->second
                         : reshaped != fusions.product_of_reshape.end() ? reshaped->second
                                                                        : i;
  const Node& s = graph_.node(source);
  OpContext ctx{*this, source, s, options_.opset, {}, {}, 0, 0, {}, {0, 0, 0, 0}};
  const OpaqueNode* opaque = find_opaque(*s.op);
  const auto& table = mappings();
  auto it = table.find(s.op->name);
  if (!opaque && it == table.end()) fail("no ONNX mapping for IR operator " + s.op->name);
  for (ValueRef v : s.inputs) ctx.in.push_back(names[v.node].at(v.output));
  if (auto pad = fusions.folded_pad.find(source); pad != fusions.folded_pad.end()) {
    const Node& p = graph_.node(pad->second);
    ctx.in[0] = names[p.inputs[0].node].at(p.inputs[0].output);
    ctx.extra_pads = spatial_pads(p);
  }
  if (reshaped != fusions.product_of_reshape.end()) {  // one MatMul of the operands before their reshapes
    ctx.in.clear();
    for (ValueRef v : fusions.operands.at(source)) ctx.in.push_back(names[v.node].at(v.output));
  } else if (source != i) {
    const ValueRef bias = n.inputs[n.inputs[0].node == source ? 1 : 0];
    ctx.bias =
        op_is(s.op, OpKind::kConv2d) ? conv_bias(bias.node, n.output_shapes[0][1]) : names[bias.node].at(bias.output);
  }
  for (int32_t k = 0; k < static_cast<int32_t>(n.output_shapes.size()); ++k) {
    auto d = plan.direct.find({i, k});
    auto r = reserved_values.find({i, k});
    if (n.op->is_constant()) ctx.out.push_back(constant_name(i));
    else if (d != plan.direct.end()) ctx.out.push_back(d->second);
    else
      ctx.out.push_back(r != reserved_values.end() ? r->second
                                                   : fresh_value(numbered("v", i).append(numbered("_", k))));
  }
  if (opaque) write_opaque(*opaque, ctx);
  else if (reshaped != fusions.product_of_reshape.end()) ctx.emit("MatMul", ctx.in, ctx.out);
  else if (source != i && op_is(s.op, OpKind::kMatmul)) ctx.emit("Gemm", {ctx.in[0], ctx.in[1], ctx.bias}, ctx.out);
  else it->second(ctx);
  names[i] = std::move(ctx.out);
}

void Exporter::write_outputs(const OutputPlan& plan, const std::vector<std::vector<std::string>>& names) {
  const auto& outputs = graph_.outputs();
  const auto& output_names = graph_.output_names();
  for (size_t j = 0; j < outputs.size(); ++j) {
    const ValueRef v = outputs[j];
    auto d = plan.direct.find({v.node, v.output});
    const bool direct = d != plan.direct.end() && d->second == output_names[j];
    if (!plan.pass_through[j] && !direct)
      add_node("Identity", {names[v.node].at(v.output)}, {output_names[j]}, fresh_node("output_" + output_names[j]));
    set_value_info(*out_.add_output(), output_names[j], graph_.dtype(v), graph_.shape(v));
  }
}

// --- the mappings, one section per family of ir/ops/ ---------------------------

// An ONNX operator of the same inputs, outputs and meaning.
Mapping same_as(std::string type, bool on_bool = true) {
  return [type = std::move(type), on_bool](OpContext& c) {
    if (!on_bool) c.require_no_bool(type);
    c.emit(type, c.in, c.out);
  };
}

// where: ONNX's Where on bool values has no kernel in ONNX Runtime's CPU
// provider, so a selection of bools (the importer's And, Or, Xor) is written
// as (cond and x) or (not cond and y).
void export_where(OpContext& c) {
  if (c.in_dtype(1) != DType::kBool) {
    c.emit("Where", c.in, c.out);
    return;
  }
  const std::string taken = c.temp(), not_cond = c.temp(), other = c.temp();
  c.emit("And", {c.in[0], c.in[1]}, {taken});
  c.emit("Not", {c.in[0]}, {not_cond});
  c.emit("And", {not_cond, c.in[2]}, {other});
  c.emit("Or", {taken, other}, c.out);
}

// Reduce*: `axes` became an input at `axes_input_since`.
void emit_reduce(OpContext& c, const std::string& type, int64_t axes_input_since, const std::string& input,
                 const std::vector<int64_t>& axes, int64_t keepdims, const std::string& output) {
  if (c.opset >= axes_input_since) {
    NodeProto& n = c.emit(type, {input, c.ints(axes, "axes")}, {output});
    attr_int(n, "keepdims", keepdims);
  } else {
    NodeProto& n = c.emit(type, {input}, {output});
    attr_ints(n, "axes", axes);
    attr_int(n, "keepdims", keepdims);
  }
}
constexpr int64_t kReduceSumAxesInput = 13, kReduceMeanAxesInput = 18, kReduceMaxMinAxesInput = 18;

// Pads input 0 of the application with a constant into output 0: Pad, mode
// constant, the value a scalar initializer of the input's element type. Two cases
// are written instead as Concat with ConstantOfShape blocks of the value,
// axis by axis: bool values before opset 13 (Pad has no bool form there),
// and a result read as a conv2d weight, since onnxruntime's PadFusion rewrite
// (basic level, still in 1.31) folds a zero Pad into the Conv it feeds
// without checking which input it feeds, which breaks the session ("Node
// input ... is not a graph input, initializer, or output of a previous node").
void emit_pad(OpContext& c, const std::vector<int64_t>& pads, double value) {
  const std::string& x = c.in[0];
  const std::string& output = c.out[0];
  const DType t = c.in_dtype(0);
  if (!c.output_feeds_conv_weight() && (t != DType::kBool || c.opset >= 13)) {
    c.emit("Pad", {x, c.ints(pads, "pads"), c.scalar(t, value, "value")}, {output});
    return;
  }
  Shape shape = c.in_shape(0);
  const size_t rank = shape.size();
  std::vector<int64_t> axes;
  for (size_t d = 0; d < rank; ++d)
    if (pads[d] > 0 || pads[d + rank] > 0) axes.push_back(static_cast<int64_t>(d));
  if (axes.empty()) {
    c.emit("Identity", {x}, {output});
    return;
  }
  std::string current = x;
  for (int64_t axis : axes) {
    std::vector<std::string> parts;
    for (int64_t n : {pads[axis], int64_t{-1}, pads[axis + rank]}) {
      if (n == -1) {
        parts.push_back(current);
      } else if (n > 0) {
        Shape block = shape;
        block[axis] = n;
        parts.push_back(c.temp());
        NodeProto& fill = c.emit("ConstantOfShape", {c.ints(block, "block_shape")}, {parts.back()});
        AttributeProto* a = fill.add_attribute();
        a->set_name("value");
        a->set_type(AttributeProto::TENSOR);
        *a->mutable_t() = constant_to_tensor(filled_value(c, t, value, {1}), "value");
      }
    }
    shape[axis] += pads[axis] + pads[axis + rank];
    current = axis == axes.back() ? output : c.temp();
    attr_int(c.emit("Concat", parts, {current}), "axis", axis);
  }
}

// elementwise.cpp --------------------------------------------------------------

void export_leaky_relu(OpContext& c) {
  attr_float(c.emit("LeakyRelu", c.in, c.out), "alpha", c.params().get_float("alpha"));
}

void export_hard_sigmoid(OpContext& c) {
  NodeProto& n = c.emit("HardSigmoid", c.in, c.out);
  attr_float(n, "alpha", c.params().get_float("alpha"));
  attr_float(n, "beta", c.params().get_float("beta"));
}

// HardSwish from opset 14; before, x * HardSigmoid(x, 1/6, 1/2).
void export_hard_swish(OpContext& c) {
  if (c.opset >= 14) {
    c.emit("HardSwish", c.in, c.out);
    return;
  }
  const std::string gate = c.temp();
  NodeProto& n = c.emit("HardSigmoid", c.in, {gate});
  attr_float(n, "alpha", 1.0 / 6.0);
  attr_float(n, "beta", 0.5);
  c.emit("Mul", {c.in[0], gate}, c.out);
}

// Clip with min/max inputs (opset 11 on); an infinite bound that clips
// nothing is left out (an empty input name).
void export_clip(OpContext& c) {
  const double lo = c.params().get_float("min"), hi = c.params().get_float("max");
  std::vector<std::string> inputs = {c.in[0]};
  const bool has_lo = lo != -HUGE_VAL, has_hi = hi != HUGE_VAL;
  if (has_lo || has_hi) inputs.push_back(has_lo ? c.scalar(c.in_dtype(0), lo, "min") : "");
  if (has_hi) inputs.push_back(c.scalar(c.in_dtype(0), hi, "max"));
  c.emit("Clip", inputs, c.out);
}

// conv.cpp ---------------------------------------------------------------------

// The window's pads with a folded pad's added, as ONNX's `pads` attribute.
std::vector<int64_t> onnx_pads(const OpContext& c, const Window2d& w) {
  const std::vector<int64_t>& e = c.extra_pads;
  return {w.pad_top + e[0], w.pad_left + e[1], w.pad_bottom + e[2], w.pad_right + e[3]};
}

// Conv with the IR's padding resolved to explicit pads and its derived groups,
// a bias add written with it as B (onnx/export_fusions.h); a fused relu
// becomes a Relu.
void export_conv2d(OpContext& c) {
  const Conv2dGeometry g = conv2d_geometry(c.params(), c.in_shape(0), c.in_shape(1));
  const Window2d& w = g.window;
  const bool relu = c.params().get_word("act") == "relu";
  const std::string y = relu ? c.temp() : c.out[0];
  std::vector<std::string> inputs = c.in;
  if (!c.bias.empty()) inputs.push_back(c.bias);
  NodeProto& conv = c.emit("Conv", inputs, {y});
  attr_ints(conv, "kernel_shape", {w.kernel_h, w.kernel_w});
  attr_ints(conv, "strides", {w.stride_h, w.stride_w});
  attr_ints(conv, "dilations", {w.dilation_h, w.dilation_w});
  attr_ints(conv, "pads", onnx_pads(c, w));
  attr_int(conv, "group", g.groups);
  if (relu) c.emit("Relu", {y}, c.out);
}

// enlarge: a zero Pad of the last two axes, centred.
void export_enlarge(OpContext& c) {
  const Shape& k = c.in_shape(0);
  const auto& size = c.params().get_ints("size");
  const int64_t top = (size[0] - k[2]) / 2, left = (size[1] - k[3]) / 2;
  const std::vector<int64_t> pads = {0, 0, top, left, 0, 0, size[0] - k[2] - top, size[1] - k[3] - left};
  emit_pad(c, pads, 0.0);
}

// pool.cpp ---------------------------------------------------------------------

// AveragePool/MaxPool with explicit pads; the IR rounds the output size down
// (ceil_mode 0).
void export_pool(OpContext& c, bool average) {
  const Shape& x = c.in_shape(0);
  const auto& kernel = c.params().get_ints("kernel");
  const Window2d w = window_geometry(c.op(), c.params(), x.at(2), x.at(3), kernel[0], kernel[1], false);
  NodeProto& n = c.emit(average ? "AveragePool" : "MaxPool", c.in, c.out);
  attr_ints(n, "kernel_shape", {w.kernel_h, w.kernel_w});
  attr_ints(n, "strides", {w.stride_h, w.stride_w});
  attr_ints(n, "pads", onnx_pads(c, w));
  attr_int(n, "ceil_mode", 0);
  // A folded zero pad is counted (its zeros were inputs of the average).
  if (average) attr_int(n, "count_include_pad", c.pad_folded() ? 1 : c.params().get_int("include_pad"));
}

// layout.cpp -------------------------------------------------------------------

void export_transpose(OpContext& c) {
  std::vector<int64_t> perm = c.params().get_ints("perm");
  if (perm.empty()) {  // the default reverses the axes; written out
    perm.resize(c.in_shape(0).size());
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  attr_ints(c.emit("Transpose", c.in, c.out), "perm", perm);
}

void export_concat(OpContext& c) { attr_int(c.emit("Concat", c.in, c.out), "axis", c.params().get_int("axis")); }

// Split: the sizes are an input from opset 13, an attribute before.
void export_split(OpContext& c) {
  const auto& sizes = c.params().get_ints("sizes");
  if (c.opset >= 13) {
    attr_int(c.emit("Split", {c.in[0], c.ints(sizes, "split")}, c.out), "axis", c.params().get_int("axis"));
  } else {
    NodeProto& n = c.emit("Split", c.in, c.out);
    attr_int(n, "axis", c.params().get_int("axis"));
    attr_ints(n, "split", sizes);
  }
}

// Slice over every axis. The IR's ranges are normalised; an end of -1 with a
// negative step ("through index 0") is INT64_MIN in ONNX, where -1 would
// mean the last element.
void export_slice(OpContext& c) {
  const size_t rank = c.in_shape(0).size();
  std::vector<int64_t> ends = c.params().get_ints("ends");
  std::vector<int64_t> steps = c.params().get_ints("steps");
  if (steps.empty()) steps.assign(rank, 1);
  for (size_t d = 0; d < rank; ++d)
    if (steps[d] < 0 && ends[d] == -1) ends[d] = std::numeric_limits<int64_t>::min();
  std::vector<int64_t> axes(rank);
  std::iota(axes.begin(), axes.end(), 0);
  c.emit("Slice", {c.in[0], c.ints(c.params().get_ints("starts"), "starts"), c.ints(ends, "ends"), c.ints(axes, "axes"),
                   c.ints(steps, "steps")},
         c.out);
}

void export_expand(OpContext& c) { c.emit("Expand", {c.in[0], c.ints(c.params().get_ints("shape"), "shape")}, c.out); }

void export_pad(OpContext& c) { emit_pad(c, c.params().get_ints("pads"), c.params().get_float("value")); }

void export_reshape(OpContext& c) {
  c.emit("Reshape", {c.in[0], c.ints(c.params().get_ints("shape"), "shape")}, c.out);
}

// constants.cpp ----------------------------------------------------------------

// eye, conv_identity, pool_kernel, ones: evaluated (float32 kernel) and
// written as an initializer under the name chosen for the value.
void export_constant_op(OpContext& c) {
  const OpCall call{*c.node.op, c.params(), {}, {}, c.node.output_shapes};
  std::vector<Tensor<float>> values;
  for (const Shape& s : c.node.output_shapes) values.emplace_back(s);
  c.node.op->kernels.f32(call, {}, values);
  for (size_t k = 0; k < values.size(); ++k) c.ex.write_initializer(ConstantValue(std::move(values[k])), c.out[k]);
}

// compare.cpp ------------------------------------------------------------------

// LessOrEqual/GreaterOrEqual from opset 12; before, Or(Less, Equal) /
// Or(Greater, Equal), which (unlike Not(Greater)) is also false for NaN.
Mapping ordered_or_equal(std::string type, std::string strict) {
  return [type = std::move(type), strict = std::move(strict)](OpContext& c) {
    if (c.opset >= 12) {
      c.emit(type, c.in, c.out);
      return;
    }
    const std::string lt = c.temp(), eq = c.temp();
    c.emit(strict, c.in, {lt});
    c.emit("Equal", c.in, {eq});
    c.emit("Or", {lt, eq}, c.out);
  };
}

void export_cast(OpContext& c) {
  attr_int(c.emit("Cast", c.in, c.out), "to", onnx_elem_type(parse_dtype(c.params().get_word("to"))));
}

// normalization.cpp ------------------------------------------------------------

// Softmax along one axis (opset 13 on). Before 13 Softmax flattens to 2-D
// from `axis` on, which is the same only for the last axis: other axes are
// transposed to the end and back.
void export_softmax(OpContext& c) {
  const int64_t axis = c.params().get_int("axis");
  const int64_t rank = static_cast<int64_t>(c.in_shape(0).size());
  if (c.opset >= 13 || axis == rank - 1) {
    attr_int(c.emit("Softmax", c.in, c.out), "axis", axis);
    return;
  }
  std::vector<int64_t> perm, inverse(rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis) perm.push_back(d);
  perm.push_back(axis);
  for (int64_t d = 0; d < rank; ++d) inverse[perm[d]] = d;
  const std::string moved = c.temp(), normalised = c.temp();
  attr_ints(c.emit("Transpose", c.in, {moved}), "perm", perm);
  attr_int(c.emit("Softmax", {moved}, {normalised}), "axis", rank - 1);
  attr_ints(c.emit("Transpose", {normalised}, c.out), "perm", inverse);
}

// LayerNormalization from opset 17; before, its formula:
// d = x - mean(x); y = d / sqrt(mean(d * d) + epsilon) * scale + bias.
void export_layer_norm(OpContext& c) {
  const int64_t axis = c.params().get_int("axis");
  const double epsilon = c.params().get_float("epsilon");
  if (c.opset >= 17) {
    NodeProto& n = c.emit("LayerNormalization", c.in, c.out);
    attr_int(n, "axis", axis);
    attr_float(n, "epsilon", epsilon);
    return;
  }
  std::vector<int64_t> axes(c.in_shape(0).size() - axis);
  std::iota(axes.begin(), axes.end(), axis);
  const std::string mean = c.temp(), centred = c.temp(), squared = c.temp(), var = c.temp(), shifted = c.temp(),
                    stddev = c.temp(), normalised = c.temp(), scaled = c.temp();
  emit_reduce(c, "ReduceMean", kReduceMeanAxesInput, c.in[0], axes, 1, mean);
  c.emit("Sub", {c.in[0], mean}, {centred});
  c.emit("Mul", {centred, centred}, {squared});
  emit_reduce(c, "ReduceMean", kReduceMeanAxesInput, squared, axes, 1, var);
  c.emit("Add", {var, c.scalar(c.in_dtype(0), epsilon, "epsilon")}, {shifted});
  c.emit("Sqrt", {shifted}, {stddev});
  c.emit("Div", {centred, stddev}, {normalised});
  c.emit("Mul", {normalised, c.in[1]}, {scaled});
  c.emit("Add", {scaled, c.in[2]}, c.out);
}

// BatchNormalization in inference form (one output).
void export_batch_norm(OpContext& c) {
  attr_float(c.emit("BatchNormalization", c.in, c.out), "epsilon", c.params().get_float("epsilon"));
}

// reduce.cpp -------------------------------------------------------------------

// ReduceSum takes its axes as an input from opset 13, ReduceMean, ReduceMax and
// ReduceMin from 18.
Mapping reduction(std::string type, int64_t axes_input_since) {
  return [type = std::move(type), axes_input_since](OpContext& c) {
    c.require_no_bool(type);
    emit_reduce(c, type, axes_input_since, c.in[0], c.params().get_ints("axes"), c.params().get_int("keepdims"),
                c.out[0]);
  };
}

// indexing.cpp -----------------------------------------------------------------

Mapping with_axis(std::string type) {
  return [type = std::move(type)](OpContext& c) { attr_int(c.emit(type, c.in, c.out), "axis", c.params().get_int("axis")); };
}

// The table: every IR operator, by family.
const std::map<std::string, Mapping, std::less<>>& mappings() {
  static const std::map<std::string, Mapping, std::less<>> table = {
      // elementwise.cpp
      {"add", same_as("Add", false)},
      {"sub", same_as("Sub", false)},
      {"mul", same_as("Mul", false)},
      {"div", same_as("Div", false)},
      {"pow", same_as("Pow", false)},
      {"scalar_mul", same_as("Mul", false)},
      {"neg", same_as("Neg", false)},
      {"relu", same_as("Relu")},
      {"sigmoid", same_as("Sigmoid")},
      {"tanh", same_as("Tanh")},
      {"abs", same_as("Abs", false)},
      {"sqrt", same_as("Sqrt")},
      {"exp", same_as("Exp")},
      {"log", same_as("Log")},
      {"erf", same_as("Erf")},
      {"cos", same_as("Cos")},
      {"sin", same_as("Sin")},
      {"softplus", same_as("Softplus")},
      {"floor", same_as("Floor")},
      {"ceil", same_as("Ceil")},
      {"leaky_relu", export_leaky_relu},
      {"hard_sigmoid", export_hard_sigmoid},
      {"hard_swish", export_hard_swish},
      {"clip", export_clip},
      // matmul.cpp
      {"matmul", same_as("MatMul")},
      {"batch_matmul", same_as("MatMul")},
      // conv.cpp
      {"conv2d", export_conv2d},
      {"enlarge", export_enlarge},
      // pool.cpp
      {"avgpool", [](OpContext& c) { export_pool(c, true); }},
      {"maxpool", [](OpContext& c) { export_pool(c, false); }},
      // layout.cpp
      {"transpose", export_transpose},
      {"concat", export_concat},
      {"split", export_split},
      {"slice", export_slice},
      {"expand", export_expand},
      {"pad", export_pad},
      {"reshape", export_reshape},
      // constants.cpp
      {"eye", export_constant_op},
      {"conv_identity", export_constant_op},
      {"pool_kernel", export_constant_op},
      {"ones", export_constant_op},
      // compare.cpp
      {"equal", same_as("Equal")},
      {"less", same_as("Less")},
      {"greater", same_as("Greater")},
      {"less_equal", ordered_or_equal("LessOrEqual", "Less")},
      {"greater_equal", ordered_or_equal("GreaterOrEqual", "Greater")},
      {"is_nan", same_as("IsNaN")},
      {"logical_not", same_as("Not")},
      {"cast", export_cast},
      {"where", export_where},
      // normalization.cpp
      {"softmax", export_softmax},
      {"layer_norm", export_layer_norm},
      {"batch_norm", export_batch_norm},
      // reduce.cpp
      {"reduce_sum", reduction("ReduceSum", kReduceSumAxesInput)},
      {"reduce_mean", reduction("ReduceMean", kReduceMeanAxesInput)},
      {"reduce_max", reduction("ReduceMax", kReduceMaxMinAxesInput)},
      {"reduce_min", reduction("ReduceMin", kReduceMaxMinAxesInput)},
      // indexing.cpp
      {"gather", with_axis("Gather")},
      {"gather_elements", with_axis("GatherElements")},
  };
  return table;
}

}  // namespace

namespace {

// Lists as graph inputs the initializers of `names` that the export wrote
// (one a rewrite folded away is gone), with their types and shapes.
void add_overridable_inputs(onnx::GraphProto& g, const std::vector<std::string>& names) {
  if (names.empty()) return;
  std::unordered_map<std::string, const onnx::TensorProto*> initializers;
  for (const onnx::TensorProto& t : g.initializer()) initializers.emplace(t.name(), &t);
  std::unordered_set<std::string> inputs;
  for (const auto& in : g.input()) inputs.insert(in.name());
  for (const std::string& name : names) {
    auto it = initializers.find(name);
    if (it == initializers.end() || !inputs.insert(name).second) continue;
    onnx::ValueInfoProto& info = *g.add_input();
    info.set_name(name);
    onnx::TypeProto_Tensor* t = info.mutable_type()->mutable_tensor_type();
    t->set_elem_type(it->second->data_type());
    onnx::TensorShapeProto* shape = t->mutable_shape();
    for (int64_t d : it->second->dims()) shape->add_dim()->set_dim_value(d);
  }
}

onnx::ModelProto export_model(const Graph& graph, const ExportOptions& options, std::vector<StreamedWeight>* streamed) {
  onnx::ModelProto model;
  model.set_ir_version(options.ir_version);
  model.set_producer_name(options.producer_name);
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(options.opset);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name(options.graph_name);
  Exporter(graph, options, *g, streamed).run();
  // The domains of opaque nodes (a custom operator's), with the model's opsets.
  std::map<std::string, int64_t> domains;
  for (int32_t i : graph.topological_order()) {
    const Node& n = graph.node(i);
    if (!n.is_op()) continue;
    if (const OpaqueNode* o = find_opaque(*n.op); o && !o->proto.domain().empty() && o->proto.domain() != "ai.onnx")
      domains[o->proto.domain()] = o->domain_opset;
  }
  // Model-local functions, the opsets of their domains, and initializers
  // kept overridable (listed as graph inputs, as in the source model).
  for (const auto& [domain, version] : options.domain_opsets) domains.emplace(domain, version);
  for (const onnx::FunctionProto& f : options.functions) *model.add_functions() = f;
  add_overridable_inputs(*g, options.overridable_initializers);
  for (const auto& [domain, version] : domains) {
    onnx::OperatorSetIdProto* extra = model.add_opset_import();
    extra->set_domain(domain);
    extra->set_version(version);
  }
  return model;
}

}  // namespace

onnx::ModelProto export_graph(const Graph& graph, const ExportOptions& options) {
  return export_model(graph, options, nullptr);
}

// The file holds what export_graph's model serializes to, but for the order
// of fields, which protobuf leaves free: the model's own fields, then its
// graph (its nodes, names and value infos, then the initializers, each
// streamed weight's raw_data written from the graph's constant). Lengths
// are computed first, since protobuf writes a message's length before it.
void save_graph(const Graph& graph, const ExportOptions& options, const std::string& path) {
  using google::protobuf::internal::WireFormatLite;
  using google::protobuf::io::CodedOutputStream;
  std::vector<StreamedWeight> streamed;
  onnx::ModelProto model = export_model(graph, options, &streamed);
  onnx::GraphProto graph_proto = std::move(*model.mutable_graph());
  model.clear_graph();
  google::protobuf::RepeatedPtrField<onnx::TensorProto> initializers;
  initializers.Swap(graph_proto.mutable_initializer());

  std::vector<const ConstantValue*> stream_of(static_cast<size_t>(initializers.size()), nullptr);
  for (const StreamedWeight& w : streamed) stream_of[static_cast<size_t>(w.initializer)] = w.value.get();
  static_assert(onnx::ModelProto::kGraphFieldNumber < 16 && onnx::GraphProto::kInitializerFieldNumber < 16 &&
                onnx::TensorProto::kRawDataFieldNumber < 16);  // one-byte tags
  auto length_delimited = [](size_t size) { return 1 + CodedOutputStream::VarintSize64(size) + size; };
  std::vector<size_t> initializer_sizes;
  size_t graph_size = graph_proto.ByteSizeLong();
  for (int i = 0; i < initializers.size(); ++i) {
    size_t size = initializers[i].ByteSizeLong();
    if (const ConstantValue* v = stream_of[static_cast<size_t>(i)]) size += length_delimited(raw_bytes(*v).second);
    initializer_sizes.push_back(size);
    graph_size += length_delimited(size);
  }
  if (model.ByteSizeLong() + length_delimited(graph_size) > static_cast<size_t>(INT_MAX))
    throw OnnxError("cannot write '" + path + "': the model is over 2 GB, the protobuf limit");

  auto length_delimited_tag = [](int field) {
    return WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  };
  write_atomically(path, [&](std::ostream& os) {
    google::protobuf::io::OstreamOutputStream stream(&os);
    CodedOutputStream out(&stream);
    model.SerializeWithCachedSizes(&out);
    out.WriteTag(length_delimited_tag(onnx::ModelProto::kGraphFieldNumber));
    out.WriteVarint64(graph_size);
    graph_proto.SerializeWithCachedSizes(&out);
    for (int i = 0; i < initializers.size(); ++i) {
      out.WriteTag(length_delimited_tag(onnx::GraphProto::kInitializerFieldNumber));
      out.WriteVarint64(initializer_sizes[static_cast<size_t>(i)]);
      initializers[i].SerializeWithCachedSizes(&out);
      if (const ConstantValue* v = stream_of[static_cast<size_t>(i)]) {
        const auto [data, size] = raw_bytes(*v);
        out.WriteTag(length_delimited_tag(onnx::TensorProto::kRawDataFieldNumber));
        out.WriteVarint64(size);
        out.WriteRaw(data, static_cast<int>(size));
      }
    }
    out.Trim();
    return !out.HadError();
  });
}

const std::vector<std::pair<std::string, std::string>>& non_exportable_ops() {
  // None: every operator of the table has an ONNX form (constants become
  // initializers), so `optimize` can always write its result.
  static const std::vector<std::pair<std::string, std::string>> none;
  return none;
}

bool exports_in_type(const Graph& graph, int32_t node, DType t, int64_t opset) {
  const Node& n = graph.node(node);
  Graph alone;
  std::vector<ValueRef> inputs;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const DType in = graph.dtype(n.inputs[k]);
    std::string name = "x";
    name += std::to_string(k);  // (not "x" + ...: g++ 12's -Wrestrict false positive)
    inputs.push_back(alone.add_input(std::move(name), graph.shape(n.inputs[k]), is_floating(in) ? t : in));
  }
  try {
    for (ValueRef out : alone.add_op(*n.op, n.params, std::move(inputs))) alone.add_output(out);
    ExportOptions options;
    options.opset = opset;
    const onnx::ModelProto model = export_graph(alone, options);
    const std::string float_type("tensor(float)");
    const std::string half_type(t == DType::kFloat16 ? "tensor(float16)" : "tensor(bfloat16)");
    for (const onnx::NodeProto& exported : model.graph().node()) {
      const onnx::OpSchema* schema =
          onnx::OpSchemaRegistry::Schema(exported.op_type(), static_cast<int>(opset), exported.domain());
      if (!schema) return false;
      for (const auto& constraint : schema->typeConstraintParams()) {
        const auto& allowed = constraint.allowed_type_strs;
        const bool has_float = std::find(allowed.begin(), allowed.end(), float_type) != allowed.end();
        if (has_float && std::find(allowed.begin(), allowed.end(), half_type) == allowed.end()) return false;
      }
    }
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

std::vector<std::string> exportable_ops() {
  std::vector<std::string> names;
  for (const auto& [name, mapping] : mappings()) names.push_back(name);
  return names;
}

}  // namespace tgr::onnx_io
