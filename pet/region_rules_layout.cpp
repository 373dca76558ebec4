// Region rules of the layout operators: transpose, concat (adds the seam),
// split and slice (cut), pad (the padding is a box of its own), reshape and
// expand. Each output element is one input element (or the pad value) at an
// index affine in the output position within a box.
#include <numeric>

#include "pet/regions.h"

namespace tgr::pet::rules {
namespace {

using Boxes = std::vector<std::optional<Box>>;

ValueRef identity(Graph&, std::span<const ValueRef> ins) { return ins[0]; }

std::vector<int64_t> effective_perm(const RegionCall& call) {
  std::vector<int64_t> perm = call.params.get_ints("perm");
  if (perm.empty()) {
    perm.resize(call.input_shapes[0].size());
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  return perm;
}

RegionRule transpose_rule() {
  RegionRule r;
  r.propagate = [](const RegionCall& call, std::span<const Partition> in) {
    const std::vector<int64_t> perm = effective_perm(call);
    Partition p;
    for (int64_t axis : perm) p.axes.push_back(in[0].axes[axis]);
    return std::vector<Partition>{p};
  };
  r.restrict = [](const RegionCall& call, int, const Box& box) {
    const std::vector<int64_t> perm = effective_perm(call);
    Box b = whole_box(call.input_shapes[0]);
    for (size_t i = 0; i < perm.size(); ++i) {
      b.lo[perm[i]] = box.lo[i];
      b.hi[perm[i]] = box.hi[i];
    }
    const Params params = call.params;
    return Restriction{{b}, [params](Graph& g, std::span<const ValueRef> ins) {
                         return g.find_or_add_op(op_def(OpKind::kTranspose), params, {ins[0]}).at(0);
                       }};
  };
  return r;
}

RegionRule concat_rule() {
  RegionRule r;
  r.propagate = [](const RegionCall& call, std::span<const Partition> in) {
    const size_t axis = static_cast<size_t>(call.params.get_int("axis"));
    Partition p = Partition::whole(call.output_shapes[0]);
    Cuts along{0};
    int64_t offset = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      for (size_t d = 0; d < p.axes.size(); ++d)
        if (d != axis) p.axes[d] = merge_cuts(p.axes[d], in[i].axes[d]);
      for (size_t c = 1; c < in[i].axes[axis].size(); ++c) along.push_back(offset + in[i].axes[axis][c]);
      offset += call.input_shapes[i][axis];
    }
    along.erase(std::unique(along.begin(), along.end()), along.end());  // empty inputs add no cut
    p.axes[axis] = along;
    return std::vector<Partition>{p};
  };
  r.restrict = [](const RegionCall& call, int, const Box& box) {
    const int64_t axis = call.params.get_int("axis");
    Boxes boxes;
    std::vector<size_t> read;
    int64_t offset = 0;
    for (size_t i = 0; i < call.input_shapes.size(); ++i) {
      const int64_t n = call.input_shapes[i][axis];
      const int64_t lo = std::max(box.lo[axis], offset), hi = std::min(box.hi[axis], offset + n);
      if (lo < hi) {
        Box b = box;
        b.lo[axis] = lo - offset;
        b.hi[axis] = hi - offset;
        boxes.push_back(b);
        read.push_back(i);
      } else {
        boxes.push_back(std::nullopt);
      }
      offset += n;
    }
    return Restriction{boxes, [read, axis](Graph& g, std::span<const ValueRef> ins) {
                         if (read.size() == 1) return ins[read[0]];
                         std::vector<ValueRef> pieces;
                         for (size_t i : read) pieces.push_back(ins[i]);
                         return add_op(g, "concat", pieces, {{"axis", axis}});
                       }};
  };
  return r;
}

RegionRule split_rule() {
  RegionRule r;
  r.propagate = [](const RegionCall& call, std::span<const Partition> in) {
    const size_t axis = static_cast<size_t>(call.params.get_int("axis"));
    std::vector<Partition> out;
    int64_t offset = 0;
    for (const Shape& s : call.output_shapes) {
      Partition p = in[0];
      p.axes[axis] = cuts_by_signature(s[axis], [&](int64_t q, std::vector<int64_t>& sig) {
        sig.push_back(interval_of(in[0].axes[axis], q + offset));
      });
      out.push_back(p);
      offset += s[axis];
    }
    return out;
  };
  r.restrict = [](const RegionCall& call, int output, const Box& box) {
    const int64_t axis = call.params.get_int("axis");
    int64_t offset = 0;
    for (int k = 0; k < output; ++k) offset += call.output_shapes[k][axis];
    Box b = box;
    b.lo[axis] += offset;
    b.hi[axis] += offset;
    return Restriction{{b}, identity};
  };
  return r;
}

std::vector<int64_t> slice_steps(const RegionCall& call) {
  std::vector<int64_t> steps = call.params.get_ints("steps");
  if (steps.empty()) steps.assign(call.input_shapes[0].size(), 1);
  return steps;
}

RegionRule slice_rule() {
  RegionRule r;
  r.propagate = [](const RegionCall& call, std::span<const Partition> in) {
    const auto& starts = call.params.get_ints("starts");
    const std::vector<int64_t> steps = slice_steps(call);
    Partition p;
    for (size_t d = 0; d < starts.size(); ++d)
      p.axes.push_back(cuts_by_signature(call.output_shapes[0][d], [&](int64_t q, std::vector<int64_t>& sig) {
        sig.push_back(interval_of(in[0].axes[d], starts[d] + q * steps[d]));
      }));
    return std::vector<Partition>{p};
  };
  r.restrict = [](const RegionCall& call, int, const Box& box) {
    const auto& starts = call.params.get_ints("starts");
    const std::vector<int64_t> steps = slice_steps(call);
    Box b;
    std::vector<int64_t> s2, e2;
    bool identity_slice = true;
    for (size_t d = 0; d < starts.size(); ++d) {
      const int64_t first = starts[d] + box.lo[d] * steps[d], last = starts[d] + (box.hi[d] - 1) * steps[d];
      b.lo.push_back(std::min(first, last));
      b.hi.push_back(std::max(first, last) + 1);
      // Within the cut input: from `first`, the same step, through `last`.
      s2.push_back(first - b.lo.back());
      e2.push_back(steps[d] > 0 ? last - b.lo.back() + 1 : (last - b.lo.back()) - 1);
      identity_slice = identity_slice && steps[d] == 1;
    }
    return Restriction{{b}, [s2, e2, steps, identity_slice](Graph& g, std::span<const ValueRef> ins) {
                         if (identity_slice) return ins[0];
                         return add_op(g, "slice", {ins[0]}, {{"starts", s2}, {"ends", e2}, {"steps", steps}});
                       }};
  };
  return r;
}

RegionRule pad_rule() {
  RegionRule r;
  r.propagate = [](const RegionCall& call, std::span<const Partition> in) {
    const auto& pads = call.params.get_ints("pads");
    const size_t rank = call.input_shapes[0].size();
    Partition p;
    for (size_t d = 0; d < rank; ++d)
      p.axes.push_back(cuts_by_signature(call.output_shapes[0][d], [&](int64_t q, std::vector<int64_t>& sig) {
        sig.push_back(interval_of(in[0].axes[d], q - pads[d]));
      }));
    return std::vector<Partition>{p};
  };
  r.restrict = [](const RegionCall& call, int output, const Box& box) {
    const auto& pads = call.params.get_ints("pads");
    const Shape& x = call.input_shapes[0];
    const size_t rank = x.size();
    Box b;
    std::vector<int64_t> begins(rank), ends(rank);
    bool empty = false;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t lo = std::max<int64_t>(0, box.lo[d] - pads[d]), hi = std::min(x[d], box.hi[d] - pads[d]);
      empty = empty || hi <= lo;
      b.lo.push_back(lo);
      b.hi.push_back(hi);
      begins[d] = lo - (box.lo[d] - pads[d]);
      ends[d] = (box.hi[d] - pads[d]) - hi;
    }
    const Params params = call.params;
    if (empty) {  // only padding: cut from the whole padded tensor
      return Restriction{{whole_box(x)}, [params, output, box](Graph& g, std::span<const ValueRef> ins) {
                           ValueRef v = g.find_or_add_op(op_def(OpKind::kPad), params, {ins[0]}).at(output);
                           return slice_box(g, v, box);
                         }};
    }
    std::vector<int64_t> new_pads = begins;
    new_pads.insert(new_pads.end(), ends.begin(), ends.end());
    return Restriction{{b}, [params, new_pads](Graph& g, std::span<const ValueRef> ins) {
                         if (std::all_of(new_pads.begin(), new_pads.end(), [](int64_t v) { return v == 0; }))
                           return ins[0];
                         return add_op(g, "pad", {ins[0]}, {{"pads", new_pads}, {"value", params.get_float("value")}});
                       }};
  };
  return r;
}

// reshape: an output box must lie in one input box and in one input "row"
// (the last input axis longer than 1), so that within the box only that
// axis's index moves, affinely; cut every output axis wherever two
// neighbouring positions differ in either.
std::vector<Partition> reshape_propagate(const RegionCall& call, std::span<const Partition> in) {
  const Shape& s = call.input_shapes[0];
  const Shape& t = call.output_shapes[0];
  int last = static_cast<int>(s.size()) - 1;
  while (last >= 0 && s[last] == 1) --last;
  if (last < 0) return {Partition::whole(t)};
  const int64_t row = s[last];
  const int64_t intervals = static_cast<int64_t>(in[0].axes[last].size()) - 1;
  auto id = [&](int64_t f) { return (f / row) * intervals + interval_of(in[0].axes[last], f % row); };
  const int64_t n = num_elements(t);
  std::vector<int64_t> ids(n);
  for (int64_t f = 0; f < n; ++f) ids[f] = id(f);
  // Input cuts of the axes before `last` follow from the row.
  const std::vector<int64_t> strides = row_major_strides(t);
  std::vector<std::vector<bool>> cut(t.size());
  for (size_t j = 0; j < t.size(); ++j) cut[j].assign(t[j], false);
  for (int64_t f = 0; f < n; ++f)
    for (size_t j = 0; j < t.size(); ++j) {
      const int64_t q = f / strides[j] % t[j];
      if (q > 0 && ids[f] != ids[f - strides[j]]) cut[j][q] = true;
    }
  Partition p;
  for (size_t j = 0; j < t.size(); ++j) {
    Cuts c{0};
    for (int64_t q = 1; q < t[j]; ++q)
      if (cut[j][q]) c.push_back(q);
    c.push_back(t[j]);
    p.axes.push_back(c);
  }
  return {p};
}

RegionRule expand_rule() {
  RegionRule r;
  r.propagate = [](const RegionCall& call, std::span<const Partition> in) {
    const Shape& s = call.input_shapes[0];
    const Shape& out = call.output_shapes[0];
    Partition p = Partition::whole(out);
    const size_t offset = out.size() - s.size();
    for (size_t d = 0; d < s.size(); ++d)
      if (s[d] == out[offset + d]) p.axes[offset + d] = in[0].axes[d];
    return std::vector<Partition>{p};
  };
  r.restrict = [](const RegionCall& call, int, const Box& box) {
    const Shape& s = call.input_shapes[0];
    const size_t offset = call.output_shapes[0].size() - s.size();
    Box b;
    for (size_t d = 0; d < s.size(); ++d) {
      const bool broadcast = s[d] != call.output_shapes[0][offset + d];
      b.lo.push_back(broadcast ? 0 : box.lo[offset + d]);
      b.hi.push_back(broadcast ? 1 : box.hi[offset + d]);
    }
    Shape target;
    for (int d = 0; d < box.rank(); ++d) target.push_back(box.hi[d] - box.lo[d]);
    return Restriction{{b}, [target](Graph& g, std::span<const ValueRef> ins) {
                         if (g.shape(ins[0]) == target) return ins[0];
                         return add_op(g, "expand", {ins[0]}, {{"shape", target}});
                       }};
  };
  return r;
}

}  // namespace

void add_layout_rules(std::vector<std::pair<std::string, RegionRule>>& table) {
  table.emplace_back("transpose", transpose_rule());
  table.emplace_back("concat", concat_rule());
  table.emplace_back("split", split_rule());
  table.emplace_back("slice", slice_rule());
  table.emplace_back("pad", pad_rule());
  table.emplace_back("reshape", RegionRule{reshape_propagate, nullptr});
  table.emplace_back("expand", expand_rule());
}

}  // namespace tgr::pet::rules
