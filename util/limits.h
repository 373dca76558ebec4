// What an input may ask a program for: one policy for every reader (ONNX
// models, their initializers, external data and unknown fields; graphs from
// text: rules, `run --expr`, `verify --prove`; search spaces). A reader
// checks a size against these limits before it reads or allocates, and
// refuses with the message below, naming the input and the flag that raises
// the limit (docs/reliability.md).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace tgr::util {

// The longest time limit a command takes, in seconds (a year): beyond it
// (1e18, inf) the deadline overflows the clock and the search runs unbounded.
inline constexpr double kMaxSeconds = 365.0 * 24 * 3600;

struct Limits {
  // The largest tensor, in elements, any value may have (1 GiB of float32).
  int64_t max_elements = int64_t{1} << 28;
  // The total bytes of the values a reader builds for one input (the
  // constants of a model: initializers, external data, folded nodes; the
  // values of a graph from text), and of anything else the input makes a
  // library hold (protobuf's copies of unknown fields).
  int64_t max_bytes = int64_t{4} << 30;
};

// Whether `count` (a product of dimensions taken in double, so that it
// cannot overflow) is at least 0 and at most `limit`; NaN is not, nor is a
// negative product (a negative dimension: no size to hold).
inline bool within(double count, int64_t limit) { return count >= 0 && count <= static_cast<double>(limit); }

// A count that may be far beyond int64 (a product of absurd dimensions).
inline std::string count_text(double count) {
  if (!std::isfinite(count)) return "an unbounded number of";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", count);
  return buf;
}

// "a tensor of N elements is larger than the limit of M (raise it with
// --max-elements)"; `what` names the tensor ("a tensor", "initializer 'w'").
inline std::string element_limit_message(const std::string& what, double count, const Limits& limits) {
  return what + " of " + count_text(count) + " elements is larger than the limit of " +
         std::to_string(limits.max_elements) + " (raise it with --max-elements)";
}

// "WHAT would take N bytes, more than the limit of M (raise it with --max-bytes)".
inline std::string byte_limit_message(const std::string& what, double bytes, const Limits& limits) {
  return what + " would take " + count_text(bytes) + " bytes, more than the limit of " +
         std::to_string(limits.max_bytes) + " (raise it with --max-bytes)";
}

}  // namespace tgr::util
