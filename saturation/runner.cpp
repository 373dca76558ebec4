#include "saturation/runner.h"

#include <tbb/parallel_for.h>

#include <atomic>
#include <chrono>
#include <unordered_set>

#include "ir/hash.h"
#include "saturation/extract.h"
#include "saturation/pattern.h"
#include "saturation/rewrite.h"

namespace tgr::saturation {

std::string_view stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::kSaturated: return "saturated";
    case StopReason::kNodeLimit: return "node_limit";
    case StopReason::kIterationLimit: return "iteration_limit";
    case StopReason::kTimeLimit: return "time_limit";
  }
  return "unknown";
}

namespace {

using Clock = std::chrono::steady_clock;

// A match as remembered across iterations: [rule, number of variables,
// variable classes..., then per source node head * 2 + swapped]. The
// variables' classes and the matched operators determine every class of
// the match (hash-consing), so equal keys mean the same rewrite.
using MatchKey = std::vector<uint32_t>;

struct MatchKeyHash {
  size_t operator()(const MatchKey& k) const {
    uint64_t h = kFnvOffset;
    for (uint32_t v : k) h = hash_combine(h, v);
    return static_cast<size_t>(h);
  }
};
using MatchKeySet = std::unordered_set<MatchKey, MatchKeyHash>;

MatchKey key_of(size_t rule, const PatternMatch& m) {
  MatchKey k;
  k.reserve(2 + m.variables.size() + m.heads.size());
  k.push_back(static_cast<uint32_t>(rule));
  k.push_back(static_cast<uint32_t>(m.variables.size()));
  k.insert(k.end(), m.variables.begin(), m.variables.end());
  for (size_t p = 0; p < m.heads.size(); ++p)
    if (m.classes[p] != kNoClass) k.push_back(m.heads[p] * 2 + m.swapped[p]);
  return k;
}

MatchKeySet recanonicalise(const MatchKeySet& keys, const EGraph& egraph) {
  MatchKeySet out;
  out.reserve(keys.size());
  for (MatchKey k : keys) {
    for (size_t i = 2; i < 2 + k[1]; ++i) k[i] = egraph.find(k[i]);
    out.insert(std::move(k));
  }
  return out;
}

struct RuleSchedule {
  int times_banned = 0;
  int banned_until = 0;  // iteration
};

}  // namespace

Runner::Runner(EGraph& egraph, const std::vector<optimizer::DirectedRule>& rules, optimizer::InstanceProver& prover,
               RunnerOptions options, optimizer::CostModel* cost)
    : egraph_(egraph), rules_(rules), prover_(prover), options_(options), cost_(cost) {}

