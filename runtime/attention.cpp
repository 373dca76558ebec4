#include "runtime/attention.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "runtime/views.h"

namespace tgr {

StridedAxes strided_axes(const Shape& shape, const std::vector<int64_t>& strides) {
  StridedAxes axes(shape.size());
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1) axes[d].push_back({shape[d], strides.at(d)});
  return axes;
}

namespace {

// Adjacent sub-axes one stride walks (outer stride = inner stride x inner size) as one.
void merge_contiguous(std::vector<SubAxis>& axis) {
  std::vector<SubAxis> out;
  for (const SubAxis& s : axis) {
    if (!out.empty() && out.back().stride == s.stride * s.size) {
      out.back() = {out.back().size * s.size, s.stride};
      continue;
    }
    out.push_back(s);
  }
  axis = std::move(out);
}

}  // namespace

std::optional<StridedAxes> reshape_axes(const StridedAxes& in, const Shape& to) {
  std::vector<SubAxis> flat;  // outermost first
  for (const auto& axis : in)
    for (const SubAxis& s : axis)
      if (s.size != 1) flat.push_back(s);
  StridedAxes out(to.size());
  size_t next = 0;
  for (size_t d = 0; d < to.size(); ++d) {
    int64_t need = to[d];
    if (need <= 0) return std::nullopt;
    while (need > 1) {
      if (next == flat.size()) return std::nullopt;
      SubAxis& s = flat[next];
      if (s.size <= need) {
        if (need % s.size != 0) return std::nullopt;
        out[d].push_back(s);
        need /= s.size;
        ++next;
      } else {
        // The axis takes the outer factor of the sub-axis; the inner one stays for the next axes.
        if (s.size % need != 0) return std::nullopt;
        const int64_t inner = s.size / need;
        out[d].push_back({need, s.stride * inner});
        s = {inner, s.stride};
        need = 1;
      }
    }
    merge_contiguous(out[d]);
  }
  if (next != flat.size()) return std::nullopt;
  return out;
}

StridedAxes transpose_axes(const StridedAxes& in, const std::vector<int64_t>& perm) {
  StridedAxes out(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) out[d] = in.at(static_cast<size_t>(perm[d]));
  return out;
}

StridedAxes broadcast_axes(const StridedAxes& in, const Shape& from, const Shape& to) {
  StridedAxes out(to.size());
  const size_t offset = to.size() - from.size();
  for (size_t d = 0; d < to.size(); ++d) {
    const bool repeated = d < offset || (from[d - offset] == 1 && to[d] != 1);
    if (!repeated) out[d] = in[d - offset];
    else if (to[d] != 1) out[d] = {{to[d], 0}};
  }
  return out;
}

std::optional<AttentionLayout> attention_layout(const StridedAxes& axes) {
  if (axes.size() != 3 || axes[1].size() > 1 || axes[2].size() > 1 || axes[0].size() > kMaxAttentionBatchAxes)
    return std::nullopt;
  AttentionLayout l;
  l.batch = axes[0];
  l.row_stride = axes[1].empty() ? 0 : axes[1][0].stride;
  l.col_stride = axes[2].empty() ? 0 : axes[2][0].stride;
  return l;
}

namespace {

struct Matcher {
  const Graph& g;
  const std::function<bool(int32_t)>& may_take;
  const std::function<bool(int32_t)>& at_load;
  std::vector<std::vector<int32_t>> uses;
  std::vector<char> is_output;

  Matcher(const Graph& graph, const std::function<bool(int32_t)>& take, const std::function<bool(int32_t)>& load)
      : g(graph), may_take(take), at_load(load), uses(graph.use_counts()), is_output(graph.nodes().size(), 0) {
    for (ValueRef v : graph.outputs()) is_output[v.node] = 1;
  }

  const Node& node(ValueRef v) const { return g.node(v.node); }
  // An operator node of one float output, which the step may take, read once (by the next node of a chain).
  bool takes(ValueRef v) const {
    const Node& n = node(v);
    return n.is_op() && n.output_shapes.size() == 1 && n.output_dtypes[0] == DType::kFloat && may_take(v.node) &&
           uses[v.node][0] == 1 && !is_output[v.node];
  }
  bool is_reshape(ValueRef v) const { return node(v).op->traits.view == ViewKind::kReshape; }
  bool one_element_constant(ValueRef v) const {
    const Node& n = node(v);
    return g.dtype(v) == DType::kFloat && num_elements(g.shape(v)) == 1 && (n.is_constant() || at_load(v.node));
  }
  // When `v` is x * c, c * x or x / c for a one-element constant c, keeping x's shape: x, and (c, divides).
  std::optional<std::pair<ValueRef, std::pair<ValueRef, bool>>> scaled(ValueRef v) const {
    const Node& n = node(v);
    if (op_is(n.op, OpKind::kMul))
      for (int side = 0; side < 2; ++side) {
        const ValueRef x = n.inputs[1 - side], c = n.inputs[side];
        if (one_element_constant(c) && g.shape(x) == n.output_shapes[0]) return std::pair{x, std::pair{c, false}};
      }
    if (op_is(n.op, OpKind::kDiv) && one_element_constant(n.inputs[1]) && g.shape(n.inputs[0]) == n.output_shapes[0])
      return std::pair{n.inputs[0], std::pair{n.inputs[1], true}};
    return std::nullopt;
  }

