// Values the GPU runtime does not copy. A reshape, each piece of a split, a
// transpose and a gather of one constant index (constant_gather_index) is
// handed to its readers as a view of the bytes of the value it comes from:
// an element offset and one stride per axis. A split along channels of a
// batch-1 NCHW tensor gives row-major pieces that anything may read; a split
// along the last axis of a matrix (BERT's merged Q/K/V product) gives strided
// pieces, which only readers that take strides are given:
//   - elementwise kernels (a fused chain reads each operand through strides),
//   - layout operators (transpose, slice, expand, pad, enlarge, concat, split,
//     and a reshape that cannot be a view: all are strided copies),
//   - matmul and batch_matmul, through cuBLAS's leading dimensions, when the
//     innermost stride is 1,
//   - layer_norm over the last axis, when the other axes are contiguous
//     positions and the normalized axis is strided (layer_norm_strided_input:
//     ConvNeXt's permute(0,2,3,1) of an NCHW tensor, read in place).
// A view some reader cannot take is not a view: the split (or reshape)
// copies that value. Graph outputs are always row-major.
//
// Three kinds of value are placed the other way round. A batch_matmul whose output only
// goes through reshapes and transposes to a reshape that no strides can
// express (attention's head merge: [B*H, S, D] -> [B, H, S, D] -> transpose
// -> [B, S, H*D]) is written by cuBLAS straight into the bytes of the end of
// that chain, through the strides under which the end is row-major
// (cublas_output: for B = 1, head h's S x D block at offset h*D with row
// stride H*D). The product's output is then a view of a later value, the
// reshapes and transposes between are views too, and the reshape at the end
// runs nothing (ViewAnalysis::runs_nothing). Where no such strides exist
// (B > 1: the batch index b*H + h is not one stride) the merge copies. And
// a layer norm over the last axis whose output only goes through a permute
// that would leave it not row-major (ConvNeXt's permute(0,3,1,2) back to
// NCHW after a downsampling layer norm) writes the permute's row-major
// bytes through strides its kernel writes (layer_norm_strided_output), and
// the permute runs nothing. And an input of a concatenation along an axis
// that leaves every piece row-major (channels of a batch-1 NCHW tensor:
// DenseNet's, Inception's and SqueezeNet's) is written by its producer
// straight into the concatenation's bytes: the concatenation copies only
// the inputs that could not be placed there (graph inputs, weights, views,
// graph outputs, a value another concatenation placed), and runs nothing
// when none is left; one whose inputs sit one after the other in a later
// concatenation's bytes (DenseNet's layers) is a view of them.
//
// The execution plan (execution_plan.h) places values by this analysis and
// the measured cost model (optimizer/cost_model.h) calls a split free exactly
// when the analysis makes every piece a view, so the two cannot disagree.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"
#include "runtime/precision.h"

