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
// merge's shared input), so each part of the model gets its share. Taking
// the first found instead gave them all to the model's first blocks:
// GoogLeNet's later inception blocks never got their three-way merges.
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
// no cost sees: one order is enough (and the merged operators they would
// add, matched again with each other, were most of a flooding rule's
// matches on GoogLeNet).
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

struct RuleSchedule {
  int times_banned = 0;
  int banned_until = 0;  // iteration
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

RunnerStats Runner::run() {
  const auto start = Clock::now();
  auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  auto out_of_time = [&] { return since(start) >= options_.time_limit_s; };
  // For the pattern searches (none for a limit too large to be a time point).
  std::optional<Clock::time_point> deadline;
  if (options_.time_limit_s < 1e6)
    deadline =
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.time_limit_s));
  RunnerStats stats;
  // The scaled limit (runner.h, RunnerOptions::growth_limit): what a stage
  // may add beyond where it started, within options_.node_limit; the last
  // stage of a staged run (a database's rules) keeps to options_.node_limit.
  const size_t stage_growth = [&] {
    const size_t limit = effective_node_limit(options_, egraph_.num_nodes());
    return limit > egraph_.num_nodes() ? limit - egraph_.num_nodes() : 0;
  }();
  // Each rule's pattern (and whether its two outputs read the same up to
  // renaming) is built when its stage first searches it: a --max-ops 4
  // database's later stage costs nothing before it runs.
  std::vector<std::optional<Pattern>> patterns(rules_.size());
  std::vector<char> symmetric(rules_.size(), 0);
  std::vector<RuleSchedule> schedule(rules_.size());
  std::vector<char> active(rules_.size(), 1);
  // Staging (runner.h, "Stages"): stage 0 the shipped rules, stage 1 the
  // other rules of at most kSmallRuleOps operators a side, stage 2 the rest;
  // each stage runs with the rules of the stages before it.
  std::vector<int> stage_of(rules_.size(), 0);
  int stage = 0, last_stage = 0;
  if (options_.shipped_rules_first) {
    std::vector<char> present(3, 0);
    for (size_t r = 0; r < rules_.size(); ++r) {
      const optimizer::DirectedRule& rule = rules_[r];
      const int ops = std::max(rule.graphs.source.num_ops(), rule.graphs.target.num_ops());
      stage_of[r] = rule.shipped ? 0 : ops <= kSmallRuleOps ? 1 : 2;
      present[static_cast<size_t>(stage_of[r])] = 1;
    }
    while (stage < 2 && !present[static_cast<size_t>(stage)]) ++stage;
    last_stage = present[2] ? 2 : present[1] ? 1 : 0;
  }
  const int first_run_stage = stage;  // the first stage with rules
  auto stage_node_limit = [&] {
    if (stage == last_stage && stage > first_run_stage) return options_.node_limit;
    return std::min(options_.node_limit, egraph_.num_nodes() + stage_growth);
  };
  stats.node_limit = stage_node_limit();
  stats.iteration_limit = options_.iteration_limit;
  // A stage at its node limit hands on to the next, while the whole run's limit allows it.
  auto can_hand_on = [&] { return stage < last_stage && egraph_.num_nodes() < options_.node_limit; };
  // Rules that read the same as another up to variable names are matched
  // once: the one of the earliest stage is kept (then the first in the
  // rules' order), so a shipped rule that a database also holds (the
  // generated rules of rules/default.rules) runs in the shipped stage, as
  // it does without a database. When the database's copy was kept instead,
  // the shipped stage was rules/extra.rules alone, and DenseNet-121 with the
  // --max-ops 3 database (GPU plan costs) ended at x0.975, above the x0.949
  // of the default rules alone; kept in the shipped stage (and with
  // lead_time_share at 0.9), x0.933 (docs/benchmarks.md, "More rules, not
  // worse, under a time limit"). The rules of the last stage of a staged run
  // are keyed when it starts (a --max-ops 4 database's four-operator rules:
  // a second of keys that a run stopped before then does not spend).
  std::unordered_set<std::string> seen_keys;
  auto activate = [&](int first_stage, int last_stage_keyed) {  // the rules of these stages
    std::vector<size_t> members;
    for (size_t r = 0; r < rules_.size(); ++r)
      if (stage_of[r] >= first_stage && stage_of[r] <= last_stage_keyed) members.push_back(r);
    std::stable_sort(members.begin(), members.end(), [&](size_t a, size_t b) { return stage_of[a] < stage_of[b]; });
    // In parallel (a --max-ops 4 database has 400,000 directions, a second
    // of keys), and within the time limit: a rule left without a key when
    // the time is up stays out.
    std::vector<std::string> keys(members.size());
    std::vector<char> keyed(members.size(), 0);
    tbb::parallel_for(size_t{0}, members.size(), [&](size_t i) {
      if (out_of_time()) return;
      keys[i] = rule_key(rules_[members[i]]);
      keyed[i] = 1;
    });
    for (size_t i = 0; i < members.size(); ++i) {
      if (!keyed[i]) {
        active[members[i]] = 0;
      } else if (!seen_keys.insert(std::move(keys[i])).second) {
        active[members[i]] = 0;
        ++stats.renamed_rules;
      }
    }
  };
  const int keyed_late = last_stage == 2 ? 2 : 3;  // the stage keyed when it starts (3: none)
  activate(0, keyed_late - 1);
  MatchKeySet tried;                                           // attempted (or without an instance)
  std::unordered_map<MatchKey, double, MatchKeyHash> waiting;  // deferred: their local cost change
  size_t last_attempted = 0;                                   // proofs attempted in the last iteration
  SignatureCosts signature_costs;
  ProofCache proofs;
  if (!egraph_.clean()) egraph_.rebuild();
  auto goal_reached = [&] { return options_.goal && options_.goal(); };
  // The lead stage's share is of the time the iterations have (setting up
  // the patterns of a large database takes a second or two of the limit).
  const double setup_s = since(start);
  stats.setup_s = setup_s;
  // A stage before the last ends when it saturates or when its share of the
  // time left at its start is spent.
  auto stage_end = [&](double stage_start_s) {
    return stage_start_s + options_.lead_time_share * std::max(0.0, options_.time_limit_s - stage_start_s);
  };
  double stage_end_s = stage_end(setup_s);
  auto next_stage = [&] {
    ++stage;
    if (stage == keyed_late) activate(keyed_late, keyed_late);
    stage_end_s = stage_end(since(start));
    stats.node_limit = stage_node_limit();
    for (RuleSchedule& s : schedule) s.banned_until = 0;
  };

  for (int iteration = 0;; ++iteration) {
    if (goal_reached()) {
      stats.stop = StopReason::kGoal;
      break;
    }
    if (iteration >= options_.iteration_limit) {
      stats.stop = StopReason::kIterationLimit;
      break;
    }
    while (egraph_.num_nodes() >= stats.node_limit && can_hand_on()) next_stage();
    if (egraph_.num_nodes() >= stats.node_limit) {
      stats.stop = StopReason::kNodeLimit;
      break;
    }
    if (out_of_time()) {
      stats.stop = StopReason::kTimeLimit;
      break;
    }
    while (stage < last_stage && since(start) >= stage_end_s) next_stage();
    IterationStats it;

    // 1. Search.
    auto t = Clock::now();
    std::vector<std::vector<PatternMatch>> found(rules_.size());
    std::vector<int64_t> repeated(rules_.size(), 0), weight_only(rules_.size(), 0), mirrored(rules_.size(), 0);
    std::vector<size_t> limits(rules_.size(), 0);
    std::atomic<bool> cut_short{false};
    auto search_rule = [&](size_t r) {
      if (!active[r] || schedule[r].banned_until > iteration) return;
      if (stage_of[r] > stage) return;
      if (out_of_time()) {
        cut_short = true;
        return;
      }
      limits[r] = (rules_[r].shipped ? options_.shipped_match_limit : options_.match_limit)
                  << std::min(schedule[r].times_banned, 20);
      // Searched past the limit, so that a banned rule keeps matches spread
      // over the model (keep_spread), not only the first found.
      if (!patterns[r]) {  // (each rule is one task of the parallel loop)
        patterns[r].emplace(rules_[r]);
        symmetric[r] = static_cast<char>(symmetric_outputs(rules_[r]));
      }
      found[r] = patterns[r]->search(
          egraph_, kSpreadScan * limits[r],
          [&](const PatternMatch& m) {
            if (std::all_of(m.outputs.begin(), m.outputs.end(), [&](ClassId c) { return egraph_.data(c).constant; })) {
              ++weight_only[r];
              return false;
            }
            if (symmetric[r] && m.outputs[0] > m.outputs[1]) {
              ++mirrored[r];
              return false;
            }
            if (tried.count(key_of(r, m))) {
              ++repeated[r];
              return false;
            }
            return true;
          },
          deadline);
      if (out_of_time()) cut_short = true;
    };
    if (options_.parallel) tbb::parallel_for(size_t{0}, rules_.size(), search_rule);
    else
      for (size_t r = 0; r < rules_.size(); ++r) search_rule(r);
    it.search_s = since(t);

    // 2. Schedule: ban the rules that flood, keep the others' matches.
    std::vector<std::pair<size_t, const PatternMatch*>> work;
    for (size_t r = 0; r < rules_.size(); ++r) {
      stats.repeated_matches += repeated[r];
      stats.weight_only_matches += weight_only[r];
      stats.mirrored_matches += mirrored[r];
      if (found[r].size() > limits[r]) {
        RuleSchedule& s = schedule[r];
        s.banned_until = iteration + 1 + (options_.ban_length << std::min(s.times_banned, 20));
        ++s.times_banned;
        ++stats.bans;
        // Unlike egg, `limit` matches are kept: a multi-pattern rule (two
        // convolutions of one input) floods through the variants of its
        // operands' classes, and dropping every match would starve the very
        // merges it is there for.
        stats.dropped_matches += static_cast<int64_t>(found[r].size() - limits[r]);
        keep_spread(found[r], limits[r], egraph_);
      }
      for (const PatternMatch& m : found[r]) work.emplace_back(r, &m);
    }
    it.matches = static_cast<int64_t>(work.size());
    stats.matches += it.matches;
    // Only as many matches are instantiated as the proofs can get to (four
    // times the proofs of the last iteration, at least 256), the most
    // promising first: a waiting match by the local cost change its
    // instance had, a new one by an estimate from the rule itself, the
    // kernels its target launches minus its source's (operators of weights
    // and views launch none), at the launch overhead each. Instantiating
    // every match of a generated database would take as long as proving.
    {
      std::vector<std::pair<double, size_t>> ranked;  // (estimated delta, index in work)
      for (size_t i = 0; i < work.size(); ++i) {
        auto w = waiting.find(key_of(work[i].first, *work[i].second));
        ranked.emplace_back(
            w != waiting.end() ? w->second : kLaunchUs * kernel_delta(rules_[work[i].first], *work[i].second, egraph_),
            i);
      }
      const size_t take = std::max<size_t>(256, 4 * last_attempted);
      if (ranked.size() > take) {
        std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        // For a cost model that fuses operators (whose costs launches do
        // not predict), a share of the places goes to every rule in turn,
        // each rule's most promising first: the estimate counts launches,
        // and a rule that adds launches to run faster (a convolution split
        // four ways along its input channels, which the GPU plan's costs
        // favour) would otherwise never be tried while cheaper-looking
        // matches remain (DenseNet-121 and GoogLeNet under --target tgr-gpu:
        // 119 matches of the four-way split-K, none instantiated). Not for
        // the analytic model, whose costs the estimate follows: there the
        // share cost DenseNet-121 its merges (x0.956 -> x1.000).
        const size_t fair = cost_ && cost_->fuses_operators() ? take / kFairShareDivisor : 0;
        std::vector<char> chosen(ranked.size(), 0);
        size_t placed = 0;
        if (fair > 0) {  // (per rule: a database's 400,000 directions are not indexed for nothing)
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
        }
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
      std::vector<std::pair<size_t, const PatternMatch*>> kept;
      for (const auto& [d, i] : ranked) kept.push_back(work[i]);
      work = std::move(kept);
    }

    // 3. Instantiate every match (cheap), then prove (what costs) in order
    // of promise, the locally cheapening rewrites first, for this
    // iteration's share of the time left; the rest wait for a later
    // iteration (not remembered as tried, they are matched again).
    t = Clock::now();
    const double left = (stage < last_stage ? stage_end_s : options_.time_limit_s) - since(start);
    const double slice = std::max(std::min(left, options_.min_prove_slice_s), left * options_.prove_share);
    const auto slice_end = t + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(slice));
    std::vector<std::optional<MatchInstance>> instances(work.size());
    std::vector<double> delta(work.size(), 0.0);
    std::vector<char> holds(work.size(), 0), not_reached(work.size(), 0);
    auto instantiate = [&](size_t i) {
      if (out_of_time()) {  // thousands of matches can take seconds: the limit holds here too
        cut_short = true;
        not_reached[i] = 1;
        return;
      }
      instances[i] = instantiate_match(egraph_, rules_[work[i].first], *work[i].second, &instance_cache_);
      holds[i] = static_cast<char>(instances[i] && already_holds(egraph_, *instances[i], *work[i].second));
      if (instances[i] && cost_) delta[i] = local_cost_delta(egraph_, *instances[i], *cost_);
    };
    if (options_.parallel) tbb::parallel_for(size_t{0}, work.size(), instantiate);
    else
      for (size_t i = 0; i < work.size(); ++i) instantiate(i);
    it.instantiate_s = since(t);
    std::vector<size_t> order;
    for (size_t i = 0; i < work.size(); ++i) {
      if (not_reached[i]) continue;
      if (instances[i] && !holds[i]) {
        order.push_back(i);
      } else {
        ++(instances[i] ? stats.already_holding : stats.no_instance);
        tried.insert(key_of(work[i].first, *work[i].second));
      }
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return delta[a] < delta[b]; });
    std::vector<char> attempted(work.size(), 0), proved(work.size(), 0);
    std::atomic<size_t> next{0};
    auto prove_next = [&] {
      for (;;) {
        const size_t k = next++;
        if (k >= order.size()) return;
        if (out_of_time()) {
          cut_short = true;
          return;
        }
        if (Clock::now() >= slice_end) return;
        const size_t i = order[k];
        attempted[i] = 1;
        proved[i] =
            static_cast<char>(proofs.proved(*instances[i], rules_[work[i].first], prover_, options_.region_check));
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
    last_attempted = 0;
    for (size_t i : order) {
      MatchKey key = key_of(work[i].first, *work[i].second);
      if (!attempted[i]) {
        ++it.deferred;
        waiting[std::move(key)] = delta[i];
        continue;
      }
      ++last_attempted;
      ++(proved[i] ? stats.proved : stats.not_proved);
      waiting.erase(key);
      tried.insert(std::move(key));
    }
    const int64_t deferred = it.deferred;
    stats.deferred_matches += deferred;
    it.prove_s = since(t);

    // 4. Apply, in rule order.
    t = Clock::now();
    const size_t nodes_before = egraph_.num_nodes(), classes_before = egraph_.num_classes();
    bool node_limit = false;
    size_t i = 0;
    for (; i < work.size() && !node_limit; ++i) {
      if (!proved[i]) continue;
      // Each union checks for the cycles it would close, a walk of the
      // e-graph: thousands of applications to a large one take many
      // seconds, so the time limit holds here too (what is left was proved
      // but is not applied; the search stops at the end of this iteration).
      if (out_of_time()) {
        cut_short = true;
        break;
      }
      const optimizer::DirectedRule& rule = rules_[work[i].first];
      applications_.push_back(work[i].first);
      rewrites_.push_back(optimizer::start_record(rule));
      instances_.push_back(options_.record_instances
                               ? instances[i]->instance.text + " | " + instances[i]->instance.shapes
                               : std::string());
      const auto origin = static_cast<uint32_t>(applications_.size());
      const ApplyOutcome a = apply_proved(egraph_, *instances[i], *work[i].second, origin, options_.filter_cycles,
                                          rewrites_.back().tag, &rewrites_.back());
      ++it.applied;
      it.unions += a.unions;
      stats.cycles_filtered += a.cycles_filtered;
      node_limit = egraph_.num_nodes() >= stats.node_limit;
    }
    // Proved but not applied (the stage's node limit, or the time): matched
    // again later, so that the next stage applies them (their proofs are
    // cached).
    for (; i < work.size(); ++i)
      if (proved[i]) tried.erase(key_of(work[i].first, *work[i].second));
    stats.unions += it.unions;
    it.apply_s = since(t);

    // 5. Rebuild.
    t = Clock::now();
    egraph_.rebuild();
    if (it.unions > 0) {
      tried = recanonicalise(tried, egraph_);
      waiting = recanonicalise(waiting, egraph_);
    }
    if (options_.filter_cycles && it.unions > 0) {
      const NodeCosts costs(egraph_, cost_, &signature_costs);
      stats.cycle_nodes_removed +=
          static_cast<int64_t>(egraph_.break_cycles(greedy_extract(egraph_, costs).selection.choice));
    }
    it.rebuild_s = since(t);
    it.nodes = egraph_.num_nodes();
    it.classes = egraph_.num_classes();
    for (const RuleSchedule& s : schedule) it.banned += s.banned_until > iteration + 1;
    stats.search_s += it.search_s;
    stats.instantiate_s += it.instantiate_s;
    stats.prove_s += it.prove_s;
    stats.apply_s += it.apply_s;
    stats.rebuild_s += it.rebuild_s;
    stats.per_iteration.push_back(it);
    stats.iterations = iteration + 1;
    if (stage == 0 && last_stage > 0) stats.lead_iterations = iteration + 1;
    if (stage <= 1 && last_stage == 2) stats.small_rule_iterations = iteration + 1;

    if (goal_reached()) {
      stats.stop = StopReason::kGoal;
      break;
    }
    if (node_limit && !can_hand_on()) {
      stats.stop = StopReason::kNodeLimit;
      break;
    }
    if (cut_short) {
      stats.stop = StopReason::kTimeLimit;
      break;
    }
    const bool changed = it.unions > 0 || it.nodes != nodes_before || it.classes != classes_before || deferred > 0;
    if (!changed && stage < last_stage) {  // the stage saturated (bans lifted early): the next one from here
      next_stage();
      continue;
    }
    if (!changed) {
      if (it.banned == 0) {
        stats.stop = StopReason::kSaturated;
        break;
      }
      // Nothing else to do: lift the bans now rather than idle (egg).
      for (RuleSchedule& s : schedule) s.banned_until = 0;
    }
  }
  stats.renamed_proof_hits = proofs.hits();
  stats.seconds = since(start);
  return stats;
}

}  // namespace tgr::saturation
