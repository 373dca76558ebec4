#include "saturation/refine.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

namespace tgr::saturation {

using Clock = std::chrono::steady_clock;

Selection input_selection(const EGraph& egraph, const NodeCosts& allowed) {
  const std::vector<ClassId> ids = egraph.class_ids();
  Selection out;
  out.choice.assign(ids.empty() ? 0 : ids.back() + 1, -1);
  for (ClassId c : ids) {
    const auto& nodes = egraph.eclass(c).nodes;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].origin == 0 && allowed.allowed(c, i)) {
        out.choice[c] = static_cast<int32_t>(i);
        break;
      }
  }
  return out;
}

RefineStats& RefineStats::operator+=(const RefineStats& other) {
  screened += other.screened;
  tries += other.tries;
  switches += other.switches;
  complete = complete && other.complete;
  seconds += other.seconds;
  return *this;
}

namespace {

// A cost lower than `than` by more than rounding.
bool cheaper(double cost, double than) { return cost < than - 1e-9 * std::max(1.0, std::abs(than)); }

// One refinement (refine_by_graph_cost): the selection it improves, its
// cost, and the passes of moves that improve it.
class Refinement {
 public:
  Refinement(const EGraph& egraph, const NodeCosts& prices, Selection selection, const Extraction& fill,
             const std::vector<ClassId>& roots, const std::vector<std::string>& output_names,
             optimizer::CostModel& model, const RefineOptions& options, RefineStats& stats);
  // Passes until one keeps nothing; false when the deadline came first.
  bool run();
  const Selection& selection() const { return selection_; }

 private:
  // A switch of one class to another of its e-nodes, or of every class an
  // application's e-nodes are in; `estimate`: its gain by the prices.
  struct Move {
    double estimate;
    std::vector<std::pair<ClassId, int32_t>> switches;
  };
  double cost_of(const Selection& trial) const {
    return model_.graph_cost(selection_graph(egraph_, trial, roots_, output_names_));
  }
  double tree_price(ClassId c, size_t i) const;
  double gain_estimate(ClassId c, int32_t node) const {
    return tree_price(c, static_cast<size_t>(node)) - tree_price(c, static_cast<size_t>(selection_.choice[c]));
  }
  Selection with(const SelectionWindows::Switches& switches) const {
    Selection trial = selection_;
    for (const auto& [c, node] : switches) trial.choice[c] = node;
    return trial;
  }
  void each(size_t count, const std::function<void(size_t)>& body) const;
  std::vector<Move> moves() const;
  std::vector<size_t> screen(const std::vector<SelectionWindows::Switches>& trials);
  std::optional<size_t> first_cheaper(const std::vector<SelectionWindows::Switches>& trials,
                                      const std::vector<size_t>& whole);
  enum class Pass { kKeptNothing, kKept, kDeadline };
  Pass pass();

  const EGraph& egraph_;
  const NodeCosts& prices_;
  Selection selection_;
  const Extraction& fill_;
  const std::vector<ClassId>& roots_;
  const std::vector<std::string>& output_names_;
  optimizer::CostModel& model_;
  const RefineOptions& options_;
  RefineStats& stats_;
  // The e-nodes each rule application added (ENode::origin), per class: a
  // multi-output rule's outputs must switch together (two sibling
  // convolutions merged into one pay only when both read the merged one),
  // which no switch of one class reaches. Such an application is one move,
  // as the backtracking search applies it.
  std::unordered_map<uint32_t, std::vector<std::pair<ClassId, int32_t>>> by_origin_;
  std::optional<SelectionWindows> windows_;
  double best_ = 0;
};

Refinement::Refinement(const EGraph& egraph, const NodeCosts& prices, Selection selection, const Extraction& fill,
                       const std::vector<ClassId>& roots, const std::vector<std::string>& output_names,
                       optimizer::CostModel& model, const RefineOptions& options, RefineStats& stats)
    : egraph_(egraph),
      prices_(prices),
      selection_(std::move(selection)),
      fill_(fill),
      roots_(roots),
      output_names_(output_names),
      model_(model),
      options_(options),
      stats_(stats) {
  // Classes the selection leaves open take fill's e-node, so a switch can
  // reach classes the selection does not use yet.
  for (size_t c = 0; c < selection_.choice.size() && c < fill.selection.choice.size(); ++c)
    if (selection_.choice[c] < 0) selection_.choice[c] = fill.selection.choice[c];
  for (ClassId c : egraph.class_ids()) {
    const auto& nodes = egraph.eclass(c).nodes;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].origin != 0 && prices.allowed(c, i))
        by_origin_[nodes[i].origin].emplace_back(c, static_cast<int32_t>(i));
  }
  best_ = cost_of(selection_);
  ++stats_.tries;
  if (options.window_radius > 0) {
    windows_.emplace(egraph, roots, model, options.window_radius);
    windows_->reset(selection_);
  }
}

