#include "saturation/pattern.h"

#include <algorithm>
#include <type_traits>

#include "ir/float_types.h"
#include "optimizer/matcher.h"

namespace tgr::saturation {
namespace {

// A non-owning reference to a callable (the matcher's continuations; a
// std::function would allocate at every step).
class Continuation {
 public:
  template <class F>
  Continuation(const F& f)  // NOLINT: implicit on purpose
      : object_(&f), call_([](const void* o) { (*static_cast<const F*>(o))(); }) {}
  void operator()() const { call_(object_); }

 private:
  const void* object_;
  void (*call_)(const void*);
};

class Matcher {
 public:
  Matcher(const EGraph& egraph, const Graph& pattern, size_t limit,
          const std::function<bool(const PatternMatch&)>& keep, std::optional<Pattern::Clock::time_point> deadline)
      : egraph_(egraph), pattern_(pattern), limit_(limit), keep_(keep), deadline_(deadline) {
    const size_t n = pattern.nodes().size();
    classes_.assign(n, kNoClass);
    heads_.assign(n, 0);
    swapped_.assign(n, 0);
  }

  std::vector<PatternMatch> run() {
    match_output(0);
    return std::move(matches_);
  }

 private:
  // Enough matches, or past the deadline (stops every loop as a full list does).
  bool full() const { return past_deadline_ || matches_.size() >= limit_; }
  // The clock is read every 4,096 e-nodes tried: cheap next to the matching.
  void check_deadline() {
    if (deadline_ && ++steps_ % 4096 == 0 && Pattern::Clock::now() >= *deadline_) past_deadline_ = true;
  }
  bool multi_output(const Node& n) const { return n.output_shapes.size() != 1; }
  // For a pattern of several outputs: whether an operator node other than
  // `p` is bound to class `c` (Pattern::search's contract: no merge of a
  // computation with itself).
  bool another_operator_on(int32_t p, ClassId c) const {
    if (pattern_.outputs().size() < 2) return false;
    for (size_t q = 0; q < classes_.size(); ++q)
      if (classes_[q] == c && static_cast<int32_t>(q) != p && pattern_.node(static_cast<int32_t>(q)).is_op())
        return true;
    return false;
  }

  void match_output(size_t k) {
    if (full()) return;
    const auto& outs = pattern_.outputs();
    if (k == outs.size()) {
      accept();
      return;
    }
    const ValueRef pv = outs[k];
    const Node& pn = pattern_.node(pv.node);
    const auto next = [&] { match_output(k + 1); };
    if (!pn.is_op()) return;  // bare variables as outputs are dropped by load_rules
    if (classes_[pv.node] != kNoClass) {
      next();
      return;
    }
    for (ClassId c : candidates(pv.node)) {
      if (full()) return;
      match_node(pv.node, c, next);
    }
  }

  // Classes that may hold pattern node `p`. Where a value below it is
  // already bound (a variable or an operator node an earlier output's
  // pattern matched: a join), upwards from that class: its parents with the
  // operator of the pattern node above it, their parents with the next
  // one, up to `p`. Else every class with p's operator. (A multi-pattern's
  // second output, relu(add(b1, conv2d(i0, k1))) with i0 bound, is looked
  // for among the ancestors of i0 alone, not among every relu.)
  std::vector<ClassId> candidates(int32_t p) const {
    std::vector<int32_t> path;  // pattern nodes from p down to the one that reads the bound value
    ClassId bound = kNoClass;
    if (!bound_below(p, path, bound)) {
      auto all = egraph_.classes_with_op(pattern_.node(p).op);
      return {all.begin(), all.end()};
    }
    std::vector<ClassId> current{bound};
    for (auto it = path.rbegin(); it != path.rend() && !current.empty(); ++it) {
      const OpDef* op = pattern_.node(*it).op;
      std::vector<ClassId> next;
      for (ClassId c : current)
        for (const auto& [node, cls] : egraph_.eclass(c).parents)
          if (egraph_.op_of(node) == op) next.push_back(egraph_.find(cls));
      std::sort(next.begin(), next.end());
      next.erase(std::unique(next.begin(), next.end()), next.end());
      current = std::move(next);
    }
    return current;
  }

  // A path of operator nodes from `p` down to one reading a bound value,
  // through single-output nodes only (a projection class is not its tuple
  // operator's parent); the shortest such path is not needed, any is exact.
  bool bound_below(int32_t p, std::vector<int32_t>& path, ClassId& bound) const {
    path.push_back(p);
    for (ValueRef in : pattern_.node(p).inputs) {
      const Node& arg = pattern_.node(in.node);
      if (multi_output(arg)) continue;
      if (classes_[in.node] != kNoClass) {
        bound = classes_[in.node];
        return true;
      }
      if (arg.is_op() && bound_below(in.node, path, bound)) return true;
    }
    path.pop_back();
    return false;
  }

