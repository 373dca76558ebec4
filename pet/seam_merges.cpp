#include "pet/seam_merges.h"

#include <initializer_list>
#include <stdexcept>
#include <string_view>

#include "ir/text.h"
#include "pet/correction.h"
#include "pet/region_check.h"

namespace tgr::pet {
namespace {

// Linear (no relu): the region checker proves multi-linear programs only.
std::string conv(std::string_view x) {
  std::string c = "conv2d(";
  c += x;
  c += ", k)";
  return c;
}

// (y0, y1) of one convolution over concat[axis](x0, x1), split back.
std::string merged_along(int axis, int64_t size) {
  const std::string a = std::to_string(axis), s = std::to_string(size);
  std::string concat = "concat[axis=";
  concat += a;
  concat += "](x0, x1)";
  std::string piece = "split[axis=";
  piece += a;
  piece += ", sizes=";
  piece += s;
  piece += 'x';
  piece += s;
  piece += "](";
  piece += conv(concat);
  piece += ')';
  std::string pair = "(";
  pair += piece;
  pair += ".0, ";
  pair += piece;
  pair += ".1)";
  return pair;
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
  std::string name = "c";
  name += std::to_string(c.channels);
  name += ' ';
  name += dims({c.height, c.width});
  name += " k";
  name += std::to_string(c.kernel);
  return name;
}

std::vector<SeamMergeVariant> seam_merge_variants(const SeamMergeConfig& c) {
  const std::string image = dims({1, c.channels, c.height, c.width});
  std::string shape_text = "x0=";
  shape_text += image;
  shape_text += ",x1=";
  shape_text += image;
  shape_text += ",k=";
  shape_text += dims({c.channels, c.channels, c.kernel, c.kernel});
  const ShapeMap shapes = parse_shape_map(shape_text);
  std::string separate = "(";
  separate += conv("x0");
  separate += ", ";
  separate += conv("x1");
  separate += ')';
  std::vector<SeamMergeVariant> variants;
  auto add = [&](std::string name, const std::string& target, bool correct) {
    std::string text = separate;
    text += " => ";
    text += target;
    Rule rule = build_rule(text, shapes);
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
