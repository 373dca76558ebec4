#include "saturation/egraph.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>

#include "ir/hash.h"
#include "onnx/opaque_op.h"

namespace tgr::saturation {
namespace {

uint64_t hash_params(const OpDef& op, const Params& params) {
  uint64_t h = fnv1a(op.name);
  for (const auto& [key, value] : params.entries()) {
    h = hash_combine(h, fnv1a(key));
    h = hash_combine(h, fnv1a(param_value_to_string(value)));
  }
  return h;
}

std::string shape_text(const ClassData& d) {
  std::string s;
  for (size_t i = 0; i < d.shapes.size(); ++i) {
    if (i) s += ", ";
    s += shape_to_string(d.shapes[i]);
    s += " ";
    s += dtype_name(d.dtypes[i]);
  }
  return s;
}

}  // namespace

size_t ENodeHash::operator()(const ENode& n) const {
  uint64_t h = hash_combine(static_cast<uint64_t>(n.kind), n.head);
  for (ClassId c : n.children) h = hash_combine(h, c);
  return static_cast<size_t>(h);
}

std::optional<uint32_t> EGraph::find_instance(const OpDef& op, const Params& params, uint64_t hash) const {
  auto [begin, end] = op_instance_index_.equal_range(hash);
  for (auto it = begin; it != end; ++it) {
    const OpInstance& oi = op_instances_[it->second];
    if (oi.op == &op && oi.params == params) return it->second;
  }
  return std::nullopt;
}

uint32_t EGraph::intern(const OpDef& op, Params params) {
  const uint64_t h = hash_params(op, params);
  if (auto found = find_instance(op, params, h)) return *found;
  const auto id = static_cast<uint32_t>(op_instances_.size());
  op_instances_.push_back({&op, std::move(params), h});
  op_instance_index_.emplace(h, id);
  return id;
}

ClassId EGraph::find(ClassId id) const {
  if (id >= parent_.size()) throw std::logic_error("e-graph: no class " + std::to_string(id));
  while (parent_[id] != id) id = parent_[id];
  return id;
}

ENode EGraph::canonical(const ENode& node) const {
  ENode n = node;
  for (ClassId& c : n.children) c = find(c);
  return n;
}

ClassId EGraph::lookup(const ENode& node) const {
  auto it = memo_.find(canonical(node));
  return it == memo_.end() ? kNoClass : find(it->second);
}

ClassId EGraph::lookup_op(const OpDef& op, Params params, const std::vector<ClassId>& operands) const {
  std::vector<Shape> in_shapes;
  std::vector<ClassId> children;
  for (ClassId c : operands) {
    c = find(c);
    const ClassData& d = classes_[c].data;
    if (d.tuple) return kNoClass;
    in_shapes.push_back(d.shapes[0]);
    children.push_back(c);
  }
  if (op.canonicalize) op.canonicalize(params, in_shapes);
  const std::optional<uint32_t> head = find_instance(op, params, hash_params(op, params));
  return head ? lookup(ENode{NodeKind::kOp, *head, std::move(children), 0}) : kNoClass;
}

bool EGraph::is_constant_node(const ENode& n) const {
  switch (n.kind) {
    case NodeKind::kInput:
      return false;
    case NodeKind::kConstant:
      return true;
    case NodeKind::kProject:
      return classes_[find(n.children[0])].data.constant;
    case NodeKind::kOp:
      if (onnx_io::is_opaque(*op_instances_[n.head].op)) return false;
      return std::all_of(n.children.begin(), n.children.end(),
                         [&](ClassId c) { return classes_[find(c)].data.constant; });
  }
  return false;
}

ClassId EGraph::add_node(ENode node, ClassData data) {
  node = canonical(node);
  if (auto it = memo_.find(node); it != memo_.end()) {
    last_added_ = it->first.self;
    return find(it->second);
  }
  const auto id = static_cast<ClassId>(classes_.size());
  node.self = id;
  last_added_ = id;
  if (log_unions_) originals_.push_back(node);
  parent_.push_back(id);
  data.constant = is_constant_node(node);
  EClass cls;
  cls.data = std::move(data);
  cls.nodes.push_back(node);
  classes_.push_back(std::move(cls));
  for (ClassId child : node.children) classes_[child].parents.emplace_back(node, id);
  memo_.emplace(std::move(node), id);
  ++num_classes_;
  ++num_nodes_;
  dirty_ = true;
  return id;
}

ClassId EGraph::add_input(const Node& input) {
  if (!input.is_input()) throw std::logic_error("e-graph: add_input of a node that is not a graph input");
  auto [it, inserted] = input_by_name_.try_emplace(input.name, static_cast<uint32_t>(leaves_.size()));
  if (inserted) {
    leaves_.push_back(input);
    input_leaves_.push_back(it->second);
  } else if (leaves_[it->second].output_shapes != input.output_shapes ||
             leaves_[it->second].output_dtypes != input.output_dtypes) {
    throw std::logic_error("e-graph: input '" + input.name + "' added twice with different shapes");
  }
  ENode n{NodeKind::kInput, it->second, {}, 0};
  return add_node(std::move(n), ClassData{input.output_shapes, input.output_dtypes, false, false});
}

ClassId EGraph::add_constant(const Node& constant) {
  if (!constant.is_constant()) throw std::logic_error("e-graph: add_constant of a node that is not a constant");
  auto [it, inserted] = constant_by_tensor_.try_emplace(constant.constant.get(), static_cast<uint32_t>(leaves_.size()));
  if (inserted) leaves_.push_back(constant);
  ENode n{NodeKind::kConstant, it->second, {}, 0};
  return add_node(std::move(n), ClassData{constant.output_shapes, constant.output_dtypes, false, true});
}

uint32_t EGraph::add_label(NodeLabel label) {
  if (label.name.empty() && label.value_names.empty()) return 0;
  labels_.push_back(std::move(label));
  return static_cast<uint32_t>(labels_.size() - 1);
}

ClassId EGraph::add_op(const OpDef& op, Params params, std::vector<ClassId> operands, uint32_t origin, uint32_t label) {
  std::vector<Shape> in_shapes;
  std::vector<DType> in_dtypes;
  for (ClassId& c : operands) {
    c = find(c);
    const ClassData& d = classes_[c].data;
    if (d.tuple)
      throw std::logic_error("e-graph: " + op.name + " reads the tuple " + describe(c) + " (read its projections)");
    in_shapes.push_back(d.shapes[0]);
    in_dtypes.push_back(d.dtypes[0]);
  }
  OpDef::Inferred out = op.infer(params, in_shapes, in_dtypes);
  if (op.canonicalize) op.canonicalize(params, in_shapes);
  const bool tuple = out.shapes.size() != 1;
  ENode n{NodeKind::kOp, intern(op, std::move(params)), std::move(operands), origin, label};
  return add_node(std::move(n), ClassData{std::move(out.shapes), std::move(out.dtypes), tuple, false});
}

ClassId EGraph::add_project(ClassId tuple, uint32_t k, uint32_t origin) {
  tuple = find(tuple);
  const ClassData& d = classes_[tuple].data;
  if (!d.tuple || k >= d.shapes.size())
    throw std::logic_error("e-graph: projection " + std::to_string(k) + " of " + describe(tuple));
  ClassData value{{d.shapes[k]}, {d.dtypes[k]}, false, false};
  return add_node(ENode{NodeKind::kProject, k, {tuple}, origin}, std::move(value));
}

std::vector<ClassId> EGraph::add_op_outputs(const OpDef& op, Params params, std::vector<ClassId> operands,
                                            uint32_t origin, uint32_t label) {
  const ClassId c = add_op(op, std::move(params), std::move(operands), origin, label);
  const ClassData& d = classes_[find(c)].data;
  if (!d.tuple) return {c};
  std::vector<ClassId> outs;
  const size_t n = d.shapes.size();
  for (uint32_t k = 0; k < n; ++k) outs.push_back(add_project(c, k, origin));
  return outs;
}

std::vector<ClassId> EGraph::add_graph(const Graph& graph) {
  std::vector<std::vector<ClassId>> classes(graph.nodes().size());
  for (int32_t in : graph.inputs()) classes[in] = {add_input(graph.node(in))};
  for (int32_t i : graph.topological_order()) {
    const Node& n = graph.node(i);
    if (!classes[i].empty()) continue;
    if (n.is_constant()) {
      classes[i] = {add_constant(n)};
      continue;
    }
    if (n.is_input()) {
      classes[i] = {add_input(n)};
      continue;
    }
    std::vector<ClassId> operands;
    for (ValueRef v : n.inputs) operands.push_back(classes[v.node].at(v.output));
    classes[i] = add_op_outputs(*n.op, n.params, std::move(operands), 0, add_label({n.name, n.value_names}));
  }
  std::vector<ClassId> outs;
  for (ValueRef v : graph.outputs()) outs.push_back(find(classes[v.node].at(v.output)));
  return outs;
}

void EGraph::merge_data(ClassId into, ClassId from) {
  ClassData& a = classes_[into].data;
  const ClassData& b = classes_[from].data;
  if (a.shapes != b.shapes || a.dtypes != b.dtypes || a.tuple != b.tuple)
    throw std::logic_error("e-graph: merging classes that disagree: " + describe(into) + " and " + describe(from));
  a.constant = a.constant || b.constant;
}

void EGraph::log_unions() {
  if (!classes_.empty()) throw std::logic_error("e-graph: log_unions on an e-graph that is not empty");
  log_unions_ = true;
}

void EGraph::add_premises(uint32_t origin, std::vector<std::pair<ClassId, ClassId>> premises) {
  if (log_unions_) premises_[origin] = std::move(premises);
}

const std::vector<std::pair<ClassId, ClassId>>& EGraph::premises(uint32_t origin) const {
  static const std::vector<std::pair<ClassId, ClassId>> none;
  const auto it = premises_.find(origin);
  return it == premises_.end() ? none : it->second;
}

void EGraph::merge_congruent(const ENode& x, ClassId x_class, const ENode& y, ClassId y_class) {
  if (!log_unions_ || find(x_class) == find(y_class)) {
    merge(x_class, y_class);
    return;
  }
  // Logged between the e-nodes themselves (their own ids), so that the
  // explanation can pair up their children as they were added.
  union_log_.push_back({x.self, y.self, 0});
  log_unions_ = false;
  merge(x_class, y_class);
  log_unions_ = true;
}

bool EGraph::merge(ClassId a, ClassId b, uint32_t origin) {
  const ClassId given_a = a, given_b = b;
  a = find(a);
  b = find(b);
  if (a == b) return false;
  if (log_unions_) union_log_.push_back({given_a, given_b, origin});
  // The larger class absorbs the smaller (fewer parents to move).
  if (classes_[a].nodes.size() + classes_[a].parents.size() < classes_[b].nodes.size() + classes_[b].parents.size())
    std::swap(a, b);
  merge_data(a, b);
  parent_[b] = a;
  EClass& into = classes_[a];
  EClass& from = classes_[b];
  into.nodes.insert(into.nodes.end(), std::make_move_iterator(from.nodes.begin()),
                    std::make_move_iterator(from.nodes.end()));
  into.parents.insert(into.parents.end(), std::make_move_iterator(from.parents.begin()),
                      std::make_move_iterator(from.parents.end()));
  from.nodes.clear();
  from.nodes.shrink_to_fit();
  from.parents.clear();
  from.parents.shrink_to_fit();
  --num_classes_;
  pending_.push_back(a);
  dirty_ = true;
  return true;
}

namespace {

// Nodes in a class: by kind, then operator (so a pattern's candidates are
// one contiguous range), then the rest of the identity.
struct NodeOrder {
  const std::vector<OpInstance>& ops;
  auto key(const ENode& n) const {
    const OpDef* op = n.kind == NodeKind::kOp ? ops[n.head].op : nullptr;
    return std::make_tuple(static_cast<int>(n.kind), reinterpret_cast<uintptr_t>(op), n.head);
  }
  bool operator()(const ENode& a, const ENode& b) const {
    const auto ka = key(a), kb = key(b);
    if (ka != kb) return ka < kb;
    return a.children < b.children;
  }
};

}  // namespace

void EGraph::restore_congruence() {
  // egg's rebuild: re-canonicalise the parents of every class that took
  // part in a union; two that become equal are merged, which queues their
  // class in turn.
  while (!pending_.empty()) {
    std::vector<ClassId> todo;
    todo.swap(pending_);
    for (ClassId& c : todo) c = find(c);
    std::sort(todo.begin(), todo.end());
    todo.erase(std::unique(todo.begin(), todo.end()), todo.end());
    for (ClassId c : todo) {
      const auto parents = classes_[find(c)].parents;  // merges below may move them
      for (const auto& [node, cls] : parents) {
        ENode key = canonical(node);
        auto [it, inserted] = memo_.try_emplace(std::move(key), find(cls));
        if (!inserted) {
          merge_congruent(it->first, it->second, node, cls);
          it->second = find(cls);
        }
      }
    }
  }
}

void EGraph::rebuild() {
  for (;;) {
    restore_congruence();
    // Normalise: canonical, sorted, deduplicated node lists; the memo,
    // parent lists and operator index rebuilt from them. A collision here
    // is a congruence the worklist missed: merge and go round again.
    memo_.clear();
    std::vector<std::pair<ENode, ClassId>> collisions;  // (e-node, its class) met again in a class of the memo
    const NodeOrder order{op_instances_};
    for (ClassId c = 0; c < classes_.size(); ++c) {
      if (parent_[c] != c) continue;
      EClass& cls = classes_[c];
      for (ENode& n : cls.nodes) n = canonical(n);
      std::sort(cls.nodes.begin(), cls.nodes.end(), [&](const ENode& a, const ENode& b) {
        if (order(a, b)) return true;
        if (order(b, a)) return false;
        return a.origin < b.origin;  // the earliest origin first, kept by unique
      });
      cls.nodes.erase(
          std::unique(cls.nodes.begin(), cls.nodes.end(), [](const ENode& a, const ENode& b) { return a.same_as(b); }),
          cls.nodes.end());
      for (const ENode& n : cls.nodes) {
        auto [it, inserted] = memo_.try_emplace(n, c);
        if (!inserted && it->second != c) collisions.emplace_back(n, c);
      }
    }
    // Filtered e-nodes stay known to hash-consing (a collision with a live
    // e-node elsewhere is a congruence like any other).
    std::vector<std::pair<ENode, ClassId>> still_filtered;
    for (auto& [n, c] : filtered_) {
      n = canonical(n);
      c = find(c);
      auto [it, inserted] = memo_.try_emplace(n, c);
      if (inserted) still_filtered.emplace_back(std::move(n), c);
      else if (it->second != c) collisions.emplace_back(n, c);
      // else: the same as an e-node of its class (live or filtered): once is enough
    }
    filtered_.swap(still_filtered);
    for (const auto& [n, c] : collisions) {
      const auto it = memo_.find(n);
      merge_congruent(it->first, it->second, n, c);
    }
    if (pending_.empty()) break;
  }
  num_nodes_ = memo_.size() - filtered_.size();
  by_op_.clear();
  for (EClass& cls : classes_) cls.parents.clear();
  for (ClassId c = 0; c < classes_.size(); ++c) {
    if (parent_[c] != c) continue;
    const OpDef* last = nullptr;
    for (const ENode& n : classes_[c].nodes) {
      for (ClassId child : n.children) classes_[child].parents.emplace_back(n, c);
      const OpDef* op = op_of(n);
      if (op && op != last) by_op_[op].push_back(c);
      last = op;
    }
  }
  for (EClass& cls : classes_) {
    auto& p = cls.parents;
    std::sort(p.begin(), p.end(), [&](const auto& a, const auto& b) {
      if (a.second != b.second) return a.second < b.second;
      return NodeOrder{op_instances_}(a.first, b.first);
    });
    p.erase(std::unique(p.begin(), p.end(),
                        [](const auto& a, const auto& b) { return a.second == b.second && a.first.same_as(b.first); }),
            p.end());
  }
  update_constants();
  dirty_ = false;
}

void EGraph::update_constants() {
  // A class becomes constant when one of its nodes is computed from
  // constants only; that can make its parents constant: a fixpoint.
  for (bool changed = true; changed;) {
    changed = false;
    for (ClassId c = 0; c < classes_.size(); ++c) {
      if (parent_[c] != c || classes_[c].data.constant) continue;
      for (const ENode& n : classes_[c].nodes)
        if (is_constant_node(n)) {
          classes_[c].data.constant = true;
          changed = true;
          break;
        }
    }
  }
}

bool EGraph::reaches(ClassId from, ClassId to) const {
  from = find(from);
  to = find(to);
  if (from == to) return true;
  // Nothing reads `to` (a class a rewrite has just made, say): nothing
  // reaches it. Saves the walk below `from` for most of a rewrite's checks.
  if (classes_[to].parents.empty()) return false;
  if (visit_mark_.size() < classes_.size()) visit_mark_.resize(classes_.size(), 0);
  if (++visit_epoch_ == 0) {  // wrapped: clear the marks
    std::fill(visit_mark_.begin(), visit_mark_.end(), 0);
    visit_epoch_ = 1;
  }
  std::vector<ClassId> stack{from};
  visit_mark_[from] = visit_epoch_;
  while (!stack.empty()) {
    const ClassId c = stack.back();
    stack.pop_back();
    for (const ENode& n : classes_[c].nodes)
      for (ClassId child : n.children) {
        const ClassId d = find(child);
        if (d == to) return true;
        if (visit_mark_[d] == visit_epoch_) continue;
        visit_mark_[d] = visit_epoch_;
        stack.push_back(d);
      }
  }
  return false;
}

size_t EGraph::break_cycles(std::vector<int32_t> keep) {
  enum : char { kNew, kOpen, kDone };
  std::vector<char> state(classes_.size(), kNew);
  struct Frame {
    ClassId cls;
    size_t node = 0, child = 0;
  };
  std::vector<Frame> stack;
  size_t filtered = 0;
  auto kept = [&](ClassId c, size_t node) { return c < keep.size() && keep[c] == static_cast<int32_t>(node); };
  for (ClassId root = 0; root < classes_.size(); ++root) {
    if (parent_[root] != root || state[root] != kNew) continue;
    stack.push_back({root});
    state[root] = kOpen;
    while (!stack.empty()) {
      Frame& f = stack.back();
      const auto& nodes = classes_[f.cls].nodes;
      if (f.node == nodes.size()) {
        state[f.cls] = kDone;
        stack.pop_back();
        continue;
      }
      if (f.child == nodes[f.node].children.size()) {
        ++f.node;
        f.child = 0;
        continue;
      }
      const ClassId d = find(nodes[f.node].children[f.child++]);
      if (state[d] == kNew) {
        state[d] = kOpen;
        stack.push_back({d});
        continue;
      }
      if (state[d] == kDone) continue;
      // A cycle: the frames from d's up to this one, each through the
      // e-node it is exploring. Filter the topmost that is not kept (a kept
      // choice is acyclic, so not all of them are).
      auto bottom = std::find_if(stack.begin(), stack.end(), [&](const Frame& g) { return g.cls == d; });
      auto victim = stack.end();
      for (auto it = stack.end(); it != bottom;) {
        --it;
        if (!kept(it->cls, it->node)) {
          victim = it;
          break;
        }
      }
      if (victim == stack.end())
        throw std::logic_error("e-graph: a cycle through kept e-nodes only, at " + describe(d));
      auto& victim_nodes = classes_[victim->cls].nodes;
      filtered_.emplace_back(victim_nodes[victim->node], victim->cls);
      const size_t removed_index = victim->node;
      victim_nodes.erase(victim_nodes.begin() + static_cast<std::ptrdiff_t>(removed_index));
      // Indexes into the class shift: the kept choice with them.
      if (victim->cls < keep.size() && keep[victim->cls] > static_cast<int32_t>(removed_index)) --keep[victim->cls];
      ++filtered;
      // Start again from this root; finished classes stay finished (removing
      // e-nodes cannot make them cyclic).
      for (const Frame& g : stack) state[g.cls] = kNew;
      stack.clear();
      stack.push_back({root});
      state[root] = kOpen;
    }
  }
  num_nodes_ -= std::min(num_nodes_, filtered);
  return filtered;
}

bool EGraph::acyclic(std::vector<ClassId>* cycle) const {
  enum : char { kNew, kOpen, kDone };
  std::vector<char> state(classes_.size(), kNew);
  struct Frame {
    ClassId cls;
    size_t node = 0, child = 0;
  };
  std::vector<Frame> stack;
  for (ClassId root = 0; root < classes_.size(); ++root) {
    if (parent_[root] != root || state[root] != kNew) continue;
    stack.push_back({root});
    state[root] = kOpen;
    while (!stack.empty()) {
      Frame& f = stack.back();
      const auto& nodes = classes_[f.cls].nodes;
      if (f.node == nodes.size()) {
        state[f.cls] = kDone;
        stack.pop_back();
        continue;
      }
      const ENode& n = nodes[f.node];
      if (f.child == n.children.size()) {
        ++f.node;
        f.child = 0;
        continue;
      }
      const ClassId d = find(n.children[f.child++]);
      if (state[d] == kOpen) {
        if (cycle) {
          cycle->clear();
          auto from = std::find_if(stack.begin(), stack.end(), [&](const Frame& g) { return g.cls == d; });
          for (auto it = from; it != stack.end(); ++it) cycle->push_back(it->cls);
        }
        return false;
      }
      if (state[d] == kNew) {
        state[d] = kOpen;
        stack.push_back({d});
      }
    }
  }
  return true;
}

std::vector<ClassId> EGraph::class_ids() const {
  std::vector<ClassId> ids;
  ids.reserve(num_classes_);
  for (ClassId c = 0; c < classes_.size(); ++c)
    if (parent_[c] == c) ids.push_back(c);
  return ids;
}

std::span<const ClassId> EGraph::classes_with_op(const OpDef* op) const {
  auto it = by_op_.find(op);
  if (it == by_op_.end()) return {};
  return it->second;
}

std::span<const ENode> EGraph::nodes_with_op(ClassId id, const OpDef* op) const {
  const auto& nodes = classes_[find(id)].nodes;
  auto first = std::partition_point(nodes.begin(), nodes.end(), [&](const ENode& n) {
    if (n.kind != NodeKind::kOp) return n.kind < NodeKind::kOp;
    return reinterpret_cast<uintptr_t>(op_instances_[n.head].op) < reinterpret_cast<uintptr_t>(op);
  });
  auto last = first;
  while (last != nodes.end() && last->kind == NodeKind::kOp && op_instances_[last->head].op == op) ++last;
  return {first, last};
}

std::span<const ENode> EGraph::projections(ClassId id) const {
  const auto& nodes = classes_[find(id)].nodes;
  auto first =
      std::partition_point(nodes.begin(), nodes.end(), [](const ENode& n) { return n.kind < NodeKind::kProject; });
  return {first, nodes.end()};
}

std::string EGraph::describe(ClassId id) const {
  const ClassId c = find(id);
  const EClass& cls = classes_[c];
  std::string s = "class " + std::to_string(c) + " (";
  if (!cls.nodes.empty()) {
    const ENode& n = cls.nodes.front();
    switch (n.kind) {
      case NodeKind::kInput:
        s += "input " + leaves_[n.head].name;
        break;
      case NodeKind::kConstant:
        s += "constant";
        break;
      case NodeKind::kOp:
        s += op_instances_[n.head].op->name;
        break;
      case NodeKind::kProject:
        s += "project " + std::to_string(n.head);
        break;
    }
    if (cls.nodes.size() > 1) s += " and " + std::to_string(cls.nodes.size() - 1) + " more";
    s += ", ";
  }
  s += shape_text(cls.data);
  s += ")";
  return s;
}

}  // namespace tgr::saturation
