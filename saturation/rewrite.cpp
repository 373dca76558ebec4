#include "saturation/rewrite.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <unordered_map>

#include "optimizer/partial_instance.h"

namespace tgr::saturation {

std::optional<MatchInstance> instantiate_match(const EGraph& egraph, const optimizer::DirectedRule& rule,
                                               const PatternMatch& match, optimizer::InstanceCache* cache) {
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
                             " whose shapes at its operands' classes differ from its " +
                             egraph.describe(match.classes[p]));
    cut_match.nodes[p] = outs[0].node;
    values[p] = std::move(outs);
  }
  for (ValueRef pv : pattern.outputs()) cut_match.outputs.push_back(values[pv.node].at(pv.output));

  std::optional<optimizer::Instance> instance = optimizer::instantiate(cut, rule, cut_match, cache);
  if (!instance) return std::nullopt;
  MatchInstance out;
  for (const auto& [name, v] : instance->bindings) out.variable_classes.emplace(name, class_of_input.at(v.node));
  out.instance = std::move(*instance);
  return out;
}

std::string rename_variables(const std::string& text, std::vector<std::string>* order) {
  // Variables are the identifiers of the text that are neither operators
  // (followed by '(' or '[') nor parameter keys (followed by '=') nor
  // parameter values (after '=').
  std::map<std::string, size_t, std::less<>> names;  // variable -> canonical index
  std::vector<std::string> local;
  std::vector<std::string>& seen = order ? *order : local;
  seen.clear();
  std::string out;
  out.reserve(text.size());
  auto is_start = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
  auto is_part = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t i = 0; i < text.size();) {
    if (!is_start(text[i]) || (i > 0 && (is_part(text[i - 1]) || text[i - 1] == '.'))) {
      out += text[i++];
      continue;
    }
    size_t j = i;
    while (j < text.size() && is_part(text[j])) ++j;
    const std::string word = text.substr(i, j - i);
    size_t before = i;
    while (before > 0 && text[before - 1] == ' ') --before;
    size_t after = j;
    while (after < text.size() && text[after] == ' ') ++after;
    const bool operator_name = j < text.size() && (text[j] == '(' || text[j] == '[');
    const bool parameter_key = after < text.size() && text[after] == '=';
    const bool parameter_value = before > 0 && text[before - 1] == '=';
    if (operator_name || parameter_key || parameter_value) {
      out += word;
    } else {
      auto [it, inserted] = names.try_emplace(word, seen.size());
      if (inserted) seen.push_back(word);
      out += 'v';
      out += std::to_string(it->second);
    }
    i = j;
  }
  return out;
}

std::string canonical_instance_key(const optimizer::Instance& instance) {
  std::vector<std::string> order;
  std::string out = rename_variables(instance.text, &order);
  // The variables' shapes and types, in canonical order.
  out += " |";
  const Graph& source = instance.rule.source;
  for (size_t k = 0; k < order.size(); ++k) {
    const auto v = source.find_input(order[k]);
    out += " v";
    out += std::to_string(k);
    out += '=';
    if (v) {
      out += dtype_name(source.dtype(*v));
      out += ':';
      out += shape_to_string(source.shape(*v));
    } else {
      out += '?';  // a variable of the target only (never: load_rules drops such directions)
    }
  }
  return out;
}

bool ProofCache::proved(MatchInstance& instance, const optimizer::DirectedRule& rule, optimizer::InstanceProver& prover,
                        const pet::CheckOptions& region_check) {
  if (rule.partial) {
    // The target is replaced by its checked correction (the region
    // checker's verdict is what `proved` then reports).
    if (!optimizer::correct_partial_instance(instance.instance, region_check)) return false;
    return prover.proved(instance.instance);
  }
  const std::string key = canonical_instance_key(instance.instance);
  {
    std::lock_guard lock(mutex_);
    if (auto it = results_.find(key); it != results_.end()) {
      ++hits_;
      return it->second;
    }
  }
  const bool ok = prover.proved(instance.instance);
  std::lock_guard lock(mutex_);
  results_.emplace(key, ok);
  return ok;
}

