// Enumeration of every operator graph up to a size over one world, with
// each graph's fingerprint: its outputs evaluated in the prime field on
// random inputs (independent values for every variable).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "generator/enumeration_space.h"
#include "ir/graph.h"

namespace tgr::gen {

constexpr int kMaxOps = 5;
constexpr int kMaxOutputs = 4;

// One operator application: a template and argument slots. Slots number the
// world's variables first, then the outputs of earlier operators in order.
struct OpRef {
  uint16_t tmpl = 0;
  uint8_t n_args = 0;
  std::array<uint8_t, 3> args{};
  friend bool operator==(const OpRef&, const OpRef&) = default;
};

// A compact enumerated graph. Its outputs are the values no other operator
// reads, listed in fingerprint order so that equal classes line up.
struct GraphRecord {
  uint64_t key = 0;        // fingerprint of the outputs (and their shapes), the class
  uint64_t structure = 0;  // hash of the graph itself, whatever order built it
  uint8_t world = 0;
  uint8_t n_ops = 0;
  uint8_t n_outputs = 0;
  std::array<OpRef, kMaxOps> ops{};
  std::array<uint8_t, kMaxOutputs> outputs{};  // slots

  auto tie() const { return std::tie(key, structure, world, n_ops, n_outputs); }
};
bool operator<(const GraphRecord& a, const GraphRecord& b);

struct EnumerationCounters {
  std::atomic<uint64_t> states{0};      // graphs built (every size)
  std::atomic<uint64_t> registered{0};  // connected graphs given to the sink
};

class Enumerator {
 public:
  Enumerator(const World& world, uint8_t world_index, int max_ops, uint64_t seed);

  // Calls `sink` (from several threads) for every connected graph of 1 to
  // max_ops operators. Stops early, leaving work undone, when `stop` is set.
  void run(const std::function<void(const GraphRecord&)>& sink, const std::atomic<bool>& stop,
           EnumerationCounters& counters) const;

  // The same work in independent branches, to share among processes: branch
  // i < branches() - 1 holds every graph whose first operator is the i-th
  // valid one; the last, the graphs of variables alone. Running each branch
  // once (in any order, anywhere) gives every graph once.
  size_t branches() const;
  void run_branches(const std::vector<size_t>& branches, const std::function<void(const GraphRecord&)>& sink,
                    const std::atomic<bool>& stop, EnumerationCounters& counters) const;

  // The IR graph of a record (outputs in record order).
  Graph to_graph(const GraphRecord& record) const;

  const World& world() const { return world_; }

 private:
  const World& world_;
  uint8_t world_index_;
  int max_ops_;
  std::vector<Tensor<Fp>> variable_values_;
};

}  // namespace tgr::gen
