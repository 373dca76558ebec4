// Partial equivalence (PET): per-operator region rules, restricted
// evaluation, the region checker, corrections and mutants.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/text.h"
#include "runtime/interpreter.h"
#include "verifier/correction.h"
#include "verifier/region_check.h"

namespace tgr::pet {
namespace {

// The partition of the (single) output of `expr`.
Partition output_partition(const std::string& expr, const std::string& shapes) {
  const Graph g = build_graph(expr, parse_shape_map(shapes));
  const auto parts = propagate_partitions(g);
  const ValueRef out = g.outputs().at(0);
  return parts[out.node][out.output];
}

// The classic PET example: two convolutions with one kernel versus one
// convolution of the images side by side, split back.
constexpr const char* kClassic =
    "(conv2d(i0, k0), conv2d(i1, k0)) => "
    "(split[axis=3, sizes=8x8](conv2d(concat[axis=3](i0, i1), k0)).0, "
    "split[axis=3, sizes=8x8](conv2d(concat[axis=3](i0, i1), k0)).1)";
constexpr const char* kClassicShapes = "i0=1x3x8x8,i1=1x3x8x8,k0=4x3x3x3";

TEST(PetRegions, SamePadded3x3ConvHasNineBoxes) {
  const Partition p = output_partition("conv2d(x0, k0)", "x0=1x3x8x8,k0=4x3x3x3");
  EXPECT_EQ(p.num_boxes(), 9);
  EXPECT_EQ(p.axes[2], (Cuts{0, 1, 7, 8}));
  EXPECT_EQ(p.axes[3], (Cuts{0, 1, 7, 8}));
}

TEST(PetRegions, StrideDilationGroups) {
  // Stride 2, same padding on 8: out 4, total padding 1 at the end only.
  EXPECT_EQ(output_partition("conv2d[stride=2x2](x0, k0)", "x0=1x4x8x8,k0=4x4x3x3").axes[2], (Cuts{0, 3, 4}));
  // Dilation 2: same padding 2 on each side; rows 0 and 1 both read the
  // padding with their first tap only.
  EXPECT_EQ(output_partition("conv2d[dilation=2x2](x0, k0)", "x0=1x4x8x8,k0=4x4x3x3").axes[2], (Cuts{0, 2, 6, 8}));
  // Two groups: output channels cut at the group boundary.
  EXPECT_EQ(output_partition("conv2d(x0, k0)", "x0=1x4x8x8,k0=6x2x3x3").axes[1], (Cuts{0, 3, 6}));
  // Valid padding: one box.
  EXPECT_EQ(output_partition("conv2d[pad=valid](x0, k0)", "x0=1x4x8x8,k0=4x4x3x3").num_boxes(), 1);
}

TEST(PetRegions, ConcatSeamSplitAndSliceCut) {
  EXPECT_EQ(output_partition("concat[axis=3](x0, x1)", "x0=1x3x8x8,x1=1x3x8x5").axes[3], (Cuts{0, 8, 13}));
  // A convolution over the seam: the columns whose window crosses it.
  EXPECT_EQ(output_partition("conv2d(concat[axis=3](x0, x1), k0)", "x0=1x3x8x8,x1=1x3x8x8,k0=4x3x3x3").axes[3],
            (Cuts{0, 1, 7, 8, 9, 15, 16}));
  EXPECT_EQ(output_partition("split[axis=3, sizes=4x12](concat[axis=3](x0, x1)).1", "x0=1x3x8x8,x1=1x3x8x8").axes[3],
            (Cuts{0, 4, 12}));
  EXPECT_EQ(output_partition("slice[starts=0x0x0x6, ends=1x3x8x10](concat[axis=3](x0, x1))", "x0=1x3x8x8,x1=1x3x8x8")
                .axes[3],
            (Cuts{0, 2, 4}));
  EXPECT_EQ(output_partition("pad[pads=0x0x1x2x0x0x3x0](x0)", "x0=1x3x8x8").axes[2], (Cuts{0, 1, 9, 12}));
  EXPECT_EQ(output_partition("transpose[perm=0x1x3x2](concat[axis=3](x0, x1))", "x0=1x3x8x8,x1=1x3x8x8").axes[2],
            (Cuts{0, 8, 16}));
  EXPECT_EQ(output_partition("matmul(concat[axis=0](x0, x1), w0)", "x0=2x4,x1=3x4,w0=4x5").axes[0], (Cuts{0, 2, 5}));
}

TEST(PetChecker, ClassicExampleWrongExactlyOnTheSeamColumns) {
  const CheckResult r = check_rule(kClassic, parse_shape_map(kClassicShapes));
  EXPECT_EQ(r.verdict, Verdict::kPartial);
  ASSERT_EQ(r.outputs.size(), 2u);
  // Output 0 is wrong in its last column (the window reads i1), output 1 in
  // its first: 2 columns per seam for a 3x3 kernel.
  ASSERT_EQ(r.outputs[0].disagree.size(), 3u);  // the column cut by the rows' borders
  for (const Box& b : r.outputs[0].disagree) {
    EXPECT_EQ(b.lo[3], 7);
    EXPECT_EQ(b.hi[3], 8);
  }
  ASSERT_EQ(r.outputs[1].disagree.size(), 3u);
  for (const Box& b : r.outputs[1].disagree) {
    EXPECT_EQ(b.lo[3], 0);
    EXPECT_EQ(b.hi[3], 1);
  }
  EXPECT_EQ(r.total_elements - r.agreeing_elements, 2 * 1 * 4 * 8);
}

}  // namespace
}  // namespace tgr::pet
