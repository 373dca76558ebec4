// Small statistics the timing code shares (bench, bench_seams, the GPU
// runtime's replays): one definition of "the median" for every printed time.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace tgr {

// The middle of the sorted values (the mean of the two middle ones of an
// even count); throws std::invalid_argument on none.
inline double median(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("median of no values");
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

}  // namespace tgr
