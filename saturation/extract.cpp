#include "saturation/extract.h"

#include <CbcModel.hpp>
#include <CbcSolver.hpp>
#include <ClpSolve.hpp>
#include <CoinPackedMatrix.hpp>
#include <CoinPackedVector.hpp>
#include <OsiClpSolverInterface.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <queue>
#include <stdexcept>
#include <unordered_map>

namespace tgr::saturation {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Tarjan's strongly connected components of a directed graph given by
// adjacency lists (iterative: e-graphs of deep models are deep); returns
// each vertex's component number.
std::vector<size_t> strongly_connected_components(const std::vector<std::vector<size_t>>& edges) {
  const size_t n = edges.size();
  constexpr size_t kUnvisited = SIZE_MAX;
  std::vector<size_t> index(n, kUnvisited), low(n, 0), component(n, kUnvisited);
  std::vector<char> on_stack(n, 0);
  std::vector<size_t> stack;
  std::vector<std::pair<size_t, size_t>> calls;  // (vertex, next edge)
  size_t next_index = 0, next_component = 0;
  for (size_t root = 0; root < n; ++root) {
    if (index[root] != kUnvisited) continue;
    calls.emplace_back(root, 0);
    while (!calls.empty()) {
      auto& [v, e] = calls.back();
      if (e == 0 && index[v] == kUnvisited) {
        index[v] = low[v] = next_index++;
        stack.push_back(v);
        on_stack[v] = 1;
      }
      if (e < edges[v].size()) {
        const size_t w = edges[v][e++];
        if (index[w] == kUnvisited) {
          calls.emplace_back(w, 0);
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      if (low[v] == index[v]) {
        for (;;) {
          const size_t w = stack.back();
          stack.pop_back();
          on_stack[w] = 0;
          component[w] = next_component;
          if (w == v) break;
        }
        ++next_component;
      }
      const size_t done = v;
      calls.pop_back();
      if (!calls.empty()) low[calls.back().first] = std::min(low[calls.back().first], low[done]);
    }
  }
  return component;
}

}  // namespace

void walk_selection(const EGraph& egraph, const Selection& selection, const std::vector<ClassId>& roots,
                    const std::function<void(ClassId, const ENode&)>& visit) {
  enum : char { kNew, kOpen, kDone };
  std::vector<char> state(selection.choice.size(), kNew);
  // Iterative depth-first search (models are deep).
  std::vector<std::pair<ClassId, size_t>> stack;
  for (ClassId root : roots) {
    root = egraph.find(root);
    if (state.at(root) == kDone) continue;
    stack.emplace_back(root, 0);
    state[root] = kOpen;
    while (!stack.empty()) {
      auto& [c, next_child] = stack.back();
      const int32_t choice = selection.choice.at(c);
      if (choice < 0) throw std::logic_error("extraction: no e-node chosen for " + egraph.describe(c));
      const ENode& n = egraph.eclass(c).nodes.at(static_cast<size_t>(choice));
      if (next_child < n.children.size()) {
        const ClassId d = egraph.find(n.children[next_child++]);
        if (state.at(d) == kOpen) throw std::logic_error("extraction: the choice is cyclic at " + egraph.describe(d));
        if (state[d] == kNew) {
          state[d] = kOpen;
          stack.emplace_back(d, 0);
        }
        continue;
      }
      visit(c, n);
      state[c] = kDone;
      stack.pop_back();
    }
  }
}

NodeCosts::NodeCosts(const EGraph& egraph, optimizer::CostModel* model, SignatureCosts* cache) {
  const size_t n_classes = egraph.class_ids().empty() ? 0 : egraph.class_ids().back() + 1;
  costs_.resize(n_classes);
  allowed_.resize(n_classes);
  SignatureCosts local;
  SignatureCosts& by_signature = cache ? *cache : local;
  for (ClassId c : egraph.class_ids()) {
    const EClass& cls = egraph.eclass(c);
    costs_[c].assign(cls.nodes.size(), 0.0);
    allowed_[c].assign(cls.nodes.size(), 1);
    for (size_t i = 0; i < cls.nodes.size(); ++i) {
      const ENode& n = cls.nodes[i];
      const bool constant = egraph.is_constant_node(n);
      if (cls.data.constant && !constant) allowed_[c][i] = 0;
      if (n.kind != NodeKind::kOp || constant) continue;
      if (!model) {
        costs_[c][i] = 1;
        continue;
      }
      std::string key = std::to_string(n.head);
      for (ClassId child : n.children) {
        key += '|';
        key += shape_to_string(egraph.data(child).shapes[0]);
      }
      auto it = by_signature.find(key);
      if (it == by_signature.end()) {
        // The operator alone, over inputs at its operands' shapes.
        const OpInstance& oi = egraph.op_instance(n.head);
        Graph g;
        std::vector<ValueRef> operands;
        for (size_t k = 0; k < n.children.size(); ++k) {
          const ClassData& d = egraph.data(n.children[k]);
          std::string name = "a";  // (not "a" + to_string: GCC 12's -Wrestrict false positive)
          name += std::to_string(k);
          operands.push_back(g.add_input(std::move(name), d.shapes[0], d.dtypes[0]));
        }
        const std::vector<ValueRef> outs = g.add_op(*oi.op, oi.params, std::move(operands));
        // Outputs, or a model that plans the graph (PlanCostModel) finds
        // nothing to run and costs the operator nothing.
        for (size_t k = 0; k < outs.size(); ++k) {
          std::string name = "y";
          name += std::to_string(k);
          g.add_output(outs[k], std::move(name));
        }
        it = by_signature.emplace(std::move(key), model->op_cost_us(g, g.node(outs[0].node))).first;
      }
      costs_[c][i] = it->second;
    }
  }
}

Extraction greedy_extract(const EGraph& egraph, const NodeCosts& costs) {
  const std::vector<ClassId> ids = egraph.class_ids();
  const size_t n_classes = ids.empty() ? 0 : ids.back() + 1;
  Extraction out;
  out.selection.choice.assign(n_classes, -1);
  out.tree_cost.assign(n_classes, kInfinity);
  out.settled.assign(n_classes, -1);
  // users[d]: (class, node) once per occurrence of d among the node's children.
  std::vector<std::vector<std::pair<ClassId, uint32_t>>> users(n_classes);
  std::vector<std::vector<uint32_t>> waiting(n_classes);  // children not settled yet, per node
  using Entry = std::tuple<double, ClassId, uint32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  for (ClassId c : ids) {
    const auto& nodes = egraph.eclass(c).nodes;
    waiting[c].assign(nodes.size(), 0);
    for (uint32_t i = 0; i < nodes.size(); ++i) {
      if (!costs.allowed(c, i)) continue;
      waiting[c][i] = static_cast<uint32_t>(nodes[i].children.size());
      for (ClassId child : nodes[i].children) users[egraph.find(child)].emplace_back(c, i);
      if (nodes[i].children.empty()) queue.emplace(costs.cost(c, i), c, i);
    }
  }
  int32_t order = 0;
  while (!queue.empty()) {
    const auto [value, c, i] = queue.top();
    queue.pop();
    if (out.settled[c] >= 0) continue;
    out.settled[c] = order++;
    out.tree_cost[c] = value;
    out.selection.choice[c] = static_cast<int32_t>(i);
    for (const auto& [pc, pi] : users[c]) {
      if (--waiting[pc][pi] != 0 || out.settled[pc] >= 0) continue;
      double total = costs.cost(pc, pi);
      for (ClassId child : egraph.eclass(pc).nodes[pi].children) total += out.tree_cost[egraph.find(child)];
      queue.emplace(total, pc, pi);
    }
  }
  return out;
}

Selection share_tuples(const EGraph& egraph, const NodeCosts& costs, const std::vector<ClassId>& roots,
                       const Extraction& greedy, Selection selection,
                       std::optional<std::chrono::steady_clock::time_point> deadline) {
  // A way for a class to read a tuple: its projection e-node (class c,
  // e-node `node`), or an e-node of c with a projection class among its
  // children (`projection_class`, which then takes its projection e-node
  // `projection_node`): relu(split(m).0), where a merge rule's output is an
  // operator applied to a projection (conv + bias merged, relu on one part).
  struct Reader {
    ClassId c;
    int32_t node;
    ClassId projection_class = kNoClass;
    int32_t projection_node = -1;
  };
  std::map<ClassId, std::vector<Reader>> readers;  // by tuple class
  std::unordered_map<ClassId, std::vector<std::pair<ClassId, int32_t>>> projections_in;  // class -> (tuple, node)
  for (ClassId c : egraph.class_ids()) {
    const auto& nodes = egraph.eclass(c).nodes;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].kind == NodeKind::kProject && costs.allowed(c, i)) {
        const ClassId tuple = egraph.find(nodes[i].children[0]);
        readers[tuple].push_back({c, static_cast<int32_t>(i)});
        projections_in[c].emplace_back(tuple, static_cast<int32_t>(i));
      }
  }
  for (ClassId c : egraph.class_ids()) {
    const auto& nodes = egraph.eclass(c).nodes;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].kind == NodeKind::kProject || !costs.allowed(c, i)) continue;
      for (ClassId child : nodes[i].children) {
        const auto p = projections_in.find(egraph.find(child));
        if (p == projections_in.end() || p->first == c) continue;
        for (const auto& [tuple, node] : p->second)
          readers[tuple].push_back({c, static_cast<int32_t>(i), p->first, node});
      }
    }
  }
  double best = selection_cost(egraph, costs, selection, roots);
  for (bool improved = true; improved;) {
    improved = false;
    if (deadline && std::chrono::steady_clock::now() > *deadline) break;
    std::vector<char> used(selection.choice.size(), 0);
    walk_selection(egraph, selection, roots, [&](ClassId c, const ENode&) { used[c] = 1; });
    for (const auto& [tuple, tuple_readers] : readers) {
      if (greedy.settled[tuple] < 0) continue;
      int users = 0, switches = 0;
      Selection trial = selection;
      std::vector<ClassId> stack{tuple};
      std::vector<char> forced(selection.choice.size(), 0);  // the switched classes' choices stay
      for (const Reader& r : tuple_readers) {
        if (!used[r.c]) continue;
        ++users;
        if (trial.choice[r.c] != r.node) ++switches;
        trial.choice[r.c] = r.node;
        forced[r.c] = 1;
        if (r.projection_class != kNoClass) {
          trial.choice[r.projection_class] = r.projection_node;
          forced[r.projection_class] = 1;
        }
        for (ClassId child : egraph.eclass(r.c).nodes[static_cast<size_t>(r.node)].children)
          stack.push_back(egraph.find(child));
      }
      if (users < 2 || switches == 0) continue;
      // The tuple and what the switched e-nodes need keep their current
      // choices where they have one, the greedy pass's elsewhere.
      std::vector<char> seen(selection.choice.size(), 0);
      while (!stack.empty()) {
        const ClassId c = stack.back();
        stack.pop_back();
        if (seen[c]) continue;
        seen[c] = 1;
        if (!forced[c] && (!used[c] || trial.choice[c] < 0)) trial.choice[c] = greedy.selection.choice[c];
        if (trial.choice[c] < 0) break;
        for (ClassId child : egraph.eclass(c).nodes[static_cast<size_t>(trial.choice[c])].children)
          stack.push_back(egraph.find(child));
      }
      double cost = kInfinity;
      try {
        cost = selection_cost(egraph, costs, trial, roots);
      } catch (const std::logic_error&) {
        continue;  // the switch closes a cycle, or leaves a class without a choice
      }
      if (cost < best - 1e-9) {
        best = cost;
        selection = std::move(trial);
        improved = true;
        break;  // the used classes changed: start over
      }
    }
  }
  return selection;
}

