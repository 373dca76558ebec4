// Refining an extracted selection by the cost model's own measure of whole
// graphs (CostModel::graph_cost), which no price per e-node reproduces where
// the runtime fuses operators: whether a parent fuses with its child depends
// on which e-node the child's class takes (ONNX Runtime runs
// reshape(batch_matmul(reshape(a), reshape(b))) as one MatMul; with the
// scale moved between the product and the reshape it runs three nodes), and
// a class's own choice cannot see its parent's gain.
//
// refine_by_graph_cost is a local search. Its moves: every class one rule
// application added e-nodes to (ENode::origin) switched to them at once
// (a two-output merge pays only when both outputs read the merged
// operator: the backtracking search's step), and each class the selection
// uses switched to each other e-node it has; what a move newly needs is
// taken from `fill`, a greedy extraction's selection. A move that makes
// the graph cheaper by graph_cost is kept, and the search goes on until a
// pass keeps none, or until the deadline. Each move is first costed by the
// region it changes (window.h: a few dozen operators); only a move that
// region says is cheaper is built and costed whole (a try), and only a try
// that graph_cost confirms is kept.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "optimizer/cost_model.h"
#include "saturation/egraph.h"
#include "saturation/extract.h"
#include "saturation/window.h"

namespace tgr::saturation {

struct RefineStats {
  size_t screened = 0;   // moves costed by their window
  size_t tries = 0;      // whole graphs built and costed
  size_t switches = 0;   // switches kept
  bool complete = true;  // a pass kept nothing (false: the deadline came first)
  double seconds = 0;
  // Two refinements' stats as one (complete when both were).
  RefineStats& operator+=(const RefineStats& other);
};

struct RefineOptions {
  std::chrono::steady_clock::time_point deadline;
  // The tries of a batch costed on TBB's threads (the cost model's
  // graph_cost must be thread-safe, as the backtracking search needs too).
  bool parallel = true;
  // Moves are screened by the cost of their window of this radius
  // (window.h); 0: every move is built and costed whole.
  size_t window_radius = SelectionWindows::kDefaultRadius;
};

// The e-nodes of the graph the e-graph was built from (origin 0), one per
// class where the class has one (-1 elsewhere): refining from it descends
// from the model one rewrite at a time by graph_cost, as the backtracking
// search does, inside the e-graph.
Selection input_selection(const EGraph& egraph, const NodeCosts& allowed);

// `prices`: the e-node prices extraction used (which e-nodes it may take,
// and the order moves are tried in: applications before single switches,
// each by its price with `fill`'s tree costs below, cheapest first); `fill`: a greedy extraction with those
// prices. Returns the refined selection (`selection` itself, completed by
// fill, when nothing is cheaper).
Selection refine_by_graph_cost(const EGraph& egraph, const NodeCosts& prices, Selection selection,
                               const Extraction& fill, const std::vector<ClassId>& roots,
                               const std::vector<std::string>& output_names, optimizer::CostModel& model,
                               const RefineOptions& options, RefineStats* stats = nullptr);

// refine_by_graph_cost from `start` as an Extractor (the problem's costs
// are its `prices`), under the name it is given.
class RefiningExtractor final : public Extractor {
 public:
  RefiningExtractor(std::string name, Selection start, const Extraction& fill,
                    const std::vector<std::string>& output_names, optimizer::CostModel& model, RefineOptions options,
                    RefineStats* stats)
      : name_(std::move(name)),
        start_(std::move(start)),
        fill_(fill),
        output_names_(output_names),
        model_(model),
        options_(options),
        stats_(stats) {}
  std::string name() const override { return name_; }
  Extraction extract(const ExtractionProblem& problem) override {
    return {refine_by_graph_cost(problem.egraph, problem.costs, start_, fill_, problem.roots, output_names_, model_,
                                 options_, stats_),
            {},
            {}};
  }

 private:
  std::string name_;
  Selection start_;
  const Extraction& fill_;
  const std::vector<std::string>& output_names_;
  optimizer::CostModel& model_;
  RefineOptions options_;
  RefineStats* stats_;
};

}  // namespace tgr::saturation
