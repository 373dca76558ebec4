#include "onnx/onnx_import.h"

#include <onnx/defs/schema.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "ir/float_types.h"
#include "onnx/onnx_import_context.h"
#include "onnx/opaque_op.h"
#include "runtime/interpreter.h"

namespace tgr::onnx_io {

// --- ImportContext ------------------------------------------------------------

ImportContext::ImportContext(Graph& graph, const onnx::NodeProto& node, int64_t opset,
                             std::vector<std::optional<ValueRef>> inputs, int64_t domain_opset)
    : graph_(graph), node_(node), opset_(opset), domain_opset_(domain_opset), inputs_(std::move(inputs)),
      outputs_(node.output_size()) {}

std::string ImportContext::where() const {
  const std::string& domain = node_.domain();
  if (domain.empty() || domain == "ai.onnx")
    return "node '" + node_.name() + "' (" + node_.op_type() + ", opset " + std::to_string(opset_) + ")";
  return "node '" + node_.name() + "' (" + domain + "::" + node_.op_type() + ", " + domain + " opset " +
         (domain_opset_ >= 0 ? std::to_string(domain_opset_) : std::string("not imported")) + ")";
}

void ImportContext::fail(const std::string& what) const { throw OnnxError(where() + ": " + what); }

ValueRef ImportContext::input(size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is required");
  return *inputs_[i];
}

const ConstantValue* ImportContext::constant_input(size_t i) const {
  return has_input(i) ? constant_value(*inputs_[i]) : nullptr;
}

const ConstantValue* ImportContext::constant_value(ValueRef v) const {
  const Node& n = graph_.node(v.node);
  return n.is_constant() ? n.constant.get() : nullptr;
}

std::vector<int64_t> ImportContext::constant_ints(size_t i, const char* what) const {
  const ConstantValue* c = constant_input(i);
  if (!c) fail(std::string(what) + " (input " + std::to_string(i) + ") must be a constant: only static shapes are supported");
  if (c->is_float()) fail(std::string(what) + " must be integers");
  return c->ints.data;
}

double ImportContext::constant_scalar(size_t i, const char* what) const {
  const ConstantValue* c = constant_input(i);
  if (!c) fail(std::string(what) + " (input " + std::to_string(i) + ") must be a constant");
  if (num_elements(c->shape()) != 1) fail(std::string(what) + " must hold one value");
  return c->is_float() ? c->real.data[0] : static_cast<double>(c->ints.data[0]);
}

const onnx::AttributeProto* ImportContext::find_attr(const std::string& name) const {
  for (const auto& a : node_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t ImportContext::attr_int(const std::string& name, int64_t def) const {
  const auto* a = find_attr(name);
  return a ? a->i() : def;
}

double ImportContext::attr_float(const std::string& name, double def) const {
  const auto* a = find_attr(name);
  return a ? a->f() : def;
}

std::vector<int64_t> ImportContext::attr_ints(const std::string& name, std::vector<int64_t> def) const {
  const auto* a = find_attr(name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : def;
}

std::string ImportContext::attr_string(const std::string& name, const std::string& def) const {
  const auto* a = find_attr(name);
  return a ? a->s() : def;
}

const onnx::TensorProto* ImportContext::attr_tensor(const std::string& name) const {
  const auto* a = find_attr(name);
  return a && a->has_t() ? &a->t() : nullptr;
}

int64_t ImportContext::axis(int64_t a, int64_t rank) const {
  const int64_t n = a < 0 ? a + rank : a;
  if (n < 0 || n >= std::max<int64_t>(rank, 1)) fail("axis " + std::to_string(a) + " out of range for rank " + std::to_string(rank));
  return n;
}

void ImportContext::check_element_count(double count) const {
  if (!budget) return;
  if (!util::within(count, budget->limits.max_elements))  // NaN fails too
    fail(util::element_limit_message("a tensor", count, budget->limits));
}

void ImportContext::check_elements(const Shape& shape) const {
  double count = 1;
  for (int64_t d : shape) {
    if (d < 0) fail("a tensor of shape " + shape_to_string(shape) + " has a negative dimension");
    count *= static_cast<double>(d);
  }
  check_element_count(count);
}

void ImportContext::charge_bytes(double bytes) const {
  if (!budget) return;
  const double total = static_cast<double>(budget->used_bytes) + bytes;
  if (!util::within(total, budget->limits.max_bytes))
    fail(util::byte_limit_message("the model's constants (its initializers and those computed at import)", total,
                                  budget->limits));
  budget->used_bytes = static_cast<int64_t>(total);
}

namespace {

double value_bytes(double count, DType dtype) {
  return count * (dtype == DType::kBool ? sizeof(int64_t) : element_bytes(dtype));
}

double value_bytes(const Shape& shape, DType dtype) {
  double count = 1;
  for (int64_t d : shape) count *= static_cast<double>(d);
  return value_bytes(count, dtype);
}

}  // namespace

std::vector<ValueRef> ImportContext::emit_multi(const std::string& op_name, std::vector<ValueRef> inputs,
                                                std::vector<std::pair<std::string, ParamValue>> params) {
  const OpDef& op = OpTable::instance().get(op_name);
  adopt_half_type(inputs);
  std::vector<ValueRef> outs;
  try {
    outs = graph_.add_op(op, op.make_params(std::move(params)), inputs, node_.name());
  } catch (const ShapeError& e) {
    fail(e.what());
  } catch (const ParamError& e) {
    fail(e.what());
  }
  for (ValueRef v : outs) check_elements(graph_.shape(v));
  const bool all_constant = std::all_of(inputs.begin(), inputs.end(),
                                        [&](ValueRef v) { return graph_.node(v.node).is_constant(); });
  if (!all_constant) return outs;
  for (ValueRef v : outs) charge_bytes(value_bytes(graph_.shape(v), graph_.dtype(v)));
  // Constant folding: compute the node now, in float32 (integers exactly).
  Graph single;
  for (ValueRef v : inputs) single.add_constant(*graph_.node(v.node).constant);
  std::vector<ValueRef> args;
  for (int32_t i = 0; i < static_cast<int32_t>(inputs.size()); ++i) args.push_back({i, 0});
  for (ValueRef v : single.add_op(op, graph_.node(outs[0].node).params, args)) single.add_output(v);
  std::vector<Value<float>> values;
  try {
    values = evaluate_values<float>(single, std::span<const Value<float>>{});
  } catch (const std::exception& e) {
    fail(std::string("folding a constant subgraph: ") + e.what());
  }
  ++folded;
  std::vector<ValueRef> folded_outs;
  for (auto& v : values) folded_outs.push_back(graph_.add_constant(std::move(v)));
  return folded_outs;
}

void ImportContext::adopt_half_type(std::vector<ValueRef>& inputs) {
  std::optional<DType> half;
  for (ValueRef v : inputs) {
    const DType t = graph_.dtype(v);
    if (t != DType::kFloat16 && t != DType::kBFloat16) continue;
    if (half && *half != t) return;  // two half types: inference names the mismatch
    half = t;
  }
  if (!half) return;
  for (ValueRef& v : inputs) {
    const ConstantValue* k = constant_value(v);
    if (!k || k->dtype != DType::kFloat) continue;
    ConstantValue typed = *k;
    typed.dtype = *half;
    round_to_dtype(*half, std::span<float>(typed.real.data));
    v = graph_.add_constant(std::move(typed));
  }
}

ValueRef ImportContext::emit(const std::string& op, std::vector<ValueRef> inputs,
                             std::vector<std::pair<std::string, ParamValue>> params) {
  auto outs = emit_multi(op, std::move(inputs), std::move(params));
  return outs.at(0);
}

ValueRef ImportContext::constant(ConstantValue value) {
  check_elements(value.shape());
  charge_bytes(value_bytes(value.shape(), value.dtype));
  return graph_.add_constant(std::move(value));
}

ValueRef ImportContext::reshape(ValueRef v, const Shape& s) {
  if (shape(v) == s) return v;
  return emit("reshape", {v}, {{"shape", std::vector<int64_t>(s)}});
}

void ImportContext::set_output(size_t k, ValueRef v) {
  if (k >= outputs_.size()) return;  // an output the model does not name
  outputs_[k] = v;
}

// --- the driver ------------------------------------------------------------------

namespace {

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// Static shape and element type of a graph input.
std::pair<Shape, DType> input_type(const onnx::ValueInfoProto& info, const ImportOptions& options) {
  const std::string& name = info.name();
  if (!info.type().has_tensor_type()) throw OnnxError("graph input '" + name + "' is not a tensor");
  const auto& tt = info.type().tensor_type();
  const std::optional<DType> dtype = dtype_of_elem_type(tt.elem_type());
  if (!dtype) throw OnnxError("graph input '" + name + "' has an element type (" + std::to_string(tt.elem_type()) + ") that is not supported");
  if (auto it = options.input_shapes.find(name); it != options.input_shapes.end()) {
    // A given shape may fill symbolic dimensions, not contradict static ones.
    if (tt.has_shape()) {
      const auto& dims = tt.shape().dim();
      bool fits = dims.size() == static_cast<int>(it->second.size());
      for (int i = 0; fits && i < dims.size(); ++i)
        fits = !dims[i].has_dim_value() || dims[i].dim_value() == it->second[static_cast<size_t>(i)];
      if (!fits) {
        std::string declared;
        for (int i = 0; i < dims.size(); ++i)
          declared += (i ? "x" : "") + (dims[i].has_dim_value()       ? std::to_string(dims[i].dim_value())
                                        : dims[i].dim_param().empty() ? "?"
                                                                      : dims[i].dim_param());
        throw OnnxError("graph input '" + name + "' is declared " + (declared.empty() ? "a scalar" : declared) +
                        ", given a tensor of shape " + shape_to_string(it->second));
      }
    }
    return {it->second, *dtype};
  }
  if (!tt.has_shape()) throw OnnxError("graph input '" + name + "' has no shape; give one (e.g. from its input tensor)");
  Shape shape;
  for (const auto& d : tt.shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() < 0)
      throw OnnxError("graph input '" + name + "' has a symbolic dimension '" + d.dim_param() +
                      "'; only static shapes are supported: give the input's shape (--input-shape " + name +
                      "=DIMS; run takes it from the input tensor)");
    shape.push_back(d.dim_value());
  }
  return {shape, *dtype};
}

void add_captured(const onnx::GraphProto& g, std::vector<std::string>& captured);

// The outer values node `n`'s subgraphs read by name (ONNX scoping: a
// subgraph sees every value of the graphs around it), in first-read order.
std::vector<std::string> captured_values(const onnx::NodeProto& n) {
  std::vector<std::string> captured;
  for (const auto& attr : n.attribute()) {
    if (attr.has_g()) add_captured(attr.g(), captured);
    for (const auto& sub : attr.graphs()) add_captured(sub, captured);
  }
  return captured;
}

// Appends to `captured` the values `g` reads that it does not define.
void add_captured(const onnx::GraphProto& g, std::vector<std::string>& captured) {
  std::set<std::string> defined;
  for (const auto& i : g.input()) defined.insert(i.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& node : g.node())
    for (const auto& out : node.output()) defined.insert(out);
  auto add = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name) && std::find(captured.begin(), captured.end(), name) == captured.end())
      captured.push_back(name);
  };
  for (const auto& node : g.node()) {
    for (const auto& in : node.input()) add(in);
    for (const std::string& in : captured_values(node)) add(in);
  }
  for (const auto& out : g.output()) add(out.name());
}

// The values node `n` reads: its inputs, then what its subgraphs capture.
std::vector<std::string> values_read(const onnx::NodeProto& n) {
  std::vector<std::string> read(n.input().begin(), n.input().end());
  for (std::string& name : captured_values(n)) read.push_back(std::move(name));
  return read;
}

// Nodes in dependency order (exporters sometimes write them out of order);
// a node with subgraphs comes after the producers of the values they capture.
std::vector<const onnx::NodeProto*> sorted_nodes(const onnx::GraphProto& g, const std::set<std::string>& available) {
  std::unordered_map<std::string, size_t> producer;
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& out : g.node(i).output()) {
      if (out.empty()) continue;
      // ONNX graphs are in SSA form: a second writer would silently win.
      if (available.count(out))
        throw OnnxError("node '" + g.node(i).name() + "' (" + g.node(i).op_type() + ") writes '" + out +
                        "', which is a graph input or an initializer");
      const auto [it, added] = producer.emplace(out, static_cast<size_t>(i));
      if (!added)
        throw OnnxError("value '" + out + "' is written by two nodes: '" + g.node(static_cast<int>(it->second)).name() +
                        "' (" + g.node(static_cast<int>(it->second)).op_type() + ") and '" + g.node(i).name() + "' (" +
                        g.node(i).op_type() + ")");
    }
  std::vector<std::vector<std::string>> reads(static_cast<size_t>(g.node_size()));
  for (int i = 0; i < g.node_size(); ++i) reads[static_cast<size_t>(i)] = values_read(g.node(i));
  std::vector<int> state(g.node_size(), 0);  // 0 new, 1 on the stack, 2 done
  std::vector<const onnx::NodeProto*> order;
  // Iterative depth-first search, so deep graphs do not overflow the stack.
  for (int root = 0; root < g.node_size(); ++root) {
    if (state[root]) continue;
    std::vector<std::pair<size_t, int>> stack{{root, 0}};
    state[root] = 1;
    while (!stack.empty()) {
      auto& [index, next] = stack.back();
      const onnx::NodeProto& n = g.node(static_cast<int>(index));
      const std::vector<std::string>& read = reads[index];
      if (next < static_cast<int>(read.size())) {
        const std::string& in = read[static_cast<size_t>(next++)];
        if (in.empty() || available.count(in)) continue;
        auto p = producer.find(in);
        if (p == producer.end())
          throw OnnxError("node '" + n.name() + "' (" + n.op_type() + ") reads '" + in +
                          "', which no node, graph input or initializer produces");
        if (state[p->second] == 1) throw OnnxError("the graph has a cycle through node '" + n.name() + "'");
        if (state[p->second] == 0) {
          state[p->second] = 1;
          stack.push_back({p->second, 0});
        }
        continue;
      }
      state[index] = 2;
      order.push_back(&n);
      stack.pop_back();
    }
  }
  return order;
}

