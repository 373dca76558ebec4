#include "saturation/saturation.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "optimizer/rewrite.h"
#include "saturation/refine.h"
#include "util/report_number.h"

namespace tgr::saturation {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

using util::six_digits;  // the report's numbers, as every report prints them

// Shares of the extraction's time (--ilp-timeout) for a cost model that
// fuses operators (CostModel::fuses_operators): pricing in context takes up
// to kContextPricingShare, the ILP kIlpShareWhenRefining (CBC has not
// improved on its warm start on our models), refinement by graph_cost what
// is left.
constexpr double kContextPricingShare = 0.3;
constexpr double kIlpShareWhenRefining = 0.2;
constexpr double kMinIlpSeconds = 0.1;

Clock::time_point after(Clock::time_point t, double seconds) {
  return t + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

struct Extracted {
  Graph graph;
  double cost = 0;
  Selection selection;  // empty: no candidate
};

// Of the candidate selections offered, the one whose graph costs least by
// the cost model's own measure of whole graphs (on ties the first offered);
// each candidate's cost, and the extractor of the best, go to `stats`.
class Cheapest {
 public:
  Cheapest(const EGraph& egraph, const std::vector<ClassId>& roots, const std::vector<std::string>& names,
           optimizer::CostModel& cost, SaturationStats& stats)
      : egraph_(egraph), roots_(roots), names_(names), cost_(cost), stats_(stats) {}

  void consider(const Selection& selection, const std::string& extractor) {
    if (selection.choice.empty()) return;
    Graph g = selection_graph(egraph_, selection, roots_, names_);
    const double c = cost_.graph_cost(g);
    stats_.candidate_costs.emplace_back(extractor, c);
    if (!best_.selection.choice.empty() && !(c < best_.cost)) return;
    best_ = {std::move(g), c, selection};
    stats_.extractor = extractor;
  }
  // Runs `extractor` on `problem` and considers its selection.
  void run(Extractor& extractor, const ExtractionProblem& problem) {
    consider(extractor.extract(problem).selection, extractor.name());
  }
  Extracted& best() { return best_; }

 private:
  const EGraph& egraph_;
  const std::vector<ClassId>& roots_;
  const std::vector<std::string>& names_;
  optimizer::CostModel& cost_;
  SaturationStats& stats_;
  Extracted best_;
};

// The greedy extractors' choices under one set of prices.
struct PricedChoices {
  Extraction greedy, dag;  // the tree and the DAG greedy choices
  Extraction shared;       // share_tuples from the cheaper of the two

  // The three as candidates, named by their extractors with `suffix`.
  void offer(Cheapest& cheapest, const std::string& suffix) const {
    cheapest.consider(shared.selection, SharedTuplesExtractor::kName + suffix);
    cheapest.consider(dag.selection, GreedyDagExtractor::kName + suffix);
    cheapest.consider(greedy.selection, GreedyExtractor::kName + suffix);
  }
};

// The greedy extractors under `prices`, then share_tuples from the cheaper
// choice, within `deadline` (on a large e-graph, or with prices in context,
// its passes can take seconds). The two greedy choices' costs go to
// `tree_cost` and `dag_cost`.
PricedChoices priced_choices(const EGraph& egraph, const NodeCosts& prices, const std::vector<ClassId>& roots,
                             std::optional<Clock::time_point> deadline, double& tree_cost, double& dag_cost) {
  const ExtractionProblem problem{egraph, prices, roots};
  PricedChoices c;
  c.greedy = GreedyExtractor().extract(problem);
  c.dag = GreedyDagExtractor().extract(problem);
  tree_cost = selection_cost(egraph, prices, c.greedy.selection, roots);
  dag_cost = selection_cost(egraph, prices, c.dag.selection, roots);
  SharedTuplesExtractor shared(c.greedy, dag_cost < tree_cost ? c.dag.selection : c.greedy.selection, deadline);
  c.shared = shared.extract(problem);
  return c;
}

// The ILP from the greedy choices under `prices` (clamped at 0 when
// `clamp`: the ILP takes no negative costs, it would choose e-nodes no root
// needs), considered by `cheapest`; its report goes to `report`. Its limit
// counts from the extraction's start: the greedy passes before it take
// seconds on large e-graphs, and the extraction as a whole keeps to
// --ilp-timeout; under a model that fuses operators it has
// kIlpShareWhenRefining of it.
void extract_by_ilp(const EGraph& egraph, const NodeCosts& prices, bool clamp, const std::vector<ClassId>& roots,
                    const PricedChoices& from, const SaturationOptions& options, bool refine, double budget_s,
                    Clock::time_point extract_start, Cheapest& cheapest, IlpResult& report) {
  IlpOptions ilp_options = options.ilp;
  if (refine) ilp_options.time_limit_s = std::max(kMinIlpSeconds, kIlpShareWhenRefining * options.ilp.time_limit_s);
  ilp_options.time_limit_s =
      std::min(ilp_options.time_limit_s, std::max(kMinIlpSeconds, budget_s - since(extract_start)));
  IlpExtractor ilp(from.greedy, from.shared.selection, ilp_options);
  if (!clamp) {
    cheapest.run(ilp, {egraph, prices, roots});
  } else {
    NodeCosts clamped = prices;
    for (ClassId c : egraph.class_ids())
      for (size_t i = 0; i < egraph.eclass(c).nodes.size(); ++i)
        clamped.set_cost(c, i, std::max(0.0, clamped.cost(c, i)));
    cheapest.run(ilp, {egraph, clamped, roots});
  }
  report = ilp.report();
  report.selection.choice.clear();
}

// Prices (alone, or in context) miss a parent's fusion that depends on its
// child's e-node: the best graph is refined by graph_cost itself, from the
// model's own e-nodes first (the backtracking search's descent, inside the
// e-graph), then from the best extraction, sharing the time to `deadline`.
void refine_cheapest(const EGraph& egraph, const NodeCosts& costs, const NodeCosts& prices, const Extraction& fill,
                     const std::vector<ClassId>& roots, const std::vector<std::string>& names,
                     optimizer::CostModel& cost, const SaturationOptions& options, Clock::time_point deadline,
                     Cheapest& cheapest, SaturationStats& stats) {
  const ExtractionProblem problem{egraph, prices, roots};
  const Selection from_extraction = cheapest.best().selection;
  const auto halfway = Clock::now() + (deadline - Clock::now()) / 2;
  RefineStats first;
  RefineOptions refine_options;
  refine_options.parallel = options.runner.parallel;
  refine_options.window_radius = options.refine_window;
  refine_options.deadline = halfway;
  RefiningExtractor from_input("refined_from_input", input_selection(egraph, costs), fill, names, cost, refine_options,
                               &first);
  cheapest.run(from_input, problem);
  refine_options.deadline = deadline;
  RefiningExtractor from_best("refined", from_extraction, fill, names, cost, refine_options, &stats.refine);
  cheapest.run(from_best, problem);
  stats.refine += first;
}

// Extraction: the greedy choices, then the ILP from them, for a model that
// fuses operators the same with prices in context and a refinement by
// graph_cost; of all candidates the graph that costs least by the cost
// model's own measure of whole graphs (on ties the first considered).
Extracted extract_cheapest(const EGraph& egraph, const std::vector<ClassId>& roots,
                           const std::vector<std::string>& names, optimizer::CostModel& cost,
                           const SaturationOptions& options, Clock::time_point search_start, SaturationStats& stats) {
  const auto extract_start = Clock::now();
  const double budget_s = options.use_ilp ? options.ilp.time_limit_s : 1.0;
  const auto extraction_deadline = after(extract_start, budget_s);
  // Refinement may go on to the search's own deadline (SaturationOptions::timeout_s).
  const auto refine_deadline =
      options.timeout_s ? std::max(extraction_deadline, after(search_start, *options.timeout_s)) : extraction_deadline;
  const NodeCosts costs(egraph, &cost);
  const PricedChoices alone =
      priced_choices(egraph, costs, roots, extraction_deadline, stats.greedy_cost, stats.greedy_dag_cost);
  stats.shared_cost = selection_cost(egraph, costs, alone.shared.selection, roots);

  // A model whose fusions small trees show: the same passes again with each
  // e-node priced in context (below it, the greedy choice).
  PricedChoices in_context_choices;
  std::optional<NodeCosts> in_context;
  const bool refine = cost.fuses_operators();
  if (cost.prices_in_context()) {
    ContextCostOptions context_options;
    context_options.deadline = after(Clock::now(), kContextPricingShare * budget_s);
    in_context = context_costs(egraph, costs, cost, alone.greedy.selection, context_options, &stats.context);
    double tree = 0, dag = 0;
    in_context_choices = priced_choices(egraph, *in_context, roots, context_options.deadline, tree, dag);
  }
  Cheapest cheapest(egraph, roots, names, cost, stats);
  if (options.use_ilp)
    extract_by_ilp(egraph, in_context ? *in_context : costs, in_context.has_value(), roots,
                   in_context ? in_context_choices : alone, options, refine, budget_s, extract_start, cheapest,
                   stats.ilp);
  in_context_choices.offer(cheapest, "_in_context");
  alone.offer(cheapest, "");
  if (refine && !cheapest.best().selection.choice.empty())
    refine_cheapest(egraph, costs, in_context ? *in_context : costs,
                    in_context ? in_context_choices.greedy : alone.greedy, roots, names, cost, options, refine_deadline,
                    cheapest, stats);
  stats.extract_s = since(extract_start);
  return std::move(cheapest.best());
}

}  // namespace

SaturationResult saturate_and_extract(const Graph& graph, const std::vector<optimizer::DirectedRule>& rules,
                                      optimizer::CostModel& cost, optimizer::InstanceProver& prover,
                                      const SaturationOptions& options) {
  const auto start = Clock::now();
  SaturationResult result;
  SaturationStats& stats = result.stats;
  Graph initial = optimizer::compact(graph);
  result.initial_cost = cost.graph_cost(initial);

  EGraph egraph;
  std::vector<ClassId> roots = egraph.add_graph(initial);
  egraph.rebuild();
  Runner runner(egraph, rules, prover, options.runner, &cost);
  stats.runner = runner.run();
  for (ClassId& r : roots) r = egraph.find(r);
  stats.enodes = egraph.num_nodes();
  stats.eclasses = egraph.num_classes();
  stats.saturate_s = since(start);

  const std::vector<std::string>& names = initial.output_names();
  Extracted best = extract_cheapest(egraph, roots, names, cost, options, start, stats);
  if (!best.selection.choice.empty() && best.cost < result.initial_cost) {
    std::vector<uint32_t> origins =
        selection_origins(egraph, best.selection, roots);  // ascending: first application first
    for (uint32_t origin : origins) {
      const optimizer::DirectedRule& r = rules.at(runner.rule_of(origin));
      result.rewrites.push_back(runner.rewrite_of(origin));
      optimizer::count_rule_use(result.applied, r.id, r.text);
    }
    result.best = std::move(best.graph);
    result.best_cost = best.cost;
  } else {  // never worse than the input
    result.best = std::move(initial);
    result.best_cost = result.initial_cost;
    stats.extractor = "input";
  }
  stats.seconds = since(start);
  return result;
}

namespace {

// Each iteration's counts and phase times: where a time-limited run went.
nlohmann::ordered_json iterations_json(const RunnerStats& r) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const IterationStats& it : r.per_iteration)
    out.push_back({{"enodes", it.nodes},
                   {"eclasses", it.classes},
                   {"matches", it.matches},
                   {"deferred", it.deferred},
                   {"applied", it.applied},
                   {"unions", it.unions},
                   {"banned_rules", it.banned},
                   {"seconds",
                    {{"search", six_digits(it.search_s)},
                     {"instantiate", six_digits(it.instantiate_s)},
                     {"prove", six_digits(it.prove_s)},
                     {"apply", six_digits(it.apply_s)},
                     {"rebuild", six_digits(it.rebuild_s)}}}});
  return out;
}

}  // namespace

