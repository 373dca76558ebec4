#include "optimizer/backtracking_search.h"
#include "optimizer/partial_instance.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_set>

#include "optimizer/rewrite.h"
#include "util/report_number.h"

namespace tgr::optimizer {
namespace {

using Clock = std::chrono::steady_clock;

// The rules applied to reach a graph, newest first (shared by descendants).
struct Trail {
  size_t rule;
  AppliedRewrite rewrite;
  std::shared_ptr<const Trail> parent;
};

struct Entry {
  std::shared_ptr<const Graph> graph;
  std::shared_ptr<const Trail> trail;
};

// One rewrite of the popped graph, before the hash and cost tests.
struct Candidate {
  size_t rule;
  Graph graph;
  Instance instance;
  AppliedRewrite rewrite;
  double cost = 0;
  uint64_t hash = 0;
  bool proved = false;
};

void add_stats(MatchStats& into, const MatchStats& s) {
  into.found += s.found;
  into.used_outside += s.used_outside;
  into.cycles += s.cycles;
}

}  // namespace

void count_rule_use(std::vector<RuleUse>& uses, int64_t id, const std::string& text, int times) {
  auto use = std::find_if(uses.begin(), uses.end(), [&](const RuleUse& u) { return u.id == id && u.text == text; });
  if (use == uses.end()) uses.push_back({id, text, times});
  else use->count += times;
}

BacktrackingResult backtracking_search(const Graph& graph, const std::vector<DirectedRule>& rules, CostModel& cost,
                                              InstanceProver& prover, const BacktrackingOptions& options) {
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  BacktrackingResult result;
  BacktrackingStats& stats = result.stats;

  auto initial = std::make_shared<const Graph>(compact(graph));
  result.initial_cost = cost.graph_cost(*initial);
  Entry best{initial, nullptr};
  double best_cost = result.initial_cost;
  std::multimap<double, Entry> queue;
  std::unordered_set<uint64_t> seen{search_hash(*initial)};
  queue.emplace(best_cost, best);
  InstanceCache instances;  // every popped graph matches most of its parent's matches again

  while (!queue.empty()) {
    if (stats.popped >= options.budget) {
      stats.budget_exhausted = true;
      break;
    }
    if (elapsed() > options.timeout_s) {
      stats.timed_out = true;
      break;
    }
    Entry entry = queue.begin()->second;
    queue.erase(queue.begin());
    ++stats.popped;
    const Graph& g = *entry.graph;
    const GraphIndex index(g);

    // Match, instantiate, apply and cost every rewrite, in parallel over rules.
    std::vector<std::vector<Candidate>> per_rule(rules.size());
    std::vector<MatchStats> match_stats(rules.size());
    std::vector<int64_t> no_instance(rules.size(), 0);
    // The clock is also read between matches: one graph's expansion costs
    // thousands of rewritten graphs on BERT-base (a second and more), so a
    // check between graphs alone overshot --timeout by that much.
    std::atomic<bool> out_of_time = false;
    auto expand = [&](size_t r) {
      for (const Match& m : find_matches(index, rules[r], options.matches_per_rule, &match_stats[r])) {
        if (out_of_time || elapsed() > options.timeout_s) {
          out_of_time = true;
          return;
        }
        std::optional<Instance> inst = instantiate(g, rules[r], m, &instances);
        // A partial rule's target is replaced by its checked correction
        // before it is applied and costed.
        if (!inst || (rules[r].partial && !correct_partial_instance(*inst, options.region_check))) {
          ++no_instance[r];
          continue;
        }
        AppliedRewrite rewrite = start_record(rules[r]);
        Graph rewritten = apply_instance(g, m, *inst, rewrite.tag, &rewrite);
        Candidate c{r, std::move(rewritten), std::move(*inst), std::move(rewrite)};
        c.cost = cost.graph_cost(c.graph);
        c.hash = search_hash(c.graph);
        per_rule[r].push_back(std::move(c));
      }
    };
    if (options.parallel) tbb::parallel_for(size_t{0}, rules.size(), expand);
    else for (size_t r = 0; r < rules.size(); ++r) expand(r);
    if (out_of_time) stats.timed_out = true;  // what was expanded is still kept

    // The hash and cost tests, in rule order (deterministic).
    std::vector<Candidate*> survivors;
    std::unordered_set<uint64_t> batch;
    for (size_t r = 0; r < rules.size(); ++r) {
      add_stats(stats.matches, match_stats[r]);
      stats.no_instance += no_instance[r];
      for (Candidate& c : per_rule[r]) {
        ++stats.candidates;
        if (seen.count(c.hash) || !batch.insert(c.hash).second) {
          ++stats.duplicates;
        } else if (!(c.cost < options.alpha * best_cost)) {
          ++stats.pruned;
        } else {
          survivors.push_back(&c);
        }
      }
    }
    // Proofs of the instances that survive, in parallel.
    auto prove = [&](size_t i) { survivors[i]->proved = prover.proved(survivors[i]->instance); };
    if (options.parallel) tbb::parallel_for(size_t{0}, survivors.size(), prove);
    else for (size_t i = 0; i < survivors.size(); ++i) prove(i);

    for (Candidate* c : survivors) {
      if (!c->proved) {
        ++stats.unprovable;
        continue;
      }
      seen.insert(c->hash);
      Entry next{std::make_shared<const Graph>(std::move(c->graph)),
                 std::make_shared<const Trail>(Trail{c->rule, std::move(c->rewrite), entry.trail})};
      if (c->cost < best_cost) {
        best_cost = c->cost;
        best = next;
      }
      queue.emplace(c->cost, std::move(next));
      ++stats.pushed;
      while (queue.size() > options.max_queue) queue.erase(std::prev(queue.end()));
    }
  }

  result.best = compact(*best.graph);
  result.best_cost = best_cost;
  std::vector<const Trail*> path;
  for (const Trail* t = best.trail.get(); t; t = t->parent.get()) path.push_back(t);
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    result.rewrites.push_back((*it)->rewrite);
    const DirectedRule& r = rules[(*it)->rule];
    count_rule_use(result.applied, r.id, r.text);
  }
  stats.seconds = elapsed();
  return result;
}

