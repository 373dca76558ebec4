#include "ir/graph.h"
#include "ir/hash.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace tgr {

namespace {

// Eight bytes per step: a model's weights are hundreds of megabytes, hashed
// as each constant is added (byte-wise FNV-1a was a large part of a large
// model's import: docs/benchmarks.md, "Measurements behind code comments").
uint64_t hash_bytes(const void* data, size_t size, uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  size_t i = 0;
  for (; i + sizeof(uint64_t) <= size; i += sizeof(uint64_t)) {
    uint64_t word;
    std::memcpy(&word, p + i, sizeof word);
    h = hash_combine(h, word);
  }
  for (; i < size; ++i) h = fnv1a_step(h, p[i]);
  return h;
}

uint64_t hash_node(const Node& n, const std::vector<Node>& nodes) {
  if (n.is_input()) {
    uint64_t h = hash_combine(fnv1a("input"), fnv1a(n.name));
    h = hash_combine(h, static_cast<uint64_t>(n.output_dtypes[0]));
    return hash_combine(h, fnv1a(shape_to_string(n.output_shapes[0])));
  }
  if (n.is_constant()) {
    const ConstantValue& c = *n.constant;
    uint64_t h = hash_combine(fnv1a("constant"), static_cast<uint64_t>(c.dtype));
    h = hash_combine(h, fnv1a(shape_to_string(c.shape())));
    return c.is_float() ? hash_bytes(c.real.data.data(), c.real.data.size() * sizeof(float), h)
                        : hash_bytes(c.ints.data.data(), c.ints.data.size() * sizeof(int64_t), h);
  }
  uint64_t h = fnv1a(n.op->name);
  for (const auto& [key, value] : n.params.entries())
    h = hash_combine(hash_combine(h, fnv1a(key)), fnv1a(param_value_to_string(value)));
  for (ValueRef in : n.inputs) h = hash_combine(hash_combine(h, nodes[in.node].hash), static_cast<uint64_t>(in.output));
  return h;
}

}  // namespace

void Graph::check_ref(ValueRef v) const {
  if (v.node < 0 || v.node >= static_cast<int32_t>(nodes_.size()) || v.output < 0 ||
      v.output >= static_cast<int32_t>(nodes_[v.node].output_shapes.size()))
    throw std::out_of_range("graph: reference to a value that does not exist (node " + std::to_string(v.node) +
                            ", output " + std::to_string(v.output) + ")");
}

int32_t Graph::append(Node node) {
  node.hash = hash_node(node, nodes_);
  if (node.op != nullptr)
    if (auto owner = node.op->run_time_owner.lock();
        owner && std::find(run_time_ops_.begin(), run_time_ops_.end(), owner) == run_time_ops_.end())
      run_time_ops_.push_back(std::move(owner));
  nodes_.push_back(std::move(node));
  const auto index = static_cast<int32_t>(nodes_.size() - 1);
  index_node(index);
  return index;
}

void Graph::index_node(int32_t index) {
  if (nodes_.size() < kHashIndexFrom) return;  // find_or_add_op scans
  if (by_hash_.empty())
    for (int32_t i = 0; i < index; ++i) by_hash_.emplace(nodes_[i].hash, i);
  by_hash_.emplace(nodes_[index].hash, index);
}

ValueRef Graph::add_input(std::string name, Shape shape, DType dtype) {
  if (find_input(name)) throw std::invalid_argument("graph: input '" + name + "' declared twice");
  if (!indexable(shape)) check_indexable(shape, "input '" + name + "'");  // the name built only to report
  Node n;
  n.name = std::move(name);
  n.output_shapes = {std::move(shape)};
  n.output_dtypes = {dtype};
  const int32_t index = append(std::move(n));
  inputs_.push_back(index);
  return {index, 0};
}

ValueRef Graph::add_constant(ConstantValue value, std::string name) {
  if (!indexable(value.shape()))
    check_indexable(value.shape(), name.empty() ? "a constant" : "constant '" + name + "'");
  Node n;
  n.name = std::move(name);
  n.output_shapes = {value.shape()};
  n.output_dtypes = {value.dtype};
  n.constant = std::make_shared<const ConstantValue>(std::move(value));
  return {append(std::move(n)), 0};
}

ValueRef Graph::add_shared_constant(const Node& constant) {
  if (!constant.is_constant()) throw std::invalid_argument("graph: add_shared_constant given a node that is not a constant");
  Node n = constant;
  n.inputs.clear();
  nodes_.push_back(std::move(n));
  const auto index = static_cast<int32_t>(nodes_.size() - 1);
  index_node(index);
  return {index, 0};
}

OpDef::Inferred Graph::prepare(const OpDef& op, Params& params, const std::vector<ValueRef>& inputs) const {
  std::vector<Shape> in_shapes;
  std::vector<DType> in_dtypes;
  for (ValueRef v : inputs) {
    check_ref(v);
    in_shapes.push_back(shape(v));
    in_dtypes.push_back(dtype(v));
  }
  OpDef::Inferred out = op.infer(params, in_shapes, in_dtypes);
  if (op.canonicalize) op.canonicalize(params, in_shapes);
  return out;
}

