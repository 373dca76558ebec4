#include "optimizer/plan_cost_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "ir/op_signature.h"
#include "optimizer/cost_fit.h"
#include "rules_db/rules_db.h"
#include "runtime/step_signature.h"

namespace tgr::optimizer {

PlanCostModel::PlanCostModel(std::string device, std::unordered_map<std::string, double> costs, RooflineParams roofline,
                             Precision precision)
    : device_(std::move(device)), precision_(precision), costs_(std::move(costs)), roofline_(roofline) {
  fit_table();
}

std::unique_ptr<PlanCostModel> PlanCostModel::from_db(const std::string& db_path, const std::string& device,
                                                      Precision precision) {
  auto db = rules_db::RulesDb::open_read_only(db_path);
  std::unordered_map<std::string, double> costs;
  std::map<std::string, int> methods;
  for (const rules_db::RulesDb::OpCost& row : db.op_cost_rows(device)) {
    costs.emplace(row.signature, row.ms);
    if (row.signature.starts_with(kStepSignaturePrefix)) ++methods[row.method];
  }
  auto model = std::make_unique<PlanCostModel>(device, std::move(costs), RooflineParams{}, precision);
  model->set_timing_methods(std::move(methods));
  return model;
}

PlanCostModel::Features PlanCostModel::features_of(const std::string& signature) {
  const ParsedStepSignature step = parse_step_signature(signature);
  Features f;
  f.kind = step.kind;
  for (size_t k = 0; k < step.nodes.size(); ++k) {
    const StepNodeSignature& ns = step.nodes[k];
    const Graph g = graph_of_signature(ns.op_signature);
    const Node& n = g.node(g.outputs()[0].node);
    if (k == 0) {
      f.first_op = n.op->name;
      if (step.kind == "conv" || step.kind == "product" ||
          (step.nodes.size() == 1 &&
           (op_is(n.op, OpKind::kConv2d) || op_is(n.op, OpKind::kMatmul) || op_is(n.op, OpKind::kBatchMatmul))))
        f.head = ns.op_signature;
    }
    // FLOPs at the rate the step's parallelism allows (a convolution with
    // few output tiles runs below peak), so that the fit prices a split-K
    // grouped convolution no one measured by what it occupies.
    f.flops += AnalyticCostModel::flops(g, n) / AnalyticCostModel::parallel_fraction(g, n);
    f.bytes += AnalyticCostModel::bytes(g, n);
    // A value passed inside the step is neither written to memory nor read back.
    for (size_t i = 0; i < ns.source.size() && i < n.inputs.size(); ++i)
      if (ns.source[i] >= 0) f.bytes -= 2 * 4.0 * static_cast<double>(num_elements(g.shape(n.inputs[i])));
  }
  f.bytes = std::max(f.bytes, 0.0);
  return f;
}

void PlanCostModel::fit_table() {
  std::map<std::string, std::vector<CostPoint>> groups;  // "kind:first_op", "kind", "" (all)
  for (const auto& [signature, ms] : costs_) {
    if (!signature.starts_with(kStepSignaturePrefix) || signature_precision(signature) != precision_) continue;
    ++measured_steps_;
    if (!(ms > 0)) continue;  // a step measured as free (an alias in isolation) says nothing of the slope
    try {
      const Features f = features_of(signature);
      const CostPoint p{f.flops, f.bytes, ms};
      groups[f.kind + ":" + f.first_op].push_back(p);
      groups[f.kind].push_back(p);
      groups[""].push_back(p);
      if (!f.head.empty()) {
        auto [it, added] = same_head_ms_.emplace(f.head, ms);
        if (!added) it->second = std::min(it->second, ms);
      }
    } catch (const std::exception&) {
      // A signature this build cannot read (an operator it lacks): measured, never fitted.
    }
  }
  for (const auto& [head, ms] : same_head_ms_) {
    HeadShape h = head_shape(head);
    head_families_[h.pattern].push_back({std::move(h.numbers), ms});
  }
  for (const auto& [key, points] : groups) {
    if (points.size() < 3 && !(key.empty() && !points.empty())) continue;
    const auto c = fit_nonnegative(points);
    fits_[key] = {c[0], c[1], c[2]};
  }
}

PlanCostModel::HeadShape PlanCostModel::head_shape(std::string_view op_signature) {
  HeadShape h;
  int depth = 0;  // inside [...]: parameters, kept as written
  const auto letter = [&](size_t k) { return std::isalpha(static_cast<unsigned char>(op_signature[k])) != 0; };
  const auto digit = [&](size_t k) { return std::isdigit(static_cast<unsigned char>(op_signature[k])) != 0; };
  for (size_t i = 0; i < op_signature.size();) {
    const char ch = op_signature[i];
    // A size is a digit run after a separator (':', ',', the 'x' between
    // two sizes); digits within a name (int64) are not.
    const bool in_name = i > 0 && letter(i - 1) && !(op_signature[i - 1] == 'x' && i > 1 && digit(i - 2));
    if (depth == 0 && !in_name && digit(i)) {
      int64_t v = 0;
      while (i < op_signature.size() && digit(i)) v = v * 10 + (op_signature[i++] - '0');
      h.numbers.push_back(v);
      h.pattern += '#';
      continue;
    }
    depth += ch == '[' ? 1 : ch == ']' ? -1 : 0;
    h.pattern += ch;
    ++i;
  }
  return h;
}

double PlanCostModel::interpolated_ms(const std::string& head) const {
  if (head.empty()) return 0;
  const HeadShape want = head_shape(head);
  auto family = head_families_.find(want.pattern);
  if (family == head_families_.end()) return 0;
  // The measured heads that differ from `want` in one size (every position
  // where they differ holds one value there and another here: a product's
  // K appears in both operands), grouped by which positions differ.
  struct Side {
    double x = 0, ms = 0;
    bool found = false;
  };
  std::map<std::vector<bool>, std::pair<Side, Side>> axes;  // positions -> (nearest below, nearest above)
  for (const auto& [numbers, ms] : family->second) {
    if (numbers.size() != want.numbers.size()) continue;
    std::vector<bool> differ(numbers.size());
    int64_t theirs = -1, ours = -1;
    bool one_size = true;
    for (size_t i = 0; i < numbers.size(); ++i) {
      if (numbers[i] == want.numbers[i]) continue;
      differ[i] = true;
      if (theirs < 0) theirs = numbers[i], ours = want.numbers[i];
      else if (numbers[i] != theirs || want.numbers[i] != ours) one_size = false;
    }
    if (theirs < 0 || !one_size) continue;
    auto& [below, above] = axes[differ];
    const double x = static_cast<double>(theirs);
    if (theirs < ours && (!below.found || x > below.x)) below = {x, ms, true};
    if (theirs > ours && (!above.found || x < above.x)) above = {x, ms, true};
  }
  // Linear between the nearest measured sizes on each side; where several
  // sizes bracket it, the dearest estimate.
  double best = 0;
  for (const auto& [differ, sides] : axes) {
    const auto& [below, above] = sides;
    if (!below.found || !above.found) continue;
    double x = 0;
    for (size_t i = 0; i < differ.size(); ++i)
      if (differ[i]) x = static_cast<double>(want.numbers[i]);
    best = std::max(best, below.ms + (above.ms - below.ms) * (x - below.x) / (above.x - below.x));
  }
  return best;
}

double PlanCostModel::fitted_us(const std::string& signature) const { return fitted_us(features_of(signature)); }

double PlanCostModel::fitted_us(const Features& f) const {
  for (const std::string& key : {f.kind + ":" + f.first_op, f.kind, std::string()}) {
    auto it = fits_.find(key);
    if (it != fits_.end()) return (it->second.a + it->second.b * f.flops + it->second.c * f.bytes) * 1000.0;
  }
  // Nothing measured: one launch at the roofline.
  return std::max(f.flops / roofline_.peak_flops, f.bytes / roofline_.bandwidth) * 1e6 + roofline_.launch_us;
}

double PlanCostModel::step_us(const std::string& signature, bool* measured) {
  {
    std::shared_lock lock(cache_mutex_);
    if (auto it = cache_.find(signature); it != cache_.end()) {
      if (measured) *measured = it->second.second;
      return it->second.first;
    }
  }
  double us = 0;
  bool from_table = true;
  if (auto it = costs_.find(signature); it != costs_.end()) {
    us = it->second * 1000.0;
  } else {
    const ParsedStepSignature step = parse_step_signature(signature);
    // (Operator rows were timed at fp32; at tf32 the same operator signature names another computation.)
    auto op = step.nodes.size() == 1 && precision_ != Precision::kTf32 ? costs_.find(step.nodes[0].op_signature)
                                                                       : costs_.end();
    // A convolution or product measured with another epilogue (the bare
    // operator, as extraction costs it alone, or with a bias, relu or
    // residual its plan fuses): the epilogue runs inside the library call
    // and costs next to nothing, so that measurement beats any fit. Still a
    // fallback (counted as missing).
    if (op != costs_.end()) {
      us = op->second * 1000.0;
    } else {
      from_table = false;
      const Features f = features_of(signature);  // parsed once for the fallbacks below
      auto head = f.head.empty() ? same_head_ms_.end() : same_head_ms_.find(f.head);
      if (head != same_head_ms_.end()) {
        us = head->second * 1000.0;
      } else if (const double between = interpolated_ms(f.head); between > 0) {
        us = between * 1000.0 * kInterpolatedMargin;
      } else {
        // Priced above its fit: the search takes exactly the steps whose
        // guesses are too low (the optimizer's curse), so a guess must win by
        // a margin before it displaces what was measured.
        us = fitted_us(f) * unmeasured_margin_;
      }
    }
  }
  std::unique_lock lock(cache_mutex_);
  cache_.emplace(signature, std::pair{us, from_table});
  if (!from_table) missing_.insert(signature);
  if (measured) *measured = from_table;
  return us;
}

ExecutionPlan PlanCostModel::plan_of(const Graph& graph) const {
  PlanOptions options;
  options.place_values = false;  // the tasks are all the cost needs
  options.precision = precision_;
  return make_execution_plan(graph, options);
}

std::vector<PlanCostModel::StepCost> PlanCostModel::plan_costs(const Graph& graph) {
  const ExecutionPlan plan = plan_of(graph);
  std::vector<StepCost> steps;
  for (const Task& t : plan.tasks) {
    if (step_is_free(t)) continue;
    StepCost s;
    s.signature = step_signature(graph, t, precision_);
    s.nodes = t.nodes;
    s.us = step_us(s.signature, &s.measured);
    steps.push_back(std::move(s));
  }
  return steps;
}

double PlanCostModel::graph_cost(const Graph& graph) {
  ExecutionPlan plan;
  try {
    plan = plan_of(graph);
  } catch (const std::invalid_argument&) {
    return std::numeric_limits<double>::infinity();  // the runtime cannot run it (a rank above 8)
  }
  double total = 0;
  for (const Task& t : plan.tasks)
    if (!step_is_free(t)) total += step_us(step_signature(graph, t, precision_));
  return total;
}

std::vector<double> PlanCostModel::node_costs_us(const Graph& graph) {
  std::vector<double> costs(graph.nodes().size(), 0.0);
  for (const StepCost& s : plan_costs(graph)) {
    std::vector<double> flops;
    double total = 0;
    for (int32_t n : s.nodes) {
      flops.push_back(AnalyticCostModel::flops(graph, graph.node(n)));
      total += flops.back();
    }
    for (size_t k = 0; k < s.nodes.size(); ++k)
      costs[s.nodes[k]] = total > 0 ? s.us * flops[k] / total : s.us / static_cast<double>(s.nodes.size());
  }
  return costs;
}

double PlanCostModel::op_cost_us(const Graph& graph, const Node& node) {
  if (!node.is_op()) return 0;
  const auto index = static_cast<size_t>(&node - graph.nodes().data());
  return node_costs_us(graph).at(index);
}

size_t PlanCostModel::missing_steps() const {
  std::shared_lock lock(cache_mutex_);
  return missing_.size();
}

std::string PlanCostModel::describe() const {
  char buf[240];
  std::snprintf(buf, sizeof buf,
                "the GPU runtime's plan, steps measured on '%s' (%zu step signatures in the table; fitted fallback "
                "for %zu missing, priced x%.2f)",
                device_.c_str(), measured_steps_, missing_steps(), unmeasured_margin_);
  std::string text = buf;
  // Other precisions say so (measured_steps_ counts the table's steps of this precision).
  if (precision_ != Precision::kFp32) text += "; costed at " + std::string(precision_name(precision_));
  if (timing_methods_.size() > 1) {
    text += "; its step costs were timed ";
    text += std::to_string(timing_methods_.size());
    text += " ways (";
    bool first = true;
    for (const auto& [method, count] : timing_methods_) {
      if (!first) text += ", ";
      first = false;
      text += std::to_string(count);
      text += ' ';
      text += method.empty() ? "not recorded" : method;
    }
    text += "): calibrate them again";
  }
  return text;
}

}  // namespace tgr::optimizer
