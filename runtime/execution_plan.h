// What the GPU runtime executes for a graph, decided without a GPU (so it is
// tested anywhere): which nodes are computed once at load (constants and
// everything that depends only on them), which nodes run together as one
// kernel (chains of elementwise operators, a producer of a smaller shape that
// broadcasts to its consumer's inside it; a convolution or a matrix product
// with its bias, residual add and relu; a convolution with its bias and clip
// or SiLU; scaled-dot-product attention, runtime/attention.h), which are
// free (reshape: the same bytes), and where
// each value lives (one arena, bytes shared by values whose lifetimes do not
// overlap; see memory_plan.h; a reshape or split piece may be a view of
// another value's bytes, see views.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/attention.h"
#include "runtime/memory_plan.h"
#include "runtime/precision.h"
#include "runtime/views.h"

namespace tgr {

struct PlanOptions {
  bool fuse = true;  // elementwise chains; conv and matmul + bias (+ residual) + relu; conv + bias + clip or SiLU
  // false: the tasks only (what a cost model needs, runtime/step_signature.h):
  // nodes computed at load are found but not evaluated, and no value is
  // placed (slots, constants and the arena stay empty).
  bool place_values = true;
  // What each value is stored in (precision.h): sizes the slots, the arena
  // and the weights, and keys the steps' signatures (step_signature.h).
  Precision precision = Precision::kFp32;
  // With `fuse`: scaled-dot-product attention as one step (Task::Kind::kAttention);
  // false: its products, scale, mask and softmax as the steps above.
  bool attention = true;
};

// One kernel launch (or a few) of the runtime, covering one or more nodes.
struct Task {
  enum class Kind {
    kNode,         // one node, by its operator's kernel
    kElementwise,  // a chain of elementwise nodes in one kernel (maybe one node)
    kConv,         // conv2d, then optionally add(bias per channel), add(residual) and relu; or
                   // add(bias) and an activation (clip, SiLU: Task::activation)
    kProduct,      // matmul [+ mul(scale)] [+ reshape keeping the last axis], then add(bias per
                   // column) and/or add(residual), optionally relu: one cuBLASLt call with an
                   // epilogue; or batch_matmul + mul(scale): one cuBLAS call with alpha = scale
    kAlias,        // reshape or split whose outputs are all views, or a concat whose inputs were all
                   // written in place (views.h): no work
    kAttention,    // scaled-dot-product attention (runtime/attention.h, Task::attention): both products,
                   // the scale, the mask, the softmax and the head layouts between them, one kernel
  };
  Kind kind = Kind::kNode;
  std::vector<int32_t> nodes;  // topological order; the last produces the task's output(s)
  // kConv, kProduct: the fused bias (per channel / per column: a vector broadcast
  // along the output's rows), residual (the output's shape) and relu. Members
  // of `nodes` past the first are exactly the adds and relu (and, for
  // kProduct, the mul by `scale` and a reshape right after the product; for
  // kConv, the nodes of `activation`) that these fields describe.
  std::optional<ValueRef> bias, residual;
  // kProduct: a one-element float constant (computed at load) the product is
  // multiplied by before the epilogue: cuBLAS's alpha (attention's scale).
  std::optional<ValueRef> scale;
  bool relu = false;
  // kConv: an activation other than relu after the bias (never with a
  // residual or relu): clip[min, max] (MobileNet's ReLU6) or SiLU, x *
  // sigmoid(x) as exporters write EfficientNet's swish (nodes: sigmoid, then
  // mul). cuDNN's fused call takes relu only, so the runtime's depthwise
  // kernel applies these inside and a cuDNN or cuBLAS convolution in its
  // elementwise epilogue, one launch after it with the bias.
  enum class Activation { kNone, kClip, kSilu };
  Activation activation = Activation::kNone;
  double clip_min = 0, clip_max = 0;  // kClip
  // kNode concat: the inputs (by index) their producers wrote in place into
  // its bytes (views.h); it copies only the others. Never all of them: such
  // a concatenation is a kAlias.
  std::vector<size_t> in_place_inputs;
  // kAttention: what the step computes; `nodes` are its nodes.
  std::optional<AttentionMatch> attention;
  // Values of other tasks (or inputs, constants) the task reads.
  std::vector<ValueRef> reads;
  int64_t scratch_bytes = 0;  // temporary memory alive during this task only
  int32_t root() const { return nodes.back(); }
};

// Where a value is at run time.
struct ValueSlot {
  enum class Home { kNone, kInput, kConstant, kArena };
  Home home = Home::kNone;
  int64_t offset = 0;      // kInput, kArena: in the arena; kConstant: in the weights buffer
  int64_t bytes = 0;
  DType storage = DType::kFloat;  // the element type on the device (storage_dtype of the graph's type)
  int constant = -1;       // kConstant: index into ExecutionPlan::constants
  bool view = false;       // the bytes are another value's (views.h); its producer writes nothing, except
                           // a product written in place into a later value's bytes
  std::vector<int64_t> strides;  // elements per axis when not row-major; empty: row-major
};

struct ExecutionPlan {
  Precision precision = Precision::kFp32;  // PlanOptions::precision
  std::vector<Task> tasks;
  std::vector<std::vector<ValueSlot>> slots;  // [node][output]
  std::vector<ConstantValue> constants;       // uploaded once at load
  std::vector<int64_t> scratch_offsets;       // per task, in the arena (when scratch_bytes > 0)
  int64_t arena_bytes = 0, unshared_bytes = 0, weight_bytes = 0;
  int folded_nodes = 0, fused_nodes = 0;
  std::vector<char> folded;  // per node: computed at load (constants only), so never a task's

  const ValueSlot& slot(ValueRef v) const { return slots.at(v.node).at(v.output); }
};

// Raises std::invalid_argument naming the node for what the runtime cannot
// run (a rank above 8).
ExecutionPlan make_execution_plan(const Graph& graph, const PlanOptions& options = {});

// "conv2d+add+relu", "mul+add+erf+...": what a task runs, for profiles;
// "attention" for an attention step.
std::string task_label(const Graph& graph, const Task& task);

}  // namespace tgr
