#include "runtime/execution_plan.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "ir/geometry.h"
#include "runtime/interpreter.h"

namespace tgr {

namespace {

// Instructions a node adds to a fused program (batch_norm: v + eps, rsqrt,
// times scale, x - mean, times that, plus bias).
int instructions(const Node& n) { return op_is(n.op, OpKind::kBatchNorm) ? 6 : 1; }

// The distinct operands a node reads in a program: (value, viewed per channel).
using Operand = std::pair<ValueRef, bool>;
void add_operands(const Node& n, std::vector<Operand>& out) {
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Operand o{n.inputs[i], n.op->traits.channel_operands && i > 0};
    if (std::find(out.begin(), out.end(), o) == out.end()) out.push_back(o);
  }
}

// Whether an elementwise group whose result has shape `producer` can run
// inside the program of its consumer, of shape `consumer`. A program reads
// every operand broadcast to its result's shape, and an elementwise node
// commutes with broadcasting, so a producer whose shape broadcasts to the
// consumer's (each axis 1 or equal, same rank) is computed per element of
// the consumer: a squeeze-and-excitation block's sigmoid of C values runs
// inside its mul by the C x H x W features (one launch, not two; the
// sigmoid computed H x W times, cheaper than a launch). Not with operands
// viewed per channel (batch_norm's), whose view assumes the result's axis 1
// is theirs.
bool fusable_shape(const std::vector<Operand>& group_operands, const Shape& producer, const Shape& consumer) {
  if (producer == consumer) return true;
  if (producer.size() != consumer.size()) return false;
  for (size_t a = 0; a < producer.size(); ++a)
    if (producer[a] != 1 && producer[a] != consumer[a]) return false;
  return std::none_of(group_operands.begin(), group_operands.end(), [](const auto& o) { return o.second; });
}

// What a fused elementwise program computes in (runtime/cuda/lower_elementwise.cpp):
// float when a node touches a float value (comparisons, is_nan and where over
// floats included: their bools are 0 and 1); nodes of bools only (logical_not,
// where over bools) join any program; int64 nodes run as programs of their own.
enum class Domain { kFloat, kBool, kInt };
Domain domain(const Graph& g, const Node& n) {
  bool touches_float = is_floating(n.output_dtypes[0]), touches_int = n.output_dtypes[0] == DType::kInt64;
  for (ValueRef in : n.inputs) {
    touches_float = touches_float || is_floating(g.dtype(in));
    touches_int = touches_int || g.dtype(in) == DType::kInt64;
  }
  return touches_float ? Domain::kFloat : touches_int ? Domain::kInt : Domain::kBool;
}

// Folds a node whose inputs are all known: evaluates it alone on the CPU.
std::vector<ConstantValue> fold(const Graph& graph, const Node& n, const std::vector<std::vector<ConstantValue>>& known) {
  Graph g;
  std::vector<ValueRef> args;
  for (ValueRef in : n.inputs) args.push_back(g.add_constant(known[in.node][in.output]));
  const std::vector<ValueRef> outs = g.add_op(*n.op, n.params, args);
  for (ValueRef v : outs) g.add_output(v);
  (void)graph;
  return evaluate_values<float>(g, std::span<const ConstantValue>());
}

struct Builder {
  const Graph& graph;
  const PlanOptions& options;
  ExecutionPlan plan;
  std::vector<int32_t> order;
  std::vector<std::vector<int32_t>> uses;
  std::vector<std::vector<int32_t>> consumers;  // of output 0, live nodes
  std::vector<char> is_output;                  // node has an output that is a graph output
  std::vector<std::vector<ConstantValue>> known;
  std::vector<char> folded;
  ViewAnalysis views;
  std::vector<int> task_of;  // node -> index into `groups`, -1 when none

  Builder(const Graph& g, const PlanOptions& o) : graph(g), options(o) {}

  // Bytes of one element of `v` as the device stores it at the plan's precision.
  int64_t element_bytes(ValueRef v) const {
    return device_element_bytes(storage_dtype(graph.dtype(v), options.precision));
  }

  bool single_use(int32_t node) const {
    return graph.node(node).output_shapes.size() == 1 && uses[node][0] == 1 && !is_output[node];
  }
  // The one reader of a single-use value, unless another task has claimed it.
  std::optional<int32_t> only_consumer(int32_t node) const {
    if (!single_use(node) || consumers[node].size() != 1) return std::nullopt;
    if (!task_of.empty() && task_of[consumers[node][0]] >= 0) return std::nullopt;
    return consumers[node][0];
  }

