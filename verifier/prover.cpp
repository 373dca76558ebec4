#include "verifier/prover.h"
#include "ir/hash.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include "runtime/interpreter.h"
#include "verifier/rewrites.h"
#include "verifier/side_comparison.h"
#include "verifier/z3_check.h"

namespace tgr::verifier {

std::string_view status_name(ProofStatus status) {
  switch (status) {
    case ProofStatus::kProved: return "proved";
    case ProofStatus::kRefuted: return "refuted";
    case ProofStatus::kUnknown: return "unknown";
  }
  return "unknown";
}

struct Prover::Impl {
  explicit Impl(std::vector<axioms::Axiom> a) : axioms(std::move(a)), rewrites(axioms) {}
  std::vector<axioms::Axiom> axioms;
  RewriteSet rewrites;  // points into `axioms`
};

namespace {

using Clock = std::chrono::steady_clock;


}  // namespace

std::optional<std::string> find_counterexample(const Rule& rule, int trials, uint64_t base_seed) {
  constexpr double kTolerance = 1e-6;  // relative; rounding differences of true rules are ~1e-15
  for (int trial = 0; trial < trials; ++trial) {
    const uint64_t seed = splitmix64(base_seed + 0x51 * static_cast<uint64_t>(trial));
    const std::vector<Tensor<double>> inputs = random_inputs<double>(rule.source, seed);
    const SideComparison c = compare_sides(rule, std::span<const Tensor<double>>(inputs));
    if (c.mismatch.empty() && !(c.worst > kTolerance)) continue;
    std::string s = c.mismatch.empty() ? worst_element_text(c) + " (relative error " + number_text(c.worst) + ")"
                                       : c.mismatch;
    s += "; float64 inputs (seed ";
    s += std::to_string(seed) + "):";
    const auto& ids = rule.source.inputs();
    for (size_t i = 0; i < ids.size(); ++i) s += " " + rule.source.node(ids[i]).name + " = " + tensor_text(inputs[i]) + ";";
    s.pop_back();
    return s;
  }
  return std::nullopt;
}

namespace {

struct VecHash {
  size_t operator()(const std::vector<ValueRef>& v) const {
    uint64_t h = kFnvOffset;
    for (ValueRef r : v) h = fnv1a_step(h, (static_cast<uint64_t>(r.node) << 8) ^ static_cast<uint64_t>(r.output));
    return h;
  }
};

// One proof attempt: the term graph both sides live in, and the search that
// rewrites both sides at once until their forms meet.
class BidirectionalRewriteSearch {
 public:
  BidirectionalRewriteSearch(const RewriteSet& rewrites, const Rule& rule, const ProofOptions& options,
                             Clock::time_point deadline)
      : rewrites_(rewrites),
        options_(options),
        deadline_(deadline),
        only_axioms_(options.only_axioms.begin(), options.only_axioms.end()) {
    std::vector<ValueRef> vars;
    for (int32_t id : rule.source.inputs()) {
      const Node& n = rule.source.node(id);
      vars.push_back(terms_.add_input(n.name, n.output_shapes[0], n.output_dtypes[0]));
    }
    source_ = copy_outputs(rule.source, vars);
    target_ = copy_outputs(rule.target, vars);
    max_ops_ = std::max(count_ops(source_), count_ops(target_)) + options.extra_ops;
  }

