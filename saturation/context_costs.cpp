#include "saturation/context_costs.h"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tgr::saturation {
namespace {

using Clock = std::chrono::steady_clock;

// The tree of an e-node or class, as a key (what the cost depends on: the
// operators, the shapes and constness of the leaves, which parts are
// shared) and as a graph. Both walks visit the same (class, depth) pairs in
// the same order, so a key names one graph.
class TreeBuilder {
 public:
  TreeBuilder(const EGraph& egraph, const Selection& below) : egraph_(egraph), below_(below) {}

  // The key of e-node `n`'s tree with `levels` levels of operators (n's included).
  std::string node_key(const ENode& n, int levels) {
    reset();
    std::string key;
    key_node(n, levels, key);
    return key;
  }
  std::string class_key(ClassId c, int levels) {
    reset();
    std::string key;
    key_class(egraph_.find(c), levels, key);
    return key;
  }
  // The graph of that tree, its root's outputs the graph's outputs.
  Graph node_graph(const ENode& n, int levels) {
    reset();
    Graph g;
    add_outputs(g, build_node(g, n, levels));
    return g;
  }
  Graph class_graph(ClassId c, int levels) {
    reset();
    Graph g;
    add_outputs(g, build_class(g, egraph_.find(c), levels));
    return g;
  }

 private:
  // How a class enters a tree at `levels` remaining: as a leaf (a graph
  // input), or through its chosen e-node. Constant classes are always
  // expanded to their leaves: what is computed from weights is folded and
  // costs nothing, and a fusion can depend on an operand being a weight
  // (a bias).
  const ENode* expanded(ClassId c, int levels) const {
    const int32_t choice = c < below_.choice.size() ? below_.choice[c] : -1;
    if (choice < 0) return nullptr;
    if (levels <= 0 && !egraph_.data(c).constant) return nullptr;
    const ENode& n = egraph_.eclass(c).nodes.at(static_cast<size_t>(choice));
    return n.kind == NodeKind::kInput ? nullptr : &n;
  }
  static int child_levels(const ENode& n, int levels) { return n.kind == NodeKind::kProject ? levels : levels - 1; }

  void reset() {
    seen_.clear();
    values_.clear();
  }

  void key_class(ClassId c, int levels, std::string& key) {
    const auto [it, fresh] = seen_.emplace(std::make_pair(c, levels), static_cast<int>(seen_.size()));
    if (!fresh) {
      key += '#';
      key += std::to_string(it->second);
      return;
    }
    const ENode* n = expanded(c, levels);
    if (!n) {
      const ClassData& d = egraph_.data(c);
      for (size_t k = 0; k < d.shapes.size(); ++k) {
        key += 'i';
        key += shape_to_string(d.shapes[k]);
        key += static_cast<char>('0' + static_cast<int>(d.dtypes[k]));
      }
      return;
    }
    key_node(*n, levels, key);
  }
  void key_node(const ENode& n, int levels, std::string& key) {
    switch (n.kind) {
      case NodeKind::kConstant:
        key += 'c';
        key += shape_to_string(egraph_.leaf(n.head).output_shapes.at(0));
        return;
      case NodeKind::kInput:  // (expanded() never returns one)
        key += 'i';
        return;
      case NodeKind::kProject:
        key += 'p';
        key += std::to_string(n.head);
        break;
      case NodeKind::kOp:
        key += std::to_string(n.head);
        break;
    }
    key += '(';
    for (ClassId child : n.children) {
      key_class(egraph_.find(child), child_levels(n, levels), key);
      key += ',';
    }
    key += ')';
  }