// The numbers of inputs and outputs ONNX's own schema (libonnx) allows the
// node's operator at this opset: a Relu given three inputs is a malformed
// model, not one to import by reading the first.
void check_arity(const ImportContext& ctx, const onnx::NodeProto& n, int64_t opset) {
  // A libonnx older than the model's opset may not know the operator's
  // newer form (ReduceMean's axes input of opset 18): no check then.
  const auto& known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  const auto range_of_default = known.find(onnx::ONNX_DOMAIN);
  if (range_of_default == known.end() || range_of_default->second.second < opset) return;
  const onnx::OpSchema* schema =
      onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(opset), onnx::ONNX_DOMAIN);
  if (!schema) return;
  auto range = [](int lo, int hi) {
    if (hi == std::numeric_limits<int>::max()) return "at least " + std::to_string(lo);
    return lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi);
  };
  if (n.input_size() < schema->min_input() || n.input_size() > schema->max_input())
    ctx.fail("takes " + range(schema->min_input(), schema->max_input()) + " input(s), given " +
             std::to_string(n.input_size()));
  if (n.output_size() < schema->min_output() || n.output_size() > schema->max_output())
    ctx.fail("has " + range(schema->min_output(), schema->max_output()) + " output(s), given " +
             std::to_string(n.output_size()));
}