  void analyse() {
    const auto& nodes = graph.nodes();
    order = graph.topological_order();
    uses = graph.use_counts();
    consumers.assign(nodes.size(), {});
    is_output.assign(nodes.size(), 0);
    for (ValueRef v : graph.outputs()) is_output[v.node] = 1;
    for (int32_t i : order)
      for (ValueRef in : nodes[i].inputs)
        if (in.output == 0 && std::find(consumers[in.node].begin(), consumers[in.node].end(), i) == consumers[in.node].end())
          consumers[in.node].push_back(i);
    known.assign(nodes.size(), {});
    folded.assign(nodes.size(), 0);
    for (int32_t i : order) {
      const Node& n = nodes[i];
      if (n.is_constant()) {
        if (options.place_values) known[i] = {*n.constant};  // a copy of the weights: only to place them
        continue;
      }
      if (!n.is_op()) continue;
      for (const Shape& s : n.output_shapes)
        if (s.size() > 8)
          throw std::invalid_argument(n.op->name + " (node " + std::to_string(i) + "): rank " + std::to_string(s.size()) +
                                      " is above the GPU runtime's limit of 8");
      const bool all_known = std::all_of(n.inputs.begin(), n.inputs.end(),
                                         [&](ValueRef in) { return nodes[in.node].is_constant() || folded[in.node]; });
      if (all_known) {
        if (options.place_values) known[i] = fold(graph, n, known);
        folded[i] = 1;
        ++plan.folded_nodes;
      }
    }
    views = analyse_views(graph, folded, options.precision);
    plan.folded = folded;
  }

  // When `add` adds something to the value of `from` (and its output has
  // `from`'s shape `y`: no broadcast of that side): the other operand.
  static std::optional<ValueRef> other_operand(const Node& add, int32_t from, const Shape& y) {
    if (!op_is(add.op, OpKind::kAdd) || add.output_shapes[0] != y) return std::nullopt;
    if (add.inputs[0].node == from && add.inputs[1].node != from) return add.inputs[1];
    if (add.inputs[1].node == from && add.inputs[0].node != from) return add.inputs[0];
    return std::nullopt;
  }

  // A float operand any kernel, cuDNN and cuBLAS(Lt) included, may read.
  bool plain_float(ValueRef v) const { return is_floating(graph.dtype(v)) && views.is_plain(v); }

  // conv2d [+ add(bias per channel)] [+ add(residual) + relu] [+ relu]
  void conv_task(int32_t c, Task& t) {
    t.kind = Task::Kind::kConv;
    t.nodes = {c};
    const Node& conv = graph.node(c);
    const Shape& y = conv.output_shapes[0];
    if (conv.params.get_word("act") == "relu") {
      t.relu = true;
      return;
    }
    if (!options.fuse) return;
    auto other_operand = [&](const Node& add, int32_t from) { return Builder::other_operand(add, from, y); };
    int32_t cur = c;
    if (auto next = only_consumer(cur)) {
      if (auto b = other_operand(graph.node(*next), cur)) {
        const Shape& bs = graph.shape(*b);
        if (is_floating(graph.dtype(*b)) && views.is_plain(*b) &&
            (bs == Shape{1, y[1], 1, 1} || bs == Shape{y[1], 1, 1})) {
          t.bias = *b;
          t.nodes.push_back(*next);
          cur = *next;
        }
      }
    }
    const size_t before_residual = t.nodes.size();
    if (auto next = only_consumer(cur)) {
      if (auto z = other_operand(graph.node(*next), cur);
          z && graph.shape(*z) == y && is_floating(graph.dtype(*z)) && views.is_plain(*z)) {
        t.residual = *z;
        t.nodes.push_back(*next);
        cur = *next;
      }
    }
    if (auto next = only_consumer(cur); next && op_is(graph.node(*next).op, OpKind::kRelu)) {
      t.relu = true;
      t.nodes.push_back(*next);
      return;
    }
    // cuDNN fuses a residual only with an activation: leave that add alone.
    if (t.residual) {
      t.residual.reset();
      t.nodes.resize(before_residual);
      cur = t.nodes.back();
    }
    conv_activation(cur, t);
  }