double selection_cost(const EGraph& egraph, const NodeCosts& costs, const Selection& selection,
                      const std::vector<ClassId>& roots) {
  double total = 0;
  walk_selection(egraph, selection, roots,
                 [&](ClassId c, const ENode&) { total += costs.cost(c, static_cast<size_t>(selection.choice[c])); });
  return total;
}

std::string ilp_status_name(IlpStatus status) {
  switch (status) {
    case IlpStatus::kOptimal:
      return "optimal";
    case IlpStatus::kTimeLimit:
      return "time_limit";
    case IlpStatus::kSkipped:
      return "skipped";
  }
  return "unknown";
}

Extraction greedy_dag_extract(const EGraph& egraph, const NodeCosts& costs) {
  const std::vector<ClassId> ids = egraph.class_ids();
  const size_t n_classes = ids.empty() ? 0 : ids.back() + 1;
  const size_t words = (n_classes + 63) / 64;
  using Bits = std::vector<uint64_t>;
  Extraction out;
  out.selection.choice.assign(n_classes, -1);
  out.tree_cost.assign(n_classes, kInfinity);
  out.settled.assign(n_classes, -1);
  std::vector<Bits> below(n_classes);          // settled classes: the classes of their DAG, themselves included
  std::vector<double> own_cost(n_classes, 0);  // settled classes: their e-node's cost
  struct Pending {
    double value = kInfinity;
    uint32_t node = 0;
    Bits classes;
  };
  std::vector<Pending> best(n_classes);  // the best candidate of each unsettled class so far
  std::vector<std::vector<std::pair<ClassId, uint32_t>>> users(n_classes);
  std::vector<std::vector<uint32_t>> waiting(n_classes);
  using Entry = std::tuple<double, ClassId, uint32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  // A node whose children are all settled: its DAG and cost, queued if best so far.
  auto offer = [&](ClassId c, uint32_t i) {
    Bits set(words, 0);
    for (ClassId child : egraph.eclass(c).nodes[i].children) {
      const Bits& b = below[egraph.find(child)];
      for (size_t w = 0; w < words; ++w) set[w] |= b[w];
    }
    double value = costs.cost(c, i);
    for (size_t w = 0; w < words; ++w)
      for (uint64_t bits = set[w]; bits; bits &= bits - 1)
        value += own_cost[w * 64 + static_cast<size_t>(__builtin_ctzll(bits))];
    if (value >= best[c].value) return;
    best[c] = {value, i, std::move(set)};
    queue.emplace(value, c, i);
  };
  for (ClassId c : ids) {
    const auto& nodes = egraph.eclass(c).nodes;
    waiting[c].assign(nodes.size(), 0);
    for (uint32_t i = 0; i < nodes.size(); ++i) {
      if (!costs.allowed(c, i)) continue;
      waiting[c][i] = static_cast<uint32_t>(nodes[i].children.size());
      for (ClassId child : nodes[i].children) users[egraph.find(child)].emplace_back(c, i);
      if (nodes[i].children.empty()) offer(c, i);
    }
  }
  int32_t order = 0;
  while (!queue.empty()) {
    const auto [value, c, i] = queue.top();
    queue.pop();
    if (out.settled[c] >= 0 || best[c].node != i || best[c].value != value) continue;
    out.settled[c] = order++;
    out.tree_cost[c] = value;
    out.selection.choice[c] = static_cast<int32_t>(i);
    own_cost[c] = costs.cost(c, i);
    below[c] = std::move(best[c].classes);
    below[c][c / 64] |= uint64_t{1} << (c % 64);
    best[c].classes = Bits();
    for (const auto& [pc, pi] : users[c])
      if (--waiting[pc][pi] == 0 && out.settled[pc] < 0) offer(pc, pi);
  }
  return out;
}