// Static shapes and element types the model states for its values (graph
// outputs and value_info), by name.
std::map<std::string, std::pair<Shape, DType>> static_types(const onnx::GraphProto& g) {
  std::map<std::string, std::pair<Shape, DType>> out;
  auto add = [&](const onnx::ValueInfoProto& info) {
    if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) return;
    const auto& t = info.type().tensor_type();
    const auto dtype = dtype_of_elem_type(t.elem_type());
    if (!dtype) return;
    Shape shape;
    for (const auto& d : t.shape().dim()) {
      if (!d.has_dim_value()) return;
      shape.push_back(d.dim_value());
    }
    out[info.name()] = {shape, *dtype};
  };
  for (const auto& info : g.value_info()) add(info);
  for (const auto& info : g.output()) add(info);
  return out;
}

// Adds node `n` as an opaque operator; `unsupported` is the message to fail
// with when it cannot be kept (an output of unknown shape, no inputs).
void keep_opaque(Graph& graph, const onnx::NodeProto& n, int64_t domain_opset,
                 const std::vector<std::optional<ValueRef>>& inputs,
                 const std::map<std::string, std::pair<Shape, DType>>& types,
                 std::unordered_map<std::string, ValueRef>& values, const std::string& unsupported) {
  OpaqueNode node;
  node.proto = n;
  node.domain_opset = domain_opset;
  std::vector<ValueRef> ins;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i]) {
      node.input_positions.push_back(static_cast<int>(i));
      ins.push_back(*inputs[i]);
    }
  for (const std::string& name : captured_values(n)) {
    node.captured.push_back(name);
    auto it = values.find(name);
    if (it == values.end())
      throw OnnxError("node '" + n.name() + "' (" + n.op_type() + "): a subgraph reads '" + name +
                      "', which its producer does not provide");
    ins.push_back(it->second);
  }
  if (ins.empty()) throw UnsupportedOperator(unsupported + "; it has no inputs, so it cannot be kept as an opaque node");
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  for (int k = 0; k < n.output_size(); ++k) {
    if (n.output(k).empty()) continue;
    auto it = types.find(n.output(k));
    if (it == types.end())
      throw UnsupportedOperator(unsupported + "; the model does not state the static shape of its output '" +
                                n.output(k) + "' (value_info), so it cannot be kept as an opaque node");
    node.output_positions.push_back(k);
    shapes.push_back(it->second.first);
    dtypes.push_back(it->second.second);
  }
  const std::vector<int> positions = node.output_positions;
  const auto op = make_opaque_op(std::move(node), std::move(shapes), std::move(dtypes));
  const auto outs = graph.add_op(*op, Params{}, std::move(ins), n.name());
  for (size_t j = 0; j < outs.size(); ++j) {
    values[n.output(positions[j])] = outs[j];
    graph.name_value(outs[j], n.output(positions[j]));
  }
}

}  // namespace