int64_t ProofCache::hits() const {
  std::lock_guard lock(mutex_);
  return hits_;
}

namespace {

// The cost of a graph whose inputs listed in `constant_inputs` are weights.
double cost_with_weights(const Graph& g, const std::vector<bool>& constant_inputs, optimizer::CostModel& cost) {
  std::vector<bool> constant(g.nodes().size(), false);
  double total = 0;
  for (int32_t i : g.topological_order()) {
    const Node& n = g.node(i);
    if (n.is_input()) {
      constant[i] = constant_inputs[i];
      continue;
    }
    if (n.is_constant()) {
      constant[i] = true;
      continue;
    }
    constant[i] = std::all_of(n.inputs.begin(), n.inputs.end(), [&](ValueRef v) { return constant[v.node]; });
    if (!constant[i]) total += cost.op_cost_us(g, n);
  }
  return total;
}

std::vector<bool> constant_inputs(const EGraph& egraph, const MatchInstance& instance, const Graph& g) {
  std::vector<bool> out(g.nodes().size(), false);
  for (int32_t in : g.inputs()) {
    auto it = instance.variable_classes.find(g.node(in).name);
    out[in] = it != instance.variable_classes.end() && egraph.data(it->second).constant;
  }
  return out;
}

}  // namespace

double local_cost_delta(const EGraph& egraph, const MatchInstance& instance, optimizer::CostModel& cost) {
  const Rule& r = instance.instance.rule;
  return cost_with_weights(r.target, constant_inputs(egraph, instance, r.target), cost) -
         cost_with_weights(r.source, constant_inputs(egraph, instance, r.source), cost);
}

namespace {

// The class of every node of the instance's target, bottom-up (indexed like
// the target's nodes), and its outputs' value classes: variables are their
// matched classes, `constant(node)` and `op(node, operand classes)` give the
// rest, `project(tuple class, k)` an output of a multi-output operator. Any
// of them may answer kNoClass (not in the e-graph): the walk stops, and
// returns an empty list. apply_proved adds what is missing; already_holds
// only looks.
template <class Constant, class Op, class Project>
std::vector<ClassId> target_output_classes(const EGraph& egraph, const MatchInstance& instance, Constant constant,
                                           Op op, Project project) {
  const Graph& target = instance.instance.rule.target;
  std::vector<ClassId> classes(target.nodes().size(), kNoClass);
  auto value_class = [&](ValueRef v) {
    const ClassId c = classes.at(v.node);
    return egraph.data(c).tuple ? project(c, static_cast<uint32_t>(v.output)) : c;
  };
  for (int32_t i = 0; i < static_cast<int32_t>(target.nodes().size()); ++i) {
    const Node& n = target.node(i);
    if (n.is_input()) {
      auto it = instance.variable_classes.find(n.name);
      if (it == instance.variable_classes.end())
        throw std::logic_error("saturation: instance variable '" + n.name +
                               "' has no class: " + instance.instance.text);
      classes[i] = it->second;
    } else if (n.is_constant()) {
      classes[i] = constant(n);
    } else {
      std::vector<ClassId> operands;
      for (ValueRef in : n.inputs) {
        operands.push_back(value_class(in));
        if (operands.back() == kNoClass) return {};
      }
      classes[i] = op(n, std::move(operands));
    }
    if (classes[i] == kNoClass) return {};
  }
  std::vector<ClassId> outputs;
  for (ValueRef v : target.outputs()) {
    outputs.push_back(value_class(v));
    if (outputs.back() == kNoClass) return {};
  }
  return outputs;
}

}  // namespace

bool already_holds(const EGraph& egraph, const MatchInstance& instance, const PatternMatch& match) {
  const std::vector<ClassId> outputs = target_output_classes(
      egraph, instance,
      [](const Node&) { return kNoClass; },  // a constant of the target: not looked up, proved as usual
      [&](const Node& n, std::vector<ClassId> operands) { return egraph.lookup_op(*n.op, n.params, operands); },
      [&](ClassId tuple, uint32_t k) {
        return egraph.lookup(ENode{NodeKind::kProject, k, {tuple}, 0});
      });
  if (outputs.empty()) return false;
  for (size_t k = 0; k < outputs.size(); ++k)
    if (egraph.find(outputs[k]) != egraph.find(match.outputs.at(k))) return false;
  return true;
}

