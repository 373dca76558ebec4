// Whole models on the GPU: the bundled squeezenet1_1 and bert_tiny against
// their reference outputs (ONNX Runtime) and the CPU interpreter; memory plan
// and fusion statistics; ONNX cases of lowered operators (label `gpu`).
#include <gtest/gtest.h>

#include <cstdlib>

#include "onnx/onnx_import.h"
#include "runtime/cuda/gpu_error.h"
#include "tests/gpu/gpu_test_util.h"

namespace tgr {
namespace {

struct Loaded {
  Graph graph;
  std::vector<ConstantValue> inputs, expected;
};

Loaded load(const std::string& model) {
  // On the GPU machine the tests run from a bundle: TGR_TEST_DATA says where the data went.
  const char* env = std::getenv("TGR_TEST_DATA");
  const std::string dir = std::string(env ? env : TGR_TEST_DATA) + "/models/";
  const std::string data = dir + model + "-testdata/";
  onnx_io::ImportOptions options;
  Loaded l;
  l.graph = onnx_io::import_model_file(dir + model + ".onnx", options).graph;
  // input_0.pb, input_1.pb, ...: one per graph input, in order.
  for (size_t k = 0; k < l.graph.inputs().size(); ++k)
    l.inputs.push_back(onnx_io::read_tensor_file(data + "input_" + std::to_string(k) + ".pb").value);
  l.expected.push_back(onnx_io::read_tensor_file(data + "output_0.pb").value);
  return l;
}

class GpuModels : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuModels, MatchReferenceOutputsAndTheInterpreter) {
  SKIP_WITHOUT_GPU();
  const Loaded l = load(GetParam());
  const std::vector<ConstantValue> cpu = evaluate_values<float>(l.graph, l.inputs);
  for (bool fuse : {true, false}) {
    gpu::GpuOptions options;
    options.fuse = fuse;
    gpu::GpuModel model = gpu::GpuModel::load(l.graph, options);
    const auto& st = model.stats();
    std::printf("%s%s: %d operators -> %d steps (%d folded, %d fused), arena %.1f MB (%.1f MB unshared), weights %.1f MB, "
                "workspace %.1f MB, CUDA graph %s\n",
                GetParam().c_str(), fuse ? "" : " (no fusion)", st.graph_ops, st.steps, st.folded, st.fused,
                st.arena_bytes / 1e6, st.unshared_bytes / 1e6, st.weight_bytes / 1e6, st.workspace_bytes / 1e6,
                st.cuda_graph ? "yes" : "no");
    EXPECT_TRUE(st.cuda_graph);
    EXPECT_LT(st.arena_bytes, st.unshared_bytes);  // buffers are shared
    const std::vector<ConstantValue> gpu_out = model.run(l.inputs);
    test::expect_outputs_match(gpu_out, l.expected, 1e-4, GetParam() + " vs ONNX Runtime");
    test::expect_outputs_match(gpu_out, cpu, 1e-4, GetParam() + " vs the CPU interpreter");
    const double ms = model.replay_ms(20, 3);
    std::printf("  replay %.3f ms\n", ms);
    EXPECT_GT(ms, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Bundled, GpuModels,
                         ::testing::Values("squeezenet1_1", "bert_tiny", "llama_tiny", "qwen2_tiny", "gemma_tiny",
                                           "mistral_tiny", "llama_tiny_dynamo"));

// ONNX operators the importer lowers onto gathers, slices, products and
// sums (Resize, CumSum, Einsum's diagonals): the per-operator cases of
// tests/data/onnx_ops on the GPU against ONNX Runtime's outputs.
class GpuOnnxCases : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuOnnxCases, MatchOnnxRuntime) {
  SKIP_WITHOUT_GPU();
  const char* env = std::getenv("TGR_TEST_DATA");
  const std::string dir = std::string(env ? env : TGR_TEST_DATA) + "/onnx_ops/" + GetParam() + "/";
  const Graph graph = onnx_io::import_model_file(dir + "model.onnx").graph;
  const std::vector<ConstantValue> inputs{onnx_io::read_tensor_file(dir + "test_data_set_0/input_0.pb").value};
  const std::vector<ConstantValue> expected{onnx_io::read_tensor_file(dir + "test_data_set_0/output_0.pb").value};
  gpu::GpuModel model = gpu::GpuModel::load(graph);
  test::expect_outputs_match(model.run(inputs), expected, 1e-5, GetParam() + " vs ONNX Runtime");
}

INSTANTIATE_TEST_SUITE_P(
    Lowered, GpuOnnxCases,
    ::testing::Values("resize_nearest_asymmetric_floor_op13", "resize_nearest_half_pixel_op13",
                      "resize_nearest_round_prefer_ceil_op18", "resize_nearest_ceil_align_corners_op13",
                      "resize_linear_pytorch_half_pixel_op13", "resize_linear_pytorch_half_pixel_to_one_op13",
                      "resize_linear_half_pixel_down_op18", "resize_linear_align_corners_op13",
                      "resize_linear_asymmetric_op13", "resize_linear_1d_op13", "resize_linear_axes_op18",
                      "resize_linear_half_pixel_symmetric_op19", "resize_cubic_align_corners_op13",
                      "resize_cubic_pytorch_half_pixel_op13", "resize_cubic_exclude_outside_op18",
                      "einsum_diagonal_op13", "einsum_trace_op13", "einsum_triple_diagonal_op13", "cumsum_float_op13",
                      "cumsum_int64_last_axis_op14", "cumsum_exclusive_reverse_op13"));

TEST(GpuProfile, StepTimesCoverTheModel) {
  SKIP_WITHOUT_GPU();
  const Loaded l = load("squeezenet1_1");
  gpu::GpuModel model = gpu::GpuModel::load(l.graph);
  model.set_inputs(l.inputs);
  const auto steps = model.profile(5);
  ASSERT_EQ(static_cast<int>(steps.size()), model.stats().steps);
  double total = 0;
  for (const auto& s : steps) {
    EXPECT_GE(s.ms, 0) << s.label;
    total += s.ms;
  }
  EXPECT_GT(total, 0);
}

// bench --profile-replay: a replay of some of the steps costs less than the
// whole, none costs almost nothing, and the model's own graph still runs
// the whole model afterwards.
TEST(GpuProfile, APartialReplayRunsOnlyTheStepsKept) {
  SKIP_WITHOUT_GPU();
  const Loaded l = load("squeezenet1_1");
  gpu::GpuModel model = gpu::GpuModel::load(l.graph);
  const std::vector<ConstantValue> before = model.run(l.inputs);
  const auto steps = model.steps();
  ASSERT_EQ(static_cast<int>(steps.size()), model.stats().steps);
  const double whole = model.replay_ms(20, 3);
  const double all_kept = model.replay_ms_keeping(std::vector<bool>(steps.size(), true), 20, 3);
  const double none_kept = model.replay_ms_keeping(std::vector<bool>(steps.size(), false), 20, 3);
  std::vector<bool> convolutions(steps.size());
  for (size_t k = 0; k < steps.size(); ++k) convolutions[k] = steps[k].label.starts_with("conv2d");
  const double convolutions_only = model.replay_ms_keeping(convolutions, 20, 3);
  EXPECT_NEAR(all_kept, whole, 0.25 * whole);
  EXPECT_LT(none_kept, 0.2 * whole);
  EXPECT_LT(convolutions_only, all_kept);
  EXPECT_GT(convolutions_only, none_kept);
  EXPECT_THROW(model.replay_ms_keeping(std::vector<bool>(steps.size() + 1, true)), gpu::GpuError);
  model.execute();
  const std::vector<ConstantValue> after = model.outputs();
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) EXPECT_EQ(after[i].real.data, before[i].real.data);
}

}  // namespace
}  // namespace tgr
