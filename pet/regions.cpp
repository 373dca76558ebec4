#include "pet/regions.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

namespace tgr::pet {

int64_t Box::volume() const {
  int64_t v = 1;
  for (size_t d = 0; d < lo.size(); ++d) v *= hi[d] - lo[d];
  return v;
}

bool Box::contains(std::span<const int64_t> position) const {
  for (size_t d = 0; d < lo.size(); ++d)
    if (position[d] < lo[d] || position[d] >= hi[d]) return false;
  return true;
}

std::string box_to_string(const Box& box) {
  std::string s = "[";
  for (size_t d = 0; d < box.lo.size(); ++d) {
    if (d) s += ", ";
    s += std::to_string(box.lo[d]);
    s += ':';
    s += std::to_string(box.hi[d]);
  }
  s += ']';
  return s;
}

Box whole_box(const Shape& shape) { return Box{std::vector<int64_t>(shape.size(), 0), shape}; }

Partition Partition::whole(const Shape& shape) {
  Partition p;
  for (int64_t n : shape) p.axes.push_back({0, n});
  return p;
}

int64_t Partition::num_boxes() const {
  int64_t n = 1;
  for (const Cuts& c : axes) n *= static_cast<int64_t>(c.size()) - 1;
  return n;
}

std::vector<Box> Partition::boxes() const {
  std::vector<Box> out;
  const size_t rank = axes.size();
  std::vector<size_t> idx(rank, 0);
  for (int64_t k = 0; k < num_boxes(); ++k) {
    Box b;
    for (size_t d = 0; d < rank; ++d) {
      b.lo.push_back(axes[d][idx[d]]);
      b.hi.push_back(axes[d][idx[d] + 1]);
    }
    out.push_back(std::move(b));
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] + 1 < axes[d].size()) break;
      idx[d] = 0;
    }
  }
  return out;
}

