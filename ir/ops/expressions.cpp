// The operator table's expression entries (ir/expression.h
// expression_hooks): tensor-algebra expressions of the operators that have
// one: products and convolutions, layout operators, elementwise add, mul
// and relu. Each builder reads the call's parameters and shapes, already
// checked by shape inference.
#include <algorithm>
#include <map>
#include <numeric>

#include "ir/expression.h"
#include "ir/geometry.h"
#include "ir/op_def.h"

namespace tgr {
namespace {

using expr::Access;
using expr::Index;
using expr::IndexTerm;
using expr::Instance;
using expr::InstanceQuery;
using expr::iter_index;
using expr::Iterator;
using expr::TensorExpr;

// An expression with traversal iterators named `prefix`0.. over `out`.
TensorExpr over(const Shape& out, std::span<const Shape> inputs, const std::string& prefix = "a") {
  TensorExpr e;
  for (size_t a = 0; a < out.size(); ++a) e.iterators.push_back({prefix + std::to_string(a), out[a]});
  e.num_out = static_cast<int>(out.size());
  e.inputs.assign(inputs.begin(), inputs.end());
  return e;
}

std::vector<Index> identity_index(size_t rank) {
  std::vector<Index> idx;
  for (size_t a = 0; a < rank; ++a) idx.push_back(iter_index(static_cast<int>(a)));
  return idx;
}

TensorExpr add_expression(const OpCall& call, int) {
  TensorExpr e = over(call.output_shapes[0], call.input_shapes);
  for (int t = 0; t < 2; ++t)
    e.terms.push_back(
        {{Access{t, expr::broadcast_index(call.input_shapes[static_cast<size_t>(t)], e.output_shape())}}});
  return e;
}

TensorExpr mul_expression(const OpCall& call, int) {
  TensorExpr e = over(call.output_shapes[0], call.input_shapes);
  expr::Term term;
  for (int t = 0; t < 2; ++t)
    term.factors.push_back(
        Access{t, expr::broadcast_index(call.input_shapes[static_cast<size_t>(t)], e.output_shape())});
  e.terms.push_back(term);
  return e;
}

// An elementwise operator of one input: the operator applied to the input read in order.
TensorExpr unary_expression(const OpCall& call, int) {
  TensorExpr e = over(call.output_shapes[0], call.input_shapes);
  e.terms.push_back({{Access{0, identity_index(call.input_shapes[0].size())}}});
  e.unary = &call.op;
  return e;
}

// L_{[b,] i, j} Σ_k A[[b,] i, k]·B[[b,] k, j]
TensorExpr product_expression(const OpCall& call, int) {
  const Shape& a = call.input_shapes[0];
  TensorExpr e = over(call.output_shapes[0], call.input_shapes);
  const int batch = e.num_out - 2;
  e.iterators[static_cast<size_t>(batch)].name = "i";
  e.iterators[static_cast<size_t>(batch + 1)].name = "j";
  if (batch == 1) e.iterators[0].name = "b";
  e.iterators.push_back({"k", a.back()});
  const int i = batch, j = batch + 1, k = batch + 2;
  std::vector<Index> ia, ib;
  if (batch == 1) ia = ib = {iter_index(0)};
  ia.push_back(iter_index(i));
  ia.push_back(iter_index(k));
  ib.push_back(iter_index(k));
  ib.push_back(iter_index(j));
  e.terms.push_back({{Access{0, ia}, Access{1, ib}}});
  return e;
}

// L_{n,o,h,w} Σ_{c,r,s} X[n, (o / Og)·Cg + c, h·sh + r·dh − pt, w·sw + s·dw − pl]·W[o,c,r,s]
TensorExpr conv2d_expression(const OpCall& call, int) {
  const Shape &x = call.input_shapes[0], &w = call.input_shapes[1];
  const Conv2dGeometry g = conv2d_geometry(call.params, x, w);
  const Window2d& win = g.window;
  TensorExpr e = over(call.output_shapes[0], call.input_shapes);
  const char* names[] = {"n", "o", "h", "w"};
  for (size_t a = 0; a < 4; ++a) e.iterators[a].name = names[a];
  e.iterators.push_back({"c", w[1]});
  e.iterators.push_back({"r", w[2]});
  e.iterators.push_back({"s", w[3]});
  Index channel = iter_index(4);
  if (g.groups > 1)
    channel.terms.insert(channel.terms.begin(),
                         IndexTerm{.coefs = {{1, 1}}, .div = g.out_channels_per_group(), .scale = w[1]});
  Index row{.terms = {IndexTerm{.coefs = {{2, win.stride_h}, {5, win.dilation_h}}}}, .offset = -win.pad_top};
  Index col{.terms = {IndexTerm{.coefs = {{3, win.stride_w}, {6, win.dilation_w}}}}, .offset = -win.pad_left};
  e.terms.push_back({{Access{0, {iter_index(0), channel, row, col}},
                      Access{1, {iter_index(1), iter_index(4), iter_index(5), iter_index(6)}}}});
  if (call.params.get_word("act") == "relu") e.unary = &op_def(OpKind::kRelu);
  return e;
}

TensorExpr transpose_expression(const OpCall& call, int) {
  const Shape& x = call.input_shapes[0];
  std::vector<int64_t> perm = call.params.get_ints("perm");
  if (perm.empty())
    for (size_t a = x.size(); a-- > 0;) perm.push_back(static_cast<int64_t>(a));
  TensorExpr e = over(call.output_shapes[0], call.input_shapes);
  std::vector<Index> idx(x.size());
  for (size_t a = 0; a < perm.size(); ++a) idx[static_cast<size_t>(perm[a])] = iter_index(static_cast<int>(a));
  e.terms.push_back({{Access{0, idx}}});
  return e;
}

// Input axis j at ((Σ o_a·ostride_a) / istride_j) mod dim_j: the flat offset re-read.
TensorExpr reshape_expression(const OpCall& call, int) {
  const Shape& x = call.input_shapes[0];
  TensorExpr e = over(call.output_shapes[0], call.input_shapes);
  const std::vector<int64_t> ostride = row_major_strides(e.output_shape()), istride = row_major_strides(x);
  IndexTerm flat;
  for (size_t a = 0; a < ostride.size(); ++a)
    if (e.iterators[a].range > 1) flat.coefs.push_back({static_cast<int>(a), ostride[a]});
  std::vector<Index> idx;
  for (size_t j = 0; j < x.size(); ++j) {
    IndexTerm t = flat;
    t.div = istride[j];
    t.mod = j == 0 ? 0 : x[j];
    idx.push_back(x[j] == 1 ? expr::const_index(0) : Index{.terms = {t}});
  }
  e.terms.push_back({{Access{0, idx}}});
  return e;
}

// Σ_t X_t[..., o_axis − offset_t, ...]: each piece reads zero outside itself.
TensorExpr concat_expression(const OpCall& call, int) {
  const auto axis = static_cast<size_t>(call.params.get_int("axis"));
  TensorExpr e = over(call.output_shapes[0], call.input_shapes);
  int64_t offset = 0;
  for (size_t t = 0; t < call.input_shapes.size(); ++t) {
    std::vector<Index> idx = identity_index(call.input_shapes[t].size());
    idx[axis].offset = -offset;
    offset += call.input_shapes[t][axis];
    e.terms.push_back({{Access{static_cast<int>(t), idx}}});
  }
  return e;
}

TensorExpr split_expression(const OpCall& call, int output) {
  const auto axis = static_cast<size_t>(call.params.get_int("axis"));
  const auto& sizes = call.params.get_ints("sizes");
  TensorExpr e = over(call.output_shapes[static_cast<size_t>(output)], call.input_shapes);
  std::vector<Index> idx = identity_index(call.input_shapes[0].size());
  idx[axis].offset = std::accumulate(sizes.begin(), sizes.begin() + output, int64_t{0});
  e.terms.push_back({{Access{0, idx}}});
  return e;
}

// Elementwise operators: operands of the output's shape, or (binary ones)
// one operand a tensor the expression reads that broadcasts to it.
bool broadcasts_to(const Shape& s, const Shape& out) {
  if (s.size() > out.size()) return false;
  for (size_t a = 0; a < s.size(); ++a)
    if (s[a] != 1 && s[a] != out[a + out.size() - s.size()]) return false;
  return true;
}

std::function<std::vector<Instance>(const InstanceQuery&)> elementwise_instances(int inputs) {
  return [inputs](const InstanceQuery& q) -> std::vector<Instance> {
    if (!q.sum_ranges.empty()) return {};
    std::vector<Instance> out{
        Instance{.params = {}, .inputs = std::vector<Shape>(static_cast<size_t>(inputs), q.out_ranges)}};
    if (inputs != 2) return out;
    for (const Shape& s : q.read_shapes)
      if (s != q.out_ranges && broadcasts_to(s, q.out_ranges)) {
        out.push_back(Instance{.params = {}, .inputs = {q.out_ranges, s}});
        out.push_back(Instance{.params = {}, .inputs = {s, q.out_ranges}});
      }
    return out;
  };
}

std::vector<Instance> product_instances(const InstanceQuery& q, size_t batch) {
  if (q.out_ranges.size() != batch + 2 || q.sum_ranges.size() != 1) return {};
  Shape a(q.out_ranges.begin(), q.out_ranges.begin() + static_cast<long>(batch)), b = a;
  a.insert(a.end(), {q.out_ranges[batch], q.sum_ranges[0]});
  b.insert(b.end(), {q.sum_ranges[0], q.out_ranges[batch + 1]});
  return {Instance{.params = {}, .inputs = {a, b}}};
}

// Convolutions of every group count that divides the output channels, over
// inputs as large as the tensors read (the window may leave a margin).
std::vector<Instance> conv2d_instances(const OpDef& conv, const InstanceQuery& q) {
  if (q.out_ranges.size() != 4 || q.sum_ranges.size() != 3) return {};
  std::vector<Params> tries;
  if (q.like) {
    try {
      tries.push_back(conv.make_params(q.like->entries()));
    } catch (const ParamError&) {
    }
  }
  tries.push_back(conv.make_params());
  const Shape w{q.out_ranges[1], q.sum_ranges[0], q.sum_ranges[1], q.sum_ranges[2]};
  std::vector<Instance> out;
  for (const Params& p : tries)
    for (int64_t groups = 1; groups <= q.out_ranges[1]; ++groups) {
      if (q.out_ranges[1] % groups != 0) continue;
      for (const Shape& read : q.read_shapes) {
        if (read.size() != 4) continue;
        const Shape x{q.out_ranges[0], q.sum_ranges[0] * groups, read[2], read[3]};
        try {
          if (conv.output_shapes(p, std::vector<Shape>{x, w}).at(0) != q.out_ranges) continue;
        } catch (const ShapeError&) {
          continue;
        }
        Instance candidate{p, {x, w}};
        bool seen = false;
        for (const Instance& o : out) seen = seen || (o.params == candidate.params && o.inputs == candidate.inputs);
        if (!seen) out.push_back(candidate);
      }
    }
  return out;
}

}  // namespace

namespace expr {

const ExpressionHooks* expression_hooks(const OpDef& op) {
  static const std::map<const OpDef*, ExpressionHooks> hooks = [] {
    const OpTable& table = OpTable::instance();
    const OpDef& conv = table.get(OpKind::kConv2d);
    std::map<const OpDef*, ExpressionHooks> h;
    h[&table.get(OpKind::kAdd)] = {add_expression, elementwise_instances(2)};
    h[&table.get(OpKind::kMul)] = {mul_expression, elementwise_instances(2)};
    // Elementwise operators of one input and no parameters with a float64 kernel.
    for (const OpDef* each : table.all())
      if (each->traits.elementwise && each->inputs.size() == 1 && each->params.empty() && each->kernels.f64)
        h[each] = {unary_expression, elementwise_instances(1)};
    h[&table.get(OpKind::kMatmul)] = {product_expression,
                                      [](const InstanceQuery& q) { return product_instances(q, 0); }};
    h[&table.get(OpKind::kBatchMatmul)] = {product_expression,
                                           [](const InstanceQuery& q) { return product_instances(q, 1); }};
    h[&conv] = {conv2d_expression, [&conv](const InstanceQuery& q) { return conv2d_instances(conv, q); }};
    h[&table.get(OpKind::kTranspose)] = {transpose_expression, nullptr};
    h[&table.get(OpKind::kReshape)] = {reshape_expression, nullptr};
    h[&table.get(OpKind::kConcat)] = {concat_expression, nullptr};
    h[&table.get(OpKind::kSplit)] = {split_expression, nullptr};
    return h;
  }();
  const auto it = hooks.find(&op);
  return it == hooks.end() ? nullptr : &it->second;
}

}  // namespace expr
}  // namespace tgr
