#include "runtime/views.h"

#include <algorithm>
#include <numeric>
#include <set>

namespace tgr {

namespace {
bool is_concat(const Node& n) { return op_is(n.op, OpKind::kConcat); }
}  // namespace

int64_t device_element_bytes(DType t) {
  switch (t) {
    case DType::kFloat:
      return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kInt64:
    case DType::kBool:
      return 8;
  }
  return 8;
}

std::optional<std::vector<int64_t>> reshape_strides(const Shape& from, const std::vector<int64_t>& from_strides,
                                                    const Shape& to) {
  if (num_elements(from) != num_elements(to)) return std::nullopt;
  if (num_elements(to) == 0) return row_major_strides(to);
  // The axes of `from` that are not 1, then runs of them that are contiguous
  // among themselves ("chunks"): a chunk is a block read with one inner
  // stride, and the axes of `to` must cut each chunk in turn.
  std::vector<std::pair<int64_t, int64_t>> axes;  // (size, stride)
  for (size_t d = 0; d < from.size(); ++d)
    if (from[d] != 1) axes.emplace_back(from[d], from_strides[d]);
  std::vector<int64_t> out(to.size(), 0);
  size_t t = 0;
  for (size_t a = 0; a < axes.size();) {
    int64_t rest = axes[a].first;
    while (a + 1 < axes.size() && axes[a].second == axes[a + 1].second * axes[a + 1].first) rest *= axes[++a].first;
    const int64_t inner = axes[a++].second;
    while (rest > 1) {
      if (t >= to.size()) return std::nullopt;
      if (to[t] == 1) {
        ++t;
        continue;
      }
      if (rest % to[t] != 0) return std::nullopt;  // an axis of `to` would straddle two chunks
      rest /= to[t];
      out[t++] = inner * rest;
    }
  }
  for (; t < to.size(); ++t)
    if (to[t] != 1) return std::nullopt;
  // Axes of size 1 take the row-major stride they would have (never read).
  for (size_t d = to.size(); d-- > 0;)
    if (to[d] == 1) out[d] = d + 1 < to.size() ? out[d + 1] * to[d + 1] : 1;
  return out;
}

std::optional<CublasMatrix> cublas_matrix(const Shape& shape, const std::vector<int64_t>& strides) {
  const size_t r = shape.size();
  if (r < 2) return std::nullopt;
  const int64_t rows = shape[r - 2], cols = shape[r - 1];
  if (cols == 1 || strides[r - 1] == 1) {
    const int64_t ld = rows == 1 ? cols : strides[r - 2];
    if (ld >= cols) return CublasMatrix{false, ld};
  }
  if (rows == 1 || strides[r - 2] == 1) {
    const int64_t ld = cols == 1 ? rows : strides[r - 1];
    if (ld >= rows) return CublasMatrix{true, ld};
  }
  return std::nullopt;
}

namespace {

// `shape` stored with `strides` as ChannelStridedRows (views.h), with at
// least kMinStridedPositions positions.
std::optional<ChannelStridedRows> channel_strided_rows(const Shape& shape, const std::vector<int64_t>& strides) {
  if (shape.size() < 2 || strides.size() != shape.size() || num_elements(shape) == 0) return std::nullopt;
  ChannelStridedRows r;
  r.channels = shape.back();
  r.channel_stride = strides.back();
  // The axes before the last that are not 1, innermost first: a run of them
  // contiguous from stride 1 (the positions), then one more block (the batches).
  std::vector<std::pair<int64_t, int64_t>> axes;  // (size, stride)
  for (size_t d = shape.size() - 1; d-- > 0;)
    if (shape[d] != 1) axes.emplace_back(shape[d], strides[d]);
  size_t a = 0;
  while (a < axes.size() && axes[a].second == r.positions) r.positions *= axes[a++].first;
  if (a < axes.size()) {
    r.batch_stride = axes[a].second;
    int64_t next = axes[a].second;
    while (a < axes.size() && axes[a].second == next) {
      r.batches *= axes[a].first;
      next *= axes[a++].first;
    }
    if (a < axes.size()) return std::nullopt;
  }
  if (r.positions < kMinStridedPositions) return std::nullopt;
  return r;
}

bool is_last_axis_layer_norm(const Graph& graph, const Node& node) {
  return op_is(node.op, OpKind::kLayerNorm) && graph.shape(node.inputs[1]).size() == 1;
}

}  // namespace

std::optional<ChannelStridedRows> layer_norm_strided_input(const Graph& graph, const Node& node,
                                                           const std::vector<int64_t>& strides) {
  if (!is_last_axis_layer_norm(graph, node)) return std::nullopt;
  return channel_strided_rows(graph.shape(node.inputs[0]), strides);
}

std::optional<ChannelStridedRows> layer_norm_strided_output(const Graph& graph, const Node& node,
                                                            const std::vector<int64_t>& strides) {
  if (!is_last_axis_layer_norm(graph, node) || !is_floating(node.output_dtypes[0])) return std::nullopt;
  return channel_strided_rows(node.output_shapes[0], strides);
}

std::optional<CublasOutput> cublas_output(const Shape& shape, const std::vector<int64_t>& strides) {
  const size_t r = shape.size();
  if (r != 2 && r != 3) return std::nullopt;
  const int64_t rows = shape[r - 2], cols = shape[r - 1];
  if (cols != 1 && strides[r - 1] != 1) return std::nullopt;
  const int64_t ld = rows == 1 ? cols : strides[r - 2];
  if (ld < cols) return std::nullopt;
  return CublasOutput{ld, r == 3 ? strides[0] : 0};
}

bool is_row_major(const Shape& shape, const std::vector<int64_t>& strides) {
  const std::vector<int64_t> expected = row_major_strides(shape);
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1 && strides[d] != expected[d]) return false;
  return true;
}