  void match_value(ValueRef pv, ClassId c, Continuation next) {
    const Node& pn = pattern_.node(pv.node);
    const ClassData& data = egraph_.data(c);
    if (!pn.is_op()) {  // a variable
      if (data.tuple) return;
      ClassId& b = classes_[pv.node];
      if (b != kNoClass) {
        if (b == c) next();
        return;
      }
      if (!types_.bind(pn.output_dtypes[0], data.dtypes[0])) return;
      b = c;
      next();
      b = kNoClass;
      types_.unbind(pn.output_dtypes[0]);
      return;
    }
    if (!multi_output(pn)) {
      match_node(pv.node, c, next);
      return;
    }
    for (const ENode& proj : egraph_.projections(c))
      if (proj.head == static_cast<uint32_t>(pv.output)) match_node(pv.node, egraph_.find(proj.children[0]), next);
  }

  void match_node(int32_t p, ClassId c, Continuation next) {
    const Node& pn = pattern_.node(p);
    if (classes_[p] != kNoClass) {
      if (classes_[p] == c) next();
      return;
    }
    if (another_operator_on(p, c)) return;
    for (const ENode& n : egraph_.nodes_with_op(c, pn.op)) {
      check_deadline();
      if (full()) return;
      if (n.children.size() != pn.inputs.size() || !params_match(pn, n)) continue;
      classes_[p] = c;
      heads_[p] = n.head;
      swapped_[p] = 0;
      match_inputs(pn, n, 0, false, next);
      if (pn.op->commutative && pn.inputs.size() == 2 && pn.inputs[0] != pn.inputs[1]) {
        swapped_[p] = 1;
        match_inputs(pn, n, 0, true, next);
      }
      classes_[p] = kNoClass;
    }
  }

  void match_inputs(const Node& pn, const ENode& n, size_t i, bool swapped, Continuation next) {
    if (i == pn.inputs.size()) {
      next();
      return;
    }
    const size_t j = swapped ? 1 - i : i;
    const auto rest = [&] { match_inputs(pn, n, i + 1, swapped, next); };
    match_value(pn.inputs[i], egraph_.find(n.children[j]), rest);
  }

  bool params_match(const Node& pn, const ENode& n) const {
    return optimizer::params_accept(pn, egraph_.op_instance(n.head).params,
                                    [&]() -> const Shape& { return egraph_.data(n.children[1]).shapes[0]; });
  }

  void accept() {
    PatternMatch m;
    for (int32_t in : pattern_.inputs()) m.variables.push_back(classes_[in]);
    for (ValueRef pv : pattern_.outputs()) {
      ClassId c = classes_[pv.node];
      if (multi_output(pattern_.node(pv.node))) {
        c = egraph_.lookup(ENode{NodeKind::kProject, static_cast<uint32_t>(pv.output), {c}, 0});
        if (c == kNoClass) return;  // that output is not in the e-graph
      }
      if (std::find(m.outputs.begin(), m.outputs.end(), c) != m.outputs.end()) return;  // two outputs, one class
      m.outputs.push_back(c);
    }
    m.classes = classes_;
    for (int32_t in : pattern_.inputs()) m.classes[in] = kNoClass;
    m.heads = heads_;
    m.swapped = swapped_;
    if (keep_ && !keep_(m)) return;
    matches_.push_back(std::move(m));
  }

  const EGraph& egraph_;
  const Graph& pattern_;
  size_t limit_;
  const std::function<bool(const PatternMatch&)>& keep_;
  std::optional<Pattern::Clock::time_point> deadline_;
  uint32_t steps_ = 0;
  bool past_deadline_ = false;
  // Per pattern node: the bound class (variables and operator nodes alike),
  // the matched e-node's head and operand order.
  std::vector<ClassId> classes_;
  RuleTypeBinding types_;  // the float type of the match's float variables
  std::vector<uint32_t> heads_;
  std::vector<uint8_t> swapped_;
  std::vector<PatternMatch> matches_;
};

}  // namespace

Pattern::Pattern(const optimizer::DirectedRule& rule) : source_(&rule.graphs.source) {}

std::vector<PatternMatch> Pattern::search(const EGraph& egraph, size_t limit,
                                          const std::function<bool(const PatternMatch&)>& keep,
                                          std::optional<Clock::time_point> deadline) const {
  if (limit == 0) return {};
  return Matcher(egraph, *source_, limit, keep, deadline).run();
}

}  // namespace tgr::saturation