  // After a convolution (and its bias) `cur`: clip, or SiLU (sigmoid(cur)
  // and mul(cur, sigmoid) reading cur, its only two readers).
  void conv_activation(int32_t cur, Task& t) {
    if (auto next = only_consumer(cur); next && op_is(graph.node(*next).op, OpKind::kClip)) {
      t.activation = Task::Activation::kClip;
      t.clip_min = graph.node(*next).params.get_float("min");
      t.clip_max = graph.node(*next).params.get_float("max");
      t.nodes.push_back(*next);
      return;
    }
    if (graph.node(cur).output_shapes.size() != 1 || uses[cur][0] != 2 || is_output[cur] || consumers[cur].size() != 2)
      return;
    auto unclaimed = [&](int32_t n) { return task_of.empty() || task_of[n] < 0; };
    for (int first = 0; first < 2; ++first) {
      const int32_t s = consumers[cur][first], m = consumers[cur][1 - first];
      const Node& sn = graph.node(s);
      const Node& mn = graph.node(m);
      if (!op_is(sn.op, OpKind::kSigmoid) || !op_is(mn.op, OpKind::kMul) || !single_use(s) ||
          consumers[s] != std::vector{m} || !unclaimed(s) || !unclaimed(m))
        continue;
      const bool reads_both = (mn.inputs[0] == ValueRef{cur, 0} && mn.inputs[1] == ValueRef{s, 0}) ||
                              (mn.inputs[1] == ValueRef{cur, 0} && mn.inputs[0] == ValueRef{s, 0});
      if (!reads_both) continue;
      t.activation = Task::Activation::kSilu;
      t.nodes.push_back(s);
      t.nodes.push_back(m);
      return;
    }
  }

  // When `mul` multiplies the value of `from` by a one-element float
  // constant (computed at load) and keeps its shape: that constant.
  std::optional<ValueRef> scale_operand(const Node& mul, int32_t from) const {
    if (!op_is(mul.op, OpKind::kMul) || mul.output_shapes[0] != graph.node(from).output_shapes[0]) return std::nullopt;
    for (int side = 0; side < 2; ++side) {
      const ValueRef s = mul.inputs[side], other = mul.inputs[1 - side];
      const Node& sn = graph.node(s.node);
      if (other.node == from && s.node != from && is_floating(graph.dtype(s)) && num_elements(graph.shape(s)) == 1 &&
          (sn.is_constant() || folded[s.node]))
        return s;
    }
    return std::nullopt;
  }

  // matmul [+ mul(scale)] [+ reshape] [+ add(bias per column)] [+ add(residual)]
  // [+ relu], when at least one of scale, bias, residual, relu follows: a
  // kProduct task (one cuBLASLt call whose alpha is the scale, whose epilogue
  // adds the bias and applies the relu; the residual is its C matrix, beta =
  // 1). The reshape (BERT's and ConvNeXt's Linear layers: [B*S, H] back to
  // [B, S, H]) must keep the last axis and be a view, so the product's rows
  // are the reshaped value's rows. batch_matmul [+ mul(scale)]: a kProduct
  // task when the scale follows (attention's scores, one strided-batched
  // call with alpha). Otherwise the product stays a task of its own (kNode)
  // and nothing is claimed.
  void product_task(int32_t mm, Task& t) {
    t.nodes = {mm};
    if (!options.fuse) return;
    const bool batched = op_is(graph.node(mm).op, OpKind::kBatchMatmul);
    const int64_t columns = graph.node(mm).output_shapes[0].back();
    std::vector<int32_t> members{mm};
    int32_t cur = mm;
    Task fused;
    fused.kind = Task::Kind::kProduct;
    if (auto next = only_consumer(cur); next && !views.is_view({mm, 0}) && !views.is_view({*next, 0})) {
      if (auto s = scale_operand(graph.node(*next), cur)) {
        fused.scale = *s;
        members.push_back(*next);
        cur = *next;
      }
    }
    if (batched) {
      if (!fused.scale) return;
      fused.nodes = std::move(members);
      t = std::move(fused);
      return;
    }
    if (auto next = only_consumer(cur)) {
      const Node& r = graph.node(*next);
      if (r.op->traits.view == ViewKind::kReshape && views.runs_nothing(*next) && !r.output_shapes[0].empty() &&
          r.output_shapes[0].back() == columns) {
        members.push_back(*next);
        cur = *next;
      }
    }
    const Shape y = graph.node(cur).output_shapes[0];
    if (auto next = only_consumer(cur)) {
      if (auto b = other_operand(graph.node(*next), cur, y)) {
        const Shape& bs = graph.shape(*b);
        const bool per_column =
            !bs.empty() && bs.size() <= y.size() && bs.back() == columns && num_elements(bs) == columns;
        if (per_column && plain_float(*b)) {
          fused.bias = *b;
          members.push_back(*next);
          cur = *next;
        }
      }
    }
    if (auto next = only_consumer(cur)) {
      if (auto z = other_operand(graph.node(*next), cur, y); z && graph.shape(*z) == y && plain_float(*z)) {
        fused.residual = *z;
        members.push_back(*next);
        cur = *next;
      }
    }
    if (auto next = only_consumer(cur); next && op_is(graph.node(*next).op, OpKind::kRelu)) {
      fused.relu = true;
      members.push_back(*next);
      cur = *next;
    }
    if (!fused.scale && !fused.bias && !fused.residual && !fused.relu) return;  // a reshape alone: it stays an alias
    fused.nodes = std::move(members);
    t = std::move(fused);
  }