  // An operand of a product, up its chain (reshapes, transposes, expands, and with `scales` the scale).
  AttentionOperand operand(ValueRef x, std::vector<std::pair<ValueRef, bool>>* scales) const {
    AttentionOperand o;
    while (takes(x)) {
      const Node& n = node(x);
      const ViewKind view = n.op->traits.view;
      if (view == ViewKind::kReshape || view == ViewKind::kPermute || op_is(n.op, OpKind::kExpand)) {
        o.chain.push_back(x.node);
        x = n.inputs[0];
        continue;
      }
      const auto s = scales ? scaled(x) : std::nullopt;
      if (!s) break;
      o.chain.push_back(x.node);
      scales->push_back(s->second);
      x = s->first;
    }
    std::reverse(o.chain.begin(), o.chain.end());
    o.source = x;
    return o;
  }

  // From the softmax's input up to the scores product: reshapes and scales, the
  // mask's add among them. The product, or nullopt.
  std::optional<ValueRef> scores(ValueRef x, AttentionMatch& m, std::vector<int32_t>& spine) const {
    while (takes(x)) {
      const Node& n = node(x);
      if (op_is(n.op, OpKind::kBatchMatmul)) return x;
      if (is_reshape(x)) {
        spine.push_back(x.node);
        x = n.inputs[0];
        continue;
      }
      if (auto s = scaled(x)) {
        spine.push_back(x.node);
        m.scales.push_back(s->second);
        x = s->first;
        continue;
      }
      // One mask, and no scale after it (walking up, none met yet): (x + mask) c is not x c + mask.
      if (!op_is(n.op, OpKind::kAdd) || m.mask || !m.scales.empty()) return std::nullopt;
      // The side the scores come from, the other is the mask (broadcast to the scores' shape).
      for (int side = 0; side < 2; ++side) {
        const ValueRef from = n.inputs[side], mask = n.inputs[1 - side];
        if (g.shape(from) != n.output_shapes[0] || g.dtype(mask) != DType::kFloat) continue;
        AttentionMatch attempt = m;
        attempt.mask = mask;
        attempt.mask_add = x.node;
        std::vector<int32_t> more = spine;
        more.push_back(x.node);
        if (auto product = scores(from, attempt, more)) {
          m = std::move(attempt);
          spine = std::move(more);
          return product;
        }
      }
      return std::nullopt;
    }
    return std::nullopt;
  }

  // where(is_nan(p), 0, p) at `x`: p, taking the where and the is_nan.
  std::optional<ValueRef> nan_guard(ValueRef x, std::vector<int32_t>& spine) const {
    const Node& w = node(x);
    if (!op_is(w.op, OpKind::kWhere) || !takes(x)) return std::nullopt;
    const ValueRef cond = w.inputs[0], zero = w.inputs[1], p = w.inputs[2];
    const Node& c = node(cond);
    const Node& z = node(zero);
    if (!c.is_op() || !op_is(c.op, OpKind::kIsNan) || c.inputs[0] != p || !may_take(cond.node) ||
        uses[cond.node][0] != 1 || is_output[cond.node])
      return std::nullopt;
    if (!z.is_constant() || !z.constant->is_float() || g.shape(p) != w.output_shapes[0]) return std::nullopt;
    const std::vector<float>& zeros = z.constant->real.data;
    if (!std::all_of(zeros.begin(), zeros.end(), [](float v) { return v == 0.f; })) return std::nullopt;
    // p is read by these two alone.
    if (uses[p.node][0] != 2 || is_output[p.node]) return std::nullopt;
    spine.push_back(x.node);
    spine.push_back(cond.node);
    return p;
  }
};

}  // namespace

