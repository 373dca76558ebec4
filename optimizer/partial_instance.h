// Partial rules (PET) at a model's shapes: the instance's target is checked
// against its source with the multi-linear region checker
// (pet/region_check.h), the boxes where it is wrong are recomputed by
// the correction (pet/correction.h), and the corrected target replaces
// the target only if the checker then finds it equal to the source on every
// box. The acceptance is probabilistic with the bound README.md states
// ("Partial equivalence (PET)"): at most sum over boxes (degree / p)^trials,
// p = 2^61 - 1; with 4 trials and a degree of a few units, below 1e-70.
#pragma once

#include "optimizer/instance.h"
#include "pet/region_check.h"

namespace tgr::optimizer {

// Replaces `instance.rule.target` by its corrected form and sets
// `instance.region_checked`; false (instance unchanged) when the checker
// refuses the graphs or finds no agreement at all.
bool correct_partial_instance(Instance& instance, const pet::CheckOptions& options);

}  // namespace tgr::optimizer
