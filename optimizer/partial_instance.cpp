#include "optimizer/partial_instance.h"

#include "pet/correction.h"

namespace tgr::optimizer {

bool correct_partial_instance(Instance& instance, const pet::CheckOptions& options) {
  try {
    const Graph& source = instance.rule.source;
    const pet::CheckResult regions = pet::check_regions(source, instance.rule.target, options);
    if (regions.verdict == pet::Verdict::kNone) return false;
    Graph corrected = regions.verdict == pet::Verdict::kFull
                          ? instance.rule.target
                          : pet::corrected_graph(source, instance.rule.target, regions);
    // The correction itself is checked: it must agree with the source on
    // every box (a wrong correction is caught here, never applied).
    const pet::CheckResult again = pet::check_regions(source, corrected, options);
    instance.region_checked = again.verdict == pet::Verdict::kFull;
    if (*instance.region_checked) {
      instance.rule.target = std::move(corrected);
      instance.text += " (corrected)";
    }
    return true;
  } catch (const pet::RegionCheckError&) {
    return false;
  }
}

}  // namespace tgr::optimizer
