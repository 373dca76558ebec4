// Region rules of the arithmetic operators: elementwise add/sub/mul/neg and
// scalar_mul (with broadcasting), matmul, batch_matmul, and the constant
// operators (cut where their value changes, so coefficients are fixed per box).
#include "pet/regions.h"

namespace tgr::pet::rules {
namespace {

// The operator itself on restricted inputs (same parameters).
Restriction same_op(const RegionCall& call, std::vector<std::optional<Box>> input_boxes) {
  const OpDef* op = &call.op;
  Params params = call.params;
  return {std::move(input_boxes), [op, params](Graph& g, std::span<const ValueRef> ins) {
            return g.find_or_add_op(*op, params, std::vector<ValueRef>(ins.begin(), ins.end())).at(0);
          }};
}

// Elementwise with NumPy broadcasting: input axes aligned to the right; a
// broadcast axis (size 1) contributes no cuts and is read at index 0.
std::vector<Partition> broadcast_propagate(const RegionCall& call, std::span<const Partition> in) {
  const Shape& out = call.output_shapes[0];
  Partition p = Partition::whole(out);
  for (size_t i = 0; i < in.size(); ++i) {
    const Shape& s = call.input_shapes[i];
    const size_t offset = out.size() - s.size();
    for (size_t d = 0; d < s.size(); ++d)
      if (s[d] == out[offset + d]) p.axes[offset + d] = merge_cuts(p.axes[offset + d], in[i].axes[d]);
  }
  return {p};
}

Restriction broadcast_restrict(const RegionCall& call, int, const Box& box) {
  std::vector<std::optional<Box>> boxes;
  const size_t rank = call.output_shapes[0].size();
  for (const Shape& s : call.input_shapes) {
    Box b;
    const size_t offset = rank - s.size();
    for (size_t d = 0; d < s.size(); ++d) {
      const bool broadcast = s[d] != call.output_shapes[0][offset + d];
      b.lo.push_back(broadcast ? 0 : box.lo[offset + d]);
      b.hi.push_back(broadcast ? 1 : box.hi[offset + d]);
    }
    boxes.push_back(b);
  }
  return same_op(call, std::move(boxes));
}

RegionRule elementwise() { return {broadcast_propagate, broadcast_restrict}; }

// matmul: out[i, j] = sum_k a[i, k] b[k, j]; batch_matmul with a batch axis
// in front. The summed axis never cuts the output.
RegionRule matmul_rule(bool batched) {
  RegionRule r;
  r.propagate = [batched](const RegionCall& call, std::span<const Partition> in) {
    Partition p = Partition::whole(call.output_shapes[0]);
    const int b = batched ? 1 : 0;
    if (batched) p.axes[0] = merge_cuts(in[0].axes[0], in[1].axes[0]);
    p.axes[b] = in[0].axes[b];
    p.axes[b + 1] = in[1].axes[b + 1];
    return std::vector<Partition>{p};
  };
  r.restrict = [batched](const RegionCall& call, int, const Box& box) {
    const int b = batched ? 1 : 0;
    Box a = whole_box(call.input_shapes[0]), w = whole_box(call.input_shapes[1]);
    if (batched) {
      a.lo[0] = w.lo[0] = box.lo[0];
      a.hi[0] = w.hi[0] = box.hi[0];
    }
    a.lo[b] = box.lo[b];
    a.hi[b] = box.hi[b];
    w.lo[b + 1] = box.lo[b + 1];
    w.hi[b + 1] = box.hi[b + 1];
    return same_op(call, {a, w});
  };
  return r;
}

// Constants: cut every axis where the value can change, so that each box
// holds one value.
RegionRule constant_rule(std::function<Partition(const Shape&)> cells) {
  RegionRule r;
  r.propagate = [cells](const RegionCall& call, std::span<const Partition>) {
    return std::vector<Partition>{cells(call.output_shapes[0])};
  };
  return r;
}

Partition every_index(const Shape& s, size_t axes) {
  Partition p = Partition::whole(s);
  for (size_t d = 0; d < axes; ++d) p.axes[d] = regular_cuts(s[d], 1);
  return p;
}

}  // namespace

void add_arith_rules(std::vector<std::pair<std::string, RegionRule>>& table) {
  for (const char* op : {"add", "sub", "neg"}) table.emplace_back(op, elementwise());
  for (const char* op : {"mul", "scalar_mul"}) {
    table.emplace_back(op, elementwise());
    table.back().second.product = true;
  }
  table.emplace_back("matmul", matmul_rule(false));
  table.emplace_back("batch_matmul", matmul_rule(true));
  for (size_t i = table.size() - 2; i < table.size(); ++i) table[i].second.product = true;
  table.emplace_back("eye", constant_rule([](const Shape& s) { return every_index(s, 2); }));
  table.emplace_back("conv_identity", constant_rule([](const Shape& s) {
                       Partition p = every_index(s, 2);  // channel c to c
                       for (int d = 2; d < 4; ++d) p.axes[d] = merge_cuts({0, s[d] / 2, s[d] / 2 + 1, s[d]}, {});
                       return p;
                     }));
  table.emplace_back("pool_kernel", constant_rule([](const Shape& s) { return Partition::whole(s); }));
  table.emplace_back("ones", constant_rule([](const Shape& s) { return Partition::whole(s); }));
}

}  // namespace tgr::pet::rules
