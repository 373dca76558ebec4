#include "pet/correction.h"

#include <algorithm>

namespace tgr::pet {
namespace {

bool inside(const Box& inner, const Box& outer) {
  for (int d = 0; d < inner.rank(); ++d)
    if (inner.lo[d] < outer.lo[d] || inner.hi[d] > outer.hi[d]) return false;
  return true;
}

enum class Status { kAgree, kDisagree, kMixed };

// Builds one output: the grid's boxes inside `region` (aligned with the grid)
// from the target where they agree and from the source where they do not,
// joined with concat.
class Assembler {
 public:
  Assembler(Graph& g, RestrictedBuilder& src, RestrictedBuilder& dst, ValueRef src_out, ValueRef dst_out,
            const OutputRegions& regions)
      : g_(g), src_(src), dst_(dst), src_out_(src_out), dst_out_(dst_out), regions_(regions) {}

  ValueRef build(const Box& region) {
    const Status status = status_of(region);
    // Agreeing regions are cut from the target's output as it is computed;
    // disagreeing ones are recomputed by the source on what they read.
    if (status == Status::kAgree) return slice_box(g_, dst_.copied(dst_out_), region);
    if (status == Status::kDisagree) return src_.restricted(src_out_, region);
    // Mixed: cut along the axis that gives the fewest runs of one status.
    std::vector<Box> best;
    int best_axis = -1;
    for (int axis = 0; axis < region.rank(); ++axis) {
      std::vector<Box> runs = runs_along(region, axis);
      if (runs.size() >= 2 && (best_axis < 0 || runs.size() < best.size())) {
        best = std::move(runs);
        best_axis = axis;
      }
    }
    std::vector<ValueRef> pieces;
    for (const Box& run : best) pieces.push_back(build(run));
    return add_op(g_, "concat", pieces, {{"axis", int64_t{best_axis}}});
  }

 private:
  // The slabs of `region` between the grid's cuts along `axis`, neighbours
  // of one (non-mixed) status merged.
  std::vector<Box> runs_along(const Box& region, int axis) const {
    const Cuts& cuts = regions_.grid.axes[axis];
    std::vector<Box> runs;
    std::vector<Status> run_status;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      if (cuts[i + 1] <= region.lo[axis] || cuts[i] >= region.hi[axis]) continue;
      Box slab = region;
      slab.lo[axis] = cuts[i];
      slab.hi[axis] = cuts[i + 1];
      const Status s = status_of(slab);
      if (!runs.empty() && s != Status::kMixed && run_status.back() == s) {
        runs.back().hi[axis] = slab.hi[axis];
      } else {
        runs.push_back(slab);
        run_status.push_back(s);
      }
    }
    return runs;
  }

  Status status_of(const Box& region) const {
    bool agree = false, disagree = false;
    for (const Box& b : regions_.agree) agree = agree || inside(b, region);
    for (const Box& b : regions_.disagree) disagree = disagree || inside(b, region);
    return agree && disagree ? Status::kMixed : disagree ? Status::kDisagree : Status::kAgree;
  }

  Graph& g_;
  RestrictedBuilder& src_;
  RestrictedBuilder& dst_;
  ValueRef src_out_, dst_out_;
  const OutputRegions& regions_;
};

void add_inputs_of(const Graph& from, Graph& to) {
  for (int32_t i : from.inputs())
    if (!to.find_input(from.node(i).name)) to.add_input(from.node(i).name, from.node(i).output_shapes[0]);
}

}  // namespace

Graph corrected_graph(const Graph& source, const Graph& target, const CheckResult& regions) {
  Graph g;
  add_inputs_of(target, g);
  add_inputs_of(source, g);
  RestrictedBuilder src(source, g), dst(target, g);
  for (size_t o = 0; o < target.outputs().size(); ++o) {
    Assembler assemble(g, src, dst, source.outputs()[o], target.outputs()[o], regions.outputs.at(o));
    g.add_output(assemble.build(whole_box(target.shape(target.outputs()[o]))));
  }
  return g;
}

Graph box_correction(const Graph& source, int output, const Box& box) {
  Graph g;
  add_inputs_of(source, g);
  RestrictedBuilder src(source, g);
  g.add_output(src.restricted(source.outputs().at(output), box));
  return g;
}

}  // namespace tgr::pet
