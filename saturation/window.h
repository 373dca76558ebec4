// Costing a refinement move by the part of the graph it changes.
//
// refine_by_graph_cost (refine.h) tries moves: a selection with one class,
// or one rule application's classes, switched to other e-nodes. Costing a
// move by the whole graph (selection_graph, then CostModel::graph_cost)
// takes about a millisecond on a model of a hundred operators under the
// GPU plan's costs, and almost every move is rejected (docs/benchmarks.md,
// "Measurements behind code comments"). A window costs only the
// neighbourhood of the change:
//
//   - the changed classes R: those the move switches, and those one
//     selection uses and the other does not (what a switch newly needs, and
//     what no class reads any more);
//   - the window W: R and every class within `radius` steps of it, along
//     the chosen e-nodes' children and readers of either selection, then
//     the constant classes those read (weights stay weights, so a bias is
//     still a bias and a folded weight still free);
//   - each selection's window graph: its classes of W, with every value
//     they read from outside W as a graph input and every value read from
//     outside W (or a root) as a graph output. Classes outside W have the
//     same e-node in both selections, so both windows have the same inputs
//     and outputs;
//   - the move's delta: graph_cost(trial's window) - graph_cost(current's).
//
// For a cost that is a sum of independent operators the delta is exact at
// any radius. For a cost that fuses operators (a plan's steps) a fusion or
// a view decision that reaches across the window's edge is seen the same
// way in both windows, so it mostly cancels, but not always: the delta is a
// screen, and refinement keeps a move only after graph_cost of the whole
// trial graph confirms it. With a radius that covers the whole graph the
// windows are the two whole graphs, and the delta is exact for any cost
// model (test: Window.AnUnboundedRadiusGivesTheWholeGraphsDelta).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "optimizer/cost_model.h"
#include "saturation/egraph.h"
#include "saturation/extract.h"

namespace tgr::saturation {

class SelectionWindows {
 public:
  // Classes within this many steps of a change are in its window: three
  // covers a convolution's bias, residual and relu, and the elementwise
  // steps around a product.
  static constexpr size_t kDefaultRadius = 3;

  SelectionWindows(const EGraph& egraph, const std::vector<ClassId>& roots, optimizer::CostModel& model,
                   size_t radius = kDefaultRadius);

  // Indexes the selection moves are made from (its classes and their
  // readers); call again whenever it changes. `current` must be complete
  // and acyclic for the roots.
  void reset(const Selection& current);

  // A move: classes switched to other e-nodes (class, index of its e-node).
  using Switches = std::vector<std::pair<ClassId, int32_t>>;

  // graph_cost of the window of the current selection with `switches`
  // made, minus the current selection's. Throws std::logic_error where the
  // move makes the selection cyclic or incomplete. Thread-safe between
  // resets (for a thread-safe cost model).
  double delta(const Switches& switches) const;
  // The same for a whole selection (its differences from the current one).
  double delta(const Selection& trial) const;

  // The classes of a trial's window (for tests and reports).
  std::vector<ClassId> window(const Selection& trial) const;

 private:
  // A selection's choice per class: `base`'s, but for the classes in
  // `switches` (a move has a few; no copy of the whole selection per move).
  struct ChoiceOf {
    const Selection* base;
    const Switches* switches;
    int32_t operator()(ClassId c) const;
  };
  Switches switches_to(const Selection& trial) const;
  // The window's classes, ascending (window_graph lists outputs in that order).
  std::vector<ClassId> window(const ChoiceOf& trial, std::vector<char>& in_window, std::vector<char>& trial_used) const;
  Graph window_graph(const ChoiceOf& selection, const std::vector<ClassId>& classes, const std::vector<char>& in_window,
                     const std::vector<char>& used) const;

  const EGraph& egraph_;
  std::vector<ClassId> roots_;
  optimizer::CostModel& model_;
  size_t radius_;
  Selection current_;
  std::vector<char> used_;              // per class: the current selection uses it
  std::vector<ClassId> used_list_;      // the classes it uses
  std::vector<char> is_root_;           // per class
  std::vector<uint32_t> reader_start_;  // per class, and one past the last: its readers in `readers_`
  std::vector<ClassId> readers_;        // the used classes whose chosen e-node reads each class
};

}  // namespace tgr::saturation
