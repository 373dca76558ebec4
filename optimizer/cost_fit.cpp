#include "optimizer/cost_fit.h"

#include <algorithm>
#include <cmath>

namespace tgr::optimizer {

std::array<double, 3> fit_nonnegative(const std::vector<CostPoint>& points) {
  std::array<double, 3> scale = {1, 1, 1};
  for (const CostPoint& p : points) {
    scale[1] = std::max(scale[1], p.flops);
    scale[2] = std::max(scale[2], p.bytes);
  }
  auto row = [&](const CostPoint& p) {  // divided by the measurement: relative error
    return std::array<double, 3>{1 / p.ms, p.flops / scale[1] / p.ms, p.bytes / scale[2] / p.ms};
  };
  std::array<double, 3> best = {0, 0, 0};
  double best_error = HUGE_VAL;
  for (int mask = 1; mask < 8; ++mask) {
    std::vector<int> cols;
    for (int c = 0; c < 3; ++c)
      if (mask & (1 << c)) cols.push_back(c);
    const size_t k = cols.size();
    std::array<std::array<double, 4>, 3> m{};  // [A^T A | A^T 1]
    for (const CostPoint& p : points) {
      const auto r = row(p);
      for (size_t i = 0; i < k; ++i) {
        for (size_t j = 0; j < k; ++j) m[i][j] += r[cols[i]] * r[cols[j]];
        m[i][3] += r[cols[i]];
      }
    }
    bool singular = false;
    for (size_t i = 0; i < k && !singular; ++i) {  // Gauss-Jordan with partial pivoting
      size_t pivot = i;
      for (size_t r = i + 1; r < k; ++r)
        if (std::fabs(m[r][i]) > std::fabs(m[pivot][i])) pivot = r;
      std::swap(m[i], m[pivot]);
      if (std::fabs(m[i][i]) < 1e-300) singular = true;
      for (size_t r = 0; r < k && !singular; ++r) {
        if (r == i) continue;
        const double f = m[r][i] / m[i][i];
        for (size_t c = i; c < k; ++c) m[r][c] -= f * m[i][c];
        m[r][3] -= f * m[i][3];
      }
    }
    if (singular) continue;
    std::array<double, 3> coef = {0, 0, 0};
    bool negative = false;
    for (size_t i = 0; i < k; ++i) {
      coef[cols[i]] = m[i][3] / m[i][i];
      negative = negative || coef[cols[i]] < 0;
    }
    if (negative) continue;
    double error = 0;
    for (const CostPoint& p : points) {
      const auto r = row(p);
      const double e = coef[0] * r[0] + coef[1] * r[1] + coef[2] * r[2] - 1;
      error += e * e;
    }
    if (error < best_error) {
      best_error = error;
      best = coef;
    }
  }
  return {best[0], best[1] / scale[1], best[2] / scale[2]};
}

}  // namespace tgr::optimizer
