// Scaled-dot-product attention found in a graph, for the GPU runtime to run
// as one step (Task::Kind::kAttention, runtime/execution_plan.h; lowered by
// runtime/cuda/lower_attention.cpp). Precondition: a graph whose shapes are
// inferred; nothing here needs a GPU.
//
// The form matched, exactly as importers write it (no rewrite first):
//   scores = batch_matmul(q', k')                            [BH, S, T]
//   x      = reshapes(scores) [* c | / c]  [+ mask]          (c: one-element constants)
//   p      = softmax over x's last axis (of length T)
//            [then where(is_nan(p), 0, p): PyTorch's guard for fully masked rows]
//   out    = batch_matmul(reshapes(p), v')                   [BH, S, Dv]
// where q', k', v' are each a chain from a value computed outside the step
// (its "source") through reshapes, transposes, expands (grouped-query
// attention's key/value heads repeated) and multiplications or divisions by
// one-element constants (the scale applied to q and to k). The step computes
//   out[b, s, :] = sum_t softmax_t(scale * q[b, s, :] . k[b, :, t] + mask[b, s, t]) v[b, t, :]
// with scale the product of every constant multiplied (divided: its inverse):
// the unfused steps' values up to float rounding (the scale applied once
// instead of to q and to k). The sources are read through strides (the
// chain's reshapes, transposes and expands as index arithmetic), so the
// chain's copies disappear with the step.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace tgr {

// One factor of an axis read through strides: index i of it is i * stride
// elements from the start (stride 0: an expanded, repeated axis).
struct SubAxis {
  int64_t size = 1;
  int64_t stride = 0;
};
// A value read through strides: per axis, its index split row-major into
// sub-axes (a reshape that merges axes which no one stride walks, such as
// grouped-query attention's [heads, repeats of stride 0], keeps both).
using StridedAxes = std::vector<std::vector<SubAxis>>;

// `shape` stored with `strides` (elements).
StridedAxes strided_axes(const Shape& shape, const std::vector<int64_t>& strides);
// The same elements under a reshape to `to` (row-major order kept); nullopt
// where an axis of `to` would cut a sub-axis that cannot be split.
std::optional<StridedAxes> reshape_axes(const StridedAxes& in, const Shape& to);
// A transpose by `perm` (output axis d is input axis perm[d]).
StridedAxes transpose_axes(const StridedAxes& in, const std::vector<int64_t>& perm);
// NumPy broadcasting of `in` (of shape `from`) to `to`: new and expanded axes read with stride 0.
StridedAxes broadcast_axes(const StridedAxes& in, const Shape& from, const Shape& to);

// A product operand as the attention kernel reads it: [batch, rows, cols],
// the batch index split into at most kMaxAttentionBatchAxes sub-axes.
inline constexpr size_t kMaxAttentionBatchAxes = 4;
struct AttentionLayout {
  std::vector<SubAxis> batch;  // outermost first; the sizes multiply to the batch
  int64_t row_stride = 0, col_stride = 0;
};
// The layout of a rank-3 `axes`, nullopt when rows or cols are not one stride
// each or the batch needs more sub-axes.
std::optional<AttentionLayout> attention_layout(const StridedAxes& axes);

// The head dimension (of q and k, and of v) the kernel takes at most.
inline constexpr int64_t kMaxAttentionHeadDim = 128;

struct AttentionOperand {
  ValueRef source;             // read from outside the step
  std::vector<int32_t> chain;  // nodes from the source to the product's operand, in order
};

struct AttentionMatch {
  AttentionOperand q, k, v;      // the operands of the two products: [BH, S, D], [BH, D, T], [BH, T, Dv]
  std::optional<ValueRef> mask;  // added to the scaled scores, broadcast
  int32_t mask_add = -1;         // the add node
  std::vector<std::pair<ValueRef, bool>> scales;  // one-element constants: multiplied (false) or divided by (true)
  bool nan_guard = false;                         // where(is_nan(p), 0, p) after the softmax
  int64_t batch = 0, rows = 0, keys = 0, head_dim = 0, value_dim = 0;  // BH, S, T, D, Dv
  std::vector<int32_t> nodes;  // every node of the step, in topological order; the last is the output product
};

// The attention whose output product is the batch_matmul `product`, or
// nullopt. `may_take(node)`: whether the step may include the node (the
// planner's: an operator node no other step holds, not computed at load).
// `at_load(node)`: computed at load (scales and the guard's zero may be).
// Every node of the match but the last is read only inside it and is no
// graph output; the head dimensions are at most kMaxAttentionHeadDim. Where
// an operand chain's node may not be taken or is read elsewhere, the chain
// stops there and that value is the operand's source.
std::optional<AttentionMatch> match_attention(const Graph& graph, int32_t product,
                                              const std::function<bool(int32_t)>& may_take,
                                              const std::function<bool(int32_t)>& at_load);

// How the kernel reads an operand whose source is stored with
// `source_strides`: the source's axes through the chain, as the product's
// [batch, rows, cols] operand. nullopt when no layout does.
std::optional<AttentionLayout> operand_layout(const Graph& graph, const AttentionOperand& operand,
                                              const std::vector<int64_t>& source_strides);
// How the kernel reads the mask, stored with `mask_strides`, as [BH, S, T].
std::optional<AttentionLayout> mask_layout(const Graph& graph, const AttentionMatch& match,
                                           const std::vector<int64_t>& mask_strides);

// Whether a mask of `shape` with these values (row-major) is causal: every
// element past the diagonal of its last two axes (t > s + T - S, for S, T
// the step's rows and keys) is at most kMaskedBelow and every other one
// above it, so a key tile entirely past the diagonal adds exactly nothing
// (exp underflows to 0 beside an unmasked entry of the row) and the kernel
// skips it. Its last two axes must be S x T.
inline constexpr float kMaskedBelow = -1e30f;
bool is_causal_mask(const Shape& shape, const std::vector<float>& values, int64_t rows, int64_t keys);

}  // namespace tgr
