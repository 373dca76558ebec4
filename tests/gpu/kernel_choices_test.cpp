// The runtime's timed choices (runtime/kernel_choices.h) on the GPU: a load
// times a convolution's choice once and puts it in the process's set; a
// stored choice (what bench reads from calibrate's database) runs without
// being timed again and computes what the CPU interpreter does.
#include "runtime/kernel_choices.h"

#include <gtest/gtest.h>

#include "ir/text.h"
#include "tests/gpu/gpu_test_util.h"

namespace tgr {
namespace {

TEST(GpuKernelChoices, AStoredChoiceRunsWithoutBeingTimedAgain) {
  SKIP_WITHOUT_GPU();
  KernelChoices& choices = KernelChoices::process();
  choices.clear();
  const Graph g = build_graph("relu(add(conv2d(x, k), b))", parse_shape_map("x=1x16x14x14,k=32x16x3x3,b=1x32x1x1"));
  const std::vector<ConstantValue> inputs = test::random_values(g, 3);
  const std::vector<ConstantValue> expected = evaluate_values<float>(g, inputs);
  test::expect_outputs_match(gpu::GpuModel::load(g).run(inputs), expected, 1e-4, "timed at load");
  const std::vector<KernelChoices::Entry> timed = choices.take_added();
  ASSERT_EQ(timed.size(), 1u);  // the one convolution (cuDNN offers several float32 algorithms for it)
  EXPECT_EQ(timed[0].first.rfind("conv-algo ", 0), 0u) << timed[0].first;
  ASSERT_TRUE(TimedChoice::parse(timed[0].second)) << timed[0].second;

  // As read from a database: implicit GEMM (algorithm 0, no workspace).
  choices.clear();
  choices.seed({{timed[0].first, TimedChoice{0, 0, 1.0}.to_text()}});
  test::expect_outputs_match(gpu::GpuModel::load(g).run(inputs), expected, 1e-4, "stored algorithm 0");
  EXPECT_TRUE(choices.take_added().empty());  // nothing was timed

  // A stored value that is not the runtime's text is timed again.
  choices.clear();
  choices.seed({{timed[0].first, "not a choice"}});
  test::expect_outputs_match(gpu::GpuModel::load(g).run(inputs), expected, 1e-4, "timed again");
  EXPECT_EQ(choices.take_added().size(), 1u);
  choices.clear();
}

}  // namespace
}  // namespace tgr
