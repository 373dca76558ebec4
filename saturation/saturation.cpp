#include "saturation/saturation.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "optimizer/rewrite.h"

namespace tgr::saturation {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
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

  // Extraction: the greedy choice, then the ILP from it; the graph that
  // costs least by the cost model's own measure of whole graphs wins.
  const auto extract_start = Clock::now();
  const NodeCosts costs(egraph, &cost);
  const GreedyResult greedy = greedy_extract(egraph, costs);
  const GreedyResult greedy_dag = greedy_dag_extract(egraph, costs);
  stats.greedy_cost = selection_cost(egraph, costs, greedy.selection, roots);
  stats.greedy_dag_cost = selection_cost(egraph, costs, greedy_dag.selection, roots);
  const std::vector<std::string>& names = initial.output_names();
  const Selection& warm_start = stats.greedy_dag_cost < stats.greedy_cost ? greedy_dag.selection : greedy.selection;
  IlpResult ilp;
  if (options.use_ilp) ilp = ilp_extract(egraph, costs, roots, greedy, warm_start, options.ilp);
  // The candidates by the cost model's measure of whole graphs; on ties the
  // first: the ILP's, the DAG greedy's, the tree greedy's.
  const Selection* chosen = nullptr;
  Graph best;
  double best_cost = 0;
  auto consider = [&](const Selection& selection, const char* extractor) {
    if (selection.choice.empty()) return;
    Graph g = selection_graph(egraph, selection, roots, names);
    const double c = cost.graph_cost(g);
    if (chosen && !(c < best_cost)) return;
    best = std::move(g);
    best_cost = c;
    chosen = &selection;
    stats.extractor = extractor;
  };
  consider(ilp.selection, "ilp");
  consider(greedy_dag.selection, "greedy_dag");
  consider(greedy.selection, "greedy");
  if (best_cost < result.initial_cost) {
    std::vector<uint32_t> origins = selection_origins(egraph, *chosen, roots);  // ascending: first application first
    for (uint32_t origin : origins) {
      const optimizer::DirectedRule& r = rules.at(runner.rule_of(origin));
      auto use = std::find_if(result.applied.begin(), result.applied.end(),
                              [&](const optimizer::RuleUse& u) { return u.id == r.id && u.text == r.text; });
      if (use == result.applied.end()) result.applied.push_back({r.id, r.text, 1});
      else ++use->count;
    }
    result.best = std::move(best);
    result.best_cost = best_cost;
  } else {  // never worse than the input
    result.best = std::move(initial);
    result.best_cost = result.initial_cost;
    stats.extractor = "input";
  }
  stats.ilp = std::move(ilp);
  stats.ilp.selection.choice.clear();
  stats.extract_s = since(extract_start);
  stats.seconds = since(start);
  return result;
}

std::string stats_json(const SaturationStats& s) {
  const RunnerStats& r = s.runner;
  std::string j = "{\"stop_reason\": \"";
  j += stop_reason_name(r.stop);
  j += "\", \"iterations\": " + std::to_string(r.iterations);
  j += ", \"enodes\": " + std::to_string(s.enodes);
  j += ", \"eclasses\": " + std::to_string(s.eclasses);
  j += ", \"renamed_rules\": " + std::to_string(r.renamed_rules);
  j += ", \"matches\": " + std::to_string(r.matches);
  j += ", \"repeated_matches\": " + std::to_string(r.repeated_matches);
  j += ", \"dropped_matches\": " + std::to_string(r.dropped_matches);
  j += ", \"deferred_matches\": " + std::to_string(r.deferred_matches);
  j += ", \"bans\": " + std::to_string(r.bans);
  j += ", \"proved\": " + std::to_string(r.proved);
  j += ", \"not_proved\": " + std::to_string(r.not_proved);
  j += ", \"renamed_proof_hits\": " + std::to_string(r.renamed_proof_hits);
  j += ", \"no_instance\": " + std::to_string(r.no_instance);
  j += ", \"unions\": " + std::to_string(r.unions);
  j += ", \"cycles_filtered\": " + std::to_string(r.cycles_filtered);
  j += ", \"cycle_nodes_removed\": " + std::to_string(r.cycle_nodes_removed);
  j += ", \"extractor\": \"" + s.extractor + "\"";
  j += ", \"greedy_cost_us\": " + number(s.greedy_cost);
  j += ", \"greedy_dag_cost_us\": " + number(s.greedy_dag_cost);
  j += ", \"ilp\": {\"status\": \"" + ilp_status_name(s.ilp.status) + "\"";
  j += ", \"found_by\": \"" + s.ilp.found_by + "\"";
  j += ", \"objective_us\": " + number(s.ilp.objective);
  j += ", \"lp_bound_us\": " + number(s.ilp.lp_bound);
  j += ", \"bound_us\": " + number(s.ilp.bound);
  j += ", \"gap\": " + number(s.ilp.gap);
  j += ", \"variables\": " + std::to_string(s.ilp.variables);
  j += ", \"constraints\": " + std::to_string(s.ilp.constraints);
  j += ", \"mandatory_classes\": " + std::to_string(s.ilp.mandatory_classes);
  j += ", \"ordered_classes\": " + std::to_string(s.ilp.ordered_classes);
  j += ", \"seconds\": " + number(s.ilp.seconds) + "}";
  j += ", \"seconds\": {\"search\": " + number(r.search_s);
  j += ", \"instantiate\": " + number(r.instantiate_s);
  j += ", \"prove\": " + number(r.prove_s);
  j += ", \"apply\": " + number(r.apply_s);
  j += ", \"rebuild\": " + number(r.rebuild_s);
  j += ", \"saturate\": " + number(s.saturate_s);
  j += ", \"extract\": " + number(s.extract_s);
  j += ", \"total\": " + number(s.seconds) + "}}";
  return j;
}

}  // namespace tgr::saturation
