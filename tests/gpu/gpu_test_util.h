// Shared by the GPU tests: the skip macro, random inputs of any element type,
// and the comparison of GPU outputs with the CPU reference interpreter.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/cuda/gpu_model.h"
#include "runtime/interpreter.h"

namespace tgr::test {

#define SKIP_WITHOUT_GPU() \
  if (!::tgr::gpu::gpu_available()) GTEST_SKIP() << "no GPU visible: run on the GPU machine (tools/run_gpu_tests.sh)"

// Floats uniform in [-scale, scale); int64 uniform in [lo, hi); bool 0 or 1.
inline std::vector<ConstantValue> random_values(const Graph& g, uint64_t seed, double scale = 1, int64_t lo = 0,
                                                int64_t hi = 4) {
  std::vector<ConstantValue> values;
  std::mt19937_64 rng(seed);
  for (int32_t i : g.inputs()) {
    const Node& n = g.node(i);
    const Shape& s = n.output_shapes[0];
    if (n.output_dtypes[0] == DType::kFloat) {
      Tensor<float> t = random_tensor<float>(s, rng());
      for (float& v : t.data) v = static_cast<float>(v * scale);
      values.emplace_back(std::move(t));
    } else {
      Tensor<int64_t> t(s);
      const bool is_bool = n.output_dtypes[0] == DType::kBool;
      std::uniform_int_distribution<int64_t> dist(is_bool ? 0 : lo, is_bool ? 1 : hi - 1);
      for (int64_t& v : t.data) v = dist(rng);
      values.emplace_back(n.output_dtypes[0], std::move(t));
    }
  }
  return values;
}

// Relative L2 error of a float output (NaN where both are NaN counts as equal).
inline double relative_l2(const Tensor<float>& actual, const Tensor<float>& expected) {
  double num = 0, den = 0;
  for (size_t i = 0; i < actual.data.size(); ++i) {
    const double a = actual.data[i], e = expected.data[i];
    if (std::isnan(a) && std::isnan(e)) continue;
    num += (a - e) * (a - e);
    den += e * e;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// Every output: same type and shape; floats within `tolerance` (relative
// L2), integers and bools equal.
inline void expect_outputs_match(const std::vector<ConstantValue>& actual, const std::vector<ConstantValue>& expected,
                                 double tolerance, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t k = 0; k < actual.size(); ++k) {
    ASSERT_EQ(actual[k].dtype, expected[k].dtype) << what << " output " << k;
    ASSERT_EQ(actual[k].shape(), expected[k].shape()) << what << " output " << k;
    if (actual[k].is_float()) {
      const double err = relative_l2(actual[k].real, expected[k].real);
      EXPECT_LE(err, tolerance) << what << " output " << k << ": relative L2 error " << err;
    } else {
      EXPECT_EQ(actual[k].ints.data, expected[k].ints.data) << what << " output " << k;
    }
  }
}

// Loads `g` twice, fused and replayed as a CUDA graph, then unfused and run
// step by step (`options` gives the rest), runs each twice (a replay must not
// depend on what the previous one left) and compares with `expected`.
inline void expect_fused_and_unfused_match(const Graph& g, const std::vector<ConstantValue>& inputs,
                                           const std::vector<ConstantValue>& expected, double tolerance,
                                           const std::string& what, gpu::GpuOptions options = {}) {
  for (bool fuse : {true, false}) {
    options.fuse = fuse;
    options.cuda_graph = fuse;
    gpu::GpuModel model = gpu::GpuModel::load(g, options);
    const std::string run = what + (fuse ? " fused, CUDA graph" : " unfused, eager");
    expect_outputs_match(model.run(inputs), expected, tolerance, run);
    expect_outputs_match(model.run(inputs), expected, tolerance, run + " (second run)");
  }
}

}  // namespace tgr::test