bool continue_with(BacktrackingResult& result, BacktrackingResult&& then) {
  if (!(then.best_cost < result.best_cost)) return false;  // result.best, then's initial graph, stays
  result.best = std::move(then.best);
  result.best_cost = then.best_cost;
  for (const RuleUse& u : then.applied) count_rule_use(result.applied, u.id, u.text, u.count);
  result.rewrites.insert(result.rewrites.end(), then.rewrites.begin(), then.rewrites.end());
  return true;
}

BacktrackingResult staged_backtracking_search(const Graph& graph, const std::vector<DirectedRule>& rules,
                                              CostModel& cost, InstanceProver& prover,
                                              const BacktrackingOptions& options) {
  std::vector<DirectedRule> shipped;
  for (const DirectedRule& r : rules)
    if (r.shipped) shipped.push_back(r);
  if (shipped.empty() || shipped.size() == rules.size())
    return backtracking_search(graph, rules, cost, prover, options);
  const auto start = Clock::now();
  BacktrackingResult result = backtracking_search(graph, shipped, cost, prover, options);
  BacktrackingOptions rest = options;
  rest.timeout_s = options.timeout_s - std::chrono::duration<double>(Clock::now() - start).count();
  if (result.stats.timed_out || rest.timeout_s <= 0) return result;  // no time left for the second stage
  BacktrackingResult then = backtracking_search(result.best, rules, cost, prover, rest);
  const BacktrackingStats more = then.stats;
  continue_with(result, std::move(then));
  BacktrackingStats& st = result.stats;
  st.popped += more.popped;
  st.candidates += more.candidates;
  st.duplicates += more.duplicates;
  st.pruned += more.pruned;
  st.unprovable += more.unprovable;
  st.no_instance += more.no_instance;
  st.pushed += more.pushed;
  add_stats(st.matches, more.matches);
  st.seconds += more.seconds;
  st.timed_out = st.timed_out || more.timed_out;
  st.budget_exhausted = more.budget_exhausted;
  return result;
}

std::string stop_reason_name(const BacktrackingStats& st) {
  if (st.timed_out) return "time_limit";
  if (st.budget_exhausted) return "budget";
  return "queue_empty";
}

nlohmann::ordered_json stats_json(const BacktrackingStats& st, const BacktrackingOptions& options) {
  using util::six_digits;
  return nlohmann::ordered_json{{"popped", st.popped},
                                {"candidates", st.candidates},
                                {"pushed", st.pushed},
                                {"duplicates", st.duplicates},
                                {"pruned_by_cost", st.pruned},
                                {"unproved_instances", st.unprovable},
                                {"matches_rejected_used_outside", st.matches.used_outside},
                                {"matches_rejected_cycle", st.matches.cycles},
                                {"budget", options.budget},
                                {"alpha", six_digits(options.alpha)},
                                {"timed_out", st.timed_out},
                                {"stop_reason", stop_reason_name(st)},
                                {"seconds", six_digits(st.seconds)}};
}

std::string summary_line(const BacktrackingStats& st, const BacktrackingOptions& options, const char* from) {
  char stopped[96];
  if (st.timed_out)
    std::snprintf(stopped, sizeof stopped, "stopped at the %g s time limit (more time may find more)",
                  options.timeout_s);
  else
    std::snprintf(stopped, sizeof stopped, "%s",
                  st.budget_exhausted ? "stopped at the budget" : "stopped with every graph within alpha expanded");
  char line[512];
  std::snprintf(line, sizeof line,
                "backtracking%s, %s: %lld graphs popped (budget %d, alpha %.3g), %lld rewrites tried, %lld kept, "
                "%lld duplicates, %lld pruned by cost",
                from, stopped, static_cast<long long>(st.popped), options.budget, options.alpha,
                static_cast<long long>(st.candidates), static_cast<long long>(st.pushed),
                static_cast<long long>(st.duplicates), static_cast<long long>(st.pruned));
  return line;
}

}  // namespace tgr::optimizer
