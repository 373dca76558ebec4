// Attention blocks in the text syntax (ir/text.h), shared by the plan tests
// (tests/execution_plan_test.cpp: which values are views, which steps run)
// and the GPU tests (tests/gpu/ops_test.cpp: the same graphs against the CPU
// interpreter), so both look at the same graphs.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace tgr::test {

// Where the merged heads go: BERT's and GPT-2's batch-first [B, S, H, D]
// (transpose 0x2x1x3), or ViT's sequence-first [S, B, H, D] (torchvision's
// multi-head attention: transpose 2x0x1x3).
enum class HeadMerge { kBatchFirst, kSequenceFirst };

struct AttentionBlock {
  std::string expr;
  std::string shapes;  // parse_shape_map text
};

// Multi-head attention over q, k, v of [B*S, H*D] (batch-first rows, or
// sequence-first rows for kSequenceFirst), then the heads merged back to
// [B*S, H*D] and the output projection with its bias:
//   o = batch_matmul(softmax(q_h k_h^T), v_h)        [B*H, S, D]
//   add(matmul(merge(o), w), b)                      [B*S, E]
// where merge is reshape [B, H, S, D], the transpose, reshape [B*S, H*D].
inline AttentionBlock attention_block(int64_t B, int64_t H, int64_t S, int64_t D, HeadMerge merge) {
  auto x = [](std::initializer_list<int64_t> dims) {
    std::string s;
    for (int64_t d : dims) {
      if (!s.empty()) s += 'x';
      s += std::to_string(d);  // (appended, not "x" + to_string: GCC 12's -Wrestrict false positive)
    }
    return s;
  };
  const int64_t E = H * D;
  const bool seq_first = merge == HeadMerge::kSequenceFirst;
  // Rows of q, k, v split into heads, as [B, S, H, D] or [S, B, H, D].
  const std::string split = "reshape[shape=" + (seq_first ? x({S, B, H, D}) : x({B, S, H, D})) + "]";
  const std::string to_heads = seq_first ? "1x2x0x3" : "0x2x1x3";    // -> [B, H, S, D]
  const std::string to_keys_t = seq_first ? "1x2x3x0" : "0x2x3x1";   // -> [B, H, D, S]
  const std::string from_heads = seq_first ? "2x0x1x3" : "0x2x1x3";  // [B, H, S, D] ->
  auto heads = [&](const std::string& v, const std::string& perm, const std::string& shape) {
    return "reshape[shape=" + shape + "](transpose[perm=" + perm + "](" + split + "(" + v + ")))";
  };
  const std::string q = heads("q", to_heads, x({B * H, S, D}));
  const std::string kt = heads("k", to_keys_t, x({B * H, D, S}));
  const std::string v = heads("v", to_heads, x({B * H, S, D}));
  const std::string o = "batch_matmul(softmax[axis=2](batch_matmul(" + q + ", " + kt + ")), " + v + ")";
  const std::string merged = "reshape[shape=" + x({B * S, E}) + "](transpose[perm=" + from_heads +
                             "](reshape[shape=" + x({B, H, S, D}) + "](" + o + ")))";
  const std::string rows = x({B * S, E});
  return {"add(matmul(" + merged + ", w), b)",
          "q=" + rows + ",k=" + rows + ",v=" + rows + ",w=" + x({E, E}) + ",b=" + std::to_string(E)};
}

// Scaled-dot-product attention as the exporters write it, in its variants
// (runtime/attention.h): q [B, S, H*D], k [B, T, Hkv*D], v [B, T, Hkv*Dv]
// graph inputs split into heads (transpose 0x2x1x3), keys and values
// repeated to H heads when Hkv < H (grouped-query attention: reshape,
// expand, reshape), the scale applied to q and to k, or to the scores
// (multiplied or divided), a mask added, the softmax, optionally PyTorch's
// where(is_nan(p), 0, p), the product with v and the heads merged to
// [B, S, H*Dv]. The plan tests count its attention steps, the GPU tests
// compare the fused step with the unfused ones.
enum class AttentionScale { kQueryAndKey, kScoresMul, kScoresDiv };
enum class AttentionMask {
  kNone,
  kCausal,     // a constant [1, 1, S, T]: 0 up to the diagonal, the float minimum past it
  kPadding,    // a graph input "mask" [B, 1, 1, T]
  kSquare,     // a graph input "mask" [S, T]
  kMaskedRow,  // a constant [1, 1, S, T]: -inf in row 0, so that row's softmax is NaN (0 with the guard)
};
struct AttentionVariant {
  int64_t B = 1, H = 4, Hkv = 4, S = 16, T = 16, D = 16, Dv = 16;
  AttentionScale scale = AttentionScale::kQueryAndKey;
  AttentionMask mask = AttentionMask::kNone;
  bool nan_guard = false;
};

