#include "optimizer/onnxruntime_cost_model.h"

#include <algorithm>
#include <cstdio>

#include "ir/float_types.h"
#include "ir/op_signature.h"
#include "onnx/export_fusions.h"
#include "optimizer/cost_fit.h"
#include "rules_db/rules_db.h"

namespace tgr::optimizer {
namespace {

// Deterministic weights for a one-node calibration model (their values do not change its time).
ConstantValue weight_value(DType dtype, const Shape& shape) {
  if (!is_floating(dtype)) return ConstantValue(dtype, Tensor<int64_t>(shape));  // zeros: valid indices
  Tensor<float> t(shape);
  for (size_t i = 0; i < t.data.size(); ++i)
    t.data[i] = round_to_dtype(dtype, static_cast<float>((i * 2654435761u) % 1000) / 1000.0f - 0.5f);
  ConstantValue v(std::move(t));
  v.dtype = dtype;
  return v;
}

// ONNX Runtime runs a Relu that alone reads a Conv's or Gemm's result inside
// that node (its ConvActivationFusion and GemmActivationFusion, at the
// default optimization level): the Relu of a conv2d, or of an add the
// exporter writes as a Conv's B or a Gemm's C. (A conv2d[act=relu] is
// measured as the Conv and Relu it is written as, fused alike.)
bool activation_fused_by_runtime(const Graph& graph, const Node& node, const onnx_io::ExportFusions& fusions,
                                 const std::vector<std::vector<int32_t>>& uses) {
  if (!op_is(node.op, OpKind::kRelu)) return false;
  const ValueRef x = node.inputs[0];
  if (uses[x.node][x.output] != 1) return false;
  const Node& producer = graph.node(x.node);
  if (op_is(producer.op, OpKind::kConv2d)) return producer.params.get_word("act") != "relu";
  return fusions.product_of_add.contains(x.node);
}

}  // namespace

OnnxRuntimeCostModel::OnnxRuntimeCostModel(std::unordered_map<std::string, double> costs) : costs_(std::move(costs)) {
  fit_table();
}

std::unique_ptr<OnnxRuntimeCostModel> OnnxRuntimeCostModel::from_db(const std::string& db_path,
                                                                    const std::string& device) {
  auto db = rules_db::RulesDb::open_read_only(db_path);
  std::unordered_map<std::string, double> costs;
  for (auto& [signature, ms] : db.op_costs(device)) costs.emplace(signature, ms);
  return std::make_unique<OnnxRuntimeCostModel>(std::move(costs));
}

void OnnxRuntimeCostModel::fit_table() {
  std::map<std::string, std::vector<CostPoint>> by_op;
  std::vector<CostPoint> all;
  for (const auto& [signature, ms] : costs_) {
    if (!(ms > 0)) continue;
    try {
      const Graph g = graph_of_signature(signature);
      const Node& n = g.node(g.outputs()[0].node);
      const CostPoint p{AnalyticCostModel::flops(g, n), AnalyticCostModel::bytes(g, n), ms};
      by_op[n.op->name].push_back(p);
      all.push_back(p);
    } catch (const std::exception&) {
      // A signature this build cannot read (an operator it lacks): measured, never fitted.
    }
  }
  fitted_points_ = static_cast<int>(all.size());
  if (all.empty()) {  // a CPU core's roofline
    fit_all_ = {2e-3, 1 / 50e9 * 1e3, 1 / 10e9 * 1e3};
    return;
  }
  const auto c = fit_nonnegative(all);
  fit_all_ = {c[0], c[1], c[2]};
  for (const auto& [op, points] : by_op) {
    if (points.size() < 3) continue;
    const auto f = fit_nonnegative(points);
    fit_by_op_[op] = {f[0], f[1], f[2]};
  }
}

double OnnxRuntimeCostModel::fitted_us(const Graph& graph, const Node& node) const {
  auto it = fit_by_op_.find(node.op->name);
  const Fit& f = it != fit_by_op_.end() ? it->second : fit_all_;
  return f.ms(AnalyticCostModel::flops(graph, node), AnalyticCostModel::bytes(graph, node)) * 1000.0;
}

double OnnxRuntimeCostModel::lookup_us(const Graph& graph, const Node& node, const std::vector<bool>* constant) {
  std::string signature = op_signature(graph, node);
  if (auto it = costs_.find(signature); it != costs_.end()) return it->second * 1000.0;
  {
    std::lock_guard lock(mutex_);
    if (!missing_.contains(signature)) {
      Application a{node.op, node.params, {}, {}, {}};
      for (ValueRef in : node.inputs) {
        a.shapes.push_back(graph.shape(in));
        a.dtypes.push_back(graph.dtype(in));
        a.weight.push_back(constant ? (*constant)[in.node] : graph.node(in.node).is_constant());
      }
      missing_.emplace(std::move(signature), std::move(a));
    }
  }
  return fitted_us(graph, node);
}

double OnnxRuntimeCostModel::op_cost_us(const Graph& graph, const Node& node) {
  if (!node.is_op()) return 0;
  return lookup_us(graph, node, nullptr);
}

double OnnxRuntimeCostModel::graph_cost(const Graph& graph) {
  const std::vector<bool> constant = constant_only_nodes(graph);
  const onnx_io::ExportFusions fusions = onnx_io::find_export_fusions(graph, constant);
  const std::vector<std::vector<int32_t>> uses = graph.use_counts();
  double total = 0;
  for (int32_t i : graph.topological_order()) {
    const Node& n = graph.node(i);
    if (constant[i] || !n.is_op() || fusions.folded_into_another(i) ||
        activation_fused_by_runtime(graph, n, fusions, uses))
      continue;
    total += lookup_us(graph, n, &constant);
  }
  return total;
}

size_t OnnxRuntimeCostModel::missing_signatures() const {
  std::lock_guard lock(mutex_);
  return missing_.size();
}

std::map<std::string, Graph> OnnxRuntimeCostModel::asked() const {
  std::lock_guard lock(mutex_);
  std::map<std::string, Graph> graphs;
  for (const auto& [signature, a] : missing_) {
    Graph g;
    std::vector<ValueRef> args;
    // One operand at least stays an input: a node of weights only would be folded, not run.
    const bool weights_only = std::find(a.weight.begin(), a.weight.end(), false) == a.weight.end();
    for (size_t k = 0; k < a.shapes.size(); ++k) {
      if (a.weight[k] && !(weights_only && k == 0))
        args.push_back(g.add_constant(weight_value(a.dtypes[k], a.shapes[k])));
      else args.push_back(g.add_input("in" + std::to_string(k), a.shapes[k], a.dtypes[k]));
    }
    const std::vector<ValueRef> outputs = g.add_op(*a.op, a.params, args);
    for (size_t k = 0; k < outputs.size(); ++k) g.add_output(outputs[k], "out" + std::to_string(k));
    graphs.emplace(signature, std::move(g));
  }
  return graphs;
}

std::string OnnxRuntimeCostModel::describe() const {
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "measured with ONNX Runtime (%zu signatures in the table; fitted fallback for %zu missing)",
                costs_.size(), missing_signatures());
  return buf;
}

}  // namespace tgr::optimizer
