// Partial equivalence (PET): per-operator region rules, restricted
// evaluation, the region checker, corrections and mutants.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/text.h"
#include "pet/correction.h"
#include "pet/mutants.h"
#include "pet/region_check.h"
#include "pet/seam_merges.h"
#include "runtime/execution_plan.h"
#include "runtime/interpreter.h"

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

// Restricted evaluation (what point tests and corrections use) equals the
// whole evaluation cut to the box, for every operator with a region rule.
struct RestrictCase {
  const char* expr;
  const char* shapes;
};

class PetRestrict : public ::testing::TestWithParam<RestrictCase> {};

TEST_P(PetRestrict, EqualsWholeEvaluationOnEveryBoxAndPoint) {
  const Graph g = build_graph(GetParam().expr, parse_shape_map(GetParam().shapes));
  const auto inputs = random_inputs<Fp>(g, 11);
  const auto whole = evaluate<Fp>(g, std::span<const Tensor<Fp>>(inputs));
  const auto parts = propagate_partitions(g);
  int64_t compared = 0;
  for (size_t o = 0; o < g.outputs().size(); ++o) {
    const ValueRef out = g.outputs()[o];
    std::vector<Box> boxes = parts[out.node][out.output].boxes();
    // Also single positions, and a box across every cut.
    const Shape& shape = g.shape(out);
    Box corner = whole_box(shape), middle = whole_box(shape);
    for (size_t d = 0; d < shape.size(); ++d) {
      corner.lo[d] = shape[d] - 1;
      middle.lo[d] = shape[d] / 3;
      middle.hi[d] = std::max(middle.lo[d] + 1, 2 * shape[d] / 3 + 1);
    }
    boxes.push_back(corner);
    boxes.push_back(middle);
    for (const Box& box : boxes) {
      const Graph r = box_correction(g, static_cast<int>(o), box);
      std::vector<Tensor<Fp>> r_inputs;
      for (int32_t i : r.inputs())
        for (size_t k = 0; k < g.inputs().size(); ++k)
          if (g.node(g.inputs()[k]).name == r.node(i).name) r_inputs.push_back(inputs[k]);
      const Tensor<Fp> got = evaluate<Fp>(r, std::span<const Tensor<Fp>>(r_inputs)).at(0);
      ASSERT_EQ(got.size(), box.volume()) << box_to_string(box);
      // Compare with the whole output at the box's positions.
      std::vector<int64_t> p = box.lo;
      for (int64_t k = 0; k < box.volume(); ++k, ++compared) {
        int64_t f = 0;
        for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + p[d];
        ASSERT_EQ(got.data[k], whole[o].data[f]) << GetParam().expr << " box " << box_to_string(box) << " element " << k;
        for (int d = box.rank() - 1; d >= 0; --d) {
          if (++p[d] < box.hi[d]) break;
          p[d] = box.lo[d];
        }
      }
    }
  }
  EXPECT_GT(compared, 0);
}

TEST(PetRestrict, ComparesElements) {
  // The cases above compare real elements (guard against a vacuous loop).
  const Graph g = build_graph("conv2d(x0, k0)", parse_shape_map("x0=1x1x4x4,k0=1x1x3x3"));
  const Graph r = box_correction(g, 0, Box{{0, 0, 1, 1}, {1, 1, 3, 4}});
  EXPECT_EQ(r.shape(r.outputs()[0]), (Shape{1, 1, 2, 3}));
}

