#include "tools/verify_check.h"

#include <cstdio>

#include "tools/cli_common.h"
#include "pet/correction.h"
#include "pet/region_check.h"

namespace tgr::cli {

int run_check(const CheckCommand& command) {
  return guarded("verify", [&] {
    if (command.shapes.empty()) throw std::runtime_error("--check needs --shapes (the variables' concrete shapes)");
    const Rule rule = build_rule(command.rule, parse_shape_map(command.shapes), {}, command.limits);
    pet::CheckOptions options;
    options.trials = command.trials;
    options.seed = command.seed;
    const pet::CheckResult result = pet::check_regions(rule.source, rule.target, options);
    std::fputs(pet::format_result(result).c_str(), stdout);
    if (command.correction && result.verdict == pet::Verdict::kPartial)
      std::printf("  corrected target: %s\n", to_text(pet::corrected_graph(rule.source, rule.target, result)).c_str());
    return 0;
  });
}

}  // namespace tgr::cli
