// Extraction: the cheapest graph an e-graph holds for given root classes.
//
// Costs are per e-node (NodeCosts): an operator costs what the optimizer's
// cost model says of it alone (a one-node graph at its classes' shapes,
// CostModel::op_cost_us); inputs, constants and projections cost nothing,
// and so does every e-node computed from constants only (folded at export,
// as optimizer::constant_only_nodes). A constant class may only be extracted
// through such a node, so that what costs nothing here is folded there.
//
// greedy_extract: bottom-up, each class's cheapest e-node by the cost of
// its whole tree (shared subgraphs counted once per use), in the order of
// Knuth's generalisation of Dijkstra's algorithm: a class is settled only
// after all the children of its chosen e-node, so the choice is acyclic
// even through zero-cost e-nodes. Fast; the warm start and fallback of
// ilp_extract.
//
// ilp_extract (Tensat's formulation, solved with CBC): a binary variable
// per e-node, minimise the sum of the chosen e-nodes' costs (shared
// subgraphs counted once) subject to: every root class chooses an e-node;
// a chosen e-node's child classes each choose one. Acyclicity: a
// continuous order t_c in [0, C) per class and, for each e-node n of class c
// with child class d, t_c - t_d - C x_n >= 1 - C (so a chosen e-node's
// children come strictly earlier). Those constraints are needed only on
// cycles: by default they are added for the classes of each strongly
// connected component of several classes, over the edges inside it, with C
// its size (cycle filtering keeps these few; congruence can still close
// some); `order_constraints` adds them for all classes and edges, as Tensat
// writes them. Before CBC, the LP relaxation is solved and rounded: greedy
// extraction with the e-nodes the LP takes (x >= a threshold) made free
// finds the sharing the LP sees (CBC's own heuristics take far longer to
// find it); the best rounding is CBC's start. On a
// large problem CBC first solves the problem restricted to the LP's support,
// then the whole from that solution, each for part of the time.
// Candidates are the e-nodes reachable from the roots
// whose children the greedy pass could settle (no other can be in an
// acyclic choice). Starts from the greedy choice; at the time limit it keeps
// the best solution found and reports the gap to the bound.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "optimizer/cost_model.h"
#include "saturation/egraph.h"

namespace tgr::saturation {

// Operator costs by operator instance and operand shapes (EGraph heads are
// stable, so one cache serves every iteration of a saturation).
using SignatureCosts = std::unordered_map<std::string, double>;

class NodeCosts {
 public:
  // For a rebuilt e-graph; asks `model` once per distinct operator instance
  // and operand shapes (remembered in `cache` when given). Without a model
  // every operator costs 1 (what cycle removal uses when it has none).
  NodeCosts(const EGraph& egraph, optimizer::CostModel* model, SignatureCosts* cache = nullptr);
  double cost(ClassId c, size_t node) const { return costs_.at(c).at(node); }
  bool allowed(ClassId c, size_t node) const { return allowed_.at(c).at(node) != 0; }
  void set_cost(ClassId c, size_t node, double cost) { costs_.at(c).at(node) = cost; }  // for biased copies