namespace {

// The extraction ILP of one e-graph (ilp_extract): its columns (an x per
// candidate e-node, a t per class that needs an order), its rows, the
// solver loaded with them, and the incumbent the solve steps improve. Each
// step below is one part of the contract stated in extract.h.
class IlpExtraction {
 public:
  IlpExtraction(const EGraph& egraph, const NodeCosts& costs, const std::vector<ClassId>& roots,
                const Extraction& greedy, const Selection& warm_start, const IlpOptions& options)
      : egraph_(egraph),
        costs_(costs),
        roots_(roots),
        greedy_(greedy),
        warm_start_(warm_start),
        options_(options),
        n_classes_(greedy.selection.choice.size()),
        acyclic_(egraph.acyclic()) {}

  IlpResult solve();

 private:
  struct Option {  // a candidate e-node of one class
    uint32_t node;
    double cost;
    std::vector<ClassId> children;  // non-free, sorted, unique
  };

  bool finite(ClassId c) const { return greedy_.settled[c] >= 0; }
  // In an acyclic e-graph a class the greedy pass derives at no cost
  // (inputs, weights and what is computed from weights only) needs no
  // variable: its greedy derivation is free and cannot close a cycle.
  bool is_free(ClassId c) const { return acyclic_ && finite(c) && greedy_.tree_cost[c] == 0; }
  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  void number_class(ClassId c);
  void add_roots();
  std::vector<Option> class_options(ClassId c) const;
  void choose_columns();
  std::vector<size_t> candidate_children(int column) const;
  void order_cycles();
  double big_of(size_t k) const {
    return options_.order_constraints ? static_cast<double>(classes_.size())
                                      : static_cast<double>(component_size_[component_[k]]);
  }
  void add_row(const CoinPackedVector& row, double lb, double ub);
  void add_mandatory_rows();
  void add_child_rows();
  void load_solver();
  std::vector<double> solution_of(const Selection& selection) const;
  Selection selection_of(const double* x) const;
  void offer(Selection selection, const char* found_by);
  bool run_cbc(const std::vector<double>* column_upper, double seconds, double* bound);
  std::vector<double> solve_lp_relaxation();