nlohmann::ordered_json stats_json(const SaturationStats& s) {
  const RunnerStats& r = s.runner;
  const IlpResult& ilp = s.ilp;
  return {
      {"kind", "saturation"},
      {"stop_reason", std::string(stop_reason_name(r.stop))},
      {"iterations", r.iterations},
      {"node_limit", r.node_limit},
      {"iteration_limit", r.iteration_limit},
      {"lead_iterations", r.lead_iterations},
      {"small_rule_iterations", r.small_rule_iterations},
      {"enodes", s.enodes},
      {"eclasses", s.eclasses},
      {"renamed_rules", r.renamed_rules},
      {"matches", r.matches},
      {"repeated_matches", r.repeated_matches},
      {"weight_only_matches", r.weight_only_matches},
      {"mirrored_matches", r.mirrored_matches},
      {"dropped_matches", r.dropped_matches},
      {"deferred_matches", r.deferred_matches},
      {"bans", r.bans},
      {"proved", r.proved},
      {"not_proved", r.not_proved},
      {"renamed_proof_hits", r.renamed_proof_hits},
      {"no_instance", r.no_instance},
      {"already_holding", r.already_holding},
      {"unions", r.unions},
      {"cycles_filtered", r.cycles_filtered},
      {"cycle_nodes_removed", r.cycle_nodes_removed},
      {"extractor", s.extractor},
      {"greedy_cost_us", six_digits(s.greedy_cost)},
      {"greedy_dag_cost_us", six_digits(s.greedy_dag_cost)},
      {"shared_tuples_cost_us", six_digits(s.shared_cost)},
      {"candidate_costs_us",
       [&] {
         nlohmann::ordered_json out = nlohmann::ordered_json::object();
         for (const auto& [name, c] : s.candidate_costs) out[name] = six_digits(c);
         return out;
       }()},
      {"refine",
       {{"screened", s.refine.screened},
        {"tries", s.refine.tries},
        {"switches", s.refine.switches},
        {"complete", s.refine.complete},
        {"seconds", six_digits(s.refine.seconds)}}},
      {"context_costs",
       {{"priced_enodes", s.context.priced},
        {"trees_costed", s.context.graphs_costed},
        {"complete", s.context.complete},
        {"seconds", six_digits(s.context.seconds)}}},
      {"ilp",
       {{"status", ilp_status_name(ilp.status)},
        {"found_by", ilp.found_by},
        {"objective_us", six_digits(ilp.objective)},
        {"lp_bound_us", six_digits(ilp.lp_bound)},
        {"bound_us", six_digits(ilp.bound)},
        {"gap", six_digits(ilp.gap)},
        {"variables", ilp.variables},
        {"constraints", ilp.constraints},
        {"mandatory_classes", ilp.mandatory_classes},
        {"ordered_classes", ilp.ordered_classes},
        {"seconds", six_digits(ilp.seconds)}}},
      {"seconds",
       {{"search", six_digits(r.search_s)},
        {"instantiate", six_digits(r.instantiate_s)},
        {"prove", six_digits(r.prove_s)},
        {"apply", six_digits(r.apply_s)},
        {"rebuild", six_digits(r.rebuild_s)},
        {"setup", six_digits(r.setup_s)},
        {"saturate", six_digits(s.saturate_s)},
        {"extract", six_digits(s.extract_s)},
        {"total", six_digits(s.seconds)}}},
      {"per_iteration", iterations_json(r)},
  };
}

std::string summary_line(const SaturationStats& s) {
  const RunnerStats& r = s.runner;
  char line[512];
  std::snprintf(line, sizeof line,
                "saturation, stopped: %s after %d iterations, %zu e-nodes (limit %zu) in %zu e-classes; %lld matches, "
                "%lld unions, %lld cycles filtered, %lld rule bans; extracted by %s (ILP %s, gap %.3g)",
                std::string(stop_reason_name(r.stop)).c_str(), r.iterations, s.enodes, r.node_limit, s.eclasses,
                static_cast<long long>(r.matches), static_cast<long long>(r.unions),
                static_cast<long long>(r.cycles_filtered), static_cast<long long>(r.bans), s.extractor.c_str(),
                ilp_status_name(s.ilp.status).c_str(), s.ilp.gap);
  return line;
}

double saturation_time_limit(double timeout_s, const SaturationOptions& options) {
  const double before_ilp = timeout_s - (options.use_ilp ? options.ilp.time_limit_s : 0.0);
  return std::max(timeout_s / 2, std::min(kSaturationShare * timeout_s, before_ilp));
}

}  // namespace tgr::saturation