namespace {

// In bytes of the type the value is stored in at precision `p`.
bool aligned16(const Graph& g, ValueRef v, const ValueLayout& l, Precision p) {
  return l.offset * device_element_bytes(storage_dtype(g.dtype(v), p)) % 16 == 0;
}

// ViewAnalysis::is_plain of `v` laid out as `l`.
bool plain(const Graph& g, ValueRef v, const ValueLayout& l, Precision p) {
  return is_row_major(g.shape(v), l.strides) && aligned16(g, v, l, p);
}

// A matrix operand of cuBLAS: rows or columns with unit stride (cublas_matrix)
// and an aligned start.
bool cublas_operand(const Graph& g, ValueRef v, const ValueLayout& l, size_t rank, Precision p) {
  const Shape& s = g.shape(v);
  return s.size() == rank && aligned16(g, v, l, p) && cublas_matrix(s, l.strides).has_value();
}

// Whether `reader` can read its input `input` (the value v) laid out as `l`
// when that layout is not plain.
bool takes_strides(const Graph& g, const Node& reader, size_t input, ValueRef v, const ValueLayout& l, Precision p) {
  const OpTraits& traits = reader.op->traits;
  if (is_elementwise_kernel(reader))
    return !(traits.channel_operands && input > 0);  // per-channel operands: contiguous
  if (is_strided_copy(reader)) return true;
  if (reads_cublas_operands(*reader.op))
    return cublas_operand(g, v, l, op_is(reader.op, OpKind::kBatchMatmul) ? 3 : 2, p);
  if (op_is(reader.op, OpKind::kLayerNorm) && input == 0)  // its row kernel needs no alignment
    return is_row_major(g.shape(v), l.strides) || layer_norm_strided_input(g, reader, l.strides).has_value();
  return false;
}

// The permutation of a transpose (the default: the axes reversed).
std::vector<int64_t> permutation(const Node& n, size_t rank) {
  std::vector<int64_t> perm = n.params.get_ints("perm");
  if (perm.empty()) {
    perm.resize(rank);
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  return perm;
}

using Readers = std::vector<std::vector<std::vector<std::pair<int32_t, size_t>>>>;  // [node][output] -> (reader, input)

// Where a placed value (views.h) is written: the chain of values from it,
// each the only input of one reshape or transpose (none a graph output
// before the last), ends at a value that owns row-major bytes; the placed
// value's strides are those under which the chain reads them.
//   - A batch_matmul's output: only when reading forward from a row-major
//     product some reshape of the chain would copy (the head merge), and
//     cuBLAS can write those strides (cublas_output).
//   - A layer norm's output: only when reading forward from a row-major
//     output the chain's end would not be row-major (a permute its readers
//     would copy), and the layer norm kernel writes those strides
//     (layer_norm_strided_output).
std::optional<ValueLayout> written_through(const Graph& g, const Readers& readers,
                                           const std::vector<std::vector<char>>& is_output, int32_t producer) {
  const bool product = op_is(g.node(producer).op, OpKind::kBatchMatmul);
  std::vector<ValueRef> chain{{producer, 0}};
  for (;;) {
    const ValueRef v = chain.back();
    if (is_output[v.node][v.output] || readers[v.node][v.output].size() != 1) break;
    const Node& reader = g.node(readers[v.node][v.output][0].first);
    const ViewKind kind = reader.is_op() ? reader.op->traits.view : ViewKind::kNone;
    if (kind != ViewKind::kReshape && kind != ViewKind::kPermute) break;
    chain.push_back({readers[v.node][v.output][0].first, 0});
  }
  // The strides of the chain's last value read forward from the product's
  // (as the analysis will), nullopt where some reshape must copy.
  auto forward = [&](std::vector<int64_t> strides) -> std::optional<std::vector<int64_t>> {
    for (size_t k = 1; k < chain.size(); ++k) {
      const Node& n = g.node(chain[k].node);
      if (n.op->traits.view == ViewKind::kReshape) {
        const auto s = reshape_strides(g.shape(chain[k - 1]), strides, g.shape(chain[k]));
        if (!s) return std::nullopt;
        strides = *s;
      } else {
        const std::vector<int64_t> perm = permutation(n, strides.size());
        std::vector<int64_t> out(perm.size());
        for (size_t d = 0; d < perm.size(); ++d) out[d] = strides[perm[d]];
        strides = out;
      }
    }
    return strides;
  };
  if (chain.size() < 2) return std::nullopt;
  const auto plain = forward(row_major_strides(g.shape(chain[0])));
  if (product && plain) return std::nullopt;  // nothing copies: nothing to gain
  if (!product && (!plain || is_row_major(g.shape(chain.back()), *plain))) return std::nullopt;
  // Backward from the end, row-major: the strides of each value before it.
  std::vector<int64_t> strides = row_major_strides(g.shape(chain.back()));
  for (size_t k = chain.size() - 1; k > 0; --k) {
    const Node& n = g.node(chain[k].node);
    if (n.op->traits.view == ViewKind::kReshape) {
      const auto s = reshape_strides(g.shape(chain[k]), strides, g.shape(chain[k - 1]));
      if (!s) return std::nullopt;
      strides = *s;
    } else {
      const std::vector<int64_t> perm = permutation(n, strides.size());
      std::vector<int64_t> in(perm.size());
      for (size_t d = 0; d < perm.size(); ++d) in[perm[d]] = strides[d];
      strides = in;
    }
  }
  if (product ? !cublas_output(g.shape(chain[0]), strides) : !layer_norm_strided_output(g, g.node(producer), strides))
    return std::nullopt;
  // Read forward again, the chain must end row-major in its own bytes, or
  // its last reshape would copy those bytes onto themselves.
  const auto end = forward(strides);
  if (!end || !is_row_major(g.shape(chain.back()), *end)) return std::nullopt;
  return ValueLayout{chain.back(), 0, strides};
}

// Where input `k` of a concatenation laid out as `out` sits in its bytes.
ValueLayout concat_piece(const Graph& g, const Node& concat, size_t k, const ValueLayout& out) {
  const int64_t axis = concat.params.get_int("axis");
  int64_t start = 0;
  for (size_t j = 0; j < k; ++j) start += g.shape(concat.inputs[j])[axis];
  return ValueLayout{out.source, out.offset + start * out.strides[axis], out.strides};
}

bool same_place(const Graph& g, ValueRef v, const ValueLayout& a, const ValueLayout& b) {
  if (!(a.source == b.source) || a.offset != b.offset) return false;
  const Shape& s = g.shape(v);
  for (size_t d = 0; d < s.size(); ++d)
    if (s[d] != 1 && a.strides[d] != b.strides[d]) return false;
  return true;
}

// Concatenations written in place, the other way round like the products
// above: an input is placed in the concatenation's bytes, where its
// producer writes it, so the concatenation need not copy it. Only where the
// piece is then plain (row-major from a 16-byte boundary: a concatenation
// along channels of a batch-1 NCHW tensor, DenseNet's and Inception's), so
// any producer writes it and any reader reads it; only an input some task
// computes (not a graph input, a weight or a value computed at load), that
// owns its bytes (not a view, not placed already elsewhere), is no graph
// output and appears once. The concatenation copies the other inputs (an
// Inception block's piece of a merged convolution's split), and runs nothing
// when there are none. A concatenation whose inputs already sit one after
// the other in some value's bytes (DenseNet: each layer's concatenation of
// the features so far is the start of the block's last one) is itself a
// view there. Latest first, so a value read by several concatenations goes
// where the last one wants it.
void place_concat_inputs(const Graph& g, const std::vector<int32_t>& order, const std::vector<char>& at_load,
                         const std::vector<std::vector<char>>& is_output,
                         std::vector<std::vector<ValueLayout>>& layouts, Precision p) {
  const auto& nodes = g.nodes();
  auto owns = [&](ValueRef v) { return layouts[v.node][v.output].source == v; };
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int32_t c = *it;
    const Node& n = nodes[c];
    if (!is_concat(n) || at_load[c]) continue;
    const ValueRef out{c, 0};
    // Already in place one after the other somewhere: the concatenation is a view there.
    if (owns(out) && !is_output[c][0]) {
      const ValueLayout first = layouts[n.inputs[0].node][n.inputs[0].output];
      const ValueLayout there{first.source, first.offset, row_major_strides(n.output_shapes[0])};
      bool consecutive = !owns(n.inputs[0]) && plain(g, out, there, p);
      for (size_t k = 0; consecutive && k < n.inputs.size(); ++k) {
        const ValueRef in = n.inputs[k];
        consecutive = same_place(g, in, layouts[in.node][in.output], concat_piece(g, n, k, there));
      }
      if (consecutive) {
        layouts[c][0] = there;
        continue;
      }
    }
    const ValueLayout whole = layouts[c][0];
    if (!is_row_major(n.output_shapes[0], whole.strides)) continue;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const ValueRef in = n.inputs[k];
      const ValueLayout piece = concat_piece(g, n, k, whole);
      const Node& producer = nodes[in.node];
      if (producer.is_op() && !at_load[in.node] && !may_be_view(g, producer) && owns(in) &&
          !is_output[in.node][in.output] && plain(g, in, piece, p) &&
          std::count(n.inputs.begin(), n.inputs.end(), in) == 1)
        layouts[in.node][in.output] = piece;
    }
  }
}

}  // namespace

