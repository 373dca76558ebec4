#include "saturation/rewrite.h"

#include <stdexcept>
#include <unordered_map>

#include "optimizer/partial_instance.h"

namespace tgr::saturation {

InstanceOutcome prove_match(const EGraph& egraph, const optimizer::DirectedRule& rule, const PatternMatch& match,
                            optimizer::InstanceProver& prover, const pet::CheckOptions& region_check,
                            std::optional<ProvedInstance>& proved) {
  proved.reset();
  const Graph& pattern = rule.graphs.source;
  Graph cut;  // the match, cut out of the e-graph
  optimizer::Match cut_match;
  cut_match.nodes.assign(pattern.nodes().size(), -1);
  std::vector<std::vector<ValueRef>> values(pattern.nodes().size());
  std::unordered_map<ClassId, ValueRef> input_of_class;
  std::unordered_map<int32_t, ClassId> class_of_input;
  for (size_t i = 0; i < pattern.inputs().size(); ++i) {
    const ClassId c = egraph.find(match.variables.at(i));
    auto it = input_of_class.find(c);
    if (it == input_of_class.end()) {
      const ClassData& d = egraph.data(c);
      std::string name = "c";  // (not "c" + to_string: GCC 12's -Wrestrict false positive)
      name += std::to_string(c);
      const ValueRef v = cut.add_input(std::move(name), d.shapes[0], d.dtypes[0]);
      it = input_of_class.emplace(c, v).first;
      class_of_input.emplace(v.node, c);
    }
    values[pattern.inputs()[i]] = {it->second};
    cut_match.variables.push_back(it->second);
  }
  for (int32_t p = 0; p < static_cast<int32_t>(pattern.nodes().size()); ++p) {
    const Node& pn = pattern.node(p);
    if (!pn.is_op()) continue;
    const OpInstance& oi = egraph.op_instance(match.heads.at(p));
    std::vector<ValueRef> operands;
    for (ValueRef in : pn.inputs) operands.push_back(values[in.node].at(in.output));
    if (match.swapped.at(p)) std::swap(operands.at(0), operands.at(1));
    std::vector<ValueRef> outs = cut.add_op(*oi.op, oi.params, std::move(operands));
    const ClassData& d = egraph.data(match.classes.at(p));
    if (cut.node(outs[0].node).output_shapes != d.shapes)
      throw std::logic_error("saturation: rule #" + std::to_string(rule.id) + " matched " + oi.op->name +
                             " whose shapes at its operands' classes differ from its " + egraph.describe(match.classes[p]));
    cut_match.nodes[p] = outs[0].node;
    values[p] = std::move(outs);
  }
  for (ValueRef pv : pattern.outputs()) cut_match.outputs.push_back(values[pv.node].at(pv.output));

  std::optional<optimizer::Instance> instance = optimizer::instantiate(cut, rule, cut_match);
  if (!instance) return InstanceOutcome::kNoInstance;
  // A partial rule's target is replaced by its checked correction (the
  // region checker's verdict is what `proved` then reports).
  if (rule.partial && !optimizer::correct_partial_instance(*instance, region_check)) return InstanceOutcome::kNoInstance;
  if (!prover.proved(*instance)) return InstanceOutcome::kNotProved;
  ProvedInstance out;
  for (const auto& [name, v] : instance->bindings) out.variable_classes.emplace(name, class_of_input.at(v.node));
  out.instance = std::move(*instance);
  proved = std::move(out);
  return InstanceOutcome::kProved;
}

ApplyOutcome apply_proved(EGraph& egraph, const ProvedInstance& proved, const PatternMatch& match, uint32_t origin,
                          bool filter_cycles) {
  const Graph& target = proved.instance.rule.target;
  std::vector<ClassId> classes(target.nodes().size(), kNoClass);
  auto value_class = [&](ValueRef v) {
    const ClassId c = classes.at(v.node);
    return egraph.data(c).tuple ? egraph.add_project(c, static_cast<uint32_t>(v.output), origin) : c;
  };
  for (int32_t i = 0; i < static_cast<int32_t>(target.nodes().size()); ++i) {
    const Node& n = target.node(i);
    if (n.is_input()) {
      auto it = proved.variable_classes.find(n.name);
      if (it == proved.variable_classes.end())
        throw std::logic_error("saturation: instance variable '" + n.name + "' has no class: " + proved.instance.text);
      classes[i] = it->second;
    } else if (n.is_constant()) {
      classes[i] = egraph.add_constant(n);
    } else {
      std::vector<ClassId> operands;
      for (ValueRef in : n.inputs) operands.push_back(value_class(in));
      classes[i] = egraph.add_op(*n.op, n.params, std::move(operands), origin);
    }
  }
  ApplyOutcome out;
  for (size_t k = 0; k < target.outputs().size(); ++k) {
    const ClassId t = egraph.find(value_class(target.outputs()[k]));
    const ClassId s = egraph.find(match.outputs.at(k));
    if (t == s) continue;
    // Either direction closes a cycle: s would contain a node that reaches
    // s, or t's ancestors would include t.
    if (filter_cycles && (egraph.reaches(t, s) || egraph.reaches(s, t))) {
      ++out.cycles_filtered;
      continue;
    }
    egraph.merge(t, s);
    ++out.unions;
    // The next check (and the next application's hash-consing) must see
    // the e-graph congruence-closed: a congruent duplicate has no parents,
    // so a check against it would miss the cycles through its twin.
    // (Congruence closure itself never closes a cycle in an acyclic
    // e-graph: congruent classes share their children, so neither reaches
    // the other.)
    if (filter_cycles) egraph.restore_congruence();
  }
  return out;
}

}  // namespace tgr::saturation
