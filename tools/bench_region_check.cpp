// Benchmark of the multi-linear region checker (issue 6): the classic PET
// pair on 64-channel 56 x 56 images with a 3 x 3 kernel (two convolutions
// versus one over the images side by side, split back). Prints the median
// time of the check, its parts, and the ratio to the 100 ms goal; also the
// time of evaluating both sides whole in the field once, for comparison.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "pet/region_check.h"
#include "runtime/interpreter.h"
#include "tools/cli_app.h"

int main(int argc, char** argv) {
  CLI::App app{"bench_region_check: the region checker on a 64-channel 56x56 3x3 convolution pair",
               "bench_region_check"};
  tgr::cli::setup(app);
  int runs = 5, trials = 2;
  app.add_option("--runs", runs, "timed runs (the median is reported)")->check(CLI::Range(1, 100));
  app.add_option("--trials", trials, "random field inputs per position")->check(CLI::Range(1, 64));
  if (auto rc = tgr::cli::parse(app, argc, argv)) return *rc;
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };

  const char* rule =
      "(conv2d(i0, k0), conv2d(i1, k0)) => "
      "(split[axis=3, sizes=56x56](conv2d(concat[axis=3](i0, i1), k0)).0, "
      "split[axis=3, sizes=56x56](conv2d(concat[axis=3](i0, i1), k0)).1)";
  const tgr::ShapeMap shapes = tgr::parse_shape_map("i0=1x64x56x56,i1=1x64x56x56,k0=64x64x3x3");
  tgr::pet::CheckOptions options;
  options.trials = trials;

  std::vector<double> times;
  tgr::pet::CheckResult result;
  for (int r = 0; r < runs; ++r) {
    const auto start = Clock::now();
    result = tgr::pet::check_rule(rule, shapes, options);
    times.push_back(ms_since(start));
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  size_t boxes = 0, wrong = 0;
  for (const auto& o : result.outputs) {
    boxes += o.agree.size() + o.disagree.size();
    wrong += o.disagree.size();
  }
  std::printf("region check, 64-channel 56x56 3x3 convolution pair: verdict %s, %zu boxes (%zu disagree), "
              "%lld positions per trial, %d trials\n",
              std::string(tgr::pet::verdict_name(result.verdict)).c_str(), boxes, wrong,
              static_cast<long long>(result.positions_tested), trials);
  std::printf("  median of %d runs: %.1f ms (min %.1f, max %.1f); goal 100 ms: ratio %.2f\n", runs, median,
              times.front(), times.back(), median / 100.0);

  // For comparison: evaluating both sides whole in the field, one trial.
  const tgr::Rule built = tgr::build_rule(rule, shapes);
  const auto inputs = tgr::random_inputs<tgr::Fp>(built.source, 1);
  const auto start = Clock::now();
  tgr::evaluate<tgr::Fp>(built.source, std::span<const tgr::Tensor<tgr::Fp>>(inputs));
  tgr::evaluate<tgr::Fp>(built.target, std::span<const tgr::Tensor<tgr::Fp>>(inputs));
  std::printf("  for comparison, both sides evaluated whole in the field (one trial): %.1f ms\n", ms_since(start));
  return 0;
}
