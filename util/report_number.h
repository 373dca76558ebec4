// How the reports print real numbers.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace tgr::util {

// `v` rounded to the six significant digits the JSON reports have always
// printed ("%.6g"), so that their values stay what they were while the JSON
// library does the printing.
inline double six_digits(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return std::strtod(buf, nullptr);
}

}  // namespace tgr::util
