#include "pet/seam_merges.h"

#include <initializer_list>
#include <stdexcept>
#include <string_view>

#include "ir/shape.h"
#include "ir/text.h"
#include "pet/correction.h"
#include "pet/region_check.h"

namespace tgr::pet {
namespace {

// The parts joined (one string built by appending: GCC 12 warns wrongly on
// chains of std::string operator+).
std::string cat(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (std::string_view p : parts) s += p;
  return s;
}

// Linear (no relu): the region checker proves multi-linear programs only.
std::string conv(std::string_view x) { return cat({"conv2d(", x, ", k)"}); }

// (y0, y1) of one convolution over concat[axis](x0, x1), split back.
std::string merged_along(int axis, int64_t size) {
  const std::string a = std::to_string(axis), s = std::to_string(size);
  const std::string merged = conv(cat({"concat[axis=", a, "](x0, x1)"}));
  const std::string piece = cat({"split[axis=", a, ", sizes=", s, "x", s, "](", merged, ")"});
  return cat({"(", piece, ".0, ", piece, ".1)"});
}

}  // namespace

std::string seam_config_name(const SeamMergeConfig& c) {
  return cat({"c", std::to_string(c.channels), " ", shape_to_string(Shape{c.height, c.width}), " k",
              std::to_string(c.kernel)});
}

std::vector<SeamMergeVariant> seam_merge_variants(const SeamMergeConfig& c) {
  const std::string image = shape_to_string(Shape{1, c.channels, c.height, c.width});
  const ShapeMap shapes = parse_shape_map(
      cat({"x0=", image, ",x1=", image, ",k=", shape_to_string(Shape{c.channels, c.channels, c.kernel, c.kernel})}));
  const std::string separate = cat({"(", conv("x0"), ", ", conv("x1"), ")"});
  std::vector<SeamMergeVariant> variants;
  // One region check per merge gives its corrected variant and, with
  // `uncorrected`, the uncorrected one too.
  auto add = [&](const std::string& name, const std::string& target, bool uncorrected) {
    Rule rule = build_rule(cat({separate, " => ", target}), shapes);
    if (variants.empty()) variants.push_back({"separate", rule.source, true, 0});
    const CheckResult regions = check_regions(rule.source, rule.target, CheckOptions{2, 1, 1 << 18});
    if (regions.verdict == Verdict::kFull) {
      variants.push_back({name, rule.target, true, 0});
      if (uncorrected) variants.push_back({name + "-uncorrected", rule.target, true, 0});
      return;
    }
    if (regions.verdict != Verdict::kPartial)
      throw std::logic_error("seam_merge_variants: " + name + " is not a partial merge of " + seam_config_name(c));
    int boxes = 0;
    for (const OutputRegions& out : regions.outputs) boxes += static_cast<int>(out.disagree.size());
    variants.push_back({name, corrected_graph(rule.source, rule.target, regions), true, boxes});
    if (uncorrected) variants.push_back({name + "-uncorrected", rule.target, false, 0});
  };
  add("batch", merged_along(0, 1), false);
  add("height", merged_along(2, c.height), true);
  add("width", merged_along(3, c.width), true);
  return variants;
}

}  // namespace tgr::pet