namespace tgr {

// Bytes per element on the device: float 4; float16 and bfloat16 2; int64 and bool 8.
int64_t device_element_bytes(DType t);

// `strides` read `shape` row-major (axes of size 1 may have any stride).
bool is_row_major(const Shape& shape, const std::vector<int64_t>& strides);

// The strides under which `to` reads the same elements, in the same order, as
// a tensor of shape `from` stored with `from_strides`; nullopt when no
// strides do (the reshape must copy).
std::optional<std::vector<int64_t>> reshape_strides(const Shape& from, const std::vector<int64_t>& from_strides,
                                                    const Shape& to);

// How cuBLAS reads the last two axes (rows x cols) of a value stored with
// `strides`: row-major (unit stride along a row) with a leading dimension
// (row stride) ld >= cols, or column-major (unit stride down a column: a
// transposed view, read with CUBLAS_OP_T) with ld (column stride) >= rows.
// nullopt when neither holds. Shared by the view analysis and the lowering
// (runtime/cuda/lower_matmul.cpp), so the two cannot disagree.
struct CublasMatrix {
  bool column_major = false;
  int64_t ld = 0;
};
std::optional<CublasMatrix> cublas_matrix(const Shape& shape, const std::vector<int64_t>& strides);

// A layer norm input laid out as x[b * batch_stride + p + c * channel_stride]
// for batch b < batches, position p < positions (unit stride: read coalesced
// along positions), channel c < channels (the normalized last axis). A
// permute(0,2,3,1) of an NCHW tensor is one: batches N (stride C*H*W),
// positions H*W, channels C (stride H*W).
struct ChannelStridedRows {
  int64_t batches = 1, batch_stride = 0, positions = 1, channels = 1, channel_stride = 1;
};
inline constexpr int64_t kMinStridedPositions = 8;
// How the GPU's layer norm (runtime/cuda/kernels_norm.cu) reads input 0 of
// `node` stored with `strides` when that is not row-major: nullopt unless
// `node` is a layer_norm over the last axis alone and the layout is
// ChannelStridedRows with at least kMinStridedPositions positions (with
// fewer, the kernel's reads of a channel are a few floats each, and a copy
// to row-major first is no slower). Shared by the view analysis and the lowering
// (runtime/cuda/lower_normalization.cpp), so the two cannot disagree.
std::optional<ChannelStridedRows> layer_norm_strided_input(const Graph& graph, const Node& node,
                                                           const std::vector<int64_t>& strides);
// How the GPU's layer norm writes the output of `node` stored with
// `strides`, the same way round: nullopt unless `node` is a layer_norm over
// the last axis alone and the layout is ChannelStridedRows with at least
// kMinStridedPositions positions. The view analysis places a layer norm's
// output so (the other way round, like a product's below) only where this
// holds: ConvNeXt's downsampling layer norm, permute(0,2,3,1) -> layer_norm
// -> permute(0,3,1,2), then writes NCHW and the permute back runs nothing.
std::optional<ChannelStridedRows> layer_norm_strided_output(const Graph& graph, const Node& node,
                                                            const std::vector<int64_t>& strides);
// How cuBLAS writes a product's output (rows x cols, after one batch axis
// when the rank is 3) stored with `strides`: unit stride along a row, the
// row stride as ldc (>= cols), and one stride between the products of a
// batch. nullopt when cuBLAS cannot write it so. Shared by the view analysis
// (which places batch_matmul outputs only where this holds) and the lowering
// (runtime/cuda/lower_matmul.cpp), so the two cannot disagree. The strides
// come from a permutation of row-major bytes, so products never overlap.
struct CublasOutput {
  int64_t ld = 0;
  int64_t batch_stride = 0;
};
std::optional<CublasOutput> cublas_output(const Shape& shape, const std::vector<int64_t>& strides);

// Where a value's elements are.
struct ValueLayout {
  ValueRef source;               // the value whose bytes hold them (the value itself when it owns its bytes)
  int64_t offset = 0;            // elements from the start of source's bytes
  std::vector<int64_t> strides;  // elements, one per axis of the value
};

class ViewAnalysis {
 public:
  const ValueLayout& layout(ValueRef v) const { return layouts_.at(v.node).at(v.output); }
  // The value is a view of another value's bytes.
  bool is_view(ValueRef v) const { return !(layout(v).source == v); }
  // Row-major from a 16-byte boundary (in the bytes of the value's storage type
  // at the analysis's precision): any kernel, cuDNN and cuBLAS included, may read it.
  bool is_plain(ValueRef v) const;
  // Input `k` of the concatenation `node` was written by its producer where
  // the concatenation puts it: the concatenation does not copy it.
  bool concat_input_in_place(int32_t node, size_t k) const;
  // Every output of `node` is a view, or was written in place by a product
  // upstream (its input is a view of its bytes): the reshape, transpose or
  // split runs nothing. A concatenation whose inputs are all in place runs nothing.
  bool runs_nothing(int32_t node) const;

 private:
  friend ViewAnalysis analyse_views(const Graph& graph, const std::vector<char>& at_load, Precision precision);
  const Graph* graph_ = nullptr;
  Precision precision_ = Precision::kFp32;
  std::vector<std::vector<ValueLayout>> layouts_;  // [node][output]
};

// `at_load[node]`: the node is computed at load (from constants only); such
// values own their bytes. Alignments are checked in the bytes each value is
// stored in at `precision` (runtime/precision.h): a piece 16-byte aligned
// in float32 may not be in bfloat16, and is then copied.
ViewAnalysis analyse_views(const Graph& graph, const std::vector<char>& at_load,
                           Precision precision = Precision::kFp32);

// Operators the runtime runs as (fused) elementwise kernels: OpTraits::elementwise
// (comparisons, is_nan, logical_not, cast and where among them).
bool is_elementwise_kernel(const Node& node);
// Operators the runtime runs as strided copies (OpTraits::strided_copy: transpose,
// slice, expand, pad, enlarge, concat, split, reshape): they read inputs with any strides.
bool is_strided_copy(const Node& node);
// Operators whose outputs may be views of their input (OpTraits::view: reshape and split).
bool may_be_view(const Node& node);
// A gather of one constant index along an axis (ViT's query, key and value
// picked from one [3, S, B, E] tensor, its class token picked from the
// sequence) reads one slice of its input: it may be a view, at that slice's
// offset, like a piece of a split. The index (wrapped when negative), or
// nullopt for any other node.
std::optional<int64_t> constant_gather_index(const Graph& graph, const Node& node);
// may_be_view, or a gather of one constant index.
bool may_be_view(const Graph& graph, const Node& node);
// Operators that the analysis may leave with nothing to run
// (ViewAnalysis::runs_nothing): may_be_view, and concat (inputs written in place).
bool may_run_nothing(const Graph& graph, const Node& node);
// Operators run on cuBLAS (matmul, batch_matmul), which read strided operands
// through leading dimensions when the innermost stride is 1.
bool reads_cublas_operands(const OpDef& op);

}  // namespace tgr