INSTANTIATE_TEST_SUITE_P(
    Operators, PetRestrict,
    ::testing::Values(
        RestrictCase{"conv2d(x0, k0)", "x0=2x3x7x6,k0=4x3x3x3"},
        RestrictCase{"conv2d[stride=2x3, dilation=2x1](x0, k0)", "x0=1x3x9x11,k0=4x3x3x3"},
        RestrictCase{"conv2d[pad=2x0x1x3](x0, k0)", "x0=1x2x6x6,k0=2x2x3x2"},
        RestrictCase{"conv2d(x0, k0)", "x0=1x4x6x6,k0=6x2x3x3"},
        RestrictCase{"conv2d(concat[axis=3](x0, x1), k0)", "x0=1x3x5x5,x1=1x3x5x4,k0=2x3x3x3"},
        RestrictCase{"avgpool[kernel=3x3](x0)", "x0=1x2x7x7"},
        RestrictCase{"avgpool[kernel=3x2, stride=2x2, include_pad=1](x0)", "x0=1x2x7x8"},
        RestrictCase{"matmul(concat[axis=0](x0, x1), w0)", "x0=2x4,x1=3x4,w0=4x5"},
        RestrictCase{"batch_matmul(b0, b1)", "b0=2x3x4,b1=2x4x5"},
        RestrictCase{"add(x0, x1)", "x0=3x4,x1=4"},
        RestrictCase{"mul(x0, x1)", "x0=3x1,x1=3x4"},
        RestrictCase{"scalar_mul(sub(x0, x1), s0)", "x0=3x4,x1=3x4,s0=scalar"},
        RestrictCase{"transpose[perm=1x2x0](b0)", "b0=2x3x4"},
        RestrictCase{"split[axis=1, sizes=2x3](x0).1", "x0=3x5"},
        RestrictCase{"slice[starts=1x6, ends=4x-1, steps=2x-3](x0)", "x0=5x7"},
        RestrictCase{"pad[pads=1x0x2x3, value=0](x0)", "x0=3x4"},
        RestrictCase{"reshape[shape=4x6](concat[axis=1](x0, x1))", "x0=2x4x2,x1=2x2x2"},
        RestrictCase{"expand[shape=3x4x5](x0)", "x0=4x1"},
        RestrictCase{"enlarge[size=5x5](k0)", "k0=2x2x3x1"},
        RestrictCase{"matmul(x0, eye[n=4]())", "x0=3x4"},
        RestrictCase{"conv2d(x0, conv_identity[channels=2, kernel=3x3]())", "x0=1x2x4x4"}));

TEST(PetChecker, ReadingAnInputAlongTwoPathsTestsEveryPosition) {
  // out[q] = x[q + 2] + x[6 - q]  versus  x[2 + 3q] + x[6 - 3q]: equal at
  // q = 0 and q = 1, different at q = 2. Each side reads x0 with two linear
  // index maps, where m + 1 positions are not enough: every position is tested.
  const CheckResult r = check_rule(
      "add(slice[starts=2, ends=5](x0), slice[starts=6, ends=3, steps=-1](x0)) => "
      "add(slice[starts=2, ends=9, steps=3](x0), slice[starts=6, ends=-1, steps=-3](x0))",
      parse_shape_map("x0=9"));
  EXPECT_TRUE(r.outputs[0].every_position);
  EXPECT_EQ(r.verdict, Verdict::kNone);
}

TEST(PetChecker, FullAndNone) {
  EXPECT_EQ(check_rule("conv2d(concat[axis=0](x0, x1), k0) => concat[axis=0](conv2d(x0, k0), conv2d(x1, k0))",
                       parse_shape_map("x0=1x3x6x6,x1=2x3x6x6,k0=4x3x3x3"))
                .verdict,
            Verdict::kFull);
  EXPECT_EQ(check_rule("matmul(x0, w0) => matmul(x0, w1)", parse_shape_map("x0=2x3,w0=3x3,w1=3x3")).verdict,
            Verdict::kNone);
}

