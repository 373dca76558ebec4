#include "saturation/runner.h"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "ir/hash.h"
#include "optimizer/matcher.h"
#include "saturation/extract.h"
#include "saturation/pattern.h"
#include "saturation/rewrite.h"

namespace tgr::saturation {

std::string_view stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::kSaturated:
      return "saturated";
    case StopReason::kNodeLimit:
      return "node_limit";
    case StopReason::kIterationLimit:
      return "iteration_limit";
    case StopReason::kTimeLimit:
      return "time_limit";
    case StopReason::kGoal:
      return "goal";
  }
  return "unknown";
}

namespace {

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

MatchKey recanonicalise(MatchKey k, const EGraph& egraph) {
  for (size_t i = 2; i < 2 + k[1]; ++i) k[i] = egraph.find(k[i]);
  return k;
}

MatchKeySet recanonicalise(const MatchKeySet& keys, const EGraph& egraph) {
  MatchKeySet out;
  out.reserve(keys.size());
  for (const MatchKey& k : keys) out.insert(recanonicalise(k, egraph));
  return out;
}

template <class Value>
std::unordered_map<MatchKey, Value, MatchKeyHash> recanonicalise(
    const std::unordered_map<MatchKey, Value, MatchKeyHash>& keys, const EGraph& egraph) {
  std::unordered_map<MatchKey, Value, MatchKeyHash> out;
  out.reserve(keys.size());
  for (const auto& [k, v] : keys) out.emplace(recanonicalise(k, egraph), v);
  return out;
}

// Directed rules that are one rule up to the names of their variables (a
// generated database holds many: add(add(b0, b1), b2) and add(add(k0, k1),
// k2) were generated at different kinds of shapes) match the same e-nodes
// and give one instance up to names: one of each is matched. Where a side
// has a shape-dependent parameter, the generator's shapes take part in
// re-deriving it, so they are part of the key.
std::string rule_key(const optimizer::DirectedRule& rule) {
  std::vector<std::string> order;
  std::string key = rename_variables(rule.text, &order);
  key += rule.partial ? " | partial" : " | full";
  bool shape_params = false;
  for (const Graph* g : {&rule.graphs.source, &rule.graphs.target})
    for (const Node& n : g->nodes())
      if (n.is_op())
        for (const auto& [name, value] : n.params.entries())
          shape_params = shape_params || optimizer::is_shape_param(n.op->name, name);
  for (const std::string& var : order) {
    const auto v = rule.graphs.source.find_input(var);
    if (!v) continue;
    key += ' ';
    key += dtype_name(rule.graphs.source.dtype(*v));
    if (shape_params) {
      key += ':';
      key += shape_to_string(rule.graphs.source.shape(*v));
    }
  }
  return key;
}

constexpr size_t kSpreadScan = 4;  // matches searched per rule and iteration: this many times its limit
constexpr double kLaunchUs = 3.0;  // the analytic model's launch overhead: what a kernel costs at small shapes
// The share of an iteration's instantiation places (1 / this) given to every rule in turn (see "Schedule").
constexpr size_t kFairShareDivisor = 4;

// Kernels the rule's target launches minus its source's, for a match whose
// variables of constant classes are weights: an operator of weights only
// is folded, a view (reshape, split) launches nothing.
int kernel_delta(const optimizer::DirectedRule& rule, const PatternMatch& match, const EGraph& egraph) {
  auto kernels = [&](const Graph& g) {
    std::vector<char> constant(g.nodes().size(), 0);
    for (size_t i = 0; i < g.inputs().size(); ++i) {
      const int32_t in = g.inputs()[i];
      // The target's inputs are the source's variables, in the same order.
      constant[in] = static_cast<char>(i < match.variables.size() && egraph.data(match.variables[i]).constant);
    }
    int n = 0;
    for (int32_t i = 0; i < static_cast<int32_t>(g.nodes().size()); ++i) {
      const Node& node = g.node(i);
      if (node.is_constant()) constant[i] = 1;
      if (!node.is_op()) continue;
      constant[i] = static_cast<char>(
          std::all_of(node.inputs.begin(), node.inputs.end(), [&](ValueRef v) { return constant[v.node] != 0; }));
      // A transpose is a view only where its readers take strides, which a rule's graph does not show: a kernel.
      const ViewKind view = node.op->traits.view;
      if (!constant[i] && (view == ViewKind::kNone || view == ViewKind::kPermute)) ++n;
    }
    return n;
  };
  return kernels(rule.graphs.target) - kernels(rule.graphs.source);
}

// The matches a banned rule keeps: `limit` of them, taken in turn from
// groups of matches that share an anchor, the class of the first variable
// that is not a constant (the value the rewrite reads: a convolution
// merge's shared input), so each part of the model gets its share (the
// first found would all be in the model's first blocks).
void keep_spread(std::vector<PatternMatch>& found, size_t limit, const EGraph& egraph) {
  if (found.size() <= limit) return;
  auto anchor = [&](const PatternMatch& m) {
    for (ClassId c : m.variables)
      if (!egraph.data(c).constant) return c;
    return m.variables.empty() ? kNoClass : m.variables.front();
  };
  std::vector<ClassId> anchors;                         // in order of first appearance
  std::unordered_map<ClassId, std::vector<size_t>> groups;  // anchor -> indices into found
  for (size_t i = 0; i < found.size(); ++i) {
    auto [g, fresh] = groups.try_emplace(anchor(found[i]));
    if (fresh) anchors.push_back(g->first);
    g->second.push_back(i);
  }
  std::vector<size_t> keep;
  for (size_t round = 0; keep.size() < limit; ++round)
    for (ClassId a : anchors) {
      const std::vector<size_t>& g = groups[a];
      if (round < g.size()) keep.push_back(g[round]);
      if (keep.size() == limit) break;
    }
  std::sort(keep.begin(), keep.end());
  std::vector<PatternMatch> kept;
  kept.reserve(limit);
  for (size_t i : keep) kept.push_back(std::move(found[i]));
  found = std::move(kept);
}

// Whether a two-output rule's source reads the same with its outputs
// swapped, up to variable names: (relu(add(b0, conv2d(i0, k0))),
// relu(add(b1, conv2d(i0, k1)))). Such a rule matches every pair twice, and
// the two instances differ only in the order of the merged channels, which
// no cost sees: one order is enough (and the merged operators the other
// would add, matched again with each other, would flood the e-graph).
bool symmetric_outputs(const optimizer::DirectedRule& rule) {
  const std::string source = rule.text.substr(0, rule.text.find(" => "));
  if (source.size() < 2 || source.front() != '(' || source.back() != ')') return false;
  int depth = 0;
  size_t comma = std::string::npos;
  for (size_t i = 1; i + 1 < source.size(); ++i) {
    const char c = source[i];
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      if (comma != std::string::npos) return false;  // three or more outputs
      comma = i;
    }
  }
  if (comma == std::string::npos) return false;
  const std::string first = source.substr(1, comma - 1), second = source.substr(comma + 2, source.size() - comma - 3);
  return rename_variables("(" + first + ", " + second + ")") == rename_variables("(" + second + ", " + first + ")");
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// (rule, match) pairs of one iteration; the matches live in the iteration's
// per-rule lists.
using Work = std::vector<std::pair<size_t, const PatternMatch*>>;

// egg's BackoffScheduler (runner.h, step 2): a rule with more new matches
// than its limit is banned for a while, longer each time.
class BackoffScheduler {
 public:
  BackoffScheduler(const RunnerOptions& options, size_t rules) : options_(options), rules_(rules) {}

