// `bench_seams`: can a partial (PET) rule pay on this GPU runtime? For each
// configuration of two convolutions sharing one kernel, it times the graphs
// of pet/seam_merges.h as CUDA-graph replays: the two convolutions as they
// are, merged along batch (exact: a full rule), merged along height and
// along width with the seam recomputed by the correction (what the optimizer
// runs for a partial rule), and the merged convolutions without their
// correction (the floor of any correction fused into the convolution).
// The images are computed by a relu each, as in a model (pet/seam_merges.h).
// Each exact variant's outputs are checked against the two convolutions
// run alone; the variants of a configuration are timed in alternating
// rounds (median).
//
//   bench_seams --channels 32,128 --sizes 7,14,28
//
// Per configuration one line: each variant's microseconds and its ratio to
// the best exact merge without a seam ("separate" or "batch"), so a ratio
// below 1 for "height" or "width" is a partial rule that pays here.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>

#include "pet/seam_merges.h"
#include "runtime/cuda/device_info.h"
#include "runtime/cuda/gpu_model.h"
#include "runtime/cuda/step_timing.h"
#include "tools/cli_app.h"
#include "tools/cli_common.h"
#include "tools/model_case.h"
#include "util/statistics.h"

namespace tgr {
namespace {

struct Options {
  std::vector<int64_t> channels{32, 128, 512};
  std::vector<int64_t> sizes{7, 14, 28, 56};
  int64_t kernel = 3;
  int iters = 50, rounds = 5;
};

int bench_seams(const Options& o) {
  if (!gpu::gpu_available()) throw std::runtime_error("no CUDA device is visible");
  warm_up_gpu(0.5);
  std::printf(
      "two convolutions sharing a %lldx%lld kernel, batch 1, float32: us per CUDA-graph replay (median of %d "
      "alternating rounds of %d) and / the best of separate and batch\n",
      static_cast<long long>(o.kernel), static_cast<long long>(o.kernel), o.rounds, o.iters);
  int checked = 0, pays = 0;
  for (int64_t c : o.channels) {
    for (int64_t size : o.sizes) {
      pet::SeamMergeConfig config;
      config.channels = c;
      config.height = config.width = size;
      config.kernel = o.kernel;
      const std::vector<pet::SeamMergeVariant> variants = pet::seam_merge_variants(config);
      std::vector<gpu::GpuModel> models;
      const std::vector<ConstantValue> inputs = gpu::timing_inputs(variants[0].graph);
      std::vector<ConstantValue> reference;
      for (const pet::SeamMergeVariant& v : variants) {
        models.push_back(gpu::GpuModel::load(v.graph));
        std::vector<ConstantValue> out = models.back().run(inputs);
        if (reference.empty()) reference = out;
        if (v.exact) {
          const double error = cli::worst_error(out, reference);
          if (!(error <= 1e-4))
            throw std::runtime_error(pet::seam_config_name(config) + ": " + v.name +
                                     " differs from the two convolutions (relative L2 error " + std::to_string(error) +
                                     ")");
          ++checked;
        }
        models.back().set_inputs(inputs);
      }
      std::vector<std::vector<double>> times(variants.size());
      for (int r = 0; r < o.rounds; ++r)
        for (size_t v = 0; v < variants.size(); ++v) times[v].push_back(models[v].replay_ms(o.iters, 5) * 1e3);
      std::vector<double> us;
      for (auto& t : times) us.push_back(median(t));
      const double best_exact = std::min(us[0], us[1]);  // separate, batch
      std::printf("%-18s", pet::seam_config_name(config).c_str());
      for (size_t v = 0; v < variants.size(); ++v) {
        std::printf("  %s %.1f us (%.2f", variants[v].name.c_str(), us[v], us[v] / best_exact);
        if (variants[v].corrected_boxes > 0) std::printf(", %d boxes", variants[v].corrected_boxes);
        std::printf(")");
        if (variants[v].exact && v > 1 && us[v] < best_exact) ++pays;
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  std::printf(
      "%d exact variants checked against the two convolutions; a corrected merge faster than both separate "
      "and batch in %d configurations\n",
      checked, pays);
  return 0;
}

}  // namespace
}  // namespace tgr

int main(int argc, char** argv) {
  CLI::App app{
      "bench_seams: time PET's seam merges of two convolutions sharing a kernel (separate, along batch, "
      "along height and width with their corrections, and without) on the GPU runtime",
      "bench_seams"};
  tgr::cli::setup(app);
  tgr::Options o;
  app.add_option("--channels", o.channels, "input and output channels of the convolutions (a list)")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  app.add_option("--sizes", o.sizes, "height and width of each image (a list)")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{3}, int64_t{512}));
  app.add_option("--kernel", o.kernel, "the square kernel's size: 1, 3, 5 or 7 (stride 1, padding same)")
      ->check(CLI::IsMember({int64_t{1}, int64_t{3}, int64_t{5}, int64_t{7}}));
  app.add_option("--iters", o.iters, "replays per round")->check(CLI::Range(1, 10000));
  app.add_option("--rounds", o.rounds, "alternating rounds (the median is printed)")->check(CLI::Range(1, 100));
  if (auto rc = tgr::cli::parse(app, argc, argv)) return *rc;
  return tgr::cli::guarded("bench_seams", [&] { return tgr::bench_seams(o); });
}