Cuts merge_cuts(const Cuts& a, const Cuts& b) {
  Cuts out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Partition intersect(const Partition& a, const Partition& b) {
  if (a.axes.size() != b.axes.size()) throw std::invalid_argument("intersect: partitions of different ranks");
  Partition p;
  for (size_t d = 0; d < a.axes.size(); ++d) p.axes.push_back(merge_cuts(a.axes[d], b.axes[d]));
  return p;
}

int64_t interval_of(const Cuts& cuts, int64_t x) {
  if (x < cuts.front() || x >= cuts.back()) return -1;
  return std::upper_bound(cuts.begin(), cuts.end(), x) - cuts.begin() - 1;
}

namespace rules {

Cuts cuts_by_signature(int64_t size, const std::function<void(int64_t, std::vector<int64_t>&)>& sig) {
  Cuts cuts{0};
  std::vector<int64_t> prev, cur;
  for (int64_t q = 0; q < size; ++q) {
    cur.clear();
    sig(q, cur);
    if (q > 0 && cur != prev) cuts.push_back(q);
    std::swap(prev, cur);
  }
  if (size > 0) cuts.push_back(size);
  return cuts;
}

Cuts regular_cuts(int64_t size, int64_t step) {
  Cuts cuts;
  for (int64_t q = 0; q < size; q += step) cuts.push_back(q);
  cuts.push_back(size);
  return cuts;
}

}  // namespace rules

namespace {

using Table = std::vector<std::pair<std::string, RegionRule>>;

const Table& table() {
  static const Table t = [] {
    Table built;
    rules::add_arith_rules(built);
    rules::add_window_rules(built);
    rules::add_layout_rules(built);
    return built;
  }();
  return t;
}

}  // namespace

const RegionRule* find_region_rule(std::string_view op_name) {
  for (const auto& [name, rule] : table())
    if (name == op_name) return &rule;
  return nullptr;
}

std::vector<std::string> region_rule_ops() {
  std::vector<std::string> names;
  for (const auto& [name, rule] : table()) names.push_back(name);
  return names;
}

const std::vector<std::pair<std::string, std::string>>& region_rule_unsupported_ops() {
  // Region analysis splits multi-linear programs into boxes on which they
  // agree; a non-linear operator, or one over non-float values, has no
  // regions to propagate, and region_refusal rejects the rule instead.
  static const std::string kNonlinear = "not multi-linear in its data input";
  static const std::string kMixed = "non-float values (only float tensors have regions)";
  static const std::string kNoRule = "multi-linear in its data but without a rule yet (no rule has needed one)";
  static const std::vector<std::pair<std::string, std::string>> list = {
      {"pow", kNonlinear},        {"relu", kNonlinear},       {"sigmoid", kNonlinear},      {"tanh", kNonlinear},
      {"abs", kNonlinear},        {"sqrt", kNonlinear},       {"exp", kNonlinear},          {"log", kNonlinear},
      {"erf", kNonlinear},        {"leaky_relu", kNonlinear}, {"hard_sigmoid", kNonlinear}, {"hard_swish", kNonlinear},
      {"clip", kNonlinear},       {"maxpool", kNonlinear},    {"softmax", kNonlinear},      {"layer_norm", kNonlinear},
      {"equal", kMixed},          {"less", kMixed},           {"greater", kMixed},          {"less_equal", kMixed},
      {"greater_equal", kMixed},  {"is_nan", kMixed},         {"logical_not", kMixed},      {"cast", kMixed},
      {"where", kMixed},          {"gather", kMixed},         {"gather_elements", kMixed},  {"div", kNoRule},
      {"batch_norm", kNoRule},    {"reduce_sum", kNoRule},    {"reduce_mean", kNoRule},     {"softplus", kNonlinear},
      {"cos", kNonlinear},        {"sin", kNonlinear},        {"floor", kNonlinear},        {"ceil", kNonlinear},
      {"reduce_max", kNonlinear}, {"reduce_min", kNonlinear},
  };
  return list;
}

std::string region_refusal(const Graph& graph, int32_t index) {
  const Node& n = graph.node(index);
  for (DType t : n.output_dtypes)
    if (t != DType::kFloat) return "value of element type " + std::string(dtype_name(t)) + " (only float tensors have regions)";
  if (n.is_constant()) return "a stored constant (weights are not supported by the region checker)";
  if (!n.is_op()) return "";
  if (!find_region_rule(n.op->name)) return n.op->name + " is not multi-linear (no region rule)";
  if (n.op->nonlinear_when && n.op->nonlinear_when(n.params))
    return n.op->name + " with these parameters is not multi-linear (fused activation)";
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (!n.op->is_multilinear_in(n.params, i))
      return n.op->name + " is not multi-linear in its input " + std::to_string(i);
  return "";
}

std::vector<std::vector<Partition>> propagate_partitions(const Graph& graph) {
  std::vector<std::vector<Partition>> parts(graph.nodes().size());
  for (int32_t index : graph.topological_order()) {
    const Node& n = graph.node(index);
    if (!n.is_op()) {
      parts[index] = {Partition::whole(n.output_shapes[0])};
      continue;
    }
    std::vector<Shape> in_shapes;
    std::vector<Partition> in_parts;
    for (ValueRef v : n.inputs) {
      in_shapes.push_back(graph.shape(v));
      in_parts.push_back(parts[v.node][v.output]);
    }
    const RegionRule* rule = find_region_rule(n.op->name);
    if (!rule) throw std::invalid_argument("regions: " + n.op->name + " has no region rule");
    const RegionCall call{*n.op, n.params, in_shapes, n.output_shapes};
    parts[index] = rule->propagate(call, in_parts);
  }
  return parts;
}

ValueRef add_op(Graph& g, std::string_view op_name, std::vector<ValueRef> inputs,
                std::vector<std::pair<std::string, ParamValue>> params) {
  const OpDef& op = OpTable::instance().get(op_name);
  return g.find_or_add_op(op, op.make_params(std::move(params)), std::move(inputs)).at(0);
}

ValueRef slice_box(Graph& g, ValueRef value, const Box& box) {
  if (box == whole_box(g.shape(value))) return value;
  return add_op(g, "slice", {value}, {{"starts", box.lo}, {"ends", box.hi}});
}

RestrictedBuilder::RestrictedBuilder(const Graph& source, Graph& target)
    : source_(source), target_(target), copies_(source.nodes().size()) {}

ValueRef RestrictedBuilder::copied(ValueRef value) {
  const Node& n = source_.node(value.node);
  if (!copies_[value.node]) {
    ValueRef made;
    if (n.is_input()) {
      auto found = target_.find_input(n.name);
      if (!found) throw std::invalid_argument("restricted graph: no input '" + n.name + "'");
      made = *found;
    } else if (n.is_constant()) {
      made = target_.add_constant(*n.constant, n.name);
    } else {
      std::vector<ValueRef> ins;
      for (ValueRef v : n.inputs) ins.push_back(copied(v));
      made = target_.find_or_add_op(*n.op, n.params, ins).at(0);  // output 0; others follow by index
    }
    copies_[value.node] = made;
  }
  ValueRef out = *copies_[value.node];
  out.output = value.output;
  return out;
}

ValueRef RestrictedBuilder::restricted(ValueRef value, const Box& box) {
  const Shape& shape = source_.shape(value);
  if (box == whole_box(shape)) return copied(value);
  const Node& n = source_.node(value.node);
  const RegionRule* rule = n.is_op() ? find_region_rule(n.op->name) : nullptr;
  if (!rule || !rule->restrict) return slice_box(target_, copied(value), box);
  std::vector<Shape> in_shapes;
  for (ValueRef v : n.inputs) in_shapes.push_back(source_.shape(v));
  const RegionCall call{*n.op, n.params, in_shapes, n.output_shapes};
  const Restriction r = rule->restrict(call, value.output, box);
  std::vector<ValueRef> ins(n.inputs.size());
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (r.input_boxes[i]) ins[i] = restricted(n.inputs[i], *r.input_boxes[i]);
  return r.build(target_, ins);
}

}  // namespace tgr::pet
