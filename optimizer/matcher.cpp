#include "optimizer/matcher.h"

#include "ir/float_types.h"

#include <algorithm>
#include <functional>
#include <set>

namespace tgr::optimizer {

bool is_shape_param(std::string_view op, std::string_view param) {
  const OpDef* def = OpTable::instance().find(op);
  const ParamSpec* spec = def ? def->find_param(param) : nullptr;
  return spec && spec->shape_dependent;
}

bool params_accept(const Node& pattern, const Params& model, const std::function<const Shape&()>& kernel) {
  const auto& pe = pattern.params.entries();
  const auto& me = model.entries();
  if (pe.size() != me.size()) return false;
  const auto one_by_one = [&] {
    const Shape& k = kernel();
    return k.size() == 4 && k[2] == 1 && k[3] == 1;
  };
  for (size_t i = 0; i < pe.size(); ++i) {
    const auto& [name, value] = pe[i];
    if (name != me[i].first) return false;
    if (value == me[i].second) continue;
    if (name == "pad" && op_is(pattern.op, OpKind::kConv2d) && std::holds_alternative<std::string>(value) &&
        std::holds_alternative<std::string>(me[i].second) && one_by_one())
      continue;
    if (!is_shape_param(pattern.op->name, name)) return false;
    if (value.index() != me[i].second.index()) return false;
  }
  return true;
}

GraphIndex::GraphIndex(const Graph& g) : graph(g) {
  const auto& nodes = g.nodes();
  readers.resize(nodes.size());
  output_reads.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    readers[i].resize(nodes[i].output_shapes.size());
    output_reads[i].assign(nodes[i].output_shapes.size(), 0);
  }
  for (int32_t i : g.topological_order()) {
    const Node& n = nodes[i];
    if (!n.is_op()) continue;
    by_op[n.op].push_back(i);
    for (ValueRef in : n.inputs) readers[in.node][in.output].push_back(i);
  }
  for (ValueRef out : g.outputs()) ++output_reads[out.node][out.output];
}

namespace {

using Continuation = std::function<void()>;

// Backtracking matcher of one rule against one graph: `pattern_nodes` maps
// pattern nodes to model nodes, `bound` pattern inputs to model values.
class Matcher {
 public:
  Matcher(const GraphIndex& index, const DirectedRule& rule, size_t limit, MatchStats& stats)
      : index_(index), model_(index.graph), pattern_(rule.graphs.source), limit_(limit), stats_(stats) {
    mapped_.assign(pattern_.nodes().size(), -1);
    bound_.assign(pattern_.nodes().size(), ValueRef{});
  }

  std::vector<Match> run() {
    match_output(0);
    return std::move(matches_);
  }

 private:
  bool full() const { return matches_.size() >= limit_; }

  void match_output(size_t k) {
    if (full()) return;
    const auto& outs = pattern_.outputs();
    if (k == outs.size()) {
      accept();
      return;
    }
    const ValueRef pv = outs[k];
    const Node& pn = pattern_.node(pv.node);
    if (mapped_[pv.node] >= 0) {
      match_value(pv, {mapped_[pv.node], pv.output}, [&] { match_output(k + 1); });
      return;
    }
    auto it = index_.by_op.find(pn.op);
    if (it == index_.by_op.end()) return;
    for (int32_t candidate : it->second) {
      if (full()) return;
      match_value(pv, {candidate, pv.output}, [&] { match_output(k + 1); });
    }
  }

