// `verify --check "SRC => DST" --shapes x0=...`: the multi-linear region
// checker on one rule (partial equivalence, PET). Kept apart from verify.cpp
// so that the prover's command line and this one change independently.
#pragma once

#include <cstdint>
#include <string>

#include "util/limits.h"

namespace tgr::cli {

struct CheckCommand {
  std::string rule;    // "SRC => DST"
  std::string shapes;  // "x0=1x3x8x8,k0=4x3x3x3"
  int trials = 2;
  uint64_t seed = 1;
  bool correction = false;  // also print the corrected target
  util::Limits limits;      // of the rule's values (ir/text.h build_rule)
};

// Prints `full`, `partial` with the disagreeing boxes, or `none` (and the
// details), exit 0; a parse error or a graph the checker refuses: the message
// on stderr, exit 1.
int run_check(const CheckCommand& command);

}  // namespace tgr::cli
