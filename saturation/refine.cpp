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

Selection refine_by_graph_cost(const EGraph& egraph, const NodeCosts& prices, Selection selection,
                               const GreedyResult& fill, const std::vector<ClassId>& roots,
                               const std::vector<std::string>& output_names, optimizer::CostModel& model,
                               const RefineOptions& options, RefineStats* stats) {
  const Clock::time_point deadline = options.deadline;
  const bool parallel = options.parallel;
  const auto start = Clock::now();
  RefineStats local;
  RefineStats& s = stats ? *stats : local;
  s = {};
  // Classes the selection leaves open take fill's e-node, so a switch can
  // reach classes the selection does not use yet.
  for (size_t c = 0; c < selection.choice.size() && c < fill.selection.choice.size(); ++c)
    if (selection.choice[c] < 0) selection.choice[c] = fill.selection.choice[c];
  auto cost_of = [&](const Selection& trial) {
    return model.graph_cost(selection_graph(egraph, trial, roots, output_names));
  };
  // An e-node's price with its children's trees as fill prices them.
  auto tree_price = [&](ClassId c, size_t i) {
    double total = prices.cost(c, i);
    for (ClassId child : egraph.eclass(c).nodes[i].children) total += fill.tree_cost.at(egraph.find(child));
    return total;
  };
  // The e-nodes each rule application added (ENode::origin), per class: a
  // multi-output rule's outputs must switch together (two sibling
  // convolutions merged into one pay only when both read the merged one),
  // which no switch of one class reaches. Such an application is one move,
  // as the backtracking search applies it.
  std::unordered_map<uint32_t, std::vector<std::pair<ClassId, int32_t>>> by_origin;
  for (ClassId c : egraph.class_ids()) {
    const auto& nodes = egraph.eclass(c).nodes;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].origin != 0 && prices.allowed(c, i))
        by_origin[nodes[i].origin].emplace_back(c, static_cast<int32_t>(i));
  }
  double best = cost_of(selection);
  ++s.tries;
  std::optional<SelectionWindows> windows;
  if (options.window_radius > 0) {
    windows.emplace(egraph, roots, model, options.window_radius);
    windows->reset(selection);
  }
  // A cost lower than `than` by more than rounding.
  auto cheaper = [](double cost, double than) { return cost < than - 1e-9 * std::max(1.0, std::abs(than)); };
  for (bool kept = true; kept;) {
    kept = false;
    // The moves of this pass: a switch of one class to another of its
    // e-nodes, or of every class an application's e-nodes are in. The
    // applications come first (GoogLeNet's merges from the model's
    // e-nodes, which the prices rank behind hundreds of single switches),
    // each kind most promising by the prices first. An e-node that is the
    // chosen one with its operands reordered is skipped (the same graph).
    struct Move {
      double estimate;
      std::vector<std::pair<ClassId, int32_t>> switches;
    };
    std::vector<Move> moves;
    // The classes the selection uses, parents before children (a parent's
    // switch changes what its children must be); the selection is complete
    // and acyclic, since it was costed.
    std::vector<ClassId> used;
    walk_selection(egraph, selection, roots, [&](ClassId c, const ENode&) { used.push_back(c); });
    std::reverse(used.begin(), used.end());
    std::vector<char> is_used(selection.choice.size(), 0);
    for (ClassId c : used) is_used[c] = 1;
    auto gain_estimate = [&](ClassId c, int32_t node) {
      return tree_price(c, static_cast<size_t>(node)) - tree_price(c, static_cast<size_t>(selection.choice[c]));
    };
    for (ClassId c : used) {
      const auto& nodes = egraph.eclass(c).nodes;
      const int32_t current = selection.choice[c];
      if (current < 0) continue;
      const ENode& now = nodes[static_cast<size_t>(current)];
      std::vector<ClassId> now_children = now.children;
      std::sort(now_children.begin(), now_children.end());
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (static_cast<int32_t>(i) == current || !prices.allowed(c, i)) continue;
        if (nodes[i].kind == now.kind && nodes[i].head == now.head) {
          std::vector<ClassId> children = nodes[i].children;
          std::sort(children.begin(), children.end());
          if (children == now_children) continue;
        }
        moves.push_back({gain_estimate(c, static_cast<int32_t>(i)), {{c, static_cast<int32_t>(i)}}});
      }
    }
    for (const auto& [origin, added] : by_origin) {
      Move move{0, {}};
      size_t used_switched = 0;
      for (const auto& [c, node] : added) {
        if (selection.choice[c] == node) continue;
        if (is_used[c] && selection.choice[c] >= 0) {
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
    // Tried in batches: each move of a batch screened by its window (in
    // parallel), the ones the windows say are cheaper built and costed
    // whole (in parallel); the first in move order that is cheaper is
    // kept, and the next batch starts after it (the rest were costed
    // against the selection before the switch).
    const size_t threads = parallel ? static_cast<size_t>(tbb::this_task_arena::max_concurrency()) : 1;
    const size_t batch = (windows ? 8 : 2) * threads;
    std::vector<SelectionWindows::Switches> trials;  // each move's switches that change the selection
    std::vector<double> costs;
    auto each = [&](size_t count, const std::function<void(size_t)>& body) {
      if (parallel && count > 1) tbb::parallel_for(size_t{0}, count, body);
      else
        for (size_t i = 0; i < count; ++i) body(i);
    };
    auto with = [&](const SelectionWindows::Switches& switches) {
      Selection trial = selection;
      for (const auto& [c, node] : switches) trial.choice[c] = node;
      return trial;
    };
    for (size_t next = 0; next < moves.size();) {
      if (Clock::now() > deadline) {
        s.complete = false;
        s.seconds = std::chrono::duration<double>(Clock::now() - start).count();
        return selection;
      }
      trials.clear();
      std::vector<size_t> tried;  // the move of each trial
      for (; next < moves.size() && trials.size() < batch; ++next) {
        SelectionWindows::Switches switches;
        for (const auto& [c, node] : moves[next].switches)
          if (selection.choice[c] != node) switches.emplace_back(c, node);
        if (switches.empty()) continue;
        trials.push_back(std::move(switches));
        tried.push_back(next);
      }
      std::vector<size_t> whole;  // the trials costed whole
      if (windows) {
        std::vector<double> deltas(trials.size(), 0);
        each(trials.size(), [&](size_t i) {
          try {
            deltas[i] = windows->delta(trials[i]);
          } catch (const std::logic_error&) {
            deltas[i] = std::numeric_limits<double>::infinity();  // a cycle, or a class with no e-node to take
          }
        });
        s.screened += trials.size();
        for (size_t i = 0; i < trials.size(); ++i)
          if (cheaper(deltas[i], 0)) whole.push_back(i);
      } else {
        for (size_t i = 0; i < trials.size(); ++i) whole.push_back(i);
      }
      costs.assign(whole.size(), 0);
      each(whole.size(), [&](size_t k) {
        try {
          costs[k] = cost_of(with(trials[whole[k]]));
        } catch (const std::logic_error&) {
          costs[k] = std::numeric_limits<double>::infinity();  // a cycle, or a class with no e-node to take
        }
      });
      s.tries += whole.size();
      for (size_t k = 0; k < whole.size(); ++k)
        if (cheaper(costs[k], best)) {
          best = costs[k];
          selection = with(trials[whole[k]]);
          if (windows) windows->reset(selection);
          ++s.switches;
          kept = true;
          next = tried[whole[k]] + 1;
          break;
        }
    }
  }
  s.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return selection;
}

}  // namespace tgr::saturation
