// Fake measurements for the tests of the measured check
// (optimizer/measured_check.h): measured_check_test.cpp and
// pipeline_measured_test.cpp.
#pragma once

#include <vector>

#include "optimizer/measured_check.h"

namespace tgr::optimizer {

// Paired samples: the original at 100 us every round, the rewrite at
// 100 * ratio (one ratio per round).
inline PairedTimes paired(const std::vector<double>& ratios) {
  PairedTimes t;
  t.runtime = "fake";
  t.runs_per_round = 5;
  for (double r : ratios) {
    t.original_us.push_back(100);
    t.rewritten_us.push_back(100 * r);
  }
  return t;
}

}  // namespace tgr::optimizer
