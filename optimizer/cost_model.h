// Cost models: the predicted run time of a graph, the sum of its operators'.
//
// Operators whose inputs are all weights (constants, or values computed
// from constants only) cost nothing: the exporter folds them into
// initializers (optimizer/fold_constants.h). So do graph inputs, constants,
// reshape (a view of the same memory) and split (its parts are read in
// place with an offset and strides, as TASO's cost model assumes).
//
// AnalyticCostModel: a roofline per operator, max(FLOPs / peak, bytes /
// bandwidth) plus a launch overhead. Defaults are an NVIDIA H100 SXM in
// float32 without tensor cores: 67 TFLOP/s, 3.35 TB/s of HBM3, 3 us per
// kernel launch. FLOPs: 2 M N K for matmul (per batch for batch_matmul),
// 2 x output elements x (input channels per group x KH x KW) for conv2d,
// the input elements for pooling and reductions, the output elements for
// everything else. Bytes: every input and output read or written once, 4
// bytes per element. A convolution that gives the GPU fewer output tiles
// (64 channels x 64 pixels, per group) than it has multiprocessors (132)
// runs at that fraction of the peak (parallel_fraction): at batch 1,
// ResNet-50's last 3 x 3 convolutions make 8 tiles, and cuDNN runs them
// at a thirtieth of the peak. This is what makes split-K pay (a convolution
// cut into groups over its input channels, summed: rules/generated.rules).
//
// MeasuredCostModel (per operator; the tgr-gpu target now costs the
// runtime's plan's steps instead, optimizer/plan_cost_model.h): the milliseconds stored in the rules database's
// op_costs table for one device, by operator signature (ir/op_signature.h);
// an operator with no measurement falls back to the analytic model, and the
// model counts how many signatures it had to estimate. A reshape or split
// costs nothing exactly when tgr's GPU runtime makes all its outputs views
// (runtime/views.h: the same analysis the runtime's plan uses); otherwise it
// costs the copy the runtime makes.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"

namespace tgr::optimizer {

class CostModel {
 public:
  virtual ~CostModel() = default;
  // The predicted time of one operator node, in microseconds.
  virtual double op_cost_us(const Graph& graph, const Node& node) = 0;
  // The predicted time of the graph's live operators, in microseconds.
  virtual double graph_cost(const Graph& graph);
  // Per node of `graph`, op_cost_us in the graph (0 for inputs, constants
  // and nodes computed from weights only). A model that costs nodes in
  // their context (plan_cost_model.h) works that context out once here.
  virtual std::vector<double> node_costs_us(const Graph& graph);
  virtual std::string describe() const = 0;
  // Whether graph_cost charges some operators less than op_cost_us does,
  // because the runtime runs them inside another (a bias in its product):
  // equality saturation then refines its extracted graph by graph_cost
  // (saturation/refine.h).
  virtual bool fuses_operators() const { return false; }
  // Whether, besides, extraction should price e-nodes in context
  // (saturation/context_costs.h): for a model that fuses operators in
  // patterns a small tree of an e-node's descendants reproduces.
  virtual bool prices_in_context() const { return false; }
};

// For each node: whether it is computed from constants only (inputs of the
// graph reach it through no path). Such nodes are folded at export.
std::vector<bool> constant_only_nodes(const Graph& graph);

struct RooflineParams {
  double peak_flops = 67e12;      // FLOP/s (H100 SXM, FP32, no tensor cores)
  double bandwidth = 3.35e12;     // bytes/s (H100 SXM, HBM3)
  double launch_us = 3.0;         // per kernel
  double multiprocessors = 132;   // H100 SXM; a convolution with fewer output tiles runs that much below peak
  // Split as a view (TASO's assumption, the analytic default). The measured
  // model's fallback costs it as the copy tgr's GPU runtime makes.
  bool split_is_view = true;
};

class AnalyticCostModel : public CostModel {
 public:
  explicit AnalyticCostModel(RooflineParams params = {}) : params_(params) {}
  double op_cost_us(const Graph& graph, const Node& node) override;
  std::string describe() const override;
  static double flops(const Graph& graph, const Node& node);
  static double bytes(const Graph& graph, const Node& node);
  // The fraction of the GPU a convolution's output tiles (64 x 64, per
  // group) occupy, at most 1; 1 for other operators.
  static double parallel_fraction(const Graph& graph, const Node& node,
                                  double multiprocessors = RooflineParams{}.multiprocessors);

 private:
  RooflineParams params_;
};

class MeasuredCostModel : public CostModel {
 public:
  // `costs`: signature -> milliseconds, for one device.
  MeasuredCostModel(std::string device, std::unordered_map<std::string, double> costs, RooflineParams fallback = {});
  // Reads the op_costs table of the rules database at `db_path` for `device`.
  static std::unique_ptr<MeasuredCostModel> from_db(const std::string& db_path, const std::string& device);
  double op_cost_us(const Graph& graph, const Node& node) override;
  // Works out the runtime's views once for the whole graph.
  double graph_cost(const Graph& graph) override;
  std::string describe() const override;
  size_t measured_signatures() const { return costs_.size(); }
  // Distinct signatures looked up that had no measurement (estimated analytically).
  size_t missing_signatures() const;
  size_t used_signatures() const;
  // Scales the analytic estimates of missing signatures, per operator, by
  // how far the measurements of that operator in `graph` are from the
  // analytic model (sum measured / sum analytic; all operators pooled for
  // one never measured). Without it a merged product, unmeasured, would be
  // estimated by the roofline (about half what cuBLAS takes at batch 1)
  // against measured originals, and every merge would look like a gain.
  // Call once, before the search, with the model.
  void scale_fallback_to(const Graph& graph);

 private:
  double fallback_us(const Graph& graph, const Node& node);
  double lookup_us(const Graph& graph, const Node& node);  // measured, or the scaled fallback
  std::string device_;
  std::unordered_map<std::string, double> costs_;
  AnalyticCostModel fallback_;
  std::unordered_map<std::string, double> fallback_scale_;  // by operator name
  double fallback_scale_all_ = 1.0;
  mutable std::mutex mutex_;
  std::set<std::string> missing_, used_;
};

}  // namespace tgr::optimizer