  // Whether the attention step reads every value it reads from outside
  // through strides it can take (operand_layout, mask_layout), none of them
  // bytes of one of its own nodes (a product written in place upstream).
  bool attention_reads_layouts(const AttentionMatch& m) const {
    auto outside = [&](ValueRef v) {
      return std::find(m.nodes.begin(), m.nodes.end(), views.layout(v).source.node) == m.nodes.end();
    };
    for (const AttentionOperand* o : {&m.q, &m.k, &m.v})
      if (!outside(o->source) || !operand_layout(graph, *o, views.layout(o->source).strides)) return false;
    return !m.mask || (outside(*m.mask) && mask_layout(graph, m, views.layout(*m.mask).strides));
  }

  // Scaled-dot-product attention (runtime/attention.h), claimed before the
  // other steps: its products, scale and mask would otherwise be theirs.
  // Only where values are stored in float32 (kernels_attention.cu loads and
  // stores float32; at bf16/fp16 the steps above run in the half type).
  void attention_tasks(std::vector<Task>& groups) {
    if (!options.fuse || !options.attention) return;
    if (storage_dtype(DType::kFloat, options.precision) != DType::kFloat) return;
    auto may_take = [&](int32_t n) { return graph.node(n).is_op() && !folded[n] && task_of[n] < 0; };
    auto at_load = [&](int32_t n) { return folded[n] != 0; };
    for (int32_t i : order) {
      if (!op_is(graph.node(i).op, OpKind::kBatchMatmul) || folded[i]) continue;
      std::optional<AttentionMatch> m = match_attention(graph, i, may_take, at_load);
      if (!m || !attention_reads_layouts(*m)) continue;
      Task t;
      t.kind = Task::Kind::kAttention;
      t.nodes = m->nodes;
      t.attention = std::move(m);
      plan.fused_nodes += static_cast<int>(t.nodes.size()) - 1;
      for (int32_t n : t.nodes) task_of[n] = static_cast<int>(groups.size());
      groups.push_back(std::move(t));
    }
  }