  const EGraph& egraph_;
  const NodeCosts& costs_;
  const std::vector<ClassId>& roots_;
  const Extraction& greedy_;
  const Selection& warm_start_;
  const IlpOptions& options_;
  const size_t n_classes_;
  const bool acyclic_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  IlpResult result_;

  // Candidate classes (reachable from the roots through candidate e-nodes), numbered.
  std::vector<int32_t> class_index_ = std::vector<int32_t>(n_classes_, -1);
  std::vector<ClassId> classes_;
  std::vector<std::pair<ClassId, uint32_t>> columns_;  // x: (class, e-node)
  std::vector<std::vector<int>> class_columns_;        // per candidate class
  // Cycle ordering: component per class, its size, a t column where needed.
  std::vector<size_t> component_, component_size_;
  std::vector<int> order_column_;
  int n_x_ = 0, n_cols_ = 0;
  std::vector<double> col_lb_, col_ub_, objective_;
  // The constraint matrix as triplets, packed once at the end: appending
  // rows to a CoinPackedMatrix one at a time reallocates it each time
  // (quadratic: seconds on a large e-graph).
  std::vector<int> entry_row_, entry_column_;
  std::vector<double> entry_value_, row_lb_, row_ub_;
  OsiClpSolverInterface solver_;
  Selection incumbent_;
  double incumbent_cost_ = 0;
};

void IlpExtraction::number_class(ClassId c) {
  if (class_index_[c] >= 0) return;
  class_index_[c] = static_cast<int32_t>(classes_.size());
  classes_.push_back(c);
}

void IlpExtraction::add_roots() {
  for (ClassId r : roots_) {
    r = egraph_.find(r);
    if (!finite(r)) throw std::logic_error("extraction: root " + egraph_.describe(r) + " has no acyclic choice");
    if (!is_free(r)) number_class(r);
  }
}

// The candidate e-nodes of class c: allowed, every child settled by the
// greedy pass (else no acyclic choice can use it), not dearer alone than
// the class's whole greedy tree (swapping it for that tree costs less, in
// an acyclic e-graph, where the swap cannot close a cycle); the warm
// start's choice always.
std::vector<IlpExtraction::Option> IlpExtraction::class_options(ClassId c) const {
  const auto& nodes = egraph_.eclass(c).nodes;
  std::vector<Option> options;
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    if (!costs_.allowed(c, i)) continue;
    Option o{i, costs_.cost(c, i), {}};
    bool ok = true;
    for (ClassId child : nodes[i].children) {
      const ClassId d = egraph_.find(child);
      if (!finite(d)) ok = false;
      if (!is_free(d)) o.children.push_back(d);
    }
    if (!ok) continue;
    if (acyclic_ && o.cost > greedy_.tree_cost[c] * (1 + 1e-12) && static_cast<int32_t>(i) != warm_start_.choice[c])
      continue;
    std::sort(o.children.begin(), o.children.end());
    o.children.erase(std::unique(o.children.begin(), o.children.end()), o.children.end());
    options.push_back(std::move(o));
  }
  return options;
}

