#include "runtime/memory_plan.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace tgr {

MemoryPlan plan_memory(const std::vector<Lifetime>& values, int64_t alignment) {
  if (alignment <= 0) throw std::invalid_argument("plan_memory: alignment must be positive");
  MemoryPlan plan;
  plan.offsets.assign(values.size(), 0);
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a].bytes > values[b].bytes; });
  auto round_up = [&](int64_t n) { return (n + alignment - 1) / alignment * alignment; };
  std::vector<size_t> placed;
  std::vector<std::pair<int64_t, int64_t>> busy;  // [begin, end) of placed values alive with this one
  for (size_t v : order) {
    const Lifetime& life = values[v];
    if (life.last < life.first) throw std::invalid_argument("plan_memory: a lifetime ends before it starts");
    const int64_t size = round_up(std::max<int64_t>(life.bytes, 1));
    plan.total_bytes += size;
    busy.clear();
    for (size_t p : placed) {
      const Lifetime& other = values[p];
      if (other.first <= life.last && life.first <= other.last)
        busy.emplace_back(plan.offsets[p], plan.offsets[p] + round_up(std::max<int64_t>(other.bytes, 1)));
    }
    std::sort(busy.begin(), busy.end());
    // The smallest gap that fits (best fit); else after the last busy range.
    int64_t best = -1, best_gap = INT64_MAX, cursor = 0;
    for (const auto& [begin, end] : busy) {
      if (begin - cursor >= size && begin - cursor < best_gap) {
        best = cursor;
        best_gap = begin - cursor;
      }
      cursor = std::max(cursor, end);
    }
    if (best < 0) best = cursor;
    plan.offsets[v] = best;
    plan.arena_bytes = std::max(plan.arena_bytes, best + size);
    placed.push_back(v);
  }
  return plan;
}

}  // namespace tgr
