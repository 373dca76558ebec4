// Attention as one step on the GPU (runtime/attention.h, kernels_attention.cu):
// the fused step against the unfused steps (products, scale, mask, softmax)
// and the CPU interpreter, on the variants the exporters write and on the
// bundled transformers; and the time of both. Named FusedAttention.*.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <random>

#include "onnx/onnx_import.h"
#include "runtime/cuda/gpu_context.h"
#include "runtime/cuda/lower.h"
#include "runtime/execution_plan.h"
#include "tests/attention_graphs.h"
#include "tests/gpu/gpu_test_util.h"

namespace tgr {
namespace {

int attention_steps(const Graph& g) {
  int n = 0;
  for (const Task& t : make_execution_plan(g).tasks) n += t.kind == Task::Kind::kAttention;
  return n;
}

// Outputs of `g` on the GPU, attention fused or not.
std::vector<ConstantValue> run_on_gpu(const Graph& g, const std::vector<ConstantValue>& inputs, bool fused) {
  gpu::GpuOptions options;
  options.attention = fused;
  gpu::GpuModel model = gpu::GpuModel::load(g, options);
  return model.run(inputs);
}

struct Case {
  const char* name;
  test::AttentionVariant a;
};

class FusedAttention : public ::testing::TestWithParam<Case> {};

TEST_P(FusedAttention, MatchesTheUnfusedStepsAndTheInterpreter) {
  SKIP_WITHOUT_GPU();
  const Graph g = test::attention_variant(GetParam().a);
  ASSERT_EQ(attention_steps(g), 1);
  const std::vector<ConstantValue> inputs = test::random_values(g, 7);
  const std::vector<ConstantValue> fused = run_on_gpu(g, inputs, true);
  test::expect_outputs_match(fused, run_on_gpu(g, inputs, false), 1e-5, std::string(GetParam().name) + " vs unfused");
  test::expect_outputs_match(fused, evaluate_values<float>(g, inputs), 1e-5,
                             std::string(GetParam().name) + " vs the interpreter");
}

using test::AttentionMask;
using test::AttentionScale;
const Case kCases[] = {
    {"bert", {.B = 1, .H = 4, .Hkv = 4, .S = 16, .T = 16, .D = 16, .Dv = 16, .mask = AttentionMask::kPadding}},
    {"scores_div", {.B = 2, .H = 3, .Hkv = 3, .S = 7, .T = 7, .D = 5, .Dv = 5, .scale = AttentionScale::kScoresDiv}},
    {"scores_mul_square_mask",
     {.B = 1,
      .H = 2,
      .Hkv = 2,
      .S = 33,
      .T = 33,
      .D = 32,
      .Dv = 32,
      .scale = AttentionScale::kScoresMul,
      .mask = AttentionMask::kSquare}},
    {"causal_gqa",
     {.B = 1,
      .H = 8,
      .Hkv = 2,
      .S = 70,
      .T = 70,
      .D = 64,
      .Dv = 64,
      .mask = AttentionMask::kCausal,
      .nan_guard = true}},
    {"causal_more_keys",
     {.B = 2, .H = 4, .Hkv = 1, .S = 20, .T = 45, .D = 16, .Dv = 16, .mask = AttentionMask::kCausal}},
    {"vit_197", {.B = 1, .H = 12, .Hkv = 12, .S = 197, .T = 197, .D = 64, .Dv = 64}},
    {"head_dim_80", {.B = 3, .H = 6, .Hkv = 2, .S = 9, .T = 13, .D = 80, .Dv = 80, .mask = AttentionMask::kPadding}},
    {"head_dim_128_value_32", {.B = 1, .H = 2, .Hkv = 2, .S = 50, .T = 50, .D = 128, .Dv = 32}},
    {"masked_row_guarded",
     {.B = 1, .H = 2, .Hkv = 2, .S = 8, .T = 8, .D = 8, .Dv = 8, .mask = AttentionMask::kMaskedRow, .nan_guard = true}},
    {"one_row", {.B = 1, .H = 2, .Hkv = 1, .S = 1, .T = 40, .D = 16, .Dv = 16}},
};
INSTANTIATE_TEST_SUITE_P(Variants, FusedAttention, ::testing::ValuesIn(kCases),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

// The bundled transformers: every attention is one step, and the model's
// output is the unfused plan's and ONNX Runtime's.
class FusedAttentionModels : public ::testing::TestWithParam<std::string> {};

TEST_P(FusedAttentionModels, MatchTheUnfusedPlanAndOnnxRuntime) {
  SKIP_WITHOUT_GPU();
  const char* env = std::getenv("TGR_TEST_DATA");
  const std::string dir = std::string(env ? env : TGR_TEST_DATA) + "/models/";
  const std::string data = dir + GetParam() + "-testdata/";
  const Graph g = onnx_io::import_model_file(dir + GetParam() + ".onnx").graph;
  std::vector<ConstantValue> inputs;
  for (size_t k = 0; k < g.inputs().size(); ++k)
    inputs.push_back(onnx_io::read_tensor_file(data + "input_" + std::to_string(k) + ".pb").value);
  const std::vector<ConstantValue> expected{onnx_io::read_tensor_file(data + "output_0.pb").value};
  EXPECT_EQ(attention_steps(g), 2);  // two layers each
  gpu::GpuOptions on, off;
  off.attention = false;
  gpu::GpuModel fused = gpu::GpuModel::load(g, on), unfused = gpu::GpuModel::load(g, off);
  const std::vector<ConstantValue> out = fused.run(inputs);
  test::expect_outputs_match(out, unfused.run(inputs), 1e-5, GetParam() + " fused vs unfused");
  test::expect_outputs_match(out, expected, 1e-4, GetParam() + " fused vs ONNX Runtime");
  std::printf("%s: %d steps fused (%.4f ms), %d unfused (%.4f ms)\n", GetParam().c_str(), fused.stats().steps,
              fused.replay_ms(50, 5), unfused.stats().steps, unfused.replay_ms(50, 5));
}

INSTANTIATE_TEST_SUITE_P(Bundled, FusedAttentionModels,
                         ::testing::Values("bert_tiny", "vit_tiny", "gpt2_tiny", "t5_encoder_tiny", "llama_tiny",
                                           "llama_tiny_dynamo", "llama_tiny_op20", "qwen2_tiny", "gemma_tiny",
                                           "gemma_tiny_dynamo", "mistral_tiny"));

// The kernel at the transformers' sizes with one, two and four query rows
// per warp: the same outputs, and the time of each beside what the
// launcher picks (printed; docs/benchmarks.md). Row-major q, k, v and
// out [heads, rows, 64]; BERT's padding mask [keys] broadcast, or causal.
TEST(FusedAttentionKernel, RowsPerWarpAgreeAndAreTimed) {
  SKIP_WITHOUT_GPU();
  struct Shape3 {
    const char* name;
    int64_t heads, rows;
    bool causal;
  };
  gpu::GpuContext gpu;
  for (const Shape3& c : {Shape3{"bert_base", 12, 128, false}, Shape3{"vit_b_16", 12, 197, false},
                          Shape3{"gpt2_small", 12, 128, true}, Shape3{"one_head_512", 1, 512, false}}) {
    const int64_t D = 64, n = c.heads * c.rows * D;
    std::vector<float> host(static_cast<size_t>(n));
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-1, 1);
    gpu::DeviceBuffer q(n * 4, "q"), k(n * 4, "k"), v(n * 4, "v"), out(n * 4, "out"), mask(c.rows * c.rows * 4, "mask");
    for (gpu::DeviceBuffer* b : {&q, &k, &v}) {
      for (float& x : host) x = dist(rng);
      ASSERT_EQ(cudaMemcpy(b->data(), host.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
    }
    std::vector<float> m(static_cast<size_t>(c.rows * c.rows));
    for (int64_t s = 0; s < c.rows; ++s)
      for (int64_t t = 0; t < c.rows; ++t)
        m[s * c.rows + t] =
            c.causal ? (t > s ? std::numeric_limits<float>::lowest() : 0.f) : (t % 7 == 6 ? -1e4f : 0.f);
    ASSERT_EQ(cudaMemcpy(mask.data(), m.data(), m.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    auto operand = [&](const gpu::DeviceBuffer& b, int64_t row_stride, int64_t col_stride) {
      gpu::AttnOperand o;
      o.data = reinterpret_cast<const float*>(b.data());
      o.batch_axes = 1;
      o.batch_size[0] = c.heads;
      o.batch_stride[0] = c.rows * D;
      o.row_stride = row_stride;
      o.col_stride = col_stride;
      return o;
    };
    gpu::AttentionArgs a;
    a.q = operand(q, D, 1);
    a.k = operand(k, 1, D);  // [D, T]: k stored [T, D]
    a.v = operand(v, D, 1);
    a.out = operand(out, D, 1);
    a.mask = operand(mask, c.rows, 1);
    a.mask.batch_stride[0] = 0;
    a.batch = c.heads;
    a.rows = a.keys = c.rows;
    a.head_dim = a.value_dim = D;
    a.scale = 0.125f;
    a.causal = c.causal;
    std::vector<float> reference;
    const gpu::Where where{"attention", -1, c.name};
    std::printf("%s (%lld heads x %lld rows, D 64%s):", c.name, static_cast<long long>(c.heads),
                static_cast<long long>(c.rows), c.causal ? ", causal" : "");
    for (int rows_per_warp : {1, 2, 4, 0}) {
      a.rows_per_warp = rows_per_warp;
      const double ms = gpu::time_launches_ms([&] { gpu::launch_attention(a, gpu.stream); }, gpu.stream, where);
      ASSERT_EQ(cudaStreamSynchronize(gpu.stream), cudaSuccess);
      std::vector<float> got(static_cast<size_t>(n));
      ASSERT_EQ(cudaMemcpy(got.data(), out.data(), n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
      if (reference.empty()) reference = got;
      double worst = 0;
      for (size_t i = 0; i < got.size(); ++i)
        worst = std::max(worst, static_cast<double>(std::abs(got[i] - reference[i])));
      EXPECT_LT(worst, 1e-5) << c.name << " rows per warp " << rows_per_warp;
      std::printf(" %s %.2f us", rows_per_warp ? std::to_string(rows_per_warp).c_str() : "picked", ms * 1000);
    }
    std::printf("\n");
  }
}

}  // namespace
}  // namespace tgr
