#include "optimizer/rule_set.h"

#include <algorithm>

#include <set>

#include "rules_db/rules_db.h"

namespace tgr::optimizer {
namespace {

std::set<std::string> variables_of(const std::vector<Expr>& side) {
  std::vector<std::string> names;
  for (const Expr& e : side) collect_variables(e, names);
  return {names.begin(), names.end()};
}

bool applicable(const std::vector<Expr>& source, const std::vector<Expr>& target) {
  for (const Expr& e : source)
    if (e.kind == Expr::Kind::kVar) return false;
  const auto bound = variables_of(source);
  for (const auto& name : variables_of(target))
    if (!bound.count(name)) return false;
  return true;
}

}  // namespace

std::vector<DirectedRule> directed_rules(int64_t id, const std::string& source, const std::string& target,
                                         const std::string& variables) {
  std::vector<DirectedRule> out;
  DTypeMap dtypes;
  const ShapeMap shapes = parse_shape_map(variables, &dtypes);
  for (bool reversed : {false, true}) {
    std::string text = reversed ? target : source;
    text += " => ";
    text += reversed ? source : target;
    RuleExpr expr = parse_rule_expr(text);
    if (!applicable(expr.source, expr.target)) continue;
    DirectedRule r;
    r.id = id;
    r.reversed = reversed;
    r.graphs = build_rule(text, shapes, dtypes);
    r.text = std::move(text);
    r.expr = std::move(expr);
    r.shapes = shapes;
    r.dtypes = dtypes;
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<DirectedRule> load_rules(const std::string& path, RuleLoadStats* stats) {
  RuleLoadStats local;
  RuleLoadStats& s = stats ? *stats : local;
  auto db = rules_db::RulesDb::open(path, false);
  std::vector<DirectedRule> rules;
  for (const auto& record : db.list_rules("partial")) {
    if (record.kind != "partial" || !record.correction || record.correction->empty()) {
      ++s.skipped_partial;
      continue;
    }
    try {
      // Left to right only: the correction repairs the target.
      auto directed = directed_rules(record.id, record.source, record.target, record.variables);
      auto forward = std::find_if(directed.begin(), directed.end(), [](const DirectedRule& d) { return !d.reversed; });
      if (forward == directed.end()) {
        ++s.skipped_partial;
        continue;
      }
      forward->partial = true;
      rules.push_back(std::move(*forward));
      ++s.partial;
      ++s.directions;
    } catch (const ParseError&) {  // e.g. an operator this build does not have
      ++s.skipped_unparsable;
    } catch (const ShapeSyntaxError&) {
      ++s.skipped_unparsable;
    }
  }
  for (const auto& record : db.list_rules("proved")) {
    if (record.kind != "full") {
      ++s.skipped_partial;
      continue;
    }
    ++s.proved;
    try {
      auto directed = directed_rules(record.id, record.source, record.target, record.variables);
      s.dropped_directions += 2 - static_cast<int>(directed.size());
      s.directions += static_cast<int>(directed.size());
      for (auto& d : directed) rules.push_back(std::move(d));
    } catch (const ParseError&) {  // e.g. an operator this build does not have
      ++s.skipped_unparsable;
    } catch (const ShapeSyntaxError&) {
      ++s.skipped_unparsable;
    }
  }
  return rules;
}

}  // namespace tgr::optimizer

namespace tgr::optimizer {
namespace {

std::set<const OpDef*> operators_of(const Graph& graph) {
  std::set<const OpDef*> ops;
  for (const Node& n : graph.nodes())
    if (n.is_op()) ops.insert(n.op);
  return ops;
}

}  // namespace

std::vector<DirectedRule> rules_that_can_match(const Graph& graph, std::vector<DirectedRule> rules,
                                               RuleFilterStats* stats) {
  std::set<const OpDef*> reachable = operators_of(graph);
  std::vector<std::set<const OpDef*>> source_ops, target_ops;
  source_ops.reserve(rules.size());
  target_ops.reserve(rules.size());
  for (const DirectedRule& r : rules) {
    source_ops.push_back(operators_of(r.graphs.source));
    target_ops.push_back(operators_of(r.graphs.target));
  }
  const auto can_match = [&](size_t i) {
    return std::all_of(source_ops[i].begin(), source_ops[i].end(),
                       [&](const OpDef* op) { return reachable.count(op) > 0; });
  };
  // The least fixpoint: each round adds the targets of the directions that
  // became matchable; it ends when a round adds no operator.
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t i = 0; i < rules.size(); ++i) {
      if (!can_match(i)) continue;
      for (const OpDef* op : target_ops[i]) grew |= reachable.insert(op).second;
    }
  }
  std::vector<DirectedRule> kept;
  for (size_t i = 0; i < rules.size(); ++i)
    if (can_match(i)) kept.push_back(std::move(rules[i]));
  if (stats) {
    stats->kept = static_cast<int>(kept.size());
    stats->unreachable = static_cast<int>(rules.size() - kept.size());
    stats->operators_reachable = static_cast<int>(reachable.size());
  }
  return kept;
}

}  // namespace tgr::optimizer
