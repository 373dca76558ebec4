// The fit measured cost models use for what their table lacks: ms = a + b
// FLOPs + c bytes (AnalyticCostModel's counts), least squares on the
// relative error with a, b, c >= 0. ONNX Runtime's operators
// (onnxruntime_cost_model.h) and the GPU runtime's steps (plan_cost_model.h)
// are fitted alike.
#pragma once

#include <array>
#include <vector>

namespace tgr::optimizer {

struct CostPoint {
  double flops, bytes, ms;
};

// Every subset of the three columns solved unconstrained (normal equations,
// columns scaled to their largest value), the best with no negative
// coefficient kept. Returns {a, b, c}; zeros for no points.
std::array<double, 3> fit_nonnegative(const std::vector<CostPoint>& points);

}  // namespace tgr::optimizer