ImportedModel import_model(const onnx::ModelProto& model, const ImportOptions& options) {
  ImportedModel out;
  out.opset = default_opset(model);
  out.ir_version = model.ir_version();
  out.producer = model.producer_name();
  if (out.opset < 11 || out.opset > 20)
    throw OnnxError("opset " + std::to_string(out.opset) + " is not supported (opsets 11 to 20 are)");
  const onnx::GraphProto& g = model.graph();
  Graph& graph = out.graph;
  std::unordered_map<std::string, ValueRef> values;

  ImportContext::Budget budget{options.limits};  // initializers first, then what import computes
  for (const auto& init : g.initializer()) {
    // As onnx.checker: one name, one value (ONNX Runtime would read the
    // first of two, this importer the last).
    if (values.count(init.name()))
      throw OnnxError("initializer '" + init.name() +
                      "' is given twice; a graph names each value once (SSA form, as onnx.checker requires)");
    // The limits hold for initializers too, checked before converting (an
    // INT8 tensor takes 8 times its bytes as int64).
    double count = 1;
    for (int64_t d : init.dims()) {
      if (d < 0)
        throw OnnxError("initializer '" + init.name() + "' has a negative dimension (" + std::to_string(d) + ")");
      count *= static_cast<double>(d);
    }
    if (!util::within(count, options.limits.max_elements))
      throw OnnxError("initializer '" + init.name() +
                      "': " + util::element_limit_message("a tensor", count, options.limits));
    const std::optional<DType> dtype = dtype_of_elem_type(init.data_type());
    const double bytes = static_cast<double>(budget.used_bytes) + value_bytes(count, dtype.value_or(DType::kFloat));
    if (!util::within(bytes, options.limits.max_bytes))
      throw OnnxError("initializer '" + init.name() +
                      "': " + util::byte_limit_message("the model's constants", bytes, options.limits));
    budget.used_bytes = static_cast<int64_t>(bytes);
    try {
      values[init.name()] = graph.add_constant(tensor_to_constant(init), init.name());
    } catch (const ShapeError& e) {
      throw OnnxError("initializer '" + init.name() + "': " + e.what());
    }
  }
  out.functions.assign(model.functions().begin(), model.functions().end());
  for (const auto& imp : model.opset_import())
    if (!is_default_domain(imp.domain())) out.domain_opsets[imp.domain()] = imp.version();
  for (const auto& info : g.input()) {
    if (values.count(info.name())) {  // an initializer listed as an input: a default the caller may override
      out.overridable_initializers.push_back(info.name());
      continue;
    }
    auto [shape, dtype] = input_type(info, options);
    values[info.name()] = graph.add_input(info.name(), shape, dtype);
  }
  for (const auto& given : options.input_shapes) {
    const std::string& name = given.first;  // (not a structured binding: clang's C++20 cannot capture one)
    const bool is_input =
        std::any_of(g.input().begin(), g.input().end(), [&](const auto& i) { return i.name() == name; });
    if (!is_input || graph.node(values.at(name).node).is_constant()) {
      std::string inputs;
      for (const auto& i : g.input())
        if (!graph.node(values.at(i.name()).node).is_constant())
          inputs += (inputs.empty() ? "'" : ", '") + i.name() + "'";
      throw OnnxError("a shape is given for '" + name +
                      "', which is not an input of the model (its inputs: " + (inputs.empty() ? "none" : inputs) + ")");
    }
  }
  std::set<std::string> available;
  for (const auto& [name, v] : values) available.insert(name);

  const auto& importers = operator_importers();
  for (const onnx::NodeProto* n : sorted_nodes(g, available)) {
    std::vector<std::optional<ValueRef>> inputs;
    for (const auto& name : n->input()) {
      if (name.empty()) {
        inputs.emplace_back();
        continue;
      }
      auto it = values.find(name);
      if (it == values.end())
        throw OnnxError("node '" + n->name() + "' (" + n->op_type() + ") reads '" + name + "', which its producer does not provide");
      inputs.emplace_back(it->second);
    }
    int64_t domain_opset = -1;
    for (const auto& imp : model.opset_import())
      if (imp.domain() == n->domain()) domain_opset = imp.version();
    ImportContext ctx(graph, *n, out.opset, inputs, domain_opset);
    ctx.budget = &budget;
    auto importer = importers.find(n->op_type());
    if (!is_default_domain(n->domain()) || importer == importers.end()) {
      const std::string unsupported = ctx.where() + ": operator not supported (the importer maps " +
                                      std::to_string(importers.size()) +
                                      " ONNX operators of the default domain; see docs/onnx.md)";
      if (!options.keep_unsupported) throw UnsupportedOperator(unsupported);
      keep_opaque(graph, *n, domain_opset, inputs, static_types(g), values, unsupported);
      ++out.opaque_nodes;
      continue;
    }
    check_arity(ctx, *n, out.opset);
    importer->second(ctx);
    out.folded_nodes += ctx.folded > 0 ? 1 : 0;
    for (int k = 0; k < n->output_size(); ++k) {
      if (n->output(k).empty()) continue;
      if (!ctx.outputs()[k]) continue;  // an output this mapping does not produce; reading it fails below
      values[n->output(k)] = *ctx.outputs()[k];
      graph.name_value(*ctx.outputs()[k], n->output(k));  // kept through rewrites, written back by export
    }
  }
  for (const auto& info : g.output()) {
    auto it = values.find(info.name());
    if (it == values.end()) throw OnnxError("graph output '" + info.name() + "' is not produced by any node");
    graph.add_output(it->second, info.name());
  }
  return out;
}

ImportedModel import_model_file(const std::string& path, const ImportOptions& options) {
  bool external_data = false;
  const onnx::ModelProto model = load_model(path, &external_data, options.limits);
  try {
    ImportedModel imported = import_model(model, options);
    imported.external_data = external_data;
    return imported;
  } catch (const OnnxError& e) {
    if (dynamic_cast<const UnsupportedOperator*>(&e)) throw UnsupportedOperator("'" + path + "': " + e.what());
    throw OnnxError("'" + path + "': " + e.what());
  }
}

std::vector<std::string> supported_onnx_operators() {
  std::vector<std::string> names;
  for (const auto& [name, f] : operator_importers()) names.push_back(name);
  return names;
}

}  // namespace tgr::onnx_io
