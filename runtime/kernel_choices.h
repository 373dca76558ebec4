// Choices of implementation the GPU runtime makes by timing at load (which of
// cuDNN's algorithms runs a convolution, and whether cuBLAS or the runtime's
// own depthwise kernel beats it), keyed by what was timed, so that each is
// timed once. Without a GPU: the runtime (runtime/cuda/lower_conv.cpp) reads
// and writes the process's set; tools that keep a database seed it from the
// table kernel_choices before loading anything and store what was added
// (rules_db/rules_db.h), so that `bench` runs each convolution as `calibrate`
// timed it. Two processes that each timed for themselves could choose
// differently where two algorithms time alike in isolation but not inside
// a model, and a step would then run otherwise than its measured cost says.
//
//   KernelChoices& choices = KernelChoices::process();
//   choices.seed(db.kernel_choices(device, libraries));   // before loads
//   ... GpuModel::load(...) ...                            // finds or puts
//   db.put_kernel_choices(device, libraries, choices.added());
//
// Keys are the runtime's own text ("conv-algo 1,64,56,56,...,b"); values a
// TimedChoice's text ("1 0 0.0123": which implementation, workspace bytes, ms).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace tgr {

// One timed choice: which implementation won (a cuDNN algorithm's number; 1
// or 0 for "the other implementation beat cuDNN"), the workspace it needs,
// and its time. Text: "IMPLEMENTATION WORKSPACE MS".
struct TimedChoice {
  int64_t implementation = 0;
  int64_t workspace = 0;  // bytes
  double ms = 0;
  std::string to_text() const;
  // nullopt for text that is not exactly three such numbers (a workspace or
  // time below 0, or not finite): a value the runtime did not write is timed again.
  static std::optional<TimedChoice> parse(const std::string& text);
};

class KernelChoices {
 public:
  using Entry = std::pair<std::string, std::string>;  // key, value

  // The set every GPU model of this process reads and adds to.
  static KernelChoices& process();

  std::optional<std::string> find(const std::string& key) const;
  // A choice just timed: kept, and listed by added() until taken.
  void put(const std::string& key, const std::string& value);
  // Choices stored earlier (not listed by added()); a key already here keeps its value.
  void seed(const std::vector<Entry>& entries);
  // The choices put since the last take_added(), by key; and forgets them as added.
  std::vector<Entry> take_added();
  size_t size() const;
  void clear();  // forgets every choice (tests; --force)

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::string> entries_;
  std::set<std::string> added_;
};

}  // namespace tgr
