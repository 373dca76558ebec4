#include "optimizer/rule_set.h"

#include <algorithm>
#include <optional>
#include <set>

#include <tbb/parallel_for.h>

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

std::vector<RuleDirectionText> read_rule_directions(const std::string& path, RuleLoadStats* stats) {
  RuleLoadStats local;
  RuleLoadStats& s = stats ? *stats : local;
  auto db = rules_db::RulesDb::open_read_only(path);
  std::vector<RuleDirectionText> out;
  for (const auto& record : db.list_rules("partial")) {
    if (record.kind != "partial" || !record.correction || record.correction->empty()) {
      ++s.skipped_partial;
      continue;
    }
    // Left to right only: the correction repairs the target.
    out.push_back({record.id, false, true, record.source + " => " + record.target, record.variables});
  }
  for (const auto& record : db.list_rules("proved")) {
    if (record.kind != "full") {
      ++s.skipped_partial;
      continue;
    }
    ++s.proved;
    const std::string axioms = record.axioms.value_or("");
    out.push_back(
        {record.id, false, false, record.source + " => " + record.target, record.variables, 0, false, axioms});
    out.push_back({record.id, true, false, record.target + " => " + record.source, record.variables, 0, false, axioms});
  }
  return out;
}

namespace {

void collect_operator_names(const Expr& e, std::set<std::string>& names) {
  if (e.kind == Expr::Kind::kCall) names.insert(e.name);
  for (const Expr& a : e.args) collect_operator_names(a, names);
}

std::set<std::string> operator_names(const std::vector<Expr>& side) {
  std::set<std::string> names;
  for (const Expr& e : side) collect_operator_names(e, names);
  return names;
}

// What parsing one direction gives, before its graphs are built.
struct ParsedDirection {
  enum class State { kApplicable, kNotApplicable, kUnparsable } state = State::kUnparsable;
  RuleExpr expr;
  std::set<std::string> source_ops, target_ops;
};

// The least fixpoint of the operators that can exist (build_directed_rules);
// keep[i] says whether direction i can match.
std::vector<bool> can_ever_match(const std::set<std::string>& model_ops, const std::vector<ParsedDirection>& parsed) {
  std::set<std::string> reachable = model_ops;
  const auto can_match = [&](const ParsedDirection& p) {
    return p.state == ParsedDirection::State::kApplicable &&
           std::all_of(p.source_ops.begin(), p.source_ops.end(),
                       [&](const std::string& op) { return reachable.count(op) > 0; });
  };
  for (bool grew = true; grew;) {
    grew = false;
    for (const ParsedDirection& p : parsed)
      if (can_match(p))
        for (const std::string& op : p.target_ops) grew |= reachable.insert(op).second;
  }
  std::vector<bool> keep(parsed.size());
  for (size_t i = 0; i < parsed.size(); ++i) keep[i] = can_match(parsed[i]);
  return keep;
}

}  // namespace

std::vector<DirectedRule> build_directed_rules(const std::vector<RuleDirectionText>& directions,
                                               std::span<RuleLoadStats> stats_by_set, const Graph* model,
                                               RuleFilterStats* filter) {
  std::vector<ParsedDirection> parsed(directions.size());
  tbb::parallel_for(size_t{0}, directions.size(), [&](size_t i) {
    try {
      parsed[i].expr = parse_rule_expr(directions[i].text);
    } catch (const ParseError&) {  // e.g. an operator this build does not have
      return;
    }
    const bool ok = applicable(parsed[i].expr.source, parsed[i].expr.target);
    parsed[i].state = ok ? ParsedDirection::State::kApplicable : ParsedDirection::State::kNotApplicable;
    parsed[i].source_ops = operator_names(parsed[i].expr.source);
    parsed[i].target_ops = operator_names(parsed[i].expr.target);
  });
  std::vector<bool> keep(directions.size(), true);
  if (model) {
    std::set<std::string> model_ops;
    for (const Node& n : model->nodes())
      if (n.is_op()) model_ops.insert(n.op->name);
    keep = can_ever_match(model_ops, parsed);
  }
  // The parsed sides are not kept (a --max-ops 4 database's took a
  // gigabyte): freed as soon as they are not needed, so that the peak of
  // loading is not all of them plus all the graphs built.
  tbb::parallel_for(size_t{0}, directions.size(), [&](size_t i) {
    if (!keep[i]) parsed[i].expr = {};
  });
  std::vector<std::optional<DirectedRule>> built(directions.size());
  tbb::parallel_for(size_t{0}, directions.size(), [&](size_t i) {
    if (!keep[i] || parsed[i].state != ParsedDirection::State::kApplicable) return;
    const RuleDirectionText& d = directions[i];
    DirectedRule r;
    try {
      r.shapes = parse_shape_map(d.variables, &r.dtypes);
      r.graphs = build_rule(d.text, r.shapes, r.dtypes);
    } catch (const ParseError&) {
      parsed[i].state = ParsedDirection::State::kUnparsable;
      return;
    } catch (const ShapeSyntaxError&) {
      parsed[i].state = ParsedDirection::State::kUnparsable;
      return;
    }
    r.id = d.id;
    r.reversed = d.reversed;
    r.partial = d.partial;
    r.rule_set = d.rule_set;
    r.shipped = d.shipped;
    r.proof_axioms = d.proof_axioms;
    r.text = d.text;
    parsed[i].expr = {};
    built[i] = std::move(r);
  });
  // The counts, in sequence: per rule, as load_rules has always counted them.
  std::vector<DirectedRule> out;
  std::set<std::pair<size_t, int64_t>> unparsable_rules;  // (rule set, id)
  int kept = 0, unreachable = 0;
  RuleLoadStats uncounted;
  for (size_t i = 0; i < directions.size(); ++i) {
    const RuleDirectionText& d = directions[i];
    RuleLoadStats& s = d.rule_set < stats_by_set.size() ? stats_by_set[d.rule_set] : uncounted;
    switch (parsed[i].state) {
      case ParsedDirection::State::kUnparsable:
        if (unparsable_rules.insert({d.rule_set, d.id}).second) ++s.skipped_unparsable;
        continue;
      case ParsedDirection::State::kNotApplicable:
        if (d.partial) ++s.skipped_partial;
        else ++s.dropped_directions;
        continue;
      case ParsedDirection::State::kApplicable:
        break;
    }
    if (d.partial) ++s.partial;
    ++s.directions;
    if (!keep[i]) {
      ++unreachable;
      continue;
    }
    ++kept;
    out.push_back(std::move(*built[i]));
  }
  if (filter) {
    filter->kept = kept;
    filter->unreachable = unreachable;
  }
  return out;
}

std::vector<DirectedRule> load_rules(const std::string& path, RuleLoadStats* stats) {
  RuleLoadStats local;
  RuleLoadStats& s = stats ? *stats : local;
  return build_directed_rules(read_rule_directions(path, &s), std::span<RuleLoadStats>(&s, 1));
}

}  // namespace tgr::optimizer
