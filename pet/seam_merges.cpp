#include "pet/seam_merges.h"

#include <initializer_list>
#include <stdexcept>
#include <string_view>

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

std::string dims(std::initializer_list<int64_t> d) {
  std::string s;
  for (int64_t v : d) {
    if (!s.empty()) s += 'x';
    s += std::to_string(v);
  }
  return s;
}

}  // namespace

std::string seam_config_name(const SeamMergeConfig& c) {
  return cat({"c", std::to_string(c.channels), " ", dims({c.height, c.width}), " k", std::to_string(c.kernel)});
}

std::vector<SeamMergeVariant> seam_merge_variants(const SeamMergeConfig& c) {
  const std::string image = dims({1, c.channels, c.height, c.width});
  const ShapeMap shapes =
      parse_shape_map(cat({"x0=", image, ",x1=", image, ",k=", dims({c.channels, c.channels, c.kernel, c.kernel})}));
  const std::string separate = cat({"(", conv("x0"), ", ", conv("x1"), ")"});
  std::vector<SeamMergeVariant> variants;
  auto add = [&](std::string name, const std::string& target, bool correct) {
    Rule rule = build_rule(cat({separate, " => ", target}), shapes);
    if (variants.empty()) variants.push_back({"separate", rule.source, true, 0});
    SeamMergeVariant v{std::move(name), rule.target, true, 0};
    const CheckResult regions = check_regions(rule.source, rule.target, CheckOptions{2, 1, 1 << 18});
    for (const OutputRegions& out : regions.outputs) v.corrected_boxes += static_cast<int>(out.disagree.size());
    if (correct && regions.verdict == Verdict::kPartial) {
      v.graph = corrected_graph(rule.source, rule.target, regions);
    } else if (regions.verdict != Verdict::kFull) {
      if (correct || regions.verdict != Verdict::kPartial)
        throw std::logic_error("seam_merge_variants: " + v.name + " is not a partial merge of " + seam_config_name(c));
      v.exact = false;
      v.corrected_boxes = 0;
    }
    variants.push_back(std::move(v));
  };
  add("batch", merged_along(0, 1), true);
  add("height", merged_along(2, c.height), true);
  add("height-uncorrected", merged_along(2, c.height), false);
  add("width", merged_along(3, c.width), true);
  add("width-uncorrected", merged_along(3, c.width), false);
  return variants;
}

}  // namespace tgr::pet