  void build_tasks() {
    const auto& nodes = graph.nodes();
    std::vector<Task> groups;
    task_of.assign(nodes.size(), -1);
    attention_tasks(groups);
    std::vector<std::vector<Operand>> operands;  // per elementwise group
    std::vector<int> instr_count;
    for (int32_t i : order) {
      const Node& n = nodes[i];
      if (!n.is_op() || folded[i] || task_of[i] >= 0) continue;
      Task t;
      if (op_is(n.op, OpKind::kConv2d)) {
        conv_task(i, t);
      } else if ((op_is(n.op, OpKind::kMatmul) || op_is(n.op, OpKind::kBatchMatmul)) &&
                 is_floating(n.output_dtypes[0])) {
        product_task(i, t);
      } else if (views.runs_nothing(i)) {
        t.kind = Task::Kind::kAlias;  // every output a view: nothing to run
        t.nodes = {i};
      } else if (is_elementwise_kernel(n)) {
        t.kind = Task::Kind::kElementwise;
        std::vector<Operand> ops;
        add_operands(n, ops);
        int count = instructions(n);
        std::vector<int32_t> members;
        if (options.fuse && domain(graph, n) != Domain::kInt) {
          for (ValueRef in : n.inputs) {
            const int g = task_of[in.node];
            if (g < 0 || groups[g].kind != Task::Kind::kElementwise || groups[g].root() != in.node) continue;
            if (!single_use(in.node) ||
                !fusable_shape(operands[g], nodes[in.node].output_shapes[0], n.output_shapes[0]))
              continue;
            if (domain(graph, nodes[in.node]) == Domain::kInt) continue;  // int64 nodes stay alone
            // Operands after merging: this node's minus the producer's output, plus the group's.
            std::vector<Operand> merged;
            for (const Operand& o : ops)
              if (!(o.first == in && !o.second)) merged.push_back(o);
            for (const Operand& o : operands[g])
              if (std::find(merged.begin(), merged.end(), o) == merged.end()) merged.push_back(o);
            const int merged_count = count + instr_count[g];
            if (static_cast<int>(merged.size()) > 8 || merged_count > 32 ||
                static_cast<int>(merged.size()) + merged_count > 24)
              continue;
            ops = std::move(merged);
            count = merged_count;
            members.insert(members.end(), groups[g].nodes.begin(), groups[g].nodes.end());
            groups[g].nodes.clear();  // absorbed
            plan.fused_nodes += 1;
          }
        }
        members.push_back(i);
        t.nodes = std::move(members);
        operands.resize(groups.size() + 1);
        instr_count.resize(groups.size() + 1);
        operands[groups.size()] = ops;
        instr_count[groups.size()] = count;
      } else {
        t.nodes = {i};
        for (size_t k = 0; k < n.inputs.size(); ++k)
          if (views.concat_input_in_place(i, k)) t.in_place_inputs.push_back(k);
      }
      if (t.kind == Task::Kind::kConv || t.kind == Task::Kind::kProduct)
        plan.fused_nodes += static_cast<int>(t.nodes.size()) - 1;
      for (int32_t m : t.nodes) task_of[m] = static_cast<int>(groups.size());
      groups.push_back(std::move(t));
    }
    // Emit in the order of each task's last node.
    std::vector<std::pair<int32_t, int>> by_root;
    for (size_t g = 0; g < groups.size(); ++g)
      if (!groups[g].nodes.empty()) by_root.emplace_back(groups[g].root(), static_cast<int>(g));
    std::sort(by_root.begin(), by_root.end());
    for (auto& [root, g] : by_root) {
      Task& t = groups[g];
      std::set<int32_t> members(t.nodes.begin(), t.nodes.end());
      for (int32_t m : t.nodes)
        for (ValueRef in : nodes[m].inputs)
          if (!members.count(in.node) && std::find(t.reads.begin(), t.reads.end(), in) == t.reads.end())
            t.reads.push_back(in);
      if (t.kind == Task::Kind::kConv) {
        const Node& conv = nodes[t.nodes[0]];
        const Conv2dGeometry geo = conv2d_geometry(conv.params, graph.shape(conv.inputs[0]), graph.shape(conv.inputs[1]));
        const Window2d& w = geo.window;
        if (w.pad_top != w.pad_bottom || w.pad_left != w.pad_right)
          t.scratch_bytes = geo.batch * geo.in_channels * (w.in_h + w.pad_top + w.pad_bottom) *
                            (w.in_w + w.pad_left + w.pad_right) * element_bytes(conv.inputs[0]);
      }
      plan.tasks.push_back(std::move(t));
    }
  }