bool is_elementwise_kernel(const Node& node) {
  // Comparisons, is_nan, logical_not, cast and where included: the program
  // computes in float or int64 and converts on load and store.
  return node.is_op() && node.op->traits.elementwise;
}

bool is_strided_copy(const Node& node) { return node.is_op() && node.op->traits.strided_copy; }

bool may_be_view(const Node& node) { return node.is_op() && node.op->traits.view != ViewKind::kNone; }

std::optional<int64_t> constant_gather_index(const Graph& graph, const Node& node) {
  if (!op_is(node.op, OpKind::kGather)) return std::nullopt;
  const Node& indices = graph.node(node.inputs[1].node);
  if (!indices.is_constant() || indices.constant->is_float() || indices.constant->ints.data.size() != 1)
    return std::nullopt;
  const int64_t size = graph.shape(node.inputs[0]).at(node.params.get_int("axis"));
  const int64_t index = indices.constant->ints.data[0];
  if (index < -size || index >= size) return std::nullopt;  // the kernel reports it
  return index < 0 ? index + size : index;
}

bool may_be_view(const Graph& graph, const Node& node) {
  return may_be_view(node) || constant_gather_index(graph, node).has_value();
}

bool may_run_nothing(const Graph& graph, const Node& node) { return may_be_view(graph, node) || is_concat(node); }