  ProofResult run() {
    ProofResult result;
    // The sides with their closed terms evaluated; the evaluations are the
    // first steps of each side's paths.
    std::vector<int> folds[2];
    source_folded_ = fold_closed(source_, folds[0]);
    target_folded_ = fold_closed(target_, folds[1]);
    add_state(source_, 0, -1, {});
    add_state(target_, 1, -1, {});
    int start[2] = {0, 1};
    for (int side = 0; side < 2; ++side) {
      const std::vector<ValueRef>& folded = side == 0 ? source_folded_ : target_folded_;
      if (folded != states_[side].outs) start[side] = add_state(folded, side, side, folds[side]);
    }
    std::vector<int> frontier[2] = {{start[0]}, {start[1]}};
    std::optional<std::pair<int, int>> met;
    if (states_[start[0]].outs == states_[start[1]].outs) met = std::pair{start[0], start[1]};
    bool exhausted = false, out_of_budget = false;
    // One side's forms all found is no reason to stop: the other side's
    // search may still reach one of them.
    while (!met && (!frontier[0].empty() || !frontier[1].empty())) {
      const int side = frontier[1].empty() || (!frontier[0].empty() && frontier[0].size() <= frontier[1].size()) ? 0 : 1;
      std::vector<int> next;
      for (int s : frontier[side]) {
        if (states_.size() >= options_.max_states || Clock::now() > deadline_) {
          out_of_budget = true;
          break;
        }
        met = expand(s, side, next);
        if (met) break;
      }
      if (out_of_budget) break;
      frontier[side] = std::move(next);
    }
    exhausted = !met && !out_of_budget;
    result.states = states_.size();
    result.instances_found = instances_.size();

    std::vector<const AxiomInstance*> used;
    if (met) {
      for (int side = 0; side < 2; ++side)
        for (int s = side == 0 ? met->first : met->second; states_[s].parent >= 0; s = states_[s].parent)
          for (int i : states_[s].instances) used.push_back(&instances_[i]);
    } else {
      for (const AxiomInstance& inst : instances_) used.push_back(&inst);
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
    if (options_.smt2) result.smt2 = z3_query_text(terms_, source_, target_, used);
    // Without a path, Z3 gets every instance found: when they cannot make
    // the sides equal (congruence closure, z3_check.h) its answer is known
    // to be sat, and asking would take most of the budget.
    // With a path, the instances along it make the sides equal by
    // substitution, and Z3's congruence closure finds that at once: no limit
    // (its timer costs more than such a query).
    Z3Answer answer;
    if (met) {
      answer = z3_check_equal(terms_, source_, target_, used, 0);
    } else if (outputs_congruent(terms_, source_, target_, used)) {
      answer = z3_check_equal(terms_, source_, target_, used, static_cast<unsigned>(std::max<int64_t>(left, 200)));
    } else {
      answer.result = Z3Answer::Result::kSat;
    }
    if (answer.result == Z3Answer::Result::kUnsat) {
      result.status = ProofStatus::kProved;
      std::set<std::string> names;
      for (size_t i : answer.core) {
        names.insert(used[i]->axiom->name);
        result.instances.push_back(instance_text(*used[i]));
      }
      result.axioms.assign(names.begin(), names.end());
      return result;
    }
    result.status = ProofStatus::kUnknown;
    if (answer.result == Z3Answer::Result::kUnknown)
      result.reason = "Z3 gave up (" + answer.reason + ")";
    else if (met)
      result.reason = "internal error: the rewriting path found is not a proof (Z3: sat)";
    else if (exhausted)
      result.reason = "no proof: the axioms rewrite the sides into " + std::to_string(states_.size()) +
                      " forms and none is common (the rule is false, or an axiom is missing)";
    else
      result.reason = "no proof within the budget (" + std::to_string(states_.size()) + " forms, " +
                      std::to_string(instances_.size()) + " axiom instances)";
    return result;
  }

 private:
  struct State {
    std::vector<ValueRef> outs;
    int side = 0;
    int parent = -1;    // the state it was rewritten from
    std::vector<int> instances;  // what rewrote it: one axiom instance, and the evaluations of closed terms
  };

  std::vector<ValueRef> copy_outputs(const Graph& g, const std::vector<ValueRef>& vars) {
    std::vector<int32_t> image(g.nodes().size(), -1);
    for (size_t i = 0; i < g.inputs().size(); ++i) image[g.inputs()[i]] = vars[i].node;
    for (int32_t id : g.topological_order()) {
      const Node& n = g.node(id);
      if (image[id] >= 0) continue;
      if (n.is_constant()) {
        image[id] = terms_.add_constant(*n.constant, n.name).node;
        continue;
      }
      std::vector<ValueRef> ins;
      for (ValueRef in : n.inputs) ins.push_back({image[in.node], in.output});
      image[id] = terms_.find_or_add_op(*n.op, n.params, std::move(ins))[0].node;
    }
    std::vector<ValueRef> outs;
    for (ValueRef o : g.outputs()) outs.push_back({image[o.node], o.output});
    return outs;
  }

  // Records a state unless its side has seen it; returns its index or -1.
  int add_state(std::vector<ValueRef> outs, int side, int parent, std::vector<int> instances) {
    auto [it, inserted] = seen_[side].emplace(outs, static_cast<int>(states_.size()));
    if (!inserted) return -1;
    states_.push_back({std::move(outs), side, parent, std::move(instances)});
    return it->second;
  }

  // Closed terms (no variables) built only from the operators that create
  // constants or move elements, of at most kMaxFoldedElements elements per
  // output, are evaluated with the float64 interpreter, which computes them
  // exactly (no arithmetic happens): two such terms are equal exactly when
  // their values are. Each is replaced by the first term found with its
  // value; the equation is an instance of `evaluation`.
  std::vector<ValueRef> fold_closed(const std::vector<ValueRef>& outs, std::vector<int>& used) {
    std::vector<Equation> eqs;
    for (ValueRef v : subterms(outs)) {
      const std::optional<ValueRef> rep = representative(v);
      if (rep && !(*rep == v)) eqs.push_back({v, *rep});
    }
    if (eqs.empty()) return outs;
    for (const Equation& e : eqs) {
      AxiomInstance inst;
      inst.axiom = &evaluation_axiom();
      inst.equations = {e};
      used.push_back(record(std::move(inst)));
    }
    return replace(outs, eqs);
  }

  // The largest closed term (in elements, per output) that is evaluated.
  static constexpr int64_t kMaxFoldedElements = int64_t{1} << 22;

  static const axioms::Axiom& evaluation_axiom() {
    static const axioms::Axiom kEvaluation = [] {
      axioms::Axiom a;
      a.name = "evaluation";
      a.comment = "a closed term of constant and layout operators equals its computed value";
      return a;
    }();
    return kEvaluation;
  }

  // The representative of a closed term, or nothing for other terms.
  std::optional<ValueRef> representative(ValueRef v) {
    const uint64_t key = (static_cast<uint64_t>(v.node) << 16) | static_cast<uint64_t>(v.output);
    if (auto it = folded_.find(key); it != folded_.end()) return it->second;
    const Node& n = terms_.node(v.node);
    if (!n.is_op() || !n.op->traits.moves_elements || !is_floating(n.output_dtypes[v.output])) return std::nullopt;
    // Too large to evaluate: left as a term (the other axioms still apply).
    // Instances at a model's shapes can hold such terms (GPT-2 small:
    // matmul(w0, eye[n=9216]()), whose folding evaluated 85 million
    // elements in every form the search made: 7 s and gigabytes a proof).
    for (const Shape& s : n.output_shapes)
      if (num_elements(s) > kMaxFoldedElements) return std::nullopt;
    for (ValueRef in : n.inputs)
      if (!representative(in)) return std::nullopt;
    // Evaluate the closed term alone.
    Graph closed;
    std::unordered_map<int32_t, int32_t> image;
    std::function<ValueRef(ValueRef)> copy = [&](ValueRef x) -> ValueRef {
      if (auto it = image.find(x.node); it != image.end()) return {it->second, x.output};
      const Node node = terms_.node(x.node);
      std::vector<ValueRef> ins;
      for (ValueRef in : node.inputs) ins.push_back(copy(in));
      const ValueRef out = closed.find_or_add_op(*node.op, node.params, std::move(ins))[0];
      image.emplace(x.node, out.node);
      return {out.node, x.output};
    };
    closed.add_output(copy(v));
    Tensor<double> value = evaluate<double>(closed, std::span<const Tensor<double>>{}).at(0);
    // A tensor of ones is represented by `ones` itself, so that the axioms
    // about ones (mul_ones) see it.
    ValueRef rep = v;
    if (!value.shape.empty() && std::all_of(value.data.begin(), value.data.end(), [](double x) { return x == 1.0; }))
    {
      const OpDef& ones = op_def(OpKind::kOnes);
      rep = terms_.find_or_add_op(ones, ones.make_params({{"shape", value.shape}}), {})[0];
    }
    auto [it, inserted] = by_value_.emplace(std::pair{value.shape, std::move(value.data)}, rep);
    folded_.emplace(key, it->second);
    return it->second;
  }

  size_t count_ops(const std::vector<ValueRef>& outs) const {
    size_t ops = 0;
    visit_op_nodes(outs, [&ops](int32_t, const Node&) { ++ops; });
    return ops;
  }

  // The op values the outputs depend on, each once.
  std::vector<ValueRef> subterms(const std::vector<ValueRef>& outs) const {
    std::vector<ValueRef> out;
    visit_op_nodes(outs, [&out](int32_t id, const Node& n) {
      for (int32_t k = 0; k < static_cast<int32_t>(n.output_shapes.size()); ++k) out.push_back({id, k});
    });
    return out;
  }

  // Calls `f(id, node)` for each operator node the outputs depend on, once,
  // depth first. Forms have a few dozen nodes at most: a vector is the
  // cheapest set (this runs for every rewritten form).
  template <typename F>
  void visit_op_nodes(const std::vector<ValueRef>& outs, F f) const {
    std::vector<int32_t>& visited = visit_scratch_[0];
    std::vector<int32_t>& stack = visit_scratch_[1];
    visited.clear();
    stack.clear();
    for (ValueRef v : outs) stack.push_back(v.node);
    while (!stack.empty()) {
      const int32_t id = stack.back();
      stack.pop_back();
      if (std::find(visited.begin(), visited.end(), id) != visited.end()) continue;
      visited.push_back(id);
      const Node& n = terms_.node(id);
      if (!n.is_op()) continue;
      f(id, n);
      for (ValueRef in : n.inputs) stack.push_back(in.node);
    }
  }

  // `outs` with every occurrence of a replaced value substituted.
  std::vector<ValueRef> replace(const std::vector<ValueRef>& outs, const std::vector<Equation>& eqs) {
    // Value -> its replacement; a form has a few dozen values, so a vector
    // searched from the front (the first equation for a value wins).
    std::vector<std::pair<ValueRef, ValueRef>> memo;
    for (const Equation& e : eqs)
      if (!(e.from == e.to)) memo.emplace_back(e.from, e.to);
    std::vector<ValueRef> out;
    for (ValueRef v : outs) out.push_back(rebuild(v, memo));
    return out;
  }

  ValueRef rebuild(ValueRef v, std::vector<std::pair<ValueRef, ValueRef>>& memo) {
    for (const auto& [from, to] : memo)
      if (from == v) return to;
    ValueRef result = v;
    if (terms_.node(v.node).is_op()) {
      const std::vector<ValueRef> old_inputs = terms_.node(v.node).inputs;  // a copy: find_or_add_op may move the nodes
      std::vector<ValueRef> ins;
      ins.reserve(old_inputs.size());
      for (ValueRef in : old_inputs) ins.push_back(rebuild(in, memo));
      if (ins != old_inputs) {
        const Node& n = terms_.node(v.node);
        const OpDef* op = n.op;
        Params params = n.params;
        result = terms_.find_or_add_op(*op, std::move(params), std::move(ins))[v.output];
      }
    }
    memo.emplace_back(v, result);
    return result;
  }

  // Applies every rewrite at every subterm of state `s`; a new form goes to
  // `next`, and a form the other side has seen ends the search.
  std::optional<std::pair<int, int>> expand(int s, int side, std::vector<int>& next) {
    const std::vector<ValueRef> outs = states_[s].outs;
    for (ValueRef v : subterms(outs)) {
      // The instances at a term are the same in every form that contains
      // it (terms are hash-consed and never change): matched once, the
      // first time the term is met; later forms reuse the list.
      auto [at, first_visit] = instances_at_.try_emplace(term_key(v));
      std::vector<int>& slot = at->second;
      const std::vector<int>* known = first_visit ? nullptr : &slot;
      const auto& rewrites = rewrites_.rooted_at(terms_.node(v.node).op->name);
      const size_t n = known ? known->size() : rewrites.size();
      for (size_t k = 0; k < n; ++k) {
        int index = -1;
        if (known) {
          index = (*known)[k];
        } else {
          const Rewrite& rw = rewrites[k];
          if (!only_axioms_.empty() && !only_axioms_.count(rw.axiom->name)) continue;
          std::optional<AxiomInstance> inst = apply_rewrite(rw, terms_, v);
          if (!inst) continue;
          index = record(std::move(*inst));
          slot.push_back(index);
        }
        std::vector<int> used{index};
        std::vector<ValueRef> rewritten = fold_closed(replace(outs, instances_[used[0]].equations), used);
        if (rewritten == outs) continue;
        // Forms much larger than both sides rarely lie on a proof and make
        // the search explode (a -> a * ones -> ...): bounded.
        if (count_ops(rewritten) > max_ops_) continue;
        if (auto other = seen_[1 - side].find(rewritten); other != seen_[1 - side].end()) {
          // A search that ends here leaves this term's list unfinished.
          if (!known) instances_at_.erase(term_key(v));
          const int here = add_state(rewritten, side, s, used);
          const int mine = here >= 0 ? here : seen_[side].at(rewritten);
          return side == 0 ? std::pair{mine, other->second} : std::pair{other->second, mine};
        }
        const int added = add_state(std::move(rewritten), side, s, std::move(used));
        if (added >= 0) next.push_back(added);
      }
    }
    return std::nullopt;
  }

  static uint64_t term_key(ValueRef v) {
    return (static_cast<uint64_t>(v.node) << 16) | static_cast<uint64_t>(v.output);
  }

  int record(AxiomInstance inst) {
    std::string key = inst.axiom->name;
    for (const Equation& e : inst.equations)
      for (int32_t part : {e.from.node, e.from.output, e.to.node, e.to.output}) {
        key += ':';
        key += std::to_string(part);
      }
    auto [it, inserted] = instance_index_.emplace(key, static_cast<int>(instances_.size()));
    if (inserted) instances_.push_back(std::move(inst));
    return it->second;
  }

  const RewriteSet& rewrites_;
  const ProofOptions& options_;
  Clock::time_point deadline_;
  std::set<std::string> only_axioms_;  // ProofOptions::only_axioms; empty: all
  Graph terms_;
  std::vector<ValueRef> source_, target_;
  std::vector<ValueRef> source_folded_, target_folded_;
  std::unordered_map<uint64_t, ValueRef> folded_;             // closed term -> its representative
  std::map<std::pair<Shape, std::vector<double>>, ValueRef> by_value_;  // computed value -> representative
  size_t max_ops_ = 0;  // largest form (distinct operator nodes) the search keeps
  std::vector<State> states_;
  std::unordered_map<std::vector<ValueRef>, int, VecHash> seen_[2];
  std::vector<AxiomInstance> instances_;
  std::unordered_map<std::string, int> instance_index_;
  std::unordered_map<uint64_t, std::vector<int>> instances_at_;  // term -> the instances rewriting it, in order
  mutable std::vector<int32_t> visit_scratch_[2];  // visit_op_nodes' visited set and stack, kept for their capacity
};

}  // namespace

Prover::Prover(std::vector<axioms::Axiom> axioms) : impl_(std::make_unique<Impl>(std::move(axioms))) {}
Prover::~Prover() = default;
Prover::Prover(Prover&&) noexcept = default;
Prover& Prover::operator=(Prover&&) noexcept = default;

const std::vector<axioms::Axiom>& Prover::axioms() const { return impl_->axioms; }
size_t Prover::rewrite_count() const { return impl_->rewrites.size(); }
std::vector<std::pair<std::string, std::string>> Prover::unused_axioms() const { return impl_->rewrites.unused(); }

ProofResult Prover::prove(const Rule& rule, const ProofOptions& options) const {
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::milliseconds(options.timeout_ms);
  ProofResult result;
  try {
    if (auto counterexample = find_counterexample(rule, options.refute_trials, options.seed)) {
      result.status = ProofStatus::kRefuted;
      result.counterexample = std::move(*counterexample);
    } else {
      result = BidirectionalRewriteSearch(impl_->rewrites, rule, options, deadline).run();
    }
  } catch (const std::exception& e) {
    result = {};
    result.status = ProofStatus::kUnknown;
    result.reason = std::string("error: ") + e.what();
  }
  result.ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return result;
}

}  // namespace tgr::verifier