// Columns: x per candidate e-node, in class order, without the dominated
// ones: an e-node costing at least another's of its class whose (non-free)
// children include all of the other's is never needed (the greedy choice
// is kept, for the warm start). The children of kept e-nodes are numbered
// as candidate classes in turn.
void IlpExtraction::choose_columns() {
  auto dominates = [](const Option& a, const Option& b) {  // a makes b unnecessary
    return a.cost <= b.cost &&
           std::includes(b.children.begin(), b.children.end(), a.children.begin(), a.children.end());
  };
  for (size_t k = 0; k < classes_.size(); ++k) {
    const ClassId c = classes_[k];
    const std::vector<Option> options = class_options(c);
    class_columns_.emplace_back();
    for (size_t a = 0; a < options.size(); ++a) {
      const Option& o = options[a];
      bool dominated = false;
      if (static_cast<int32_t>(o.node) != warm_start_.choice[c])
        for (size_t b = 0; b < options.size() && !dominated; ++b) {
          if (b == a || !dominates(options[b], o)) continue;
          dominated = !dominates(o, options[b]) || b < a;  // equal options: keep the first
        }
      if (dominated) continue;
      class_columns_[k].push_back(static_cast<int>(columns_.size()));
      columns_.emplace_back(c, o.node);
      for (ClassId d : o.children) number_class(d);
    }
  }
}