bool reads_cublas_operands(const OpDef& op) { return op.kind == OpKind::kMatmul || op.kind == OpKind::kBatchMatmul; }

bool ViewAnalysis::is_plain(ValueRef v) const { return plain(*graph_, v, layout(v), precision_); }

bool ViewAnalysis::concat_input_in_place(int32_t node, size_t k) const {
  const Node& n = graph_->node(node);
  if (!is_concat(n) || layouts_.at(node).empty()) return false;
  return same_place(*graph_, n.inputs.at(k), layout(n.inputs[k]), concat_piece(*graph_, n, k, layout({node, 0})));
}

bool ViewAnalysis::runs_nothing(int32_t node) const {
  const Node& n = graph_->node(node);
  if (is_concat(n) && !layouts_.at(node).empty()) {
    for (size_t k = 0; k < n.inputs.size(); ++k)
      if (!concat_input_in_place(node, k)) return false;
    return true;
  }
  if (layouts_.at(node).empty() || !may_be_view(*graph_, n)) return false;  // a product written in place still runs
  for (size_t k = 0; k < layouts_.at(node).size(); ++k) {
    const ValueRef v{node, static_cast<int32_t>(k)};
    if (is_view(v)) continue;
    // Written in place by a product upstream: the input reads this value's bytes.
    if (layout(n.inputs[0]).source == v) continue;
    return false;
  }
  return true;
}