// An e-node's price with its children's trees as fill prices them.
double Refinement::tree_price(ClassId c, size_t i) const {
  double total = prices_.cost(c, i);
  for (ClassId child : egraph_.eclass(c).nodes[i].children) total += fill_.tree_cost.at(egraph_.find(child));
  return total;
}

void Refinement::each(size_t count, const std::function<void(size_t)>& body) const {
  if (options_.parallel && count > 1) tbb::parallel_for(size_t{0}, count, body);
  else
    for (size_t i = 0; i < count; ++i) body(i);
}

// The moves of a pass. The applications come first (GoogLeNet's merges
// from the model's e-nodes, which the prices rank behind hundreds of single
// switches), each kind most promising by the prices first. An e-node that
// is the chosen one with its operands reordered is skipped (the same graph).
std::vector<Refinement::Move> Refinement::moves() const {
  std::vector<Move> moves;
  // The classes the selection uses, parents before children (a parent's
  // switch changes what its children must be); the selection is complete
  // and acyclic, since it was costed.
  std::vector<ClassId> used;
  walk_selection(egraph_, selection_, roots_, [&](ClassId c, const ENode&) { used.push_back(c); });
  std::reverse(used.begin(), used.end());
  std::vector<char> is_used(selection_.choice.size(), 0);
  for (ClassId c : used) is_used[c] = 1;
  for (ClassId c : used) {
    const auto& nodes = egraph_.eclass(c).nodes;
    const int32_t current = selection_.choice[c];
    if (current < 0) continue;
    const ENode& now = nodes[static_cast<size_t>(current)];
    std::vector<ClassId> now_children = now.children;
    std::sort(now_children.begin(), now_children.end());
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (static_cast<int32_t>(i) == current || !prices_.allowed(c, i)) continue;
      if (nodes[i].kind == now.kind && nodes[i].head == now.head) {
        std::vector<ClassId> children = nodes[i].children;
        std::sort(children.begin(), children.end());
        if (children == now_children) continue;
      }
      moves.push_back({gain_estimate(c, static_cast<int32_t>(i)), {{c, static_cast<int32_t>(i)}}});
    }
  }
  for (const auto& [origin, added] : by_origin_) {
    Move move{0, {}};
    size_t used_switched = 0;
    for (const auto& [c, node] : added) {
      if (selection_.choice[c] == node) continue;
      if (is_used[c] && selection_.choice[c] >= 0) {
        ++used_switched;
        move.estimate += gain_estimate(c, node);
      }
      move.switches.emplace_back(c, node);
    }
    if (used_switched >= 2) moves.push_back(std::move(move));
  }
  std::stable_sort(moves.begin(), moves.end(), [](const Move& a, const Move& b) {
    const bool a_applies = a.switches.size() > 1, b_applies = b.switches.size() > 1;
    if (a_applies != b_applies) return a_applies;
    return a.estimate < b.estimate;
  });
  return moves;
}

