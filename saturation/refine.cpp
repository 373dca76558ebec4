#include "saturation/refine.h"

#include <algorithm>
#include <stdexcept>

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

Selection refine_by_graph_cost(const EGraph& egraph, const NodeCosts& prices, Selection selection,
                               const GreedyResult& fill, const std::vector<ClassId>& roots,
                               const std::vector<std::string>& output_names, optimizer::CostModel& model,
                               Clock::time_point deadline, RefineStats* stats) {
  const auto start = Clock::now();
  RefineStats local;
  RefineStats& s = stats ? *stats : local;
  s = {};
  // Classes the selection leaves open take fill's e-node, so a switch can
  // reach classes the selection does not use yet.
  for (size_t c = 0; c < selection.choice.size() && c < fill.selection.choice.size(); ++c)
    if (selection.choice[c] < 0) selection.choice[c] = fill.selection.choice[c];
  auto cost_of = [&](const Selection& trial) {
    ++s.tries;
    return model.graph_cost(selection_graph(egraph, trial, roots, output_names));
  };
  // An e-node's price with its children's trees as fill prices them.
  auto tree_price = [&](ClassId c, size_t i) {
    double total = prices.cost(c, i);
    for (ClassId child : egraph.eclass(c).nodes[i].children) total += fill.tree_cost.at(egraph.find(child));
    return total;
  };
  double best = cost_of(selection);
  for (bool kept = true; kept;) {
    kept = false;
    // The switches of this pass, most promising by the prices first; an
    // e-node that is the chosen one with its operands reordered is skipped
    // (the same graph).
    struct Switch {
      double estimate;
      ClassId c;
      int32_t node;
    };
    std::vector<Switch> switches;
    // The classes the selection uses, parents before children (a parent's
    // switch changes what its children must be); the selection is complete
    // and acyclic, since it was costed.
    std::vector<ClassId> used;
    walk_selection(egraph, selection, roots, [&](ClassId c, const ENode&) { used.push_back(c); });
    std::reverse(used.begin(), used.end());
    for (ClassId c : used) {
      const auto& nodes = egraph.eclass(c).nodes;
      const int32_t current = selection.choice[c];
      if (current < 0) continue;
      const ENode& now = nodes[static_cast<size_t>(current)];
      std::vector<ClassId> now_children = now.children;
      std::sort(now_children.begin(), now_children.end());
      const double now_price = tree_price(c, static_cast<size_t>(current));
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (static_cast<int32_t>(i) == current || !prices.allowed(c, i)) continue;
        if (nodes[i].kind == now.kind && nodes[i].head == now.head) {
          std::vector<ClassId> children = nodes[i].children;
          std::sort(children.begin(), children.end());
          if (children == now_children) continue;
        }
        switches.push_back({tree_price(c, i) - now_price, c, static_cast<int32_t>(i)});
      }
    }
    std::stable_sort(switches.begin(), switches.end(),
                     [](const Switch& a, const Switch& b) { return a.estimate < b.estimate; });
    for (const Switch& sw : switches) {
      if (Clock::now() > deadline) {
        s.complete = false;
        s.seconds = std::chrono::duration<double>(Clock::now() - start).count();
        return selection;
      }
      if (selection.choice[sw.c] == sw.node) continue;
      Selection trial = selection;
      trial.choice[sw.c] = sw.node;
      double cost = 0;
      try {
        cost = cost_of(trial);
      } catch (const std::logic_error&) {
        continue;  // a cycle, or a class with no e-node to take
      }
      if (cost < best - 1e-9 * std::max(1.0, best)) {
        best = cost;
        selection = std::move(trial);
        ++s.switches;
        kept = true;
      }
    }
  }
  s.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return selection;
}

}  // namespace tgr::saturation
