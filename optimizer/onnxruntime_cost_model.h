// The cost model of `optimize --target onnxruntime-cpu` (optimizer/target.h):
// ONNX Runtime's CPU time of a graph as the exporter writes it.
//
// Each operator costs the milliseconds the op_costs table holds for its
// signature (ir/op_signature.h) under device "onnxruntime-cpu", measured by
// tools/calibrate_ort.py: the operator alone as a one-node ONNX model (its
// weights initializers, as in a model), run by ONNX Runtime with all graph
// optimizations on, its kernel time from ONNX Runtime's profiler plus the
// runtime's measured per-node overhead. Operators the exporter writes inside
// another ONNX node (a bias add as a Conv's B or a Gemm's C, a pad as a
// Conv's or Pool's pads: onnx/export_fusions.h) cost nothing in graph_cost,
// nor does a Relu ONNX Runtime runs inside the Conv or Gemm it alone reads,
// nor operators of weights only (folded at export). (op_cost_us, which sees
// one node, charges them: equality saturation's extraction costs that way.)
//
// A signature the table lacks is estimated by a fit of the table: per
// operator, ms = a + b FLOPs + c bytes (AnalyticCostModel's counts), least
// squares on the relative error with a, b, c >= 0; all operators pooled for
// an operator with fewer than three measurements; with an empty table, a
// roofline of a CPU core (50 GFLOP/s, 10 GB/s, 2 us per node). The lookups
// it had to estimate are kept (asked()) so that the calibration can measure
// them next.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "optimizer/cost_model.h"

namespace tgr::optimizer {

class OnnxRuntimeCostModel : public CostModel {
 public:
  // `costs`: signature -> milliseconds.
  explicit OnnxRuntimeCostModel(std::unordered_map<std::string, double> costs);
  // Reads the op_costs of `device` in the database at `db_path`.
  static std::unique_ptr<OnnxRuntimeCostModel> from_db(const std::string& db_path, const std::string& device);

  double op_cost_us(const Graph& graph, const Node& node) override;
  double graph_cost(const Graph& graph) override;
  std::string describe() const override;
  // Its fusions (export_fusions.h, relu in Conv or Gemm) are patterns of at
  // most three operators, which a tree of an e-node's descendants shows.
  bool prices_in_context() const override { return true; }
  bool fuses_operators() const override { return true; }

  // The fallback's estimate of one application, in microseconds.
  double fitted_us(const Graph& graph, const Node& node) const;
  size_t measured_signatures() const { return costs_.size(); }
  size_t missing_signatures() const;

  // One application of each signature that was looked up and not in the
  // table, as a graph of that operator alone: inputs in0, in1, ... and, for
  // operands that were weights in the graph that asked, constants
  // (deterministic values), so that the calibration times it as a model
  // would run it. By signature.
  std::map<std::string, Graph> asked() const;

 private:
  struct Fit {
    double a = 0, b = 0, c = 0;  // ms, ms per FLOP, ms per byte
    double ms(double flops, double bytes) const { return a + b * flops + c * bytes; }
  };
  struct Application {  // what asked() builds a graph from
    const OpDef* op = nullptr;
    Params params;
    std::vector<Shape> shapes;
    std::vector<DType> dtypes;
    std::vector<bool> weight;
  };
  void fit_table();
  // `constant`: per node of `graph`, computed from weights only (may be null: constants alone then).
  double lookup_us(const Graph& graph, const Node& node, const std::vector<bool>* constant);

  std::unordered_map<std::string, double> costs_;
  std::unordered_map<std::string, Fit> fit_by_op_;
  Fit fit_all_;
  int fitted_points_ = 0;
  mutable std::mutex mutex_;
  std::map<std::string, Application> missing_;
};

}  // namespace tgr::optimizer
