// Limits every program keeps to.
#pragma once

namespace tgr::util {

// The longest time limit a command takes, in seconds (a year): beyond it
// (1e18, inf) the deadline overflows the clock and the search runs unbounded.
inline constexpr double kMaxSeconds = 365.0 * 24 * 3600;

}  // namespace tgr::util