  bool banned(size_t rule, int iteration) const { return rules_[rule].banned_until > iteration; }
  // New matches `rule` may have before it is banned: its limit doubled each time it was.
  size_t match_limit(size_t rule, bool shipped) const {
    return (shipped ? options_.shipped_match_limit : options_.match_limit) << std::min(rules_[rule].times_banned, 20);
  }
  // Bans `rule` from the next iteration on, ban_length doubled each time it was.
  void ban(size_t rule, int iteration) {
    Schedule& s = rules_[rule];
    s.banned_until = iteration + 1 + (options_.ban_length << std::min(s.times_banned, 20));
    ++s.times_banned;
  }
  // Rules still banned after `iteration`.
  int banned_after(int iteration) const {
    int n = 0;
    for (const Schedule& s : rules_) n += s.banned_until > iteration + 1;
    return n;
  }
  void lift_bans() {
    for (Schedule& s : rules_) s.banned_until = 0;
  }

 private:
  struct Schedule {
    int times_banned = 0;
    int banned_until = 0;  // iteration
  };
  const RunnerOptions& options_;
  std::vector<Schedule> rules_;
};

// Matches on their way to a proof, across iterations (runner.h, steps 1 and
// 3): those tried (proved, not proved, or without an instance) are never
// matched again; those waiting (left by the proof time share) keep the local
// cost change their instance had, which ranks them next time.
class ProofQueue {
 public:
  bool tried(const MatchKey& key) const { return tried_.count(key) > 0; }
  void add_tried(MatchKey key) { tried_.insert(std::move(key)); }
  // Proved but not applied (a node limit, the time): matched again later.
  void forget(const MatchKey& key) { tried_.erase(key); }
  void wait(MatchKey key, double delta) { waiting_[std::move(key)] = delta; }
  // An attempted proof: no longer waiting, tried.
  void settle(MatchKey key) {
    waiting_.erase(key);
    tried_.insert(std::move(key));
  }
  const double* waiting_delta(const MatchKey& key) const {
    auto w = waiting_.find(key);
    return w == waiting_.end() ? nullptr : &w->second;
  }
  // After a rebuild that united classes: the keys by their classes' new representatives.
  void recanonicalise(const EGraph& egraph) {
    tried_ = saturation::recanonicalise(tried_, egraph);
    waiting_ = saturation::recanonicalise(waiting_, egraph);
  }
  size_t last_attempted = 0;  // proofs attempted in the last iteration