ViewAnalysis analyse_views(const Graph& graph, const std::vector<char>& at_load, Precision precision) {
  ViewAnalysis a;
  a.graph_ = &graph;
  a.precision_ = precision;
  const auto& nodes = graph.nodes();
  const std::vector<int32_t> order = graph.topological_order();
  auto own = [&](ValueRef v) { return ValueLayout{v, 0, row_major_strides(graph.shape(v))}; };
  a.layouts_.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    for (size_t k = 0; k < nodes[i].output_shapes.size(); ++k)
      a.layouts_[i].push_back(own({static_cast<int32_t>(i), static_cast<int32_t>(k)}));

  // Readers of each value: (node, input index); graph outputs.
  Readers readers(nodes.size());
  std::vector<std::vector<char>> is_output(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    readers[i].resize(nodes[i].output_shapes.size());
    is_output[i].assign(nodes[i].output_shapes.size(), 0);
  }
  for (int32_t i : order)
    for (size_t k = 0; k < nodes[i].inputs.size(); ++k) {
      const ValueRef in = nodes[i].inputs[k];
      readers[in.node][in.output].emplace_back(i, k);
    }
  for (ValueRef v : graph.outputs()) is_output[v.node][v.output] = 1;

  // Products and layer norms written through a permutation into a later value's bytes.
  for (int32_t i : order) {
    if (at_load[i] || !nodes[i].is_op() || !is_floating(nodes[i].output_dtypes[0])) continue;
    if (op_is(nodes[i].op, OpKind::kBatchMatmul) || op_is(nodes[i].op, OpKind::kLayerNorm))
      if (auto placed = written_through(graph, readers, is_output, i)) a.layouts_[i][0] = *placed;
  }
  place_concat_inputs(graph, order, at_load, is_output, a.layouts_, precision);

  // Views are proposed forward; a view some reader cannot take is refused
  // (it owns its bytes: its producer copies) and the proposal is redone, since
  // views of it are now views of row-major bytes. Refusals only grow.
  std::set<std::pair<int32_t, int32_t>> refused;
  for (bool changed = true; changed;) {
    for (int32_t i : order) {
      const Node& n = nodes[i];
      if (!may_be_view(graph, n) || at_load[i]) continue;
      const ViewKind kind = n.op->traits.view;
      const std::optional<int64_t> picked = constant_gather_index(graph, n);
      const ValueLayout& in = a.layout(n.inputs[0]);
      for (size_t k = 0; k < n.output_shapes.size(); ++k) {
        const ValueRef out{i, static_cast<int32_t>(k)};
        ValueLayout& l = a.layouts_[i][k];
        l = own(out);
        if (refused.count({i, static_cast<int32_t>(k)})) continue;
        if (picked) {
          // The slice at the index: its axis dropped (a scalar index) or
          // kept as size-1 axes (an index of shape [1], [1, 1]...).
          const size_t axis = static_cast<size_t>(n.params.get_int("axis"));
          const size_t index_rank = graph.shape(n.inputs[1]).size();
          std::vector<int64_t> strides(in.strides.begin(), in.strides.begin() + axis);
          strides.insert(strides.end(), index_rank, in.strides[axis]);
          strides.insert(strides.end(), in.strides.begin() + axis + 1, in.strides.end());
          l = ValueLayout{in.source, in.offset + *picked * in.strides[axis], strides};
        } else if (kind == ViewKind::kReshape) {
          if (auto s = reshape_strides(graph.shape(n.inputs[0]), in.strides, n.output_shapes[0]))
            l = ValueLayout{in.source, in.offset, *s};
        } else if (kind == ViewKind::kPermute) {
          const std::vector<int64_t> perm = permutation(n, in.strides.size());
          std::vector<int64_t> strides(perm.size());
          for (size_t d = 0; d < perm.size(); ++d) strides[d] = in.strides[perm[d]];
          l = ValueLayout{in.source, in.offset, strides};
        } else {
          const int64_t axis = n.params.get_int("axis");
          int64_t start = 0;
          for (size_t j = 0; j < k; ++j) start += n.output_shapes[j][axis];
          l = ValueLayout{in.source, in.offset + start * in.strides[axis], in.strides};
        }
      }
    }
    changed = false;
    for (int32_t i : order)
      for (size_t k = 0; k < a.layouts_[i].size(); ++k) {
        const ValueRef v{i, static_cast<int32_t>(k)};
        if (!a.is_view(v) || a.is_plain(v)) continue;
        const ValueLayout& l = a.layout(v);
        bool ok = !is_output[i][k] || is_row_major(graph.shape(v), l.strides);
        for (const auto& [r, input] : readers[i][k]) {
          // A gather of one constant index takes strides while it is a view itself (its kernel does not).
          const bool gather_view = constant_gather_index(graph, nodes[r]) && !refused.count({r, 0});
          ok = ok && (gather_view || takes_strides(graph, nodes[r], input, v, l, precision));
        }
        if (!ok) {
          refused.insert({i, static_cast<int32_t>(k)});
          if (!may_be_view(graph, nodes[i])) a.layouts_[i][k] = own(v);  // a placed value: row-major after all
          changed = true;
        }
      }
  }
  return a;
}

}  // namespace tgr
