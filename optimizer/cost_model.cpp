#include "optimizer/cost_model.h"

#include <algorithm>
#include <cstdio>

#include "ir/op_signature.h"
#include "onnx/opaque_op.h"
#include "rules_db/rules_db.h"
#include "runtime/views.h"

namespace tgr::optimizer {
namespace {

double elements(const Shape& s) { return static_cast<double>(num_elements(s)); }

// Views: the runtime gives their consumers the same memory (reshape), or
// the parts of it in place (split, when `split_is_view`: TASO's assumption).
bool is_free(const Node& node, bool split_is_view) {
  if (!node.is_op()) return true;
  const ViewKind view = node.op->traits.view;
  return view == ViewKind::kReshape || (split_is_view && view == ViewKind::kPieces);
}

// The operator's application in `graph`, as its cost functions see it.
template <class F>
double with_call(const Graph& graph, const Node& node, F f) {
  std::vector<Shape> input_shapes;
  std::vector<DType> input_dtypes;
  for (ValueRef in : node.inputs) {
    input_shapes.push_back(graph.shape(in));
    input_dtypes.push_back(graph.dtype(in));
  }
  const OpCall call{*node.op, node.params, input_shapes, input_dtypes, node.output_shapes};
  return f(call);
}

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
    if (constant[i] || !n.is_op()) continue;
    total += op_cost_us(graph, n);  // each model decides what a view costs
  }
  return total;
}

std::vector<double> CostModel::node_costs_us(const Graph& graph) {
  std::vector<double> costs(graph.nodes().size(), 0.0);
  const std::vector<bool> constant = constant_only_nodes(graph);
  for (int32_t i : graph.topological_order())
    if (graph.node(i).is_op() && !constant[i]) costs[i] = op_cost_us(graph, graph.node(i));
  return costs;
}

// The operator's own counts (OpCost in ir/op_def.h); one per output element
// and every operand moved once for an operator that states none
// (tests/op_registry_test.cpp names such an operator).
double AnalyticCostModel::flops(const Graph& graph, const Node& node) {
  if (node.op->cost.flops) return with_call(graph, node, node.op->cost.flops);
  double out = 0;
  for (const Shape& s : node.output_shapes) out += elements(s);
  return out;
}

double AnalyticCostModel::bytes(const Graph& graph, const Node& node) {
  if (node.op->cost.bytes) return with_call(graph, node, node.op->cost.bytes);
  double n = 0;
  for (ValueRef in : node.inputs) n += elements(graph.shape(in));
  for (const Shape& s : node.output_shapes) n += elements(s);
  return 4.0 * n;
}

double AnalyticCostModel::parallel_fraction(const Graph& graph, const Node& node, double multiprocessors) {
  if (!op_is(node.op, OpKind::kConv2d)) return 1.0;
  const Shape& x = graph.shape(node.inputs[0]);
  const Shape& w = graph.shape(node.inputs[1]);
  const Shape& y = node.output_shapes[0];
  if (x.size() != 4 || w.size() != 4 || y.size() != 4 || w[1] <= 0) return 1.0;
  const int64_t groups = x[1] / w[1];
  const int64_t channels_per_group = y[1] / std::max<int64_t>(groups, 1);
  const int64_t pixels = y[0] * y[2] * y[3];
  constexpr int64_t kTile = 64;
  const double tiles = static_cast<double>(groups) * static_cast<double>((channels_per_group + kTile - 1) / kTile) *
                       static_cast<double>((pixels + kTile - 1) / kTile);
  return std::min(1.0, tiles / multiprocessors);
}

double AnalyticCostModel::op_cost_us(const Graph& graph, const Node& node) {
  if (is_free(node, params_.split_is_view)) return 0;
  const double compute =
      flops(graph, node) / (params_.peak_flops * parallel_fraction(graph, node, params_.multiprocessors));
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
    : device_(std::move(device)), costs_(std::move(costs)), fallback_([&] {
        fallback.split_is_view = false;  // reached only for splits the runtime copies
        return fallback;
      }()) {}

std::unique_ptr<MeasuredCostModel> MeasuredCostModel::from_db(const std::string& db_path, const std::string& device) {
  auto db = rules_db::RulesDb::open_read_only(db_path);
  std::unordered_map<std::string, double> costs;
  for (auto& [signature, ms] : db.op_costs(device)) costs.emplace(signature, ms);
  return std::make_unique<MeasuredCostModel>(device, std::move(costs));
}

namespace {

// The GPU runtime's views of `graph` (nodes computed from constants own their bytes).
ViewAnalysis runtime_views(const Graph& graph, const std::vector<bool>& constant) {
  return analyse_views(graph, std::vector<char>(constant.begin(), constant.end()));
}

}  // namespace

double MeasuredCostModel::op_cost_us(const Graph& graph, const Node& node) {
  if (!node.is_op()) return 0;
  if (may_run_nothing(graph, node)) {  // the analysis is of the whole graph: only for the operators it concerns
    const auto index = static_cast<int32_t>(&node - graph.nodes().data());
    if (runtime_views(graph, constant_only_nodes(graph)).runs_nothing(index)) return 0;
  }
  return lookup_us(graph, node);
}

double MeasuredCostModel::graph_cost(const Graph& graph) {
  const std::vector<bool> constant = constant_only_nodes(graph);
  const ViewAnalysis views = runtime_views(graph, constant);
  double total = 0;
  for (int32_t i : graph.topological_order()) {
    const Node& n = graph.node(i);
    if (constant[i] || !n.is_op() || views.runs_nothing(i)) continue;
    total += lookup_us(graph, n);
  }
  return total;
}

double MeasuredCostModel::lookup_us(const Graph& graph, const Node& node) {
  std::string signature = op_signature(graph, node);
  auto it = costs_.find(signature);
  std::lock_guard lock(mutex_);
  if (it != costs_.end()) {
    used_.insert(std::move(signature));
    return it->second * 1000.0;
  }
  missing_.insert(std::move(signature));
  return fallback_us(graph, node);
}

double MeasuredCostModel::fallback_us(const Graph& graph, const Node& node) {
  auto it = fallback_scale_.find(node.op->name);
  return fallback_.op_cost_us(graph, node) * (it != fallback_scale_.end() ? it->second : fallback_scale_all_);
}

void MeasuredCostModel::scale_fallback_to(const Graph& graph) {
  std::unordered_map<std::string, std::pair<double, double>> sums;  // op -> (measured, analytic)
  double measured_all = 0, analytic_all = 0;
  const std::vector<bool> constant = constant_only_nodes(graph);
  for (int32_t i : graph.topological_order()) {
    const Node& n = graph.node(i);
    if (!n.is_op() || constant[i]) continue;
    auto it = costs_.find(op_signature(graph, n));
    if (it == costs_.end()) continue;
    const double analytic = fallback_.op_cost_us(graph, n);
    if (!(analytic > 0)) continue;
    sums[n.op->name].first += it->second * 1000.0;
    sums[n.op->name].second += analytic;
    measured_all += it->second * 1000.0;
    analytic_all += analytic;
  }
  std::lock_guard lock(mutex_);
  fallback_scale_.clear();
  for (const auto& [op, s] : sums)
    if (s.first > 0) fallback_scale_[op] = s.first / s.second;
  fallback_scale_all_ = analytic_all > 0 && measured_all > 0 ? measured_all / analytic_all : 1.0;
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
  s += " signatures in the table; analytic fallback, scaled to the measurements, for ";
  s += std::to_string(missing_signatures());
  s += " missing)";
  return s;
}

}  // namespace tgr::optimizer