std::optional<AttentionMatch> match_attention(const Graph& graph, int32_t product,
                                              const std::function<bool(int32_t)>& may_take,
                                              const std::function<bool(int32_t)>& at_load) {
  const Node& pv = graph.node(product);
  if (!pv.is_op() || !op_is(pv.op, OpKind::kBatchMatmul) || pv.output_dtypes[0] != DType::kFloat || !may_take(product))
    return std::nullopt;
  // Cheap first (the planner asks for every batch_matmul of every graph the
  // search costs): a softmax above the product's left operand, through reshapes and the guard.
  ValueRef up = pv.inputs[0];
  for (int hops = 0; hops < 8 && graph.node(up.node).is_op(); ++hops) {
    const Node& n = graph.node(up.node);
    if (op_is(n.op, OpKind::kSoftmax)) break;
    if (n.op->traits.view != ViewKind::kReshape && !op_is(n.op, OpKind::kWhere)) return std::nullopt;
    up = op_is(n.op, OpKind::kWhere) ? n.inputs.back() : n.inputs[0];
  }
  if (!graph.node(up.node).is_op() || !op_is(graph.node(up.node).op, OpKind::kSoftmax)) return std::nullopt;
  Matcher mt(graph, may_take, at_load);
  AttentionMatch m;
  std::vector<int32_t> spine{product};
  ValueRef x = pv.inputs[0];
  while (mt.takes(x) && mt.is_reshape(x)) {
    spine.push_back(x.node);
    x = graph.node(x.node).inputs[0];
  }
  if (auto p = mt.nan_guard(x, spine)) {
    m.nan_guard = true;
    x = *p;
  } else if (!mt.takes(x)) {
    return std::nullopt;
  }
  const Node& softmax = graph.node(x.node);
  if (!softmax.is_op() || !op_is(softmax.op, OpKind::kSoftmax) || !may_take(x.node)) return std::nullopt;
  const Shape& p_shape = softmax.output_shapes[0];
  if (softmax.params.get_int("axis") != static_cast<int64_t>(p_shape.size()) - 1) return std::nullopt;
  spine.push_back(x.node);
  const std::optional<ValueRef> qk = mt.scores(softmax.inputs[0], m, spine);
  if (!qk) return std::nullopt;
  spine.push_back(qk->node);
  const Node& scores = graph.node(qk->node);
  const Shape& s = scores.output_shapes[0];  // [BH, S, T]
  const Shape& v = graph.shape(pv.inputs[1]);
  if (graph.shape(pv.inputs[0]) != s || p_shape.back() != s[2] || num_elements(s) == 0 || num_elements(v) == 0)
    return std::nullopt;
  m.batch = s[0];
  m.rows = s[1];
  m.keys = s[2];
  m.head_dim = graph.shape(scores.inputs[0])[2];
  m.value_dim = v[2];
  if (m.head_dim > kMaxAttentionHeadDim || m.value_dim > kMaxAttentionHeadDim) return std::nullopt;
  m.q = mt.operand(scores.inputs[0], &m.scales);
  m.k = mt.operand(scores.inputs[1], &m.scales);
  m.v = mt.operand(pv.inputs[1], nullptr);
  // Every node, in topological order.
  std::vector<int32_t> members = spine;
  for (const AttentionOperand* o : {&m.q, &m.k, &m.v}) members.insert(members.end(), o->chain.begin(), o->chain.end());
  std::vector<int> position(graph.nodes().size(), -1);
  const std::vector<int32_t> order = graph.topological_order();
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int>(i);
  std::sort(members.begin(), members.end(), [&](int32_t a, int32_t b) { return position[a] < position[b]; });
  if (members.back() != product) return std::nullopt;
  m.nodes = std::move(members);
  return m;
}

namespace {

// The permutation of a transpose node over `rank` axes (none given: reversed).
std::vector<int64_t> permutation_of(const Node& n, size_t rank) {
  std::vector<int64_t> perm = n.params.get_ints("perm");
  if (perm.empty()) {
    perm.resize(rank);
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  return perm;
}

}  // namespace

std::optional<AttentionLayout> operand_layout(const Graph& graph, const AttentionOperand& operand,
                                              const std::vector<int64_t>& source_strides) {
  StridedAxes axes = strided_axes(graph.shape(operand.source), source_strides);
  Shape shape = graph.shape(operand.source);
  for (int32_t i : operand.chain) {
    const Node& n = graph.node(i);
    const Shape& out = n.output_shapes[0];
    if (n.op->traits.view == ViewKind::kReshape) {
      auto r = reshape_axes(axes, out);
      if (!r) return std::nullopt;
      axes = std::move(*r);
    } else if (n.op->traits.view == ViewKind::kPermute) {
      axes = transpose_axes(axes, permutation_of(n, shape.size()));
    } else if (op_is(n.op, OpKind::kExpand)) {
      axes = broadcast_axes(axes, shape, out);
    }  // else a scale: the same elements
    shape = out;
  }
  return attention_layout(axes);
}

std::optional<AttentionLayout> mask_layout(const Graph& graph, const AttentionMatch& match,
                                           const std::vector<int64_t>& mask_strides) {
  if (!match.mask) return std::nullopt;
  const Shape& mask = graph.shape(*match.mask);
  const Shape& sum = graph.node(match.mask_add).output_shapes[0];
  const auto axes = reshape_axes(broadcast_axes(strided_axes(mask, mask_strides), mask, sum),
                                 Shape{match.batch, match.rows, match.keys});
  if (!axes) return std::nullopt;
  return attention_layout(*axes);
}

bool is_causal_mask(const Shape& shape, const std::vector<float>& values, int64_t rows, int64_t keys) {
  if (shape.size() < 2 || shape[shape.size() - 2] != rows || shape.back() != keys) return false;
  if (static_cast<int64_t>(values.size()) != num_elements(shape)) return false;
  for (size_t i = 0; i < values.size(); ++i) {
    const int64_t t = static_cast<int64_t>(i) % keys, s = static_cast<int64_t>(i) / keys % rows;
    const bool past = t > s + keys - rows;
    if (past ? !(values[i] <= kMaskedBelow) : !(values[i] > kMaskedBelow)) return false;
  }
  return true;
}

}  // namespace tgr
