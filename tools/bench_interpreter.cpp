// Benchmark of the CPU reference interpreter: the convolution stack of
// ResNet-50 (batch 1, 224 x 224, without batch norm) and the gemm kernel.
// Prints times and GFLOP/s; the goal (issue 2) is "seconds, not minutes" on
// 2 cores.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>

#include "ir/graph.h"
#include "ir/kernels/gemm.h"
#include "runtime/interpreter.h"
#include "tools/cli_app.h"

namespace tgr {
namespace {

using Ints = std::vector<int64_t>;

struct Builder {
  Graph g;
  int weights = 0;
  double flops = 0;

  ValueRef conv(ValueRef x, int64_t out_channels, int64_t k, int64_t stride, bool relu, Ints pad = {}) {
    const Shape& s = g.shape(x);
    ValueRef w = g.add_input("w" + std::to_string(weights++), {out_channels, s[1], k, k});
    std::vector<std::pair<std::string, ParamValue>> p{{"stride", Ints{stride, stride}}};
    if (!pad.empty()) p.emplace_back("pad", pad);
    if (relu) p.emplace_back("act", std::string("relu"));
    ValueRef y = g.apply("conv2d", {x, w}, p);
    const Shape& o = g.shape(y);
    flops += 2.0 * num_elements(o) * s[1] * k * k;
    return y;
  }

  ValueRef bottleneck(ValueRef x, int64_t width, int64_t stride, bool project) {
    ValueRef y = conv(x, width, 1, 1, true);
    y = conv(y, width, 3, stride, true);
    y = conv(y, width * 4, 1, 1, false);
    ValueRef shortcut = project ? conv(x, width * 4, 1, stride, false) : x;
    return g.apply("relu", {g.apply("add", {y, shortcut})});
  }
};

Graph resnet50_convs(int64_t batch, int64_t size, double& flops) {
  Builder b;
  ValueRef x = b.g.add_input("image", {batch, 3, size, size});
  ValueRef y = b.conv(x, 64, 7, 2, true, {3, 3, 3, 3});
  y = b.g.apply("maxpool", {y}, {{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"pad", Ints{1, 1, 1, 1}}});
  const int64_t blocks[] = {3, 4, 6, 3}, widths[] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage)
    for (int64_t i = 0; i < blocks[stage]; ++i)
      y = b.bottleneck(y, widths[stage], (i == 0 && stage > 0) ? 2 : 1, i == 0);
  const Shape& s = b.g.shape(y);
  y = b.g.apply("avgpool", {y}, {{"kernel", Ints{s[2], s[3]}}, {"pad", std::string("valid")}});
  y = b.g.apply("reshape", {y}, {{"shape", Ints{batch, s[1]}}});
  ValueRef fc = b.g.add_input("fc", {s[1], 1000});
  y = b.g.apply("matmul", {y, fc});
  b.flops += 2.0 * batch * s[1] * 1000;
  b.g.add_output(y);
  flops = b.flops;
  return std::move(b.g);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

template <class T>
void bench_gemm(int64_t n) {
  const auto a = random_tensor<T>({n, n}, 1), b = random_tensor<T>({n, n}, 2);
  Tensor<T> c({n, n});
  gemm<T>(n, n, n, a.data.data(), n, b.data.data(), n, c.data.data(), n);  // warm-up
  const int reps = 5;
  const auto t = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) gemm<T>(n, n, n, a.data.data(), n, b.data.data(), n, c.data.data(), n);
  const double s = seconds_since(t) / reps;
  std::printf("gemm %-7s %4lld^3: %8.2f ms, %6.1f GFLOP/s\n", kIsField<T> ? "field" : sizeof(T) == 4 ? "float32" : "float64",
              static_cast<long long>(n), s * 1e3, 2.0 * n * n * n / s / 1e9);
}

}  // namespace
}  // namespace tgr

int main(int argc, char** argv) {
  CLI::App app{"bench_interpreter: time the CPU reference interpreter on ResNet-50's convolutions",
               "bench_interpreter"};
  tgr::cli::setup(app);
  int64_t batch = 1, size = 224;
  int reps = 3;
  app.add_option("--batch", batch, "batch size");
  app.add_option("--size", size, "image height and width");
  app.add_option("--reps", reps, "timed repetitions (the median is reported)");
  if (auto rc = tgr::cli::parse(app, argc, argv)) return *rc;
  using namespace tgr;

  bench_gemm<float>(512);
  bench_gemm<double>(512);
  bench_gemm<Fp>(128);

  double flops = 0;
  const Graph g = resnet50_convs(batch, size, flops);
  const auto inputs = random_inputs<float>(g, 7);
  std::vector<double> times;
  for (int r = 0; r < std::max(reps, 1); ++r) {
    const auto t = std::chrono::steady_clock::now();
    auto out = evaluate<float>(g, std::span<const Tensor<float>>(inputs));
    times.push_back(seconds_since(t));
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  std::printf("ResNet-50 convolution stack, batch %lld, %lldx%lld, %d operators, %.2f GFLOP\n",
              static_cast<long long>(batch), static_cast<long long>(size), static_cast<long long>(size), g.num_ops(),
              flops / 1e9);
  std::printf("float32 interpreter: median %.2f s over %zu runs (min %.2f s), %.1f GFLOP/s\n", median, times.size(),
              times.front(), flops / median / 1e9);
  return 0;
}
