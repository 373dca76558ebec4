// Attention blocks in the text syntax (ir/text.h), shared by the plan tests
// (tests/execution_plan_test.cpp: which values are views, which steps run)
// and the GPU tests (tests/gpu/ops_test.cpp: the same graphs against the CPU
// interpreter), so both look at the same graphs.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

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

}  // namespace tgr::test
