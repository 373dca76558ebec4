// The operator groups the exporter writes as one ONNX node, in the forms
// runtimes fuse (ONNX Runtime's CPU kernels run a Conv's bias and a Gemm's C
// inside the product, and read padding from the Conv's or Pool's `pads`):
//
//   add(conv2d(x, k), b)          -> Conv(x, k, B)   b a per-channel constant
//   add(matmul(a, w), c)          -> Gemm(a, w, C)   a, w of rank 2, c of rank <= 2
//   conv2d(pad(x), k)             -> Conv(x, k) with the pad in `pads`
//   avgpool / maxpool(pad(x))     -> the pool with the pad in `pads`
//   reshape(matmul(reshape(x), w))  -> MatMul(x, w)   x of rank > 2, back to its leading axes
//   reshape(batch_matmul(reshape(a), reshape(b)))  -> MatMul(a, b)   same batch axes
//
// The importer splits ONNX's Conv bias and Gemm into separate operators and
// flattens a MatMul of rank > 2 into a product of rank 2 or 3 between
// reshapes (the forms the rules are written in); written back that way they
// ran slower in ONNX Runtime. Defined once, here, for the exporter that writes
// the fused forms and for the cost models that must not charge for the
// operators it absorbs.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"

namespace tgr::onnx_io {

struct ExportFusions {
  // conv2d or matmul node -> the add node written with it (as Conv with B, Gemm).
  std::unordered_map<int32_t, int32_t> bias_add;
  // add node -> the conv2d or matmul node it is written with.
  std::unordered_map<int32_t, int32_t> product_of_add;
  // conv2d, avgpool or maxpool node -> the pad node its `pads` absorb.
  std::unordered_map<int32_t, int32_t> folded_pad;
  // reshape node -> the matmul or batch_matmul it is written with, as one
  // MatMul of the operands before their reshapes (`operands`).
  std::unordered_map<int32_t, int32_t> product_of_reshape;
  std::unordered_map<int32_t, std::vector<ValueRef>> operands;  // that product -> what the MatMul reads
  // Nodes written as part of another node: the conv2d or matmul of a bias
  // add (written at the add) and the folded pads.
  bool absorbed(int32_t node) const {
    return bias_add.contains(node) || absorbed_pads_.contains(node) || reshaped_products_.contains(node) ||
           absorbed_reshapes_.contains(node);
  }
  // Nodes that become no ONNX node of their own, nor work: an add written as
  // a Conv's B or a Gemm's C, a pad written as pads, the reshapes around a
  // product written as one MatMul. (The product itself is still written, at
  // the add or the reshape after it.)
  bool folded_into_another(int32_t node) const {
    return product_of_add.contains(node) || absorbed_pads_.contains(node) || product_of_reshape.contains(node) ||
           absorbed_reshapes_.contains(node);
  }
  void absorb_pad(int32_t pad, int32_t reader) {
    folded_pad[reader] = pad;
    absorbed_pads_[pad] = reader;
  }

  void absorb_reshapes(int32_t reshape, int32_t product, std::vector<ValueRef> reads,
                       const std::vector<int32_t>& operand_reshapes) {
    product_of_reshape[reshape] = product;
    operands[product] = std::move(reads);
    reshaped_products_.insert(product);
    absorbed_reshapes_.insert(operand_reshapes.begin(), operand_reshapes.end());
  }

 private:
  std::unordered_map<int32_t, int32_t> absorbed_pads_;  // pad -> its reader
  std::unordered_set<int32_t> reshaped_products_;       // written at the reshape after them
  std::unordered_set<int32_t> absorbed_reshapes_;       // operand reshapes only those products read
};

// The fusions of `graph`'s live nodes. `constant[i]`: whether node i's value
// is a constant the exporter writes as an initializer (the exporter: constant
// nodes; a cost model before folding: constant_only_nodes), which a Conv's
// bias must be.
ExportFusions find_export_fusions(const Graph& graph, const std::vector<bool>& constant);

// Pads as {top, left, bottom, right} of the two spatial axes of an NCHW pad
// node's `pads` (the same for a Conv's or Pool's `pads` attribute).
std::vector<int64_t> spatial_pads(const Node& pad);

}  // namespace tgr::onnx_io
