// The cost model of `optimize --target tgr-gpu` (optimizer/target.h): the
// time of tgr's CUDA runtime running a graph, as the sum of the steps of
// the runtime's execution plan for it (runtime/execution_plan.h, made on
// the CPU), each the milliseconds `calibrate` measured for its step
// signature (runtime/step_signature.h) on the device, in the op_costs table.
// A convolution with its bias, residual and relu is one step, and so is a
// chain of elementwise operators: a merge pays where the merged step is
// measured faster than the steps it replaces, as the runtime will run it.
// Alias steps (views) and nodes computed at load cost nothing.
//
// A step the table lacks costs, in order: the operator's own row (a step of
// one node, timed alone by an older calibrate: the same kernel); the same
// convolution or product measured with another epilogue or none (a bias,
// relu or residual runs inside the library call: extraction's lone
// convolution costs what the model's fused one measured); for a convolution
// or product, the line between the measured ones of the same shape but one
// size, the nearest below and above it (a merged product 128x768x1536
// between the model's 768 and the merged 2304), priced 10 % above
// (kInterpolatedMargin); a fit of the table's steps,
// ms = a + b FLOPs + c bytes (optimizer/cost_fit.h), fitted per kind and
// first operator ("conv:conv2d", "node:matmul") where three steps of it are
// measured, else per kind ("elementwise"), else over all steps; with no step
// measured, the H100 roofline per step (cost_model.h's RooflineParams). A
// guess (fit or roofline) is priced 25 % above itself (kUnmeasuredMargin;
// `optimize --unmeasured-margin` sets another: below 1, a search that
// explores, whose graph says which steps are worth measuring next).
// A step's FLOPs are its nodes' (AnalyticCostModel::flops); its bytes are
// its nodes' minus the values passed inside the step (written and read once
// each, 4 bytes per element).
//
// Per node (op_cost_us, what equality saturation's extraction and the
// report's per-node costs read): each node gets its step's cost in
// proportion to its FLOPs among the step's nodes: in a convolution step the
// convolution takes nearly all of it, a fused bias add or relu nearly
// nothing; an elementwise chain is shared about evenly. An approximation:
// the sum over a graph's nodes is graph_cost, but a node costed alone (as
// extraction does, in a graph of that node only) is its own step, unfused.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "optimizer/cost_model.h"
#include "runtime/execution_plan.h"

namespace tgr::optimizer {

class PlanCostModel : public CostModel {
 public:
  // What a step costed by the fit costs, over its fit (see step_us).
  static constexpr double kUnmeasuredMargin = 1.25;
  // What a convolution or product interpolated between two measured sizes
  // costs, over the interpolation (a library call's time is not linear in
  // a size, but it lies between its neighbours').
  static constexpr double kInterpolatedMargin = 1.1;
  // `costs`: the op_costs rows of one device, signature -> milliseconds:
  // step rows (step signatures) and operator rows alike.
  // `precision`: what the model will run at (runtime/precision.h). Its steps
  // are costed by their signatures at that precision (calibrate --precision
  // timed them), and only the table's steps of that precision are fitted.
  PlanCostModel(std::string device, std::unordered_map<std::string, double> costs, RooflineParams roofline = {},
                Precision precision = Precision::kFp32);
  // Reads the op_costs of `device` in the database at `db_path`.
  static std::unique_ptr<PlanCostModel> from_db(const std::string& db_path, const std::string& device,
                                                Precision precision = Precision::kFp32);

  // How many of the table's step costs were timed each way (op_costs.method,
  // "" not recorded): describe() says so when there is more than one way,
  // since such costs do not add up as one model's steps do.
  void set_timing_methods(std::map<std::string, int> counts) { timing_methods_ = std::move(counts); }

  // What a step the fit guesses costs over its guess (kUnmeasuredMargin
  // unless set; before the first graph is costed).
  void set_unmeasured_margin(double margin) { unmeasured_margin_ = margin; }

  double graph_cost(const Graph& graph) override;
  double op_cost_us(const Graph& graph, const Node& node) override;
  std::vector<double> node_costs_us(const Graph& graph) override;
  std::string describe() const override;
  // Not priced in context (CostModel::prices_in_context): a plan's steps
  // depend on where values are placed (views; graph outputs are row-major,
  // so a small tree's outputs are copies the model does not make), and an
  // extraction with the trees' prices (the fitted step costs) chose far
  // costlier graphs than the prices alone (docs/benchmarks.md,
  // "Measurements behind code comments").
  // Its graphs are refined by graph_cost (the plan's own cost).
  bool fuses_operators() const override { return true; }

  // One step of a graph's plan and its predicted time.
  struct StepCost {
    std::string signature;
    std::vector<int32_t> nodes;
    double us = 0;
    bool measured = false;  // a row of the table (the step's, or its one operator's)
  };
  // The runtime's plan for `graph` (tasks only; alias steps left out), costed.
  std::vector<StepCost> plan_costs(const Graph& graph);

  // The predicted time of one step signature, in microseconds; `measured` says whether from a table row.
  double step_us(const std::string& signature, bool* measured = nullptr);
  // The fallback's estimate for a step signature, in microseconds.
  double fitted_us(const std::string& signature) const;

  size_t measured_steps() const { return measured_steps_; }  // step rows in the table
  size_t missing_steps() const;                              // distinct steps costed by the fallback

 private:
  struct Fit {
    double a = 0, b = 0, c = 0;  // ms, ms per FLOP, ms per byte
  };
  struct Features {
    std::string kind, first_op;
    // A convolution or product step's (a library call, with an epilogue or
    // none): its first node's operator signature (same_head_ms_'s key); else empty.
    std::string head;
    double flops = 0, bytes = 0;
  };
  static Features features_of(const std::string& signature);
  double fitted_us(const Features& f) const;
  // An operator signature's sizes and the rest ("matmul(float:128x768,float:768x1536)":
  // pattern "matmul(float:#x#,float:#x#)", numbers 128 768 768 1536; parameters in [] kept as written).
  struct HeadShape {
    std::string pattern;
    std::vector<int64_t> numbers;
  };
  static HeadShape head_shape(std::string_view op_signature);
  // Milliseconds of a head between the measured heads of its pattern that
  // differ from it in one size; 0 where none lie on both sides.
  double interpolated_ms(const std::string& head) const;
  void fit_table();
  ExecutionPlan plan_of(const Graph& graph) const;

  std::string device_;
  Precision precision_;
  std::map<std::string, int> timing_methods_;
  double unmeasured_margin_ = kUnmeasuredMargin;
  std::unordered_map<std::string, double> costs_;
  RooflineParams roofline_;
  size_t measured_steps_ = 0;
  // A head (Features::head) -> the least milliseconds of the measured steps
  // with that head (any epilogue).
  std::unordered_map<std::string, double> same_head_ms_;
  // HeadShape pattern -> the measured heads of that pattern: (sizes, least ms).
  std::unordered_map<std::string, std::vector<std::pair<std::vector<int64_t>, double>>> head_families_;
  std::unordered_map<std::string, Fit> fits_;  // by "kind:first_op" and by "kind"; "" for all steps
  mutable std::shared_mutex cache_mutex_;
  std::unordered_map<std::string, std::pair<double, bool>> cache_;  // signature -> (us, measured)
  std::set<std::string> missing_;
};

}  // namespace tgr::optimizer