 private:
  MatchKeySet tried_;
  std::unordered_map<MatchKey, double, MatchKeyHash> waiting_;
};

// What one iteration's search found, per rule.
struct Found {
  explicit Found(size_t rules)
      : matches(rules), repeated(rules, 0), weight_only(rules, 0), mirrored(rules, 0), limits(rules, 0) {}
  std::vector<std::vector<PatternMatch>> matches;
  std::vector<int64_t> repeated, weight_only, mirrored;
  std::vector<size_t> limits;
};

// The instances of an iteration's work, by index into it.
struct Instances {
  explicit Instances(size_t n) : instances(n), delta(n, 0.0), holds(n, 0), not_reached(n, 0), proved(n, 0) {}
  std::vector<std::optional<MatchInstance>> instances;
  std::vector<double> delta;  // local cost change (target minus source)
  std::vector<char> holds, not_reached, proved;
};

// One Runner::run: the state the iterations share, and each step of one
// iteration (runner.h) as a function.
class RunLoop {
 public:
  struct Applications {
    std::vector<size_t>& rules;
    std::vector<optimizer::AppliedRewrite>& rewrites;
    std::vector<std::string>& instances;
  };

  RunLoop(EGraph& egraph, const std::vector<optimizer::DirectedRule>& rules, optimizer::InstanceProver& prover,
          const RunnerOptions& options, optimizer::CostModel* cost, optimizer::InstanceCache& cache,
          Applications applied)
      : egraph_(egraph),
        rules_(rules),
        prover_(prover),
        options_(options),
        cost_(cost),
        cache_(cache),
        applied_(applied),
        start_(Clock::now()),
        patterns_(rules.size()),
        symmetric_(rules.size(), 0),
        scheduler_(options, rules.size()),
        active_(rules.size(), 1),
        stage_of_(rules.size(), 0) {}

  RunnerStats run() {
    set_up();
    for (int iteration = 0;; ++iteration) {
      if (std::optional<StopReason> stop = stop_before(iteration)) {
        stats_.stop = *stop;
        break;
      }
      if (std::optional<StopReason> stop = run_one(iteration)) {
        stats_.stop = *stop;
        break;
      }
    }
    stats_.renamed_proof_hits = proofs_.hits();
    stats_.seconds = seconds_since(start_);
    return stats_;
  }

 private:
  // --- time ---
  double elapsed() const { return seconds_since(start_); }
  bool out_of_time() const { return elapsed() >= options_.time_limit_s; }
  bool goal_reached() const { return options_.goal && options_.goal(); }

  // --- stages (runner.h, "Stages") ---

