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

namespace {

// One backtracking_search: the queue of graphs by cost, the hashes seen and
// the best graph so far; each step of expanding a popped graph is a function.
class Backtracking {
 public:
  Backtracking(const std::vector<DirectedRule>& rules, CostModel& cost, InstanceProver& prover,
               const BacktrackingOptions& options)
      : rules_(rules), cost_(cost), prover_(prover), options_(options), start_(Clock::now()) {}

  BacktrackingResult run(const Graph& graph) {
    auto initial = std::make_shared<const Graph>(compact(graph));
    result_.initial_cost = cost_.graph_cost(*initial);
    best_ = Entry{initial, nullptr};
    best_cost_ = result_.initial_cost;
    seen_.insert(search_hash(*initial));
    queue_.emplace(best_cost_, best_);
    while (!queue_.empty()) {
      if (stats().popped >= options_.budget) {
        stats().budget_exhausted = true;
        break;
      }
      if (elapsed() > options_.timeout_s) {
        stats().timed_out = true;
        break;
      }
      Entry entry = queue_.begin()->second;
      queue_.erase(queue_.begin());
      ++stats().popped;
      Expansion expansion = expand(*entry.graph);
      const std::vector<Candidate*> survivors = screen(expansion);
      prove(survivors);
      push_proved(survivors, entry);
    }
    return finish();
  }

 private:
  // Every rewrite of one popped graph, per rule.
  struct Expansion {
    explicit Expansion(size_t rules) : per_rule(rules), match_stats(rules), no_instance(rules, 0) {}
    std::vector<std::vector<Candidate>> per_rule;
    std::vector<MatchStats> match_stats;
    std::vector<int64_t> no_instance;
  };

  BacktrackingStats& stats() { return result_.stats; }
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  // Match, instantiate, apply and cost every rewrite of `g`, in parallel
  // over rules. The clock is also read between matches: one graph's
  // expansion can cost thousands of rewritten graphs (a second and more),
  // so a check between graphs alone would overshoot --timeout by that much;
  // what was expanded by then is still kept.
  Expansion expand(const Graph& g) {
    const GraphIndex index(g);
    Expansion e(rules_.size());
    std::atomic<bool> out_of_time = false;
    auto expand_rule = [&](size_t r) {
      for (const Match& m : find_matches(index, rules_[r], options_.matches_per_rule, &e.match_stats[r])) {
        if (out_of_time || elapsed() > options_.timeout_s) {
          out_of_time = true;
          return;
        }
        std::optional<Instance> inst = instantiate(g, rules_[r], m, &instances_);
        // A partial rule's target is replaced by its checked correction
        // before it is applied and costed.
        if (!inst || (rules_[r].partial && !correct_partial_instance(*inst, options_.region_check))) {
          ++e.no_instance[r];
          continue;
        }
        AppliedRewrite rewrite = start_record(rules_[r]);
        Graph rewritten = apply_instance(g, m, *inst, rewrite.tag, &rewrite);
        Candidate c{r, std::move(rewritten), std::move(*inst), std::move(rewrite)};
        c.cost = cost_.graph_cost(c.graph);
        c.hash = search_hash(c.graph);
        e.per_rule[r].push_back(std::move(c));
      }
    };
    if (options_.parallel) tbb::parallel_for(size_t{0}, rules_.size(), expand_rule);
    else
      for (size_t r = 0; r < rules_.size(); ++r) expand_rule(r);
    if (out_of_time) stats().timed_out = true;
    return e;
  }

  // The hash and cost tests, in rule order (deterministic): the candidates
  // neither seen before nor pruned by alpha.
  std::vector<Candidate*> screen(Expansion& e) {
    std::vector<Candidate*> survivors;
    std::unordered_set<uint64_t> batch;
    for (size_t r = 0; r < rules_.size(); ++r) {
      add_stats(stats().matches, e.match_stats[r]);
      stats().no_instance += e.no_instance[r];
      for (Candidate& c : e.per_rule[r]) {
        ++stats().candidates;
        if (seen_.count(c.hash) || !batch.insert(c.hash).second) {
          ++stats().duplicates;
        } else if (!(c.cost < options_.alpha * best_cost_)) {
          ++stats().pruned;
        } else {
          survivors.push_back(&c);
        }
      }
    }
    return survivors;
  }

  // Proofs of the instances that survive, in parallel.
  void prove(const std::vector<Candidate*>& survivors) {
    auto prove_one = [&](size_t i) { survivors[i]->proved = prover_.proved(survivors[i]->instance); };
    if (options_.parallel) tbb::parallel_for(size_t{0}, survivors.size(), prove_one);
    else
      for (size_t i = 0; i < survivors.size(); ++i) prove_one(i);
  }

  // The proved candidates join the queue (at most max_queue graphs, the
  // cheapest), and the best graph is kept.
  void push_proved(const std::vector<Candidate*>& survivors, const Entry& parent) {
    for (Candidate* c : survivors) {
      if (!c->proved) {
        ++stats().unprovable;
        continue;
      }
      seen_.insert(c->hash);
      Entry next{std::make_shared<const Graph>(std::move(c->graph)),
                 std::make_shared<const Trail>(Trail{c->rule, std::move(c->rewrite), parent.trail})};
      if (c->cost < best_cost_) {
        best_cost_ = c->cost;
        best_ = next;
      }
      queue_.emplace(c->cost, std::move(next));
      ++stats().pushed;
      while (queue_.size() > options_.max_queue) queue_.erase(std::prev(queue_.end()));
    }
  }

  // The best graph and the rules on the path to it, oldest first.
  BacktrackingResult finish() {
    result_.best = compact(*best_.graph);
    result_.best_cost = best_cost_;
    std::vector<const Trail*> path;
    for (const Trail* t = best_.trail.get(); t; t = t->parent.get()) path.push_back(t);
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      result_.rewrites.push_back((*it)->rewrite);
      const DirectedRule& r = rules_[(*it)->rule];
      count_rule_use(result_.applied, r.id, r.text);
    }
    stats().seconds = elapsed();
    return std::move(result_);
  }

  const std::vector<DirectedRule>& rules_;
  CostModel& cost_;
  InstanceProver& prover_;
  const BacktrackingOptions& options_;
  const Clock::time_point start_;
  BacktrackingResult result_;
  Entry best_;
  double best_cost_ = 0;
  std::multimap<double, Entry> queue_;
  std::unordered_set<uint64_t> seen_;
  InstanceCache instances_;  // every popped graph matches most of its parent's matches again
};

}  // namespace

BacktrackingResult backtracking_search(const Graph& graph, const std::vector<DirectedRule>& rules, CostModel& cost,
                                       InstanceProver& prover, const BacktrackingOptions& options) {
  return Backtracking(rules, cost, prover, options).run(graph);
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