 private:
  std::vector<std::vector<double>> costs_;  // [class][node index in EGraph::eclass(c).nodes]
  std::vector<std::vector<char>> allowed_;
};

// One e-node per class (its index in the class's nodes), -1 where none is chosen.
struct Selection {
  std::vector<int32_t> choice;  // indexed by class id
};

// What every extractor returns (the Extractor interface below).
struct Extraction {
  Selection selection;  // choice empty: no selection (an ILP skipped)
  // The greedy extractors' (empty for the others): per class its tree (or
  // DAG) cost, infinity where no acyclic choice exists, and the order it was
  // settled in, -1 never.
  std::vector<double> tree_cost;
  std::vector<int32_t> settled;
};

Extraction greedy_extract(const EGraph& egraph, const NodeCosts& costs);

// The same order of settling classes, but each class's e-node is chosen by
// the cost of its whole DAG (every class below it counted once, with the
// e-node it settled with), so that sharing below a class counts: the Q, K
// and V projections of one input merged into one product and split are one
// product under the attention scores that read two of them, where tree
// costs count it twice. tree_cost holds those DAG costs. Costs a bit set of
// classes per class; the ILP's warm start.
Extraction greedy_dag_extract(const EGraph& egraph, const NodeCosts& costs);

// Sharing the greedy passes miss: a multi-output operator (the split of a
// merged product) serves several classes, and each alone prefers its own
// cheaper operator. For each tuple class two or more of whose projection
// classes the selection uses, tries reading all of them through the tuple
// (the tuple's own derivation from `greedy`), keeps it where the selection
// costs less and stays acyclic; repeats until nothing improves, or until
// `deadline` (the selection improved so far).
Selection share_tuples(const EGraph& egraph, const NodeCosts& costs, const std::vector<ClassId>& roots,
                       const Extraction& greedy, Selection selection,
                       std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);

// Visits each class a selection uses for `roots` once, with its chosen
// e-node, children first. Throws std::logic_error if the selection is
// cyclic or leaves a class it needs without an e-node.
void walk_selection(const EGraph& egraph, const Selection& selection, const std::vector<ClassId>& roots,
                    const std::function<void(ClassId, const ENode&)>& visit);

// The sum of the costs of the e-nodes a selection uses for `roots` (each once).
double selection_cost(const EGraph& egraph, const NodeCosts& costs, const Selection& selection,
                      const std::vector<ClassId>& roots);

enum class IlpStatus {
  kOptimal,    // proved optimal
  kTimeLimit,  // stopped at the time limit; the best solution found (at worst the warm start), see the gap
  kSkipped,    // not run: too large, or not asked for
};
std::string ilp_status_name(IlpStatus status);

struct IlpOptions {
  double time_limit_s = 1.5;
  size_t max_candidates = 100000;  // e-nodes; larger problems are not attempted
  size_t restrict_above = 1500;    // e-nodes; larger problems are first solved on the LP's support
  bool order_constraints = false;  // order constraints on every class and edge, not only on cycles
};

struct IlpResult {
  Selection selection;  // empty when skipped
  IlpStatus status = IlpStatus::kSkipped;
  double objective = 0, bound = 0, gap = 0;  // gap: (objective - bound) / objective
  double lp_bound = 0;                       // the LP relaxation's optimum
  std::string found_by;  // "cbc", "cbc_on_lp_support", "lp_rounding" or "warm_start": where `selection` came from
  size_t variables = 0, constraints = 0;
  size_t mandatory_classes = 0;  // classes every solution uses (the roots and what all their options read)
  size_t ordered_classes = 0;    // classes with an order variable (those on cycles of candidates)
  double seconds = 0;
};

// `greedy`: greedy_extract's result (its tree costs bound what a class can
// cost, which prunes e-nodes); `warm_start`: an acyclic selection to start
// from (the better greedy one).
IlpResult ilp_extract(const EGraph& egraph, const NodeCosts& costs, const std::vector<ClassId>& roots,
                      const Extraction& greedy, const Selection& warm_start, const IlpOptions& options);

// The graph a selection gives: every graph input of the e-graph (declared
// order), then the roots as outputs named `output_names`. Throws
// std::logic_error if the selection is cyclic or incomplete.
Graph selection_graph(const EGraph& egraph, const Selection& selection, const std::vector<ClassId>& roots,
                      const std::vector<std::string>& output_names);

// The rule applications (ENode::origin > 0) whose e-nodes the selection uses for `roots`.
std::vector<uint32_t> selection_origins(const EGraph& egraph, const Selection& selection,
                                        const std::vector<ClassId>& roots);

// One extractor interface: the passes above behind one call, so that the
// saturation chooses among extractors (saturation.cpp) without knowing
// their signatures. An extractor is built with what it needs beyond the
// problem (a warm start, options, a deadline) and may run once per problem.
struct ExtractionProblem {
  const EGraph& egraph;
  const NodeCosts& costs;
  const std::vector<ClassId>& roots;
};

class Extractor {
 public:
  virtual ~Extractor() = default;
  // The report's name of its candidates ("greedy", "ilp", ...).
  virtual std::string name() const = 0;
  virtual Extraction extract(const ExtractionProblem& problem) = 0;
};

// greedy_extract.
class GreedyExtractor final : public Extractor {
 public:
  static constexpr const char* kName = "greedy";
  std::string name() const override { return kName; }
  Extraction extract(const ExtractionProblem& problem) override;
};

// greedy_dag_extract.
class GreedyDagExtractor final : public Extractor {
 public:
  static constexpr const char* kName = "greedy_dag";
  std::string name() const override { return kName; }
  Extraction extract(const ExtractionProblem& problem) override;
};

// share_tuples from `start`, with `greedy` (a greedy extraction of the same
// problem) for the tuples' own derivations.
class SharedTuplesExtractor final : public Extractor {
 public:
  SharedTuplesExtractor(const Extraction& greedy, Selection start,
                        std::optional<std::chrono::steady_clock::time_point> deadline)
      : greedy_(greedy), start_(std::move(start)), deadline_(deadline) {}
  static constexpr const char* kName = "shared_tuples";
  std::string name() const override { return kName; }
  Extraction extract(const ExtractionProblem& problem) override;

 private:
  const Extraction& greedy_;
  Selection start_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
};

// ilp_extract from `greedy` (greedy_extract's result) and `warm_start`;
// report() holds what the solver did (status, gap, sizes) after extract.
class IlpExtractor final : public Extractor {
 public:
  IlpExtractor(const Extraction& greedy, const Selection& warm_start, const IlpOptions& options)
      : greedy_(greedy), warm_start_(warm_start), options_(options) {}
  static constexpr const char* kName = "ilp";
  std::string name() const override { return kName; }
  Extraction extract(const ExtractionProblem& problem) override;
  const IlpResult& report() const { return report_; }

 private:
  const Extraction& greedy_;
  const Selection& warm_start_;
  IlpOptions options_;
  IlpResult report_;
};

}  // namespace tgr::saturation