TEST(PetChecker, RefusesNonLinearGraphsWithAClearMessage) {
  try {
    check_rule("relu(conv2d(x0, k0)) => conv2d[act=relu](x0, k0)", parse_shape_map("x0=1x3x6x6,k0=4x3x3x3"));
    FAIL() << "expected a refusal";
  } catch (const RegionCheckError& e) {
    EXPECT_NE(std::string(e.what()).find("source: relu is not multi-linear"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("multi-linear programs only"), std::string::npos) << e.what();
  }
  EXPECT_THROW(check_rule("maxpool[kernel=3x3](x0) => x0", parse_shape_map("x0=1x3x6x6")), RegionCheckError);
  const ShapeMap shapes = parse_shape_map("x0=2x3");
  EXPECT_THROW(check_regions(build_graph("x0", shapes), build_graph("transpose(x0)", shapes)), RegionCheckError);
}

// The corrected mutant of the classic example equals the original exactly in
// the field and within 1e-5 (relative) in float32, on fresh random inputs.
TEST(PetCorrection, CorrectedClassicMutantEqualsTheOriginal) {
  const Rule rule = build_rule(kClassic, parse_shape_map(kClassicShapes));
  const CheckResult r = check_regions(rule.source, rule.target);
  const Graph corrected = corrected_graph(rule.source, rule.target, r);
  EXPECT_EQ(check_regions(rule.source, corrected).verdict, Verdict::kFull);
  for (uint64_t seed : {101u, 202u, 303u}) {
    const auto fin = random_inputs<Fp>(rule.source, seed);
    const auto a = evaluate<Fp>(rule.source, std::span<const Tensor<Fp>>(fin));
    const auto b = evaluate<Fp>(corrected, std::span<const Tensor<Fp>>(fin));
    for (size_t o = 0; o < a.size(); ++o) EXPECT_TRUE(a[o].data == b[o].data) << "field, output " << o;
    const auto fl = random_inputs<float>(rule.source, seed);
    const auto x = evaluate<float>(rule.source, std::span<const Tensor<float>>(fl));
    const auto y = evaluate<float>(corrected, std::span<const Tensor<float>>(fl));
    for (size_t o = 0; o < x.size(); ++o) {
      double diff = 0, norm = 0;
      for (size_t i = 0; i < x[o].data.size(); ++i) {
        diff += std::pow(double(x[o].data[i]) - y[o].data[i], 2);
        norm += std::pow(double(x[o].data[i]), 2);
      }
      EXPECT_LE(std::sqrt(diff / norm), 1e-5) << "float32, output " << o;
    }
  }
  // The uncorrected mutant differs in the field.
  const auto fin = random_inputs<Fp>(rule.source, 5);
  EXPECT_FALSE(evaluate<Fp>(rule.source, std::span<const Tensor<Fp>>(fin))[0].data ==
               evaluate<Fp>(rule.target, std::span<const Tensor<Fp>>(fin))[0].data);
}

TEST(PetCorrection, AWrongCorrectionIsDetected) {
  const Rule rule = build_rule(kClassic, parse_shape_map(kClassicShapes));
  const CheckResult r = check_regions(rule.source, rule.target);
  // Wrong 1: one disagreeing box left uncorrected.
  CheckResult forgot = r;
  forgot.outputs[1].agree.push_back(forgot.outputs[1].disagree.back());
  forgot.outputs[1].disagree.pop_back();
  const CheckResult c1 = check_regions(rule.source, corrected_graph(rule.source, rule.target, forgot));
  EXPECT_EQ(c1.verdict, Verdict::kPartial);
  EXPECT_EQ(c1.outputs[1].disagree.size(), 1u);
  // Wrong 2: the correction written one column off (the seam column of
  // output 0 recomputed one column to the left).
  CheckResult shifted = r;
  for (Box& b : shifted.outputs[0].disagree) {
    b.lo[3] -= 1;
    b.hi[3] -= 1;
  }
  for (Box& b : shifted.outputs[0].agree)
    if (b.hi[3] == 7) b.hi[3] = 6;  // keep the grid a cover: column 7 now counts as agreeing
  shifted.outputs[0].grid.axes[3] = {0, 1, 6, 7, 8};
  const CheckResult c2 = check_regions(rule.source, corrected_graph(rule.source, rule.target, shifted));
  EXPECT_NE(c2.verdict, Verdict::kFull);
  EXPECT_FALSE(c2.outputs[0].disagree.empty());
}

// The mutant generator finds the classic mutant (partially equal) from the
// two convolutions, and full mutants such as the batch concatenation.
// bench_seams' graphs: the exact and corrected merges compute what the two
// convolutions do; the uncorrected ones do not, at the seam only.
TEST(PetSeamMerges, CorrectedMergesEqualTheTwoConvolutions) {
  SeamMergeConfig config;
  config.channels = 3;
  config.height = 5;
  config.width = 6;
  const std::vector<SeamMergeVariant> variants = seam_merge_variants(config);
  std::vector<std::string> names;
  for (const SeamMergeVariant& v : variants) names.push_back(v.name);
  EXPECT_EQ(names, (std::vector<std::string>{"separate", "batch", "height", "height-uncorrected", "width",
                                             "width-uncorrected"}));
  EXPECT_EQ(seam_config_name(config), "c3 5x6 k3");
  const Graph& separate = variants[0].graph;
  const auto inputs = random_inputs<float>(separate, 17);
  const auto want = evaluate<float>(separate, std::span<const Tensor<float>>(inputs));
  for (const SeamMergeVariant& v : variants) {
    ASSERT_EQ(v.graph.inputs().size(), 3u) << v.name;
    const auto got = evaluate<float>(v.graph, std::span<const Tensor<float>>(inputs));
    ASSERT_EQ(got.size(), 2u) << v.name;
    // Per output: the rows (height) or columns (width) where it differs.
    for (size_t o = 0; o < 2; ++o) {
      ASSERT_EQ(got[o].shape, want[o].shape) << v.name;
      int wrong = 0;
      for (size_t i = 0; i < want[o].data.size(); ++i) wrong += std::abs(got[o].data[i] - want[o].data[i]) > 1e-4f;
      if (v.exact) {
        EXPECT_EQ(wrong, 0) << v.name << " output " << o;
      } else {
        // One row or column of the 5 x 6 image per channel is wrong, the one at the seam.
        const int seam = v.name == "height-uncorrected" ? 6 : 5;
        EXPECT_GT(wrong, 0) << v.name << " output " << o;
        EXPECT_LE(wrong, 3 * seam) << v.name << " output " << o;
      }
    }
  }
  EXPECT_EQ(variants[1].corrected_boxes, 0);  // along batch: exact as it is
  EXPECT_GT(variants[2].corrected_boxes, 0);
  EXPECT_GT(variants[4].corrected_boxes, 0);
  EXPECT_FALSE(variants[3].exact);
  EXPECT_FALSE(variants[5].exact);
  // The images are computed (relu of a0, a1), as in a model: in the batch
  // merge the relus write straight into the concatenation's bytes, so it
  // copies nothing; along height the pieces are strided, and it copies.
  EXPECT_EQ(separate.node(separate.inputs()[0]).name, "a0");
  auto concat_copies = [](const Graph& g) {
    const ExecutionPlan plan = make_execution_plan(g);
    int copies = 0;
    for (const Task& t : plan.tasks) copies += g.node(t.root()).op->name == "concat" && t.kind != Task::Kind::kAlias;
    return copies;
  };
  // (4 channels: each image 480 bytes, so the second starts on the 16-byte
  // boundary a piece written in place needs.)
  config.channels = 4;
  const std::vector<SeamMergeVariant> aligned = seam_merge_variants(config);
  EXPECT_EQ(concat_copies(aligned[1].graph), 0);
  EXPECT_EQ(concat_copies(aligned[3].graph), 1);  // height-uncorrected: the merged input
  config.computed_inputs = false;
  EXPECT_EQ(concat_copies(seam_merge_variants(config)[1].graph), 1);  // graph inputs are copied
}

TEST(PetMutants, FindsTheSeamMutantOfTwoConvolutions) {
  const Graph source = build_graph("(conv2d(i0, k0), conv2d(i1, k0))", parse_shape_map("i0=1x2x5x5,i1=1x2x5x5,k0=2x2x3x3"));
  MutantOptions options;
  const MutantReport report = find_mutants(source, options);
  bool seam = false, batch = false;
  for (const Mutant& m : report.partial) {
    EXPECT_EQ(m.result.verdict, Verdict::kPartial);
    seam = seam || m.text == "(split[axis=3, sizes=5x5](conv2d(concat[axis=3](i0, i1), k0)).0, "
                             "split[axis=3, sizes=5x5](conv2d(concat[axis=3](i0, i1), k0)).1)";
  }
  for (const Mutant& m : report.full)
    batch = batch || m.text == "(split[axis=0, sizes=1x1](conv2d(concat[axis=0](i0, i1), k0)).0, "
                              "split[axis=0, sizes=1x1](conv2d(concat[axis=0](i0, i1), k0)).1)";
  EXPECT_TRUE(seam) << report.partial.size() << " partial mutants";
  EXPECT_TRUE(batch) << report.full.size() << " full mutants";
  std::printf("%lld programs, %lld checked, %zu full, %zu partial, %lld refused\n", (long long)report.programs,
              (long long)report.checked, report.full.size(), report.partial.size(), (long long)report.refused);
}

}  // namespace
}  // namespace tgr::pet