  void match_value(ValueRef pv, ValueRef mv, const Continuation& next) {
    const Node& pn = pattern_.node(pv.node);
    if (!pn.is_op()) {  // a variable
      ValueRef& b = bound_[pv.node];
      if (b.node >= 0) {
        if (b == mv) next();
        return;
      }
      if (!types_.bind(pn.output_dtypes[0], model_.dtype(mv))) return;
      b = mv;
      next();
      b = ValueRef{};
      types_.unbind(pn.output_dtypes[0]);
      return;
    }
    const Node& mn = model_.node(mv.node);
    if (mn.op != pn.op || mv.output != pv.output) return;
    if (mapped_[pv.node] >= 0) {
      if (mapped_[pv.node] == mv.node) next();
      return;
    }
    if (used_.count(mv.node) || mn.inputs.size() != pn.inputs.size() ||
        mn.output_shapes.size() != pn.output_shapes.size() || !params_match(pn, mn))
      return;
    mapped_[pv.node] = mv.node;
    used_.insert(mv.node);
    match_inputs(pn, mn, 0, false, next);
    if (pn.op->commutative && pn.inputs.size() == 2 && pn.inputs[0] != pn.inputs[1])
      match_inputs(pn, mn, 0, true, next);
    used_.erase(mv.node);
    mapped_[pv.node] = -1;
  }

  void match_inputs(const Node& pn, const Node& mn, size_t i, bool swapped, const Continuation& next) {
    if (i == pn.inputs.size()) {
      next();
      return;
    }
    const size_t j = swapped ? 1 - i : i;
    match_value(pn.inputs[i], mn.inputs[j], [&] { match_inputs(pn, mn, i + 1, swapped, next); });
  }

  bool params_match(const Node& pn, const Node& mn) const {
    return params_accept(pn, mn.params, [&]() -> const Shape& { return model_.shape(mn.inputs[1]); });
  }

  // Whether the rewrite of the current mapping leaves a valid graph.
  bool valid(const Match& m) {
    std::set<std::pair<int32_t, int32_t>> outputs;
    for (ValueRef v : m.outputs) outputs.insert({v.node, v.output});
    if (outputs.size() != m.outputs.size()) return false;  // two outputs matched one value
    std::vector<int32_t> inside;
    for (int32_t n : m.nodes)
      if (n >= 0) inside.push_back(n);
    std::sort(inside.begin(), inside.end());
    auto is_inside = [&](int32_t n) { return std::binary_search(inside.begin(), inside.end(), n); };
    for (int32_t n : inside) {
      const Node& node = model_.node(n);
      for (size_t o = 0; o < node.output_shapes.size(); ++o) {
        if (outputs.count({n, static_cast<int32_t>(o)})) continue;
        if (index_.output_reads[n][o] > 0) {
          ++stats_.used_outside;
          return false;
        }
        for (int32_t reader : index_.readers[n][o])
          if (!is_inside(reader)) {
            ++stats_.used_outside;
            return false;
          }
      }
    }
    // Cycles: walk back from the variables' values; nodes before the first
    // matched node cannot depend on it (index order is topological).
    const int32_t first = inside.front();
    std::vector<int32_t> stack;
    std::set<int32_t> seen;
    for (ValueRef v : m.variables)
      if (v.node >= first) stack.push_back(v.node);
    while (!stack.empty()) {
      const int32_t n = stack.back();
      stack.pop_back();
      if (!seen.insert(n).second) continue;
      if (is_inside(n)) {
        ++stats_.cycles;
        return false;
      }
      for (ValueRef in : model_.node(n).inputs)
        if (in.node >= first) stack.push_back(in.node);
    }
    return true;
  }

  void accept() {
    Match m;
    for (int32_t in : pattern_.inputs()) m.variables.push_back(bound_[in]);
    m.nodes = mapped_;
    for (ValueRef pv : pattern_.outputs()) m.outputs.push_back({mapped_[pv.node], pv.output});
    ++stats_.found;
    if (valid(m)) matches_.push_back(std::move(m));
  }

  const GraphIndex& index_;
  const Graph& model_;
  const Graph& pattern_;
  size_t limit_;
  MatchStats& stats_;
  std::vector<int32_t> mapped_;
  std::vector<ValueRef> bound_;
  RuleTypeBinding types_;  // the float type of the match's float variables
  std::set<int32_t> used_;
  std::vector<Match> matches_;
};

}  // namespace

std::vector<Match> find_matches(const GraphIndex& index, const DirectedRule& rule, size_t limit, MatchStats* stats) {
  MatchStats local;
  return Matcher(index, rule, limit, stats ? *stats : local).run();
}

}  // namespace tgr::optimizer