namespace {

// The names of the matched operator e-nodes, in the source's node order.
std::vector<std::string> matched_names(const EGraph& egraph, const PatternMatch& match) {
  std::vector<std::string> names;
  for (size_t j = 0; j < match.classes.size(); ++j) {
    if (match.classes[j] == kNoClass) continue;  // a variable
    for (const ENode& n : egraph.eclass(match.classes[j]).nodes) {
      if (n.kind != NodeKind::kOp || n.head != match.heads[j] || n.label == 0) continue;
      names.push_back(egraph.label(n.label).name);
      break;
    }
  }
  return names;
}

}  // namespace

ApplyOutcome apply_proved(EGraph& egraph, const MatchInstance& proved, const PatternMatch& match, uint32_t origin,
                          bool filter_cycles, const std::string& rule_tag, optimizer::AppliedRewrite* record) {
  const std::vector<std::string> replaced =
      rule_tag.empty() ? std::vector<std::string>{} : matched_names(egraph, match);
  optimizer::RewriteNamer namer(rule_tag, replaced);
  if (record) record->removed = replaced;
  // With a union log (EGraph::log_unions), each e-node added or found is
  // named by its own id (ENode::self), and the ids it was given as operands
  // are premises of the application (saturation/derive.h explains them).
  const bool explain = egraph.logs_unions();
  std::vector<std::pair<ClassId, ClassId>> premises;
  auto added = [&](ClassId cls, const std::vector<ClassId>& operands) {
    if (!explain) return cls;
    const ClassId self = egraph.last_added_node();
    const ENode& original = egraph.original_node(self);
    for (size_t i = 0; i < operands.size() && i < original.children.size(); ++i)
      premises.emplace_back(original.children[i], operands[i]);
    return self;
  };
  auto add_constant = [&](const Node& n) { return added(egraph.add_constant(n), {}); };
  auto add_project = [&](ClassId tuple, uint32_t k) { return added(egraph.add_project(tuple, k, origin), {tuple}); };
  const std::vector<ClassId> outputs = target_output_classes(
      egraph, proved, add_constant,
      [&](const Node& n, std::vector<ClassId> operands) {
        uint32_t label = 0;
        if (!rule_tag.empty()) {
          std::string name = namer.node_name(n.op->name);
          if (record) record->added.push_back(name);
          std::vector<std::string> values = optimizer::RewriteNamer::value_names(name, n.output_shapes.size());
          label = egraph.add_label({std::move(name), std::move(values)});
        }
        return added(egraph.add_op(*n.op, n.params, operands, origin, label), operands);
      },
      add_project);
  // The source's e-nodes as matched, by their own ids (found, not added,
  // unless a union of this iteration left the hash-consing behind).
  std::vector<ClassId> sources;
  if (explain) {
    MatchInstance source = proved;
    source.instance.rule.target = proved.instance.rule.source;
    sources = target_output_classes(
        egraph, source, add_constant,
        [&](const Node& n, std::vector<ClassId> operands) {
          return added(egraph.add_op(*n.op, n.params, operands, origin), operands);
        },
        add_project);
    egraph.add_premises(origin, std::move(premises));
  }
  ApplyOutcome out;
  for (size_t k = 0; k < outputs.size(); ++k) {
    const ClassId t = egraph.find(outputs[k]);
    const ClassId s = egraph.find(match.outputs.at(k));
    if (t == s && (!explain || egraph.find(sources.at(k)) == t)) continue;
    // Either direction closes a cycle: s would contain a node that reaches
    // s, or t's ancestors would include t.
    if (filter_cycles && (egraph.reaches(t, s) || egraph.reaches(s, t))) {
      ++out.cycles_filtered;
      continue;
    }
    // Logged between the target's e-node and the source's (a duplicate of
    // the matched one where hash-consing was behind: congruence joins them).
    if (explain) egraph.merge(outputs[k], sources.at(k), origin);
    else egraph.merge(t, s, origin);
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