  // Stage 0 the shipped rules, stage 1 the other rules of at most
  // kSmallRuleOps operators a side, stage 2 the rest; each stage runs with
  // the rules of the stages before it.
  void assign_stages() {
    if (!options_.shipped_rules_first) return;
    std::vector<char> present(3, 0);
    for (size_t r = 0; r < rules_.size(); ++r) {
      const optimizer::DirectedRule& rule = rules_[r];
      const int ops = std::max(rule.graphs.source.num_ops(), rule.graphs.target.num_ops());
      stage_of_[r] = rule.shipped ? 0 : ops <= kSmallRuleOps ? 1 : 2;
      present[static_cast<size_t>(stage_of_[r])] = 1;
    }
    while (stage_ < 2 && !present[static_cast<size_t>(stage_)]) ++stage_;
    last_stage_ = present[2] ? 2 : present[1] ? 1 : 0;
  }

  // The node limit of the current stage: what it may add beyond where it
  // started (RunnerOptions::growth_limit), within node_limit; the last stage
  // of a staged run (a database's rules) keeps to node_limit.
  size_t stage_node_limit() const {
    if (stage_ == last_stage_ && stage_ > first_run_stage_) return options_.node_limit;
    return std::min(options_.node_limit, egraph_.num_nodes() + stage_growth_);
  }

  // A stage at its node limit hands on to the next, while the whole run's limit allows it.
  bool can_hand_on() const { return stage_ < last_stage_ && egraph_.num_nodes() < options_.node_limit; }

  // A stage before the last ends when it saturates or when its share of the
  // time left at its start is spent.
  double stage_end(double stage_start_s) const {
    return stage_start_s + options_.lead_time_share * std::max(0.0, options_.time_limit_s - stage_start_s);
  }

  void next_stage() {
    ++stage_;
    if (stage_ == keyed_late_) activate(keyed_late_, keyed_late_);
    stage_end_s_ = stage_end(elapsed());
    stats_.node_limit = stage_node_limit();
    scheduler_.lift_bans();
  }

  // Rules that read the same as another up to variable names are matched
  // once: the one of the earliest stage is kept (then the first in the
  // rules' order), so a shipped rule that a database also holds runs in the
  // shipped stage, as it does without a database (docs/benchmarks.md, "More
  // rules, not worse, under a time limit"). The rules of the last stage of
  // a staged run are keyed when it starts: a run stopped before then does
  // not spend the time. Keyed in parallel and within the time limit: a rule
  // left without a key when the time is up stays out.
  void activate(int first_stage, int last_stage_keyed) {
    std::vector<size_t> members;
    for (size_t r = 0; r < rules_.size(); ++r)
      if (stage_of_[r] >= first_stage && stage_of_[r] <= last_stage_keyed) members.push_back(r);
    std::stable_sort(members.begin(), members.end(), [&](size_t a, size_t b) { return stage_of_[a] < stage_of_[b]; });
    std::vector<std::string> keys(members.size());
    std::vector<char> keyed(members.size(), 0);
    tbb::parallel_for(size_t{0}, members.size(), [&](size_t i) {
      if (out_of_time()) return;
      keys[i] = rule_key(rules_[members[i]]);
      keyed[i] = 1;
    });
    for (size_t i = 0; i < members.size(); ++i) {
      if (!keyed[i]) {
        active_[members[i]] = 0;
      } else if (!seen_keys_.insert(std::move(keys[i])).second) {
        active_[members[i]] = 0;
        ++stats_.renamed_rules;
      }
    }
  }