inline Graph attention_variant(const AttentionVariant& a) {
  using Ints = std::vector<int64_t>;
  Graph g;
  auto reshape = [&](ValueRef x, Ints shape) { return g.apply("reshape", {x}, {{"shape", shape}}); };
  auto transpose = [&](ValueRef x, Ints perm) { return g.apply("transpose", {x}, {{"perm", perm}}); };
  auto scalar = [&](double v) {
    return g.add_constant(ConstantValue(Tensor<float>(Shape{}, {static_cast<float>(v)})));
  };
  const int64_t rep = a.H / a.Hkv;
  // [B, L, n * d] -> [B, H, L, d], repeated from n heads to H.
  auto heads = [&](ValueRef x, int64_t L, int64_t n, int64_t d) {
    ValueRef h = transpose(reshape(x, {a.B, L, n, d}), {0, 2, 1, 3});
    if (n == a.H) return h;
    h = g.apply("expand", {reshape(h, {a.B, n, 1, L, d})}, {{"shape", Ints{a.B, n, rep, L, d}}});
    return reshape(h, {a.B, a.H, L, d});
  };
  ValueRef q = heads(g.add_input("q", {a.B, a.S, a.H * a.D}), a.S, a.H, a.D);
  ValueRef kt = transpose(heads(g.add_input("k", {a.B, a.T, a.Hkv * a.D}), a.T, a.Hkv, a.D), {0, 1, 3, 2});
  const ValueRef v = heads(g.add_input("v", {a.B, a.T, a.Hkv * a.Dv}), a.T, a.Hkv, a.Dv);
  if (a.scale == AttentionScale::kQueryAndKey) {
    const double c = 1 / std::sqrt(std::sqrt(static_cast<double>(a.D)));
    q = g.apply("mul", {q, scalar(c)});
    kt = g.apply("mul", {kt, scalar(c)});
  }
  const int64_t BH = a.B * a.H;
  ValueRef x =
      reshape(g.apply("batch_matmul", {reshape(q, {BH, a.S, a.D}), reshape(kt, {BH, a.D, a.T})}), {a.B, a.H, a.S, a.T});
  if (a.scale == AttentionScale::kScoresMul) x = g.apply("mul", {x, scalar(1 / std::sqrt(static_cast<double>(a.D)))});
  if (a.scale == AttentionScale::kScoresDiv) x = g.apply("div", {x, scalar(std::sqrt(static_cast<double>(a.D)))});
  if (a.mask == AttentionMask::kCausal || a.mask == AttentionMask::kMaskedRow) {
    Tensor<float> m(Shape{1, 1, a.S, a.T});
    for (int64_t s = 0; s < a.S; ++s)
      for (int64_t t = 0; t < a.T; ++t) {
        float& e = m.data[static_cast<size_t>(s * a.T + t)];
        if (a.mask == AttentionMask::kCausal) e = t > s + a.T - a.S ? std::numeric_limits<float>::lowest() : 0.f;
        else e = s == 0 ? -std::numeric_limits<float>::infinity() : 0.f;
      }
    x = g.apply("add", {x, g.add_constant(ConstantValue(std::move(m)))});
  } else if (a.mask == AttentionMask::kPadding) {
    x = g.apply("add", {x, g.add_input("mask", {a.B, 1, 1, a.T})});
  } else if (a.mask == AttentionMask::kSquare) {
    x = g.apply("add", {x, g.add_input("mask", {a.S, a.T})});
  }
  ValueRef p = g.apply("softmax", {x}, {{"axis", int64_t{3}}});
  if (a.nan_guard) p = g.apply("where", {g.apply("is_nan", {p}), scalar(0), p});
  const ValueRef o = g.apply("batch_matmul", {reshape(p, {BH, a.S, a.T}), reshape(v, {BH, a.T, a.Dv})});
  g.add_output(reshape(transpose(reshape(o, {a.B, a.H, a.S, a.Dv}), {0, 2, 1, 3}), {a.B, a.S, a.H * a.Dv}));
  return g;
}

}  // namespace tgr::test