// The candidate classes column `column`'s e-node reads, by index, sorted and unique.
std::vector<size_t> IlpExtraction::candidate_children(int column) const {
  std::vector<size_t> out;
  for (ClassId child : egraph_.eclass(columns_[column].first).nodes[columns_[column].second].children)
    if (class_index_[egraph_.find(child)] >= 0) out.push_back(static_cast<size_t>(class_index_[egraph_.find(child)]));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Cycles: the strongly connected components of the candidate classes
// (each class's children being those of all its candidate e-nodes). Only
// classes of a component with several classes need an order (a t column),
// and only the edges inside it an order constraint; the big constant is
// the component's size, which keeps the relaxation tight where cycles are few.
void IlpExtraction::order_cycles() {
  std::vector<std::vector<size_t>> class_children(classes_.size());
  for (size_t k = 0; k < classes_.size(); ++k) {
    auto& out = class_children[k];
    for (int col : class_columns_[k]) {
      const std::vector<size_t> reads = candidate_children(col);
      out.insert(out.end(), reads.begin(), reads.end());
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
  component_ = strongly_connected_components(class_children);
  component_size_.assign(classes_.size(), 0);
  for (size_t k = 0; k < classes_.size(); ++k) ++component_size_[component_[k]];
  n_x_ = static_cast<int>(columns_.size());
  n_cols_ = n_x_;
  order_column_.assign(classes_.size(), -1);
  for (size_t k = 0; k < classes_.size(); ++k)
    if (component_size_[component_[k]] > 1 || options_.order_constraints) order_column_[k] = n_cols_++;
  result_.ordered_classes = static_cast<size_t>(n_cols_ - n_x_);
  col_lb_.assign(n_cols_, 0.0);
  col_ub_.assign(n_cols_, 1.0);
  objective_.assign(n_cols_, 0.0);
  for (int j = 0; j < n_x_; ++j) objective_[j] = costs_.cost(columns_[j].first, columns_[j].second);
  for (size_t k = 0; k < classes_.size(); ++k)
    if (order_column_[k] >= 0) col_ub_[order_column_[k]] = big_of(k) - 1;
}

void IlpExtraction::add_row(const CoinPackedVector& row, double lb, double ub) {
  const int r = static_cast<int>(row_lb_.size());
  for (int i = 0; i < row.getNumElements(); ++i) {
    entry_row_.push_back(r);
    entry_column_.push_back(row.getIndices()[i]);
    entry_value_.push_back(row.getElements()[i]);
  }
  row_lb_.push_back(lb);
  row_ub_.push_back(ub);
}

// Classes every solution uses: the roots, and the classes that every
// candidate e-node of a used class reads. Requiring them outright (sum >= 1
// rather than >= the reader's x) keeps the relaxation from splitting a
// class's choice among alternatives to thin out what they read.
void IlpExtraction::add_mandatory_rows() {
  std::vector<char> is_mandatory(classes_.size(), 0);
  std::vector<size_t> mandatory;
  for (ClassId r : roots_) {
    const int32_t k = class_index_[egraph_.find(r)];
    if (k >= 0 && !is_mandatory[k]) {
      is_mandatory[k] = 1;
      mandatory.push_back(static_cast<size_t>(k));
    }
  }
  for (size_t m = 0; m < mandatory.size(); ++m) {
    const size_t k = mandatory[m];
    std::vector<size_t> common;
    bool first = true;
    for (int col : class_columns_[k]) {
      std::vector<size_t> reads = candidate_children(col);
      if (first) {
        common = std::move(reads);
        first = false;
      } else {
        std::vector<size_t> both;
        std::set_intersection(common.begin(), common.end(), reads.begin(), reads.end(), std::back_inserter(both));
        common = std::move(both);
      }
    }
    for (size_t d : common)
      if (!is_mandatory[d]) {
        is_mandatory[d] = 1;
        mandatory.push_back(d);
      }
  }
  result_.mandatory_classes = mandatory.size();
  for (size_t k = 0; k < classes_.size(); ++k) {
    if (!is_mandatory[k]) continue;
    CoinPackedVector row;
    for (int col : class_columns_[k]) row.insert(col, 1.0);
    add_row(row, 1.0, COIN_DBL_MAX);
  }
}

// Per chosen e-node and class it reads: x_j <= the sum of x over that
// class; on a cycle, t_c - t_d - big x_j >= 1 - big. An e-node that reads
// its own class is never in an acyclic choice (x_j = 0).
void IlpExtraction::add_child_rows() {
  for (int j = 0; j < n_x_; ++j) {
    const auto [c, i] = columns_[j];
    const auto kc = static_cast<size_t>(class_index_[c]);
    std::vector<ClassId> children;
    for (ClassId child : egraph_.eclass(c).nodes[i].children)
      if (class_index_[egraph_.find(child)] >= 0 || egraph_.find(child) == c) children.push_back(egraph_.find(child));
    std::sort(children.begin(), children.end());
    children.erase(std::unique(children.begin(), children.end()), children.end());
    for (ClassId d : children) {
      if (d == c) {
        col_ub_[j] = 0;
        continue;
      }
      const auto kd = static_cast<size_t>(class_index_[d]);
      CoinPackedVector row;
      for (int col : class_columns_[kd]) row.insert(col, 1.0);
      row.insert(j, -1.0);
      add_row(row, 0.0, COIN_DBL_MAX);
      if (order_column_[kc] >= 0 && order_column_[kd] >= 0 &&
          (component_[kc] == component_[kd] || options_.order_constraints)) {
        const double big = big_of(kc);
        CoinPackedVector ord;
        ord.insert(order_column_[kc], 1.0);
        ord.insert(order_column_[kd], -1.0);
        ord.insert(j, -big);
        add_row(ord, 1.0 - big, COIN_DBL_MAX);
      }
    }
  }
  result_.variables = static_cast<size_t>(n_cols_);
  result_.constraints = row_lb_.size();
}

void IlpExtraction::load_solver() {
  CoinPackedMatrix matrix(false, entry_row_.data(), entry_column_.data(), entry_value_.data(),
                          static_cast<CoinBigIndex>(entry_value_.size()));
  matrix.setDimensions(static_cast<int>(row_lb_.size()), n_cols_);
  solver_.loadProblem(matrix, col_lb_.data(), col_ub_.data(), objective_.data(), row_lb_.data(), row_ub_.data());
  for (int j = 0; j < n_x_; ++j) solver_.setInteger(j);
  solver_.messageHandler()->setLogLevel(0);
  // The root LP by the dual simplex: Clp's default initial solve (the
  // "idiot" crash, then crossover) crashes inside Clp's presolve on some of
  // these problems (coinor-libclp 1.17.6; docs/benchmarks.md,
  // "Measurements behind code comments").
  ClpSolve root;
  root.setSolveType(ClpSolve::useDual);
  solver_.setSolveOptions(root);
  for (int j = 0; j < n_cols_; ++j) {  // names: how CBC takes a start
    std::string name = j < n_x_ ? "x" : "t";
    name += std::to_string(j);
    solver_.setColName(j, name);
  }
}

// A selection as a solution vector (x of its choices, orders children first).
std::vector<double> IlpExtraction::solution_of(const Selection& selection) const {
  std::vector<double> sol(n_cols_, 0.0);
  std::vector<int32_t> use_order(n_classes_, -1);
  int32_t next = 0;
  walk_selection(egraph_, selection, roots_, [&](ClassId c, const ENode&) { use_order[c] = next++; });
  std::vector<std::pair<int32_t, size_t>> by_use;
  for (size_t k = 0; k < classes_.size(); ++k) {
    const ClassId c = classes_[k];
    by_use.emplace_back(use_order[c] >= 0 ? use_order[c] : INT32_MAX, k);
    if (use_order[c] < 0) continue;
    for (int col : class_columns_[k])
      if (columns_[col].second == static_cast<uint32_t>(selection.choice[c])) sol[col] = 1.0;
  }
  std::stable_sort(by_use.begin(), by_use.end());
  std::vector<double> next_rank(classes_.size(), 0.0);
  for (const auto& [used, k] : by_use) {
    if (order_column_[k] < 0) continue;
    const size_t group = options_.order_constraints ? 0 : component_[k];
    sol[order_column_[k]] = next_rank[group]++;
  }
  return sol;
}

// A solution vector as a selection: per class, its cheapest chosen e-node
// (with the order constraints any chosen one is acyclic; without them the
// candidates are); free classes keep the warm start's zero-cost derivation.
Selection IlpExtraction::selection_of(const double* x) const {
  Selection sel = warm_start_;
  for (size_t k = 0; k < classes_.size(); ++k) {
    double cheapest = kInfinity;
    for (int col : class_columns_[k]) {
      if (x[col] < 0.5 || objective_[col] >= cheapest) continue;
      cheapest = objective_[col];
      sel.choice[classes_[k]] = static_cast<int32_t>(columns_[col].second);
    }
  }
  return sel;
}

void IlpExtraction::offer(Selection selection, const char* found_by) {
  const double c = selection_cost(egraph_, costs_, selection, roots_);
  if (!(c < incumbent_cost_ - 1e-9)) return;
  incumbent_ = std::move(selection);
  incumbent_cost_ = c;
  result_.found_by = found_by;
}

// CBC's full solver (preprocessing, cuts, heuristics; on these problems its
// cuts close at the root what plain branch-and-bound does not close in
// minutes), from the incumbent, for `seconds`, over the columns
// `column_upper` leaves open. Returns whether it proved optimality.
bool IlpExtraction::run_cbc(const std::vector<double>* column_upper, double seconds, double* bound) {
  OsiClpSolverInterface restricted(solver_);
  if (column_upper)
    for (int j = 0; j < n_x_; ++j) restricted.setColUpper(j, (*column_upper)[j]);
  CbcModel model(restricted);
  CbcSolverUsefulData solver_data;
  CbcMain0(model, solver_data);
  const std::vector<double> start_solution = solution_of(incumbent_);
  std::vector<std::pair<std::string, double>> mip_start;
  for (int j = 0; j < n_cols_; ++j) mip_start.emplace_back(restricted.getColName(j), start_solution[j]);
  model.setMIPStart(mip_start);
  model.setLogLevel(0);
  const std::string limit = std::to_string(std::max(0.05, seconds));
  // Without CBC's preprocessing: stopped by the time limit, its
  // postprocessing crashed now and then (CglPreProcess::postProcess, a null
  // solution). Without zero-half cuts: CglZeroHalf's separation does not
  // look at the clock and ran far past the limit (docs/benchmarks.md).
  const char* args[] = {"tgr", "-log",          "0",   "-seconds", limit.c_str(), "-timeMode", "elapsed", "-preprocess",
                        "off", "-zeroHalfCuts", "off", "-solve",   "-quit"};
  CbcMain1(
      static_cast<int>(std::size(args)), args, model, [](CbcModel*, int) { return 0; }, solver_data);
  if (const double* x = model.bestSolution()) offer(selection_of(x), "cbc");
  if (bound) *bound = model.isProvenOptimal() ? model.getObjValue() : model.getBestPossibleObjValue();
  return model.isProvenOptimal();
}

// The LP relaxation: its optimum bounds the gap, and rounding it (greedy
// extraction with the e-nodes it takes made free) finds the sharing it
// sees. Half the time limit at most (stopped early, it gives no bound and
// no rounding). Returns its solution's x (empty when not solved): the
// support CBC searches first on a large problem.
std::vector<double> IlpExtraction::solve_lp_relaxation() {
  OsiClpSolverInterface lp(solver_);
  lp.messageHandler()->setLogLevel(0);
  lp.getModelPtr()->setMaximumSeconds(std::max(0.05, options_.time_limit_s / 2));
  lp.initialSolve();
  if (!lp.isProvenOptimal()) return {};
  result_.lp_bound = lp.getObjValue();
  const double* x = lp.getColSolution();
  for (double threshold : {0.5, 0.9, 0.1, 0.01}) {
    NodeCosts biased = costs_;
    for (int j = 0; j < n_x_; ++j)
      if (x[j] >= threshold) biased.set_cost(columns_[j].first, columns_[j].second, 0.0);
    offer(greedy_extract(egraph_, biased).selection, "lp_rounding");
  }
  return std::vector<double>(x, x + n_x_);
}

IlpResult IlpExtraction::solve() {
  add_roots();
  choose_columns();
  if (columns_.size() > options_.max_candidates) {
    result_.seconds = elapsed();
    return result_;  // kSkipped
  }
  order_cycles();
  add_mandatory_rows();
  add_child_rows();
  load_solver();
  incumbent_ = warm_start_;
  incumbent_cost_ = selection_cost(egraph_, costs_, warm_start_, roots_);
  result_.found_by = "warm_start";

  // On a large problem CBC searches the LP's support (the e-nodes it takes
  // at all, and the incumbent's) before the whole: a small problem it
  // solves fast, whose solution is a good start. CBC gets what is left of
  // the time limit, if anything is, and only if the LP relaxation was
  // solved: CBC solves that LP first, without looking at its clock.
  constexpr double kMinCbcSeconds = 0.05;
  std::vector<double> support = solve_lp_relaxation();
  const bool lp_solved = !support.empty();
  if (lp_solved && static_cast<size_t>(n_x_) > options_.restrict_above &&
      options_.time_limit_s - elapsed() > 2 * kMinCbcSeconds) {
    const std::vector<double> start_solution = solution_of(incumbent_);
    for (int j = 0; j < n_x_; ++j) support[j] = support[j] > 1e-6 || start_solution[j] > 0.5 ? col_ub_[j] : 0.0;
    run_cbc(&support, (options_.time_limit_s - elapsed()) / 2, nullptr);
    if (result_.found_by == std::string("cbc")) result_.found_by = "cbc_on_lp_support";
  }
  double bound = 0;
  const bool optimal = lp_solved && options_.time_limit_s - elapsed() > kMinCbcSeconds &&
                       run_cbc(nullptr, options_.time_limit_s - elapsed(), &bound);

  result_.selection = std::move(incumbent_);
  result_.objective = incumbent_cost_;
  result_.status = optimal ? IlpStatus::kOptimal : IlpStatus::kTimeLimit;
  result_.bound = optimal ? result_.objective : std::min(std::max(bound, result_.lp_bound), result_.objective);
  result_.gap = result_.objective > 0 ? (result_.objective - result_.bound) / result_.objective : 0.0;
  result_.seconds = elapsed();
  return result_;
}

}  // namespace

IlpResult ilp_extract(const EGraph& egraph, const NodeCosts& costs, const std::vector<ClassId>& roots,
                      const Extraction& greedy, const Selection& warm_start, const IlpOptions& options) {
  return IlpExtraction(egraph, costs, roots, greedy, warm_start, options).solve();
}

Graph selection_graph(const EGraph& egraph, const Selection& selection, const std::vector<ClassId>& roots,
                      const std::vector<std::string>& output_names) {
  Graph g;
  std::vector<std::vector<ValueRef>> values(selection.choice.size());
  for (uint32_t leaf : egraph.input_leaves()) {
    const Node& in = egraph.leaf(leaf);
    const ValueRef v = g.add_input(in.name, in.output_shapes[0], in.output_dtypes[0]);
    const ClassId c = egraph.lookup(ENode{NodeKind::kInput, leaf, {}, 0});
    if (c != kNoClass && c < values.size()) values[c] = {v};
  }
  walk_selection(egraph, selection, roots, [&](ClassId c, const ENode& n) {
    switch (n.kind) {
      case NodeKind::kInput:
        if (values[c].empty())
          throw std::logic_error("extraction: input " + egraph.leaf(n.head).name + " not declared");
        break;
      case NodeKind::kConstant:
        values[c] = {g.add_shared_constant(egraph.leaf(n.head))};
        break;
      case NodeKind::kProject:
        values[c] = {values[egraph.find(n.children[0])].at(n.head)};
        break;
      case NodeKind::kOp: {
        std::vector<ValueRef> operands;
        for (ClassId child : n.children) operands.push_back(values[egraph.find(child)].at(0));
        const OpInstance& oi = egraph.op_instance(n.head);
        const NodeLabel& label = egraph.label(n.label);
        values[c] = g.find_or_add_op(*oi.op, oi.params, std::move(operands), label.name, label.value_names);
        break;
      }
    }
  });
  for (size_t k = 0; k < roots.size(); ++k) g.add_output(values[egraph.find(roots[k])].at(0), output_names.at(k));
  return g;
}

std::vector<uint32_t> selection_origins(const EGraph& egraph, const Selection& selection,
                                        const std::vector<ClassId>& roots) {
  std::vector<uint32_t> origins;
  walk_selection(egraph, selection, roots, [&](ClassId, const ENode& n) {
    if (n.origin > 0) origins.push_back(n.origin);
  });
  std::sort(origins.begin(), origins.end());
  origins.erase(std::unique(origins.begin(), origins.end()), origins.end());
  return origins;
}

Extraction GreedyExtractor::extract(const ExtractionProblem& problem) {
  return greedy_extract(problem.egraph, problem.costs);
}

Extraction GreedyDagExtractor::extract(const ExtractionProblem& problem) {
  return greedy_dag_extract(problem.egraph, problem.costs);
}

Extraction SharedTuplesExtractor::extract(const ExtractionProblem& problem) {
  return {share_tuples(problem.egraph, problem.costs, problem.roots, greedy_, start_, deadline_), {}, {}};
}

Extraction IlpExtractor::extract(const ExtractionProblem& problem) {
  report_ = ilp_extract(problem.egraph, problem.costs, problem.roots, greedy_, warm_start_, options_);
  return {report_.selection, {}, {}};
}

}  // namespace tgr::saturation