RunnerStats Runner::run() {
  const auto start = Clock::now();
  auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  auto out_of_time = [&] { return since(start) >= options_.time_limit_s; };
  RunnerStats stats;
  std::vector<Pattern> patterns;
  patterns.reserve(rules_.size());
  for (const auto& r : rules_) patterns.emplace_back(r);
  std::vector<RuleSchedule> schedule(rules_.size());
  MatchKeySet tried;
  SignatureCosts signature_costs;
  if (!egraph_.clean()) egraph_.rebuild();

  for (int iteration = 0;; ++iteration) {
    if (iteration >= options_.iteration_limit) {
      stats.stop = StopReason::kIterationLimit;
      break;
    }
    if (egraph_.num_nodes() >= options_.node_limit) {
      stats.stop = StopReason::kNodeLimit;
      break;
    }
    if (out_of_time()) {
      stats.stop = StopReason::kTimeLimit;
      break;
    }
    IterationStats it;

    // 1. Search.
    auto t = Clock::now();
    std::vector<std::vector<PatternMatch>> found(rules_.size());
    std::vector<int64_t> repeated(rules_.size(), 0);
    std::vector<size_t> limits(rules_.size(), 0);
    std::atomic<bool> cut_short{false};
    auto search_rule = [&](size_t r) {
      if (schedule[r].banned_until > iteration) return;
      if (out_of_time()) {
        cut_short = true;
        return;
      }
      limits[r] = options_.match_limit << std::min(schedule[r].times_banned, 20);
      found[r] = patterns[r].search(egraph_, limits[r] + 1, [&](const PatternMatch& m) {
        if (tried.count(key_of(r, m))) {
          ++repeated[r];
          return false;
        }
        return true;
      });
    };
    if (options_.parallel) tbb::parallel_for(size_t{0}, rules_.size(), search_rule);
    else for (size_t r = 0; r < rules_.size(); ++r) search_rule(r);
    it.search_s = since(t);

    // 2. Schedule: ban the rules that flood, keep the others' matches.
    std::vector<std::pair<size_t, const PatternMatch*>> work;
    for (size_t r = 0; r < rules_.size(); ++r) {
      stats.repeated_matches += repeated[r];
      if (found[r].size() > limits[r]) {
        RuleSchedule& s = schedule[r];
        s.banned_until = iteration + 1 + (options_.ban_length << std::min(s.times_banned, 20));
        ++s.times_banned;
        ++stats.bans;
        stats.dropped_matches += static_cast<int64_t>(found[r].size());
        found[r].clear();
        continue;
      }
      for (const PatternMatch& m : found[r]) {
        tried.insert(key_of(r, m));
        work.emplace_back(r, &m);
      }
    }
    it.matches = static_cast<int64_t>(work.size());
    stats.matches += it.matches;

    // 3. Instantiate and prove.
    t = Clock::now();
    std::vector<std::optional<ProvedInstance>> proved(work.size());
    std::vector<InstanceOutcome> outcome(work.size(), InstanceOutcome::kNoInstance);
    std::vector<char> skipped(work.size(), 0);
    auto prove = [&](size_t i) {
      if (out_of_time()) {
        skipped[i] = 1;
        return;
      }
      outcome[i] = prove_match(egraph_, rules_[work[i].first], *work[i].second, prover_, options_.region_check, proved[i]);
    };
    if (options_.parallel) tbb::parallel_for(size_t{0}, work.size(), prove);
    else for (size_t i = 0; i < work.size(); ++i) prove(i);
    for (size_t i = 0; i < work.size(); ++i) {
      if (skipped[i]) {
        cut_short = true;
        continue;
      }
      if (outcome[i] == InstanceOutcome::kNoInstance) ++stats.no_instance;
      else if (outcome[i] == InstanceOutcome::kNotProved) ++stats.not_proved;
      else ++stats.proved;
    }
    it.prove_s = since(t);

    // 4. Apply, in rule order.
    t = Clock::now();
    const size_t nodes_before = egraph_.num_nodes(), classes_before = egraph_.num_classes();
    bool node_limit = false;
    for (size_t i = 0; i < work.size() && !node_limit; ++i) {
      if (!proved[i]) continue;
      applications_.push_back(work[i].first);
      const auto origin = static_cast<uint32_t>(applications_.size());
      const ApplyOutcome a = apply_proved(egraph_, *proved[i], *work[i].second, origin, options_.filter_cycles);
      ++it.applied;
      it.unions += a.unions;
      stats.cycles_filtered += a.cycles_filtered;
      node_limit = egraph_.num_nodes() >= options_.node_limit;
    }
    stats.unions += it.unions;
    it.apply_s = since(t);

    // 5. Rebuild.
    t = Clock::now();
    egraph_.rebuild();
    if (it.unions > 0) tried = recanonicalise(tried, egraph_);
    if (options_.filter_cycles && it.unions > 0) {
      const NodeCosts costs(egraph_, cost_, &signature_costs);
      stats.cycle_nodes_removed += static_cast<int64_t>(egraph_.break_cycles(greedy_extract(egraph_, costs).selection.choice));
    }
    it.rebuild_s = since(t);
    it.nodes = egraph_.num_nodes();
    it.classes = egraph_.num_classes();
    for (const RuleSchedule& s : schedule) it.banned += s.banned_until > iteration + 1;
    stats.search_s += it.search_s;
    stats.prove_s += it.prove_s;
    stats.apply_s += it.apply_s;
    stats.rebuild_s += it.rebuild_s;
    stats.per_iteration.push_back(it);
    stats.iterations = iteration + 1;

    if (node_limit) {
      stats.stop = StopReason::kNodeLimit;
      break;
    }
    if (cut_short) {
      stats.stop = StopReason::kTimeLimit;
      break;
    }
    const bool changed = it.unions > 0 || it.nodes != nodes_before || it.classes != classes_before;
    if (!changed) {
      if (it.banned == 0) {
        stats.stop = StopReason::kSaturated;
        break;
      }
      // Nothing else to do: lift the bans now rather than idle (egg).
      for (RuleSchedule& s : schedule) s.banned_until = 0;
    }
  }
  stats.seconds = since(start);
  return stats;
}

}  // namespace tgr::saturation
