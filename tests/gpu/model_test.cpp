// Whole models on the GPU: the bundled squeezenet1_1 and bert_tiny against
// their reference outputs (ONNX Runtime) and the CPU interpreter; memory plan
// and fusion statistics (label `gpu`).
#include <gtest/gtest.h>

#include <cstdlib>

#include "onnx/onnx_import.h"
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
  const auto input = onnx_io::read_tensor_file(dir + model + "-testdata/input_0.pb");
  const auto output = onnx_io::read_tensor_file(dir + model + "-testdata/output_0.pb");
  onnx_io::ImportOptions options;
  Loaded l;
  l.graph = onnx_io::import_model_file(dir + model + ".onnx", options).graph;
  l.inputs.push_back(input.value);
  l.expected.push_back(output.value);
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

INSTANTIATE_TEST_SUITE_P(Bundled, GpuModels, ::testing::Values("squeezenet1_1", "bert_tiny"));

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

}  // namespace
}  // namespace tgr
