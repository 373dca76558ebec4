// The GPU runtime's memory plan: every intermediate value gets an offset in
// one arena, and values whose lifetimes do not overlap share bytes. Pure C++
// (no CUDA), so it is tested on any machine.
#pragma once

#include <cstdint>
#include <vector>

namespace tgr {

// A value alive from step `first` through step `last` (inclusive).
struct Lifetime {
  int64_t bytes = 0;
  int first = 0, last = 0;
};

struct MemoryPlan {
  std::vector<int64_t> offsets;  // one per lifetime, multiples of the alignment
  int64_t arena_bytes = 0;       // the arena's size
  int64_t total_bytes = 0;       // what one buffer per value would take
};

// Greedy best fit, largest values first: each value goes to the lowest offset
// where it overlaps no placed value that is alive at the same time.
MemoryPlan plan_memory(const std::vector<Lifetime>& values, int64_t alignment = 256);

}  // namespace tgr