  void place_values() {
    const auto& nodes = graph.nodes();
    plan.slots.assign(nodes.size(), {});
    for (size_t i = 0; i < nodes.size(); ++i) plan.slots[i].resize(nodes[i].output_shapes.size());
    auto bytes_of = [&](ValueRef v) { return num_elements(graph.shape(v)) * element_bytes(v); };
    for (size_t i = 0; i < nodes.size(); ++i)
      for (size_t k = 0; k < nodes[i].output_shapes.size(); ++k)
        plan.slots[i][k].storage = storage_dtype(nodes[i].output_dtypes[k], options.precision);
    // Constants that the device reads: weights and folded values.
    int64_t weight_offset = 0;
    auto need_constant = [&](ValueRef v) {
      ValueSlot& s = plan.slots[v.node][v.output];
      if (s.home != ValueSlot::Home::kNone || known[v.node].empty()) return;
      s.home = ValueSlot::Home::kConstant;
      s.bytes = bytes_of(v);
      s.offset = weight_offset;
      s.constant = static_cast<int>(plan.constants.size());
      plan.constants.push_back(known[v.node][v.output]);
      weight_offset += (std::max<int64_t>(s.bytes, 1) + 255) / 256 * 256;
    };
    for (const Task& t : plan.tasks)
      for (ValueRef v : t.reads) need_constant(v);
    for (ValueRef v : graph.outputs()) need_constant(v);
    plan.weight_bytes = weight_offset;

    // Views (views.h) live in the bytes of their source: lifetimes are the source's.
    auto root = [&](ValueRef v) { return views.layout(v).source; };

    // Lifetimes of arena values (graph inputs and task outputs), by root.
    const int last_step = std::max<int>(0, static_cast<int>(plan.tasks.size()) - 1);
    std::vector<Lifetime> lives;
    std::vector<ValueRef> owners;
    std::vector<std::vector<int>> index(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) index[i].assign(nodes[i].output_shapes.size(), -1);
    auto define = [&](ValueRef v, int step) {
      index[v.node][v.output] = static_cast<int>(lives.size());
      lives.push_back({bytes_of(v), step, step});
      owners.push_back(v);
    };
    for (int32_t in : graph.inputs()) {
      define({in, 0}, 0);
      lives.back().last = last_step;  // inputs stay for the next replay
      plan.slots[in][0].home = ValueSlot::Home::kInput;
    }
    // A value's bytes are taken by the first task that writes into them: its
    // own, or a product written in place upstream (views.h), whose output
    // is a view of a value computed later.
    for (size_t s = 0; s < plan.tasks.size(); ++s) {
      const Task& t = plan.tasks[s];
      for (size_t k = 0; k < nodes[t.root()].output_shapes.size(); ++k) {
        const ValueRef r = root({t.root(), static_cast<int32_t>(k)});
        if (index[r.node][r.output] < 0 && plan.slots[r.node][r.output].home == ValueSlot::Home::kNone &&
            known[r.node].empty() && !folded[r.node])
          define(r, static_cast<int>(s));
      }
    }
    auto extend = [&](ValueRef v, int step) {
      const ValueRef r = root(v);
      const int li = index[r.node][r.output];
      if (li >= 0) lives[li].last = std::max(lives[li].last, step);
    };
    for (size_t s = 0; s < plan.tasks.size(); ++s)
      for (ValueRef v : plan.tasks[s].reads) extend(v, static_cast<int>(s));
    for (ValueRef v : graph.outputs()) extend(v, last_step);
    std::vector<size_t> scratch_life(plan.tasks.size(), SIZE_MAX);
    for (size_t s = 0; s < plan.tasks.size(); ++s)
      if (plan.tasks[s].scratch_bytes > 0) {
        scratch_life[s] = lives.size();
        lives.push_back({plan.tasks[s].scratch_bytes, static_cast<int>(s), static_cast<int>(s)});
      }
    const MemoryPlan mp = plan_memory(lives);
    plan.arena_bytes = mp.arena_bytes;
    plan.unshared_bytes = mp.total_bytes;
    for (size_t l = 0; l < owners.size(); ++l) {
      ValueSlot& s = plan.slots[owners[l].node][owners[l].output];
      if (s.home == ValueSlot::Home::kNone) s.home = ValueSlot::Home::kArena;
      s.offset = mp.offsets[l];
      s.bytes = lives[l].bytes;
    }
    plan.scratch_offsets.assign(plan.tasks.size(), -1);
    for (size_t s = 0; s < plan.tasks.size(); ++s)
      if (scratch_life[s] != SIZE_MAX) plan.scratch_offsets[s] = mp.offsets[scratch_life[s]];
    // A view shares its source's slot, from its offset, with its own strides.
    for (int32_t i : order)
      for (size_t k = 0; k < nodes[i].output_shapes.size(); ++k) {
        const ValueRef v{i, static_cast<int32_t>(k)};
        if (!views.is_view(v)) continue;
        const ValueLayout& l = views.layout(v);
        ValueSlot& s = plan.slots[i][k];
        s = plan.slots[l.source.node][l.source.output];
        s.storage = storage_dtype(graph.dtype(v), options.precision);
        s.offset += l.offset * element_bytes(v);
        s.bytes = bytes_of(v);
        s.view = true;
        s.strides.clear();
        if (!is_row_major(graph.shape(v), l.strides)) s.strides = l.strides;
      }
  }
};

}  // namespace

ExecutionPlan make_execution_plan(const Graph& graph, const PlanOptions& options) {
  Builder b(graph, options);
  b.plan.precision = options.precision;
  b.analyse();
  b.build_tasks();
  if (options.place_values) b.place_values();
  return std::move(b.plan);
}

std::string task_label(const Graph& graph, const Task& task) {
  if (task.kind == Task::Kind::kAttention) return "attention";  // its nodes: a dozen reshapes and transposes
  std::string s;
  for (int32_t n : task.nodes) {
    if (!s.empty()) s += "+";
    s += graph.node(n).op->name;
  }
  return s;
}

}  // namespace tgr
