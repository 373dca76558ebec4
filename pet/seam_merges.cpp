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

// `g` with its inputs x0 and x1 computed: relu of inputs a0 and a1 of their
// shapes, declared in their place (the region checker proves linear programs
// only, so the relus are added once the corrections are built).
Graph with_computed_inputs(const Graph& g) {
  Graph out;
  std::vector<std::vector<ValueRef>> value(g.nodes().size());
  for (int32_t i : g.inputs()) {
    const Node& n = g.node(i);
    const bool image = n.name == "x0" || n.name == "x1";
    const ValueRef in = out.add_input(image ? cat({"a", std::string_view(n.name).substr(1)}) : n.name,
                                      n.output_shapes[0], n.output_dtypes[0]);
    value[i] = {image ? out.apply("relu", {in}) : in};
  }
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.node(static_cast<int32_t>(i));
    if (n.is_input()) continue;
    if (n.is_constant()) {
      value[i] = {out.add_shared_constant(n)};
      continue;
    }
    std::vector<ValueRef> inputs;
    for (ValueRef v : n.inputs) inputs.push_back(value.at(v.node).at(v.output));
    value[i] = out.find_or_add_op(*n.op, n.params, inputs);
  }
  for (size_t k = 0; k < g.outputs().size(); ++k) {
    const ValueRef v = g.outputs()[k];
    out.add_output(value.at(v.node).at(v.output), g.output_names().at(k));
  }
  return out;
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
  if (c.computed_inputs)
    for (SeamMergeVariant& v : variants) v.graph = with_computed_inputs(v.graph);
  return variants;
}

}  // namespace tgr::pet
