// The measured-cost table (runtime/cuda/cost_table.h): signatures and storage.
#include <gtest/gtest.h>

#include <filesystem>

#include "ir/text.h"
#include "runtime/cuda/cost_table.h"

namespace tgr {
namespace {

TEST(CostTable, SignatureNamesOperatorNonDefaultParametersAndInputs) {
  const Graph g = build_graph("conv2d[stride=2x2](x, k)", parse_shape_map("x=1x3x224x224,k=64x3x3x3"));
  const Node& conv = g.node(g.outputs()[0].node);
  EXPECT_EQ(op_signature(g, conv), "conv2d[stride=2x2](float:1x3x224x224,float:64x3x3x3)");
}

TEST(CostTable, StoresAndReusesByDeviceAndSignature) {
  const auto path = std::filesystem::temp_directory_path() / "tgr_cost_table_test.db";
  std::filesystem::remove(path);
  {
    CostTable t(path.string());
    EXPECT_FALSE(t.lookup("H100", "relu(float:4)"));
    t.store("H100", "relu(float:4)", 0.004);
    t.store("H100", "relu(float:4)", 0.005);  // replaced
    t.store("A100", "relu(float:4)", 0.007);
  }
  CostTable again(path.string());
  EXPECT_DOUBLE_EQ(*again.lookup("H100", "relu(float:4)"), 0.005);
  EXPECT_DOUBLE_EQ(*again.lookup("A100", "relu(float:4)"), 0.007);
  EXPECT_EQ(again.count("H100"), 1);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tgr
