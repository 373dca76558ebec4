// Both sides of a rule evaluated with the float64 interpreter on the same
// inputs and compared element by element: how axiom validation finds a false
// axiom and how the prover refutes a false rule.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ir/text.h"
#include "ir/tensor.h"

namespace tgr::verifier {

struct SideComparison {
  std::string mismatch;           // set when the sides cannot be compared (shapes differ)
  double worst = 0;               // largest |l - r| / max(1, |l|, |r|) over all outputs
  int output = -1;                // the worst element: which output,
  std::vector<int64_t> index;     // its index,
  double source = 0, target = 0;  // and its value on each side
};

// Evaluates `rule.source` and `rule.target` on `inputs` (the rule's variables
// in declaration order). Raises what the interpreter raises.
SideComparison compare_sides(const Rule& rule, std::span<const Tensor<double>> inputs);

// "output 0 at [1, 2]: source 0.25, target 0.5"
std::string worst_element_text(const SideComparison& c);
// A tensor's first values: "[0.1, -2, ... (36 values)]".
std::string tensor_text(const Tensor<double>& t);
// A number in %.10g.
std::string number_text(double v);

}  // namespace tgr::verifier