  void set_up() {
    // For the pattern searches (none for a limit too large to be a time point).
    if (options_.time_limit_s < 1e6)
      deadline_ =
          start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.time_limit_s));
    const size_t limit = effective_node_limit(options_, egraph_.num_nodes());
    stage_growth_ = limit > egraph_.num_nodes() ? limit - egraph_.num_nodes() : 0;
    assign_stages();
    first_run_stage_ = stage_;
    stats_.node_limit = stage_node_limit();
    stats_.iteration_limit = options_.iteration_limit;
    keyed_late_ = last_stage_ == 2 ? 2 : 3;  // the stage keyed when it starts (3: none)
    activate(0, keyed_late_ - 1);
    if (!egraph_.clean()) egraph_.rebuild();
    // The lead stage's share is of the time the iterations have (setting up
    // the patterns of a large database takes a second or two of the limit).
    stats_.setup_s = elapsed();
    stage_end_s_ = stage_end(stats_.setup_s);
  }

  // --- one iteration ---

  std::optional<StopReason> stop_before(int iteration) {
    if (goal_reached()) return StopReason::kGoal;
    if (iteration >= options_.iteration_limit) return StopReason::kIterationLimit;
    while (egraph_.num_nodes() >= stats_.node_limit && can_hand_on()) next_stage();
    if (egraph_.num_nodes() >= stats_.node_limit) return StopReason::kNodeLimit;
    if (out_of_time()) return StopReason::kTimeLimit;
    while (stage_ < last_stage_ && elapsed() >= stage_end_s_) next_stage();
    return std::nullopt;
  }

  // Steps 1 to 5 of runner.h; the reason to stop after them, if any.
  std::optional<StopReason> run_one(int iteration) {
    IterationStats it;
    cut_short_ = false;
    Found found = search(iteration, it);
    Work work = schedule(found, iteration, it);
    choose(work, it);
    const auto t = Clock::now();
    const Clock::time_point slice_end = proof_slice_end();  // counted from before the instantiation
    Instances instances = instantiate(work, it);
    prove(work, instances, slice_end, it);
    const int64_t deferred = it.deferred;
    stats_.deferred_matches += deferred;
    it.prove_s = seconds_since(t);
    const size_t nodes_before = egraph_.num_nodes(), classes_before = egraph_.num_classes();
    const bool node_limit = apply(work, instances, it);
    rebuild(it);
    record(iteration, it);

    if (goal_reached()) return StopReason::kGoal;
    if (node_limit && !can_hand_on()) return StopReason::kNodeLimit;
    if (cut_short_) return StopReason::kTimeLimit;
    const bool changed = it.unions > 0 || it.nodes != nodes_before || it.classes != classes_before || deferred > 0;
    if (!changed && stage_ < last_stage_) {  // the stage saturated (bans lifted early): the next one from here
      next_stage();
      return std::nullopt;
    }
    if (!changed) {
      if (it.banned == 0) return StopReason::kSaturated;
      scheduler_.lift_bans();  // nothing else to do: lift the bans now rather than idle (egg)
    }
    return std::nullopt;
  }

  // 1. Search: every rule of the stages so far that is not banned, past its
  // limit so that a banned rule keeps matches spread over the model
  // (keep_spread), not only the first found.
  Found search(int iteration, IterationStats& it) {
    const auto t = Clock::now();
    Found found(rules_.size());
    auto search_rule = [&](size_t r) {
      if (!active_[r] || scheduler_.banned(r, iteration)) return;
      if (stage_of_[r] > stage_) return;
      if (out_of_time()) {
        cut_short_ = true;
        return;
      }
      found.limits[r] = scheduler_.match_limit(r, rules_[r].shipped);
      if (!patterns_[r]) {  // built when its stage first searches it (each rule is one task of the loop)
        patterns_[r].emplace(rules_[r]);
        symmetric_[r] = static_cast<char>(symmetric_outputs(rules_[r]));
      }
      found.matches[r] = patterns_[r]->search(
          egraph_, kSpreadScan * found.limits[r], [&](const PatternMatch& m) { return is_new(r, m, found); },
          deadline_);
      if (out_of_time()) cut_short_ = true;
    };
    if (options_.parallel) tbb::parallel_for(size_t{0}, rules_.size(), search_rule);
    else
      for (size_t r = 0; r < rules_.size(); ++r) search_rule(r);
    it.search_s = seconds_since(t);
    return found;
  }

  // Whether a match of rule `r` is worth instantiating, counted in `found` when not.
  bool is_new(size_t r, const PatternMatch& m, Found& found) const {
    if (std::all_of(m.outputs.begin(), m.outputs.end(), [&](ClassId c) { return egraph_.data(c).constant; })) {
      ++found.weight_only[r];
      return false;
    }
    if (symmetric_[r] && m.outputs[0] > m.outputs[1]) {
      ++found.mirrored[r];
      return false;
    }
    if (queue_.tried(key_of(r, m))) {
      ++found.repeated[r];
      return false;
    }
    return true;
  }

  // 2. Schedule: ban the rules that flood, keep the others' matches. Unlike
  // egg, a banned rule keeps `limit` matches: a multi-pattern rule (two
  // convolutions of one input) floods through the variants of its operands'
  // classes, and dropping every match would starve the very merges it is
  // there for.
  Work schedule(Found& found, int iteration, IterationStats& it) {
    Work work;
    for (size_t r = 0; r < rules_.size(); ++r) {
      stats_.repeated_matches += found.repeated[r];
      stats_.weight_only_matches += found.weight_only[r];
      stats_.mirrored_matches += found.mirrored[r];
      std::vector<PatternMatch>& matches = found.matches[r];
      if (matches.size() > found.limits[r]) {
        scheduler_.ban(r, iteration);
        ++stats_.bans;
        stats_.dropped_matches += static_cast<int64_t>(matches.size() - found.limits[r]);
        keep_spread(matches, found.limits[r], egraph_);
      }
      for (const PatternMatch& m : matches) work.emplace_back(r, &m);
    }
    it.matches = static_cast<int64_t>(work.size());
    stats_.matches += it.matches;
    return work;
  }

  // Only as many matches are instantiated as the proofs can get to (four
  // times the proofs of the last iteration, at least 256), the most
  // promising first: a waiting match by the local cost change its instance
  // had, a new one by an estimate from the rule itself, the kernels its
  // target launches minus its source's, at the launch overhead each. Under a
  // cost model that fuses operators (whose costs launches do not predict), a
  // share of the places goes to every rule in turn, each rule's most
  // promising first, so that a rule that adds launches to run faster is tried
  // too (docs/benchmarks.md, "GPU (H100): split-K convolutions, plan costs in
  // saturation"). The rest wait; the work keeps its order.
  void choose(Work& work, IterationStats& it) {
    std::vector<std::pair<double, size_t>> ranked;  // (estimated delta, index in work)
    for (size_t i = 0; i < work.size(); ++i) {
      const double* waiting = queue_.waiting_delta(key_of(work[i].first, *work[i].second));
      ranked.emplace_back(
          waiting ? *waiting : kLaunchUs * kernel_delta(rules_[work[i].first], *work[i].second, egraph_), i);
    }
    const size_t take = std::max<size_t>(256, 4 * queue_.last_attempted);
    if (ranked.size() > take) {
      std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      const size_t fair = cost_ && cost_->fuses_operators() ? take / kFairShareDivisor : 0;
      std::vector<char> chosen(ranked.size(), 0);
      size_t placed = place_fair_share(work, ranked, fair, chosen);
      for (size_t k = 0; k < ranked.size() && placed < take; ++k)
        if (!chosen[k]) {
          chosen[k] = 1;
          ++placed;
        }
      std::vector<std::pair<double, size_t>> kept_ranked;
      for (size_t k = 0; k < ranked.size(); ++k)
        if (chosen[k]) kept_ranked.push_back(ranked[k]);
      it.deferred += static_cast<int64_t>(ranked.size() - kept_ranked.size());
      ranked = std::move(kept_ranked);
      std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    }
    Work kept;
    for (const auto& [d, i] : ranked) kept.push_back(work[i]);
    work = std::move(kept);
  }

  // `fair` places of `ranked` (best first), to every rule in turn; returns how many were placed.
  size_t place_fair_share(const Work& work, const std::vector<std::pair<double, size_t>>& ranked, size_t fair,
                          std::vector<char>& chosen) const {
    size_t placed = 0;
    if (fair == 0) return placed;
    // (per rule: a database's 400,000 directions are not indexed for nothing)
    std::vector<std::vector<size_t>> by_rule(rules_.size());  // positions in ranked, best first
    for (size_t k = 0; k < ranked.size(); ++k) by_rule[work[ranked[k].second].first].push_back(k);
    for (size_t round = 0; placed < fair; ++round) {
      bool any = false;
      for (const auto& positions : by_rule) {
        if (round >= positions.size() || placed >= fair) continue;
        any = true;
        chosen[positions[round]] = 1;
        ++placed;
      }
      if (!any) break;
    }
    return placed;
  }

  // The end of this iteration's proofs: prove_share of the time its stage
  // has left, at least min_prove_slice_s.
  Clock::time_point proof_slice_end() const {
    const auto now = Clock::now();
    const double left = (stage_ < last_stage_ ? stage_end_s_ : options_.time_limit_s) - elapsed();
    const double slice = std::max(std::min(left, options_.min_prove_slice_s), left * options_.prove_share);
    return now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(slice));
  }

  // 3a. Instantiate every chosen match (cheap; the time limit holds here too:
  // thousands of matches can take seconds).
  Instances instantiate(const Work& work, IterationStats& it) {
    const auto t = Clock::now();
    Instances in(work.size());
    auto instantiate_one = [&](size_t i) {
      if (out_of_time()) {
        cut_short_ = true;
        in.not_reached[i] = 1;
        return;
      }
      in.instances[i] = instantiate_match(egraph_, rules_[work[i].first], *work[i].second, &cache_);
      in.holds[i] = static_cast<char>(in.instances[i] && already_holds(egraph_, *in.instances[i], *work[i].second));
      if (in.instances[i] && cost_) in.delta[i] = local_cost_delta(egraph_, *in.instances[i], *cost_);
    };
    if (options_.parallel) tbb::parallel_for(size_t{0}, work.size(), instantiate_one);
    else
      for (size_t i = 0; i < work.size(); ++i) instantiate_one(i);
    it.instantiate_s = seconds_since(t);
    return in;
  }

  // 3b. Prove (what costs) in order of promise, the locally cheapening
  // rewrites first, for this iteration's share of the time left; the rest
  // wait for a later iteration (not remembered as tried, they are matched
  // again).
  void prove(const Work& work, Instances& in, Clock::time_point slice_end, IterationStats& it) {
    std::vector<size_t> order;
    for (size_t i = 0; i < work.size(); ++i) {
      if (in.not_reached[i]) continue;
      if (in.instances[i] && !in.holds[i]) {
        order.push_back(i);
      } else {
        ++(in.instances[i] ? stats_.already_holding : stats_.no_instance);
        queue_.add_tried(key_of(work[i].first, *work[i].second));
      }
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return in.delta[a] < in.delta[b]; });
    std::vector<char> attempted(work.size(), 0);
    std::atomic<size_t> next{0};
    auto prove_next = [&] {
      for (;;) {
        const size_t k = next++;
        if (k >= order.size()) return;
        if (out_of_time()) {
          cut_short_ = true;
          return;
        }
        if (Clock::now() >= slice_end) return;
        const size_t i = order[k];
        attempted[i] = 1;
        in.proved[i] =
            static_cast<char>(proofs_.proved(*in.instances[i], rules_[work[i].first], prover_, options_.region_check));
      }
    };
    if (options_.parallel) {
      // Workers that take the next instance in order (a parallel_for over
      // the instances would not keep to the order).
      const auto workers = static_cast<size_t>(std::max(1, tbb::this_task_arena::max_concurrency()));
      tbb::parallel_for(size_t{0}, workers, [&](size_t) { prove_next(); });
    } else {
      prove_next();
    }
    queue_.last_attempted = 0;
    for (size_t i : order) {
      MatchKey key = key_of(work[i].first, *work[i].second);
      if (!attempted[i]) {
        ++it.deferred;
        queue_.wait(std::move(key), in.delta[i]);
        continue;
      }
      ++queue_.last_attempted;
      ++(in.proved[i] ? stats_.proved : stats_.not_proved);
      queue_.settle(std::move(key));
    }
  }

  // 4. Apply, in rule order; stops at the node limit. Each union checks for
  // the cycles it would close, a walk of the e-graph: thousands of
  // applications to a large one take many seconds, so the time limit holds
  // here too. What was proved but not applied is matched again later (its
  // proof cached), so that the next stage applies it. Returns whether the
  // node limit was reached.
  bool apply(const Work& work, const Instances& in, IterationStats& it) {
    const auto t = Clock::now();
    bool node_limit = false;
    size_t i = 0;
    for (; i < work.size() && !node_limit; ++i) {
      if (!in.proved[i]) continue;
      if (out_of_time()) {
        cut_short_ = true;
        break;
      }
      const optimizer::DirectedRule& rule = rules_[work[i].first];
      applied_.rules.push_back(work[i].first);
      applied_.rewrites.push_back(optimizer::start_record(rule));
      applied_.instances.push_back(options_.record_instances
                                       ? in.instances[i]->instance.text + " | " + in.instances[i]->instance.shapes
                                       : std::string());
      const auto origin = static_cast<uint32_t>(applied_.rules.size());
      const ApplyOutcome a = apply_proved(egraph_, *in.instances[i], *work[i].second, origin, options_.filter_cycles,
                                          applied_.rewrites.back().tag, &applied_.rewrites.back());
      ++it.applied;
      it.unions += a.unions;
      stats_.cycles_filtered += a.cycles_filtered;
      node_limit = egraph_.num_nodes() >= stats_.node_limit;
    }
    for (; i < work.size(); ++i)
      if (in.proved[i]) queue_.forget(key_of(work[i].first, *work[i].second));
    stats_.unions += it.unions;
    it.apply_s = seconds_since(t);
    return node_limit;
  }

  // 5. Rebuild, then with cycle filtering Tensat's cycle removal.
  void rebuild(IterationStats& it) {
    const auto t = Clock::now();
    egraph_.rebuild();
    if (it.unions > 0) queue_.recanonicalise(egraph_);
    if (options_.filter_cycles && it.unions > 0) {
      const NodeCosts costs(egraph_, cost_, &signature_costs_);
      stats_.cycle_nodes_removed +=
          static_cast<int64_t>(egraph_.break_cycles(greedy_extract(egraph_, costs).selection.choice));
    }
    it.rebuild_s = seconds_since(t);
    it.nodes = egraph_.num_nodes();
    it.classes = egraph_.num_classes();
  }

  void record(int iteration, IterationStats& it) {
    it.banned = scheduler_.banned_after(iteration);
    stats_.search_s += it.search_s;
    stats_.instantiate_s += it.instantiate_s;
    stats_.prove_s += it.prove_s;
    stats_.apply_s += it.apply_s;
    stats_.rebuild_s += it.rebuild_s;
    stats_.per_iteration.push_back(it);
    stats_.iterations = iteration + 1;
    if (stage_ == 0 && last_stage_ > 0) stats_.lead_iterations = iteration + 1;
    if (stage_ <= 1 && last_stage_ == 2) stats_.small_rule_iterations = iteration + 1;
  }

  EGraph& egraph_;
  const std::vector<optimizer::DirectedRule>& rules_;
  optimizer::InstanceProver& prover_;
  const RunnerOptions& options_;
  optimizer::CostModel* cost_;
  optimizer::InstanceCache& cache_;
  Applications applied_;
  const Clock::time_point start_;
  std::optional<Clock::time_point> deadline_;
  RunnerStats stats_;
  std::atomic<bool> cut_short_{false};  // the time limit stopped a step of this iteration
  // Each rule's pattern (and whether its two outputs read the same up to
  // renaming), built when its stage first searches it.
  std::vector<std::optional<Pattern>> patterns_;
  std::vector<char> symmetric_;
  BackoffScheduler scheduler_;
  ProofQueue queue_;
  SignatureCosts signature_costs_;
  ProofCache proofs_;
  // Stages.
  std::vector<char> active_;  // matched at all (not a renamed duplicate, keyed in time)
  std::vector<int> stage_of_;
  int stage_ = 0, last_stage_ = 0, first_run_stage_ = 0, keyed_late_ = 3;
  size_t stage_growth_ = 0;  // what a stage before the last may add (RunnerOptions::growth_limit)
  double stage_end_s_ = 0;
  std::unordered_set<std::string> seen_keys_;
};

}  // namespace

Runner::Runner(EGraph& egraph, const std::vector<optimizer::DirectedRule>& rules, optimizer::InstanceProver& prover,
               RunnerOptions options, optimizer::CostModel* cost)
    : egraph_(egraph), rules_(rules), prover_(prover), options_(options), cost_(cost) {}

size_t effective_node_limit(const RunnerOptions& options, size_t start_nodes) {
  if (options.growth_limit <= 0) return options.node_limit;
  const auto scaled = static_cast<size_t>(options.growth_limit * static_cast<double>(start_nodes));
  return std::min(options.node_limit, std::max(options.min_node_limit, scaled));
}

// egg's Runner::run: set up, then run_one until a step says to stop.
RunnerStats Runner::run() {
  RunLoop loop(egraph_, rules_, prover_, options_, cost_, instance_cache_, {applications_, rewrites_, instances_});
  return loop.run();
}

}  // namespace tgr::saturation
