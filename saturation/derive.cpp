#include "saturation/derive.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

namespace tgr::saturation {

namespace {

// The log indices of the unions on the path between ids `x` and `y` of one
// class in the union forest (EGraph::union_log).
class UnionForest {
 public:
  explicit UnionForest(const std::vector<UnionRecord>& log) {
    for (size_t e = 0; e < log.size(); ++e) {
      const ClassId top = std::max(log[e].a, log[e].b);
      if (top >= adjacent_.size()) adjacent_.resize(top + 1);
      adjacent_[log[e].a].emplace_back(log[e].b, e);
      adjacent_[log[e].b].emplace_back(log[e].a, e);
    }
  }

  std::vector<size_t> path(ClassId x, ClassId y) const {
    if (x == y) return {};
    std::map<ClassId, std::pair<ClassId, size_t>> came_from{{x, {x, 0}}};  // id -> (previous id, union)
    std::vector<ClassId> frontier{x};
    while (!frontier.empty() && !came_from.count(y)) {
      std::vector<ClassId> next;
      for (ClassId id : frontier)
        if (id < adjacent_.size())
          for (const auto& [other, e] : adjacent_[id])
            if (came_from.try_emplace(other, std::make_pair(id, e)).second) next.push_back(other);
      frontier = std::move(next);
    }
    if (!came_from.count(y))
      throw std::logic_error("derive: ids " + std::to_string(x) + " and " + std::to_string(y) +
                             " are not joined by the union log");
    std::vector<size_t> unions;
    for (ClassId id = y; id != x; id = came_from.at(id).first) unions.push_back(came_from.at(id).second);
    return unions;
  }

 private:
  std::vector<std::vector<std::pair<ClassId, size_t>>> adjacent_;
};

struct Attempt {
  bool derived = false;
  RunnerStats stats;
  size_t enodes = 0, eclasses = 0;
  std::vector<ChainStep> chain;
  std::vector<size_t> rules_used;  // indices into the rules, ascending
  int congruences = 0;
};

// The rule applications that join each pair of classes (UnionForest paths,
// congruences explained by their e-nodes' children), ascending.
std::set<uint32_t> explain(const EGraph& egraph, std::vector<std::pair<ClassId, ClassId>> pairs, int* congruences) {
  const std::vector<UnionRecord>& log = egraph.union_log();
  const UnionForest forest(log);
  std::set<size_t> seen;
  std::set<uint32_t> origins;
  while (!pairs.empty()) {
    const auto [x, y] = pairs.back();
    pairs.pop_back();
    for (size_t e : forest.path(x, y)) {
      if (!seen.insert(e).second) continue;
      if (log[e].origin > 0) {
        if (origins.insert(log[e].origin).second)
          for (const auto& premise : egraph.premises(log[e].origin)) pairs.push_back(premise);
        continue;
      }
      ++*congruences;
      const ENode& nx = egraph.original_node(log[e].a);
      const ENode& ny = egraph.original_node(log[e].b);
      for (size_t j = 0; j < nx.children.size() && j < ny.children.size(); ++j)
        pairs.emplace_back(nx.children[j], ny.children[j]);
    }
  }
  return origins;
}

Attempt attempt(const Rule& query, const std::vector<optimizer::DirectedRule>& rules, optimizer::InstanceProver& prover,
                const DeriveOptions& options) {
  EGraph egraph;
  egraph.log_unions();
  const std::vector<ClassId> left = egraph.add_graph(query.source);
  const std::vector<ClassId> right = egraph.add_graph(query.target);
  if (left.size() != right.size())
    throw std::invalid_argument("the rule's sides have " + std::to_string(left.size()) + " and " +
                                std::to_string(right.size()) + " outputs");
  egraph.rebuild();
  RunnerOptions ro;
  ro.iteration_limit = options.iteration_limit;
  ro.node_limit = options.node_limit;
  ro.time_limit_s = options.time_limit_s;
  ro.parallel = options.parallel;
  ro.filter_cycles = false;  // nothing is extracted; x => transpose(transpose(x)) must join its classes
  ro.record_instances = true;
  ro.goal = [&] {
    for (size_t k = 0; k < left.size(); ++k)
      if (egraph.find(left[k]) != egraph.find(right[k])) return false;
    return true;
  };
  Runner runner(egraph, rules, prover, ro);
  Attempt out;
  out.stats = runner.run();
  out.enodes = egraph.num_nodes();
  out.eclasses = egraph.num_classes();
  out.derived = out.stats.stop == StopReason::kGoal;
  if (!out.derived) return out;
  std::vector<std::pair<ClassId, ClassId>> pairs;
  for (size_t k = 0; k < left.size(); ++k) pairs.emplace_back(left[k], right[k]);
  std::set<size_t> used;
  for (uint32_t origin : explain(egraph, pairs, &out.congruences)) {
    const size_t r = runner.rule_of(origin);
    used.insert(r);
    out.chain.push_back({rules[r].id, rules[r].reversed, rules[r].text, runner.instance_of(origin)});
  }
  out.rules_used.assign(used.begin(), used.end());
  return out;
}

}  // namespace

Derivation derive_rule(const Rule& query, const std::vector<optimizer::DirectedRule>& rules,
                       optimizer::InstanceProver& prover, const DeriveOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  Attempt search = attempt(query, rules, prover, options);
  Derivation d;
  d.derived = search.derived;
  d.stop = search.stats.stop;
  d.stats = search.stats;
  d.enodes = search.enodes;
  d.eclasses = search.eclasses;
  d.chain = std::move(search.chain);
  d.congruences = search.congruences;
  if (d.derived) {
    std::vector<optimizer::DirectedRule> alone;
    for (size_t r : search.rules_used) alone.push_back(rules[r]);
    Attempt again = attempt(query, alone, prover, options);
    if (again.derived) {
      d.confirmed = true;
      d.chain = std::move(again.chain);
      d.congruences = again.congruences;
    }
  }
  d.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return d;
}

std::string not_derived_reason(const Derivation& d) {
  constexpr size_t kLine = 160;  // longer than any of the lines below
  char buf[kLine];
  const RunnerStats& s = d.stats;
  switch (d.stop) {
    case StopReason::kSaturated:
      std::snprintf(buf, sizeof buf, "saturated after %d iterations (%zu e-nodes): no rule applies further",
                    s.iterations, d.enodes);
      break;
    case StopReason::kIterationLimit:
      std::snprintf(buf, sizeof buf, "not derived within %d iterations (iteration limit; %zu e-nodes, %.1f s)",
                    s.iteration_limit, d.enodes, s.seconds);
      break;
    case StopReason::kNodeLimit:
      std::snprintf(buf, sizeof buf, "not derived within %zu e-nodes (node limit; %d iterations, %.1f s)", s.node_limit,
                    s.iterations, s.seconds);
      break;
    case StopReason::kTimeLimit:
      std::snprintf(buf, sizeof buf, "not derived within %.1f s (time limit; %d iterations, %zu e-nodes)", s.seconds,
                    s.iterations, d.enodes);
      break;
    case StopReason::kGoal:
      return "derived";
  }
  return buf;
}

}  // namespace tgr::saturation
