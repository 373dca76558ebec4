// The operator groups the exporter writes as one ONNX node, in the forms
// runtimes fuse (ONNX Runtime's CPU kernels run a Conv's bias and a Gemm's C
// inside the product, and read padding from the Conv's or Pool's `pads`):
//
//   add(conv2d(x, k), b)          -> Conv(x, k, B)   b a per-channel constant
//   add(matmul(a, w), c)          -> Gemm(a, w, C)   a, w of rank 2, c of rank <= 2
//   conv2d(pad(x), k)             -> Conv(x, k) with the pad in `pads`
//   avgpool / maxpool(pad(x))     -> the pool with the pad in `pads`
//
// The importer splits ONNX's Conv bias and Gemm into separate operators (the
// form the rules are written in); written back as separate nodes they ran
// slower in ONNX Runtime. Defined once, here, for the exporter that writes
// the fused forms and for the cost models that must not charge for the
// operators it absorbs.
#pragma once

#include <cstdint>
#include <unordered_map>
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
  // Nodes written as part of another node: the conv2d or matmul of a bias
  // add (written at the add) and the folded pads.
  bool absorbed(int32_t node) const { return bias_add.contains(node) || absorbed_pads_.contains(node); }
  // Nodes that become no ONNX node of their own, nor work: an add written as
  // a Conv's B or a Gemm's C, a pad written as pads. (The product of such an
  // add is still written, at the add.)
  bool folded_into_another(int32_t node) const {
    return product_of_add.contains(node) || absorbed_pads_.contains(node);
  }
  void absorb_pad(int32_t pad, int32_t reader) {
    folded_pad[reader] = pad;
    absorbed_pads_[pad] = reader;
  }

 private:
  std::unordered_map<int32_t, int32_t> absorbed_pads_;  // pad -> its reader
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