  std::vector<ValueRef> build_class(Graph& g, ClassId c, int levels) {
    const auto key = std::make_pair(c, levels);
    if (auto it = values_.find(key); it != values_.end()) return it->second;
    std::vector<ValueRef> out;
    if (const ENode* n = expanded(c, levels)) {
      out = build_node(g, *n, levels);
    } else {  // a leaf: one graph input per output (a tuple class has several)
      const ClassData& d = egraph_.data(c);
      for (size_t k = 0; k < d.shapes.size(); ++k) {
        std::string name = "v";
        name += std::to_string(g.inputs().size());
        out.push_back(g.add_input(std::move(name), d.shapes[k], d.dtypes[k]));
      }
    }
    values_.emplace(key, out);
    return out;
  }
  std::vector<ValueRef> build_node(Graph& g, const ENode& n, int levels) {
    switch (n.kind) {
      case NodeKind::kConstant:
        return {g.add_shared_constant(egraph_.leaf(n.head))};
      case NodeKind::kInput: {
        const Node& leaf = egraph_.leaf(n.head);
        return {g.add_input(leaf.name, leaf.output_shapes.at(0), leaf.output_dtypes.at(0))};
      }
      case NodeKind::kProject:
        return {build_class(g, egraph_.find(n.children.at(0)), levels).at(n.head)};
      case NodeKind::kOp:
        break;
    }
    std::vector<ValueRef> operands;
    for (ClassId child : n.children) operands.push_back(build_class(g, egraph_.find(child), levels - 1).at(0));
    const OpInstance& oi = egraph_.op_instance(n.head);
    return g.add_op(*oi.op, oi.params, std::move(operands));
  }
  static void add_outputs(Graph& g, const std::vector<ValueRef>& outs) {
    for (size_t k = 0; k < outs.size(); ++k) {
      std::string name = "y";
      name += std::to_string(k);
      g.add_output(outs[k], std::move(name));
    }
  }

  const EGraph& egraph_;
  const Selection& below_;
  std::map<std::pair<ClassId, int>, int> seen_;
  std::map<std::pair<ClassId, int>, std::vector<ValueRef>> values_;
};

}  // namespace

NodeCosts context_costs(const EGraph& egraph, const NodeCosts& alone, optimizer::CostModel& model,
                        const Selection& below, const ContextCostOptions& options, ContextCostStats* stats) {
  const auto start = Clock::now();
  NodeCosts out = alone;
  ContextCostStats local;
  ContextCostStats& s = stats ? *stats : local;
  s = {};
  TreeBuilder trees(egraph, below);
  std::unordered_map<std::string, double> cost_by_key;
  auto cost_of = [&](std::string key, auto&& build) {
    auto it = cost_by_key.find(key);
    if (it == cost_by_key.end()) {
      const Graph g = build();
      it = cost_by_key.emplace(std::move(key), model.graph_cost(g)).first;
      ++s.graphs_costed;
    }
    return it->second;
  };
  const int depth = std::max(1, options.depth);
  // A child class's tree one level below the e-nodes that read it.
  std::unordered_map<ClassId, double> child_tree;
  auto child_cost = [&](ClassId d) {
    d = egraph.find(d);
    if (auto it = child_tree.find(d); it != child_tree.end()) return it->second;
    const double c = cost_of(trees.class_key(d, depth - 1), [&] { return trees.class_graph(d, depth - 1); });
    child_tree.emplace(d, c);
    return c;
  };
  size_t visited = 0;
  for (ClassId c : egraph.class_ids()) {
    const auto& nodes = egraph.eclass(c).nodes;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const ENode& n = nodes[i];
      if (n.kind != NodeKind::kOp || !alone.allowed(c, i) || egraph.is_constant_node(n)) continue;
      if (options.deadline && (visited++ % 64) == 0 && Clock::now() > *options.deadline) {
        s.complete = false;
        s.seconds = std::chrono::duration<double>(Clock::now() - start).count();
        return out;
      }
      double marginal = cost_of(trees.node_key(n, depth), [&] { return trees.node_graph(n, depth); });
      std::vector<ClassId> children;
      for (ClassId child : n.children) children.push_back(egraph.find(child));
      std::sort(children.begin(), children.end());
      children.erase(std::unique(children.begin(), children.end()), children.end());
      for (ClassId d : children) marginal -= child_cost(d);
      out.set_cost(c, i, marginal);
      ++s.priced;
    }
  }
  s.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace tgr::saturation