std::vector<ValueRef> Graph::outputs_of(int32_t index) const {
  std::vector<ValueRef> outs;
  for (int32_t k = 0; k < static_cast<int32_t>(nodes_[index].output_shapes.size()); ++k) outs.push_back({index, k});
  return outs;
}

std::vector<ValueRef> Graph::add_op(const OpDef& op, Params params, std::vector<ValueRef> inputs,
                                    std::string label) {
  Node n;
  OpDef::Inferred types = prepare(op, params, inputs);
  n.output_shapes = std::move(types.shapes);
  n.output_dtypes = std::move(types.dtypes);
  n.op = &op;
  n.name = std::move(label);
  n.params = std::move(params);
  n.inputs = std::move(inputs);
  return outputs_of(append(std::move(n)));
}

void Graph::give_names(int32_t index, std::string label, std::vector<std::string> value_names) {
  Node& n = nodes_[index];
  if (n.name.empty()) n.name = std::move(label);
  if (value_names.empty()) return;
  n.value_names.resize(n.output_shapes.size());
  for (size_t k = 0; k < n.value_names.size() && k < value_names.size(); ++k)
    if (n.value_names[k].empty()) n.value_names[k] = std::move(value_names[k]);
}

void Graph::name_value(ValueRef v, const std::string& name) {
  check_ref(v);
  Node& n = nodes_[v.node];
  if (n.is_input() || name.empty()) return;
  if (n.is_constant()) {
    if (n.name.empty()) n.name = name;
    return;
  }
  n.value_names.resize(n.output_shapes.size());
  if (n.value_names[v.output].empty()) n.value_names[v.output] = name;
}

std::vector<ValueRef> Graph::find_or_add_op(const OpDef& op, Params params, std::vector<ValueRef> inputs,
                                            std::string label, std::vector<std::string> value_names) {
  Node n;
  OpDef::Inferred types = prepare(op, params, inputs);  // canonical params, so the lookup sees the stored form
  n.output_shapes = std::move(types.shapes);
  n.output_dtypes = std::move(types.dtypes);
  n.op = &op;
  n.params = std::move(params);
  n.inputs = std::move(inputs);
  const uint64_t hash = hash_node(n, nodes_);
  auto same = [&](int32_t i) {
    const Node& other = nodes_[i];
    return other.hash == hash && other.op == n.op && other.params == n.params && other.inputs == n.inputs;
  };
  int32_t found = -1;
  if (nodes_.size() < kHashIndexFrom) {
    for (int32_t i = 0; i < static_cast<int32_t>(nodes_.size()) && found < 0; ++i)
      if (same(i)) found = i;
  } else {
    auto [begin, end] = by_hash_.equal_range(hash);
    for (auto it = begin; it != end && found < 0; ++it)
      if (same(it->second)) found = it->second;
  }
  if (found < 0) found = append(std::move(n));
  give_names(found, std::move(label), std::move(value_names));
  return outputs_of(found);
}

ValueRef Graph::apply(std::string_view op_name, std::vector<ValueRef> inputs,
                      std::vector<std::pair<std::string, ParamValue>> params) {
  const OpDef& op = OpTable::instance().get(op_name);
  auto outs = add_op(op, op.make_params(std::move(params)), std::move(inputs));
  if (outs.size() != 1)
    throw std::invalid_argument("graph: " + op.name + " has " + std::to_string(outs.size()) +
                                " outputs; use add_op");
  return outs[0];
}

void Graph::add_output(ValueRef value, std::string name) {
  check_ref(value);
  outputs_.push_back(value);
  output_names_.push_back(name.empty() ? "output_" + std::to_string(outputs_.size() - 1) : std::move(name));
}

uint64_t Graph::hash(ValueRef v) const {
  check_ref(v);
  return hash_combine(nodes_[v.node].hash, static_cast<uint64_t>(v.output));
}

std::optional<ValueRef> Graph::find_input(std::string_view name) const {
  for (int32_t i : inputs_)
    if (nodes_[i].name == name) return ValueRef{i, 0};
  return std::nullopt;
}

std::vector<int32_t> Graph::topological_order() const {
  std::vector<char> live(nodes_.size(), 0);
  for (ValueRef v : outputs_) live[v.node] = 1;
  for (int32_t i = static_cast<int32_t>(nodes_.size()) - 1; i >= 0; --i)
    if (live[i])
      for (ValueRef in : nodes_[i].inputs) live[in.node] = 1;
  std::vector<int32_t> order;
  for (int32_t i = 0; i < static_cast<int32_t>(nodes_.size()); ++i)
    if (live[i]) order.push_back(i);
  return order;
}

std::vector<std::vector<int32_t>> Graph::use_counts() const {
  std::vector<std::vector<int32_t>> uses(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) uses[i].assign(nodes_[i].output_shapes.size(), 0);
  for (int32_t i : topological_order())
    for (ValueRef in : nodes_[i].inputs) ++uses[in.node][in.output];
  for (ValueRef v : outputs_) ++uses[v.node][v.output];
  return uses;
}

uint64_t Graph::structural_hash() const {
  uint64_t h = fnv1a("graph");
  for (ValueRef v : outputs_) h = hash_combine(h, hash(v));
  return h;
}

int Graph::num_ops() const {
  int n = 0;
  for (int32_t i : topological_order()) n += nodes_[i].is_op() ? 1 : 0;
  return n;
}

}  // namespace tgr