// The trials to cost whole: those their windows say are cheaper (screened
// in parallel), or all of them without windows.
std::vector<size_t> Refinement::screen(const std::vector<SelectionWindows::Switches>& trials) {
  std::vector<size_t> whole;
  if (!windows_) {
    for (size_t i = 0; i < trials.size(); ++i) whole.push_back(i);
    return whole;
  }
  std::vector<double> deltas(trials.size(), 0);
  each(trials.size(), [&](size_t i) {
    try {
      deltas[i] = windows_->delta(trials[i]);
    } catch (const std::logic_error&) {
      deltas[i] = std::numeric_limits<double>::infinity();  // a cycle, or a class with no e-node to take
    }
  });
  stats_.screened += trials.size();
  for (size_t i = 0; i < trials.size(); ++i)
    if (cheaper(deltas[i], 0)) whole.push_back(i);
  return whole;
}

// The trials of `whole` costed whole (in parallel); the first in order
// that is cheaper than the selection is kept and returned.
std::optional<size_t> Refinement::first_cheaper(const std::vector<SelectionWindows::Switches>& trials,
                                                const std::vector<size_t>& whole) {
  std::vector<double> costs(whole.size(), 0);
  each(whole.size(), [&](size_t k) {
    try {
      costs[k] = cost_of(with(trials[whole[k]]));
    } catch (const std::logic_error&) {
      costs[k] = std::numeric_limits<double>::infinity();  // a cycle, or a class with no e-node to take
    }
  });
  stats_.tries += whole.size();
  for (size_t k = 0; k < whole.size(); ++k)
    if (cheaper(costs[k], best_)) {
      best_ = costs[k];
      selection_ = with(trials[whole[k]]);
      if (windows_) windows_->reset(selection_);
      ++stats_.switches;
      return whole[k];
    }
  return std::nullopt;
}

// One pass over the moves, tried in batches: the first in move order that
// is cheaper is kept, and the next batch starts after it (the rest were
// costed against the selection before the switch).
Refinement::Pass Refinement::pass() {
  const std::vector<Move> moves = this->moves();
  const size_t threads = options_.parallel ? static_cast<size_t>(tbb::this_task_arena::max_concurrency()) : 1;
  const size_t batch = (windows_ ? 8 : 2) * threads;
  bool kept = false;
  for (size_t next = 0; next < moves.size();) {
    if (Clock::now() > options_.deadline) return Pass::kDeadline;
    std::vector<SelectionWindows::Switches> trials;  // each move's switches that change the selection
    std::vector<size_t> tried;                       // the move of each trial
    for (; next < moves.size() && trials.size() < batch; ++next) {
      SelectionWindows::Switches switches;
      for (const auto& [c, node] : moves[next].switches)
        if (selection_.choice[c] != node) switches.emplace_back(c, node);
      if (switches.empty()) continue;
      trials.push_back(std::move(switches));
      tried.push_back(next);
    }
    if (const std::optional<size_t> k = first_cheaper(trials, screen(trials))) {
      kept = true;
      next = tried[*k] + 1;
    }
  }
  return kept ? Pass::kKept : Pass::kKeptNothing;
}

bool Refinement::run() {
  for (;;) {
    switch (pass()) {
      case Pass::kKept:
        continue;
      case Pass::kKeptNothing:
        return true;
      case Pass::kDeadline:
        return false;
    }
  }
}

}  // namespace

Selection refine_by_graph_cost(const EGraph& egraph, const NodeCosts& prices, Selection selection,
                               const Extraction& fill, const std::vector<ClassId>& roots,
                               const std::vector<std::string>& output_names, optimizer::CostModel& model,
                               const RefineOptions& options, RefineStats* stats) {
  const auto start = Clock::now();
  RefineStats local;
  RefineStats& s = stats ? *stats : local;
  s = {};
  Refinement refinement(egraph, prices, std::move(selection), fill, roots, output_names, model, options, s);
  s.complete = refinement.run();
  s.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return refinement.selection();
}

}  // namespace tgr::saturation
