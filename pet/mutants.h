// The mutant generator: for a small source program (one to three
// operators), enumerate programs over its variables with the same output
// shapes, built from the source's operators (with their padding variants)
// and the layout operators (transpose, reshape, concat, split, pad, slice),
// and keep those the region checker finds fully or partially equal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pet/region_check.h"

namespace tgr::pet {

struct MutantOptions {
  int max_ops = 3;  // operators in a mutant
  // A partial mutant is kept when on every output more than this fraction of
  // the elements agrees ("right on most of the output": one that is right on
  // one output and wrong on another is not a transformation worth correcting).
  double min_agreeing_fraction = 0.5;
  CheckOptions check{};
  int64_t max_programs = 2'000'000;  // a guard on the enumeration
};

struct Mutant {
  std::string text;  // the mutant program (a tuple for several outputs), the source's variables
  CheckResult result;
};

struct MutantReport {
  std::vector<Mutant> full, partial;
  int64_t programs = 0;  // operator applications enumerated
  int64_t checked = 0;   // distinct programs with the source's output shapes, region-checked
  int64_t refused = 0;   // of those, outside the checker's reach
};

MutantReport find_mutants(const Graph& source, const MutantOptions& options = {});

}  // namespace tgr::pet
