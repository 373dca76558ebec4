// Regions for partial equivalence (PET): boxes of a tensor on which a
// multi-linear program is one summation pattern, and the per-operator rules
// that produce them.
//
// A *partition* of a tensor is a grid: per axis, sorted cut points from 0 to
// the size. Its cells are *boxes* (a half-open interval per axis). The rule of
// an operator maps the partitions of its inputs to partitions of its outputs
// such that on every output box:
//   - each term of the operator's sum reads, for every position of the box,
//     an element of one fixed input box (or padding, for every position),
//   - the index it reads is an affine function of the output position,
//   - the coefficients and the set of terms do not depend on the position.
// Composing rules keeps these properties, so on a box of a graph's output the
// output is  sum_v c_v prod_l I_l[A_l p + b_l(v)]  with fixed terms (README.md,
// "Partial equivalence (PET)", states the theorem the checker builds on this).
//
// The rules live in a table keyed by operator name (one file per family:
// region_rules_arith.cpp, region_rules_window.cpp, region_rules_layout.cpp),
// next to the operator table rather than inside it so that each family's box
// logic stays in one short file. An operator without a rule is not
// multi-linear for regions: the checker refuses graphs that use it.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace tgr::pet {

// Cut points of one axis: 0 = c_0 < c_1 < ... < c_n = size.
using Cuts = std::vector<int64_t>;

struct Box {
  std::vector<int64_t> lo, hi;  // half-open, one entry per axis
  int rank() const { return static_cast<int>(lo.size()); }
  int64_t volume() const;
  bool contains(std::span<const int64_t> position) const;
  friend bool operator==(const Box&, const Box&) = default;
};
std::string box_to_string(const Box& box);  // "[0:1, 0:4, 0:1, 0:8]"
Box whole_box(const Shape& shape);

struct Partition {
  std::vector<Cuts> axes;
  static Partition whole(const Shape& shape);  // one box
  int64_t num_boxes() const;
  std::vector<Box> boxes() const;  // row-major order of the grid
  friend bool operator==(const Partition&, const Partition&) = default;
};

// Both partitions' cuts (the coarsest grid finer than both).
Partition intersect(const Partition& a, const Partition& b);
Cuts merge_cuts(const Cuts& a, const Cuts& b);
// Index of the interval of `cuts` holding x, or -1 outside [0, size).
int64_t interval_of(const Cuts& cuts, int64_t x);

// What a region rule sees of one operator application.
struct RegionCall {
  const OpDef& op;
  const Params& params;
  std::span<const Shape> input_shapes;
  std::span<const Shape> output_shapes;
};

// How to compute one box of an operator's output from boxes of its inputs.
struct Restriction {
  // Per input: the box it reads (halo included), or nullopt when unread.
  std::vector<std::optional<Box>> input_boxes;
  // Adds to `g` the operators computing exactly the output box, given the
  // inputs cut to input_boxes (entries for unread inputs are ignored).
  std::function<ValueRef(Graph& g, std::span<const ValueRef> inputs)> build;
};

struct RegionRule {
  // Partitions of the outputs from those of the inputs (constants: none).
  std::function<std::vector<Partition>(const RegionCall&, std::span<const Partition>)> propagate;
  // Null: the output box is cut from the whole operator's output.
  std::function<Restriction(const RegionCall&, int output, const Box&)> restrict;
  // True when the output is a product of the inputs (conv2d, matmul, mul):
  // polynomial degrees add; otherwise (sums, layout) the largest is kept.
  bool product = false;
};

// The rule of an operator, or null when it has none.
const RegionRule* find_region_rule(std::string_view op_name);
// The operators with a region rule, in registration order.
std::vector<std::string> region_rule_ops();
// The table's operators deliberately without one: (name, why).
const std::vector<std::pair<std::string, std::string>>& region_rule_unsupported_ops();

// Why a node cannot take part in region analysis ("" when it can): no rule,
// not multi-linear in an input (by the operator table), a non-linear
// parameter (conv2d's fused relu), a stored constant.
std::string region_refusal(const Graph& graph, int32_t node);

// Partitions of every value of the graph ([node][output]); inputs are one box.
// Precondition: region_refusal is "" for every live node.
std::vector<std::vector<Partition>> propagate_partitions(const Graph& graph);

// Copies `source`'s values restricted to boxes into another graph `target`
// whose inputs have the same names: restricted(v, box) adds the operators
// computing value v of `source` on `box` (variables are sliced). Equal
// requests share nodes.
class RestrictedBuilder {
 public:
  RestrictedBuilder(const Graph& source, Graph& target);
  ValueRef restricted(ValueRef value, const Box& box);
  // The whole value, copied as it is (no slicing).
  ValueRef copied(ValueRef value);

 private:
  const Graph& source_;
  Graph& target_;
  std::vector<std::optional<ValueRef>> copies_;
};

// Adds slice(value) to `g` for `box` (the value itself for the whole box).
ValueRef slice_box(Graph& g, ValueRef value, const Box& box);
// Adds op[params](inputs) to `g`, sharing an equal existing node; one output.
ValueRef add_op(Graph& g, std::string_view op, std::vector<ValueRef> inputs,
                std::vector<std::pair<std::string, ParamValue>> params = {});

namespace rules {  // registration, one function per family file
void add_arith_rules(std::vector<std::pair<std::string, RegionRule>>& table);
void add_window_rules(std::vector<std::pair<std::string, RegionRule>>& table);
void add_layout_rules(std::vector<std::pair<std::string, RegionRule>>& table);
// Cuts of an axis of `size` where sig(q) changes (sig fills its argument).
Cuts cuts_by_signature(int64_t size, const std::function<void(int64_t, std::vector<int64_t>&)>& sig);
// Multiples of `step` from 0 to size (and size).
Cuts regular_cuts(int64_t size, int64_t step);
}  // namespace rules

}  // namespace tgr::pet
