#include "optimizer/cost_model.h"

#include <algorithm>
#include <cstdio>

#include "ir/op_signature.h"
#include "optimizer/opaque_op.h"
#include "rules_db/rules_db.h"

namespace tgr::optimizer {
namespace {

double elements(const Shape& s) { return static_cast<double>(num_elements(s)); }

// Views: the runtime gives their consumers the same memory (reshape), or
// the parts of it in place (split, as in TASO).
bool is_free(const Node& node) { return !node.is_op() || node.op->name == "reshape" || node.op->name == "split"; }

}  // namespace

std::vector<bool> constant_only_nodes(const Graph& graph) {
  std::vector<bool> constant(graph.nodes().size(), false);
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const Node& n = graph.node(static_cast<int32_t>(i));
    if (n.is_constant()) constant[i] = true;
    else if (n.is_op() && !onnx_io::is_opaque(*n.op))
      constant[i] = std::all_of(n.inputs.begin(), n.inputs.end(), [&](ValueRef v) { return constant[v.node]; });
  }
  return constant;
}

double CostModel::graph_cost(const Graph& graph) {
  const std::vector<bool> constant = constant_only_nodes(graph);
  double total = 0;
  for (int32_t i : graph.topological_order()) {
    const Node& n = graph.node(i);
    if (constant[i] || is_free(n)) continue;
    total += op_cost_us(graph, n);
  }
  return total;
}

double AnalyticCostModel::flops(const Graph& graph, const Node& node) {
  const std::string& op = node.op->name;
  double out = 0;
  for (const Shape& s : node.output_shapes) out += elements(s);
  if (op == "matmul" || op == "batch_matmul") {
    const Shape& a = graph.shape(node.inputs[0]);
    return 2.0 * out * static_cast<double>(a.back());
  }
  if (op == "conv2d") {
    const Shape& w = graph.shape(node.inputs[1]);
    return 2.0 * out * static_cast<double>(w[1] * w[2] * w[3]);
  }
  if (op == "maxpool" || op == "avgpool" || op == "reduce_sum" || op == "reduce_mean" || op == "softmax" ||
      op == "layer_norm")
    return elements(graph.shape(node.inputs[0])) * (op == "softmax" || op == "layer_norm" ? 5.0 : 1.0);
  return out;
}

double AnalyticCostModel::bytes(const Graph& graph, const Node& node) {
  double n = 0;
  for (ValueRef in : node.inputs) n += elements(graph.shape(in));
  for (const Shape& s : node.output_shapes) n += elements(s);
  return 4.0 * n;
}

double AnalyticCostModel::op_cost_us(const Graph& graph, const Node& node) {
  if (is_free(node)) return 0;
  const double compute = flops(graph, node) / params_.peak_flops;
  const double memory = bytes(graph, node) / params_.bandwidth;
  return std::max(compute, memory) * 1e6 + params_.launch_us;
}

std::string AnalyticCostModel::describe() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "analytic roofline (%.0f TFLOP/s, %.2f TB/s, %.1f us launch)", params_.peak_flops / 1e12,
                params_.bandwidth / 1e12, params_.launch_us);
  return buf;
}

MeasuredCostModel::MeasuredCostModel(std::string device, std::unordered_map<std::string, double> costs,
                                     RooflineParams fallback)
    : device_(std::move(device)), costs_(std::move(costs)), fallback_(fallback) {}

std::unique_ptr<MeasuredCostModel> MeasuredCostModel::from_db(const std::string& db_path, const std::string& device) {
  auto db = rules_db::RulesDb::open(db_path, false);
  std::unordered_map<std::string, double> costs;
  for (auto& [signature, ms] : db.op_costs(device)) costs.emplace(signature, ms);
  return std::make_unique<MeasuredCostModel>(device, std::move(costs));
}

double MeasuredCostModel::op_cost_us(const Graph& graph, const Node& node) {
  if (is_free(node)) return 0;
  std::string signature = op_signature(graph, node);
  auto it = costs_.find(signature);
  std::lock_guard lock(mutex_);
  if (it != costs_.end()) {
    used_.insert(std::move(signature));
    return it->second * 1000.0;
  }
  missing_.insert(std::move(signature));
  return fallback_.op_cost_us(graph, node);
}

size_t MeasuredCostModel::missing_signatures() const {
  std::lock_guard lock(mutex_);
  return missing_.size();
}

size_t MeasuredCostModel::used_signatures() const {
  std::lock_guard lock(mutex_);
  return used_.size();
}

std::string MeasuredCostModel::describe() const {
  std::string s = "measured on '";
  s += device_;
  s += "' (";
  s += std::to_string(costs_.size());
  s += " signatures in the table; analytic fallback for ";
  s += std::to_string(missing_signatures());
  s += " missing)";
  return s;
}

}  // namespace tgr::optimizer
