// The signature of one step of the GPU runtime: what one Task of an
// ExecutionPlan launches, as a string. The measured step costs (op_costs
// rows that `calibrate` writes, read by the tgr-gpu target's
// optimizer/plan_cost_model.h) are keyed by it, so it is defined once, here.
//
//   step conv: conv2d[pad=same](float:1x64x56x56,float:64x64x3x3) ; add(float:1x64x56x56,float:1x64x1x1)<0,- ;
//   relu(float:1x64x56x56)<1
//
// "step ", the task's kind, then each node of the task in its order: the
// operator's signature (ir/op_signature.h: operator, parameters, operand
// types and shapes) and, when some operand is computed inside the task,
// "<" and per operand the index of the task's node that computes it ("-":
// read from outside the task; "2.1": output 1 of node 2). It is derived
// from the task's kind and nodes alone, so a task kind added to the planner
// has signatures with no other change here than its name (task_kind_name,
// a switch the compiler checks for every kind); the fused extras of a kind (a convolution's bias,
// residual and relu) are its nodes.
//
// Alias tasks (every output a view, views.h) launch nothing and have no
// signature (step_is_free); nodes computed at load are in no task. A
// concatenation some of whose inputs were written in place (views.h,
// Task::in_place_inputs) copies only the others, so its signature, and what
// `calibrate` times for it, is that of the concatenation of those alone
// (same bytes copied, one launch). A reshape that is a step (a copy) reads
// a transpose's strided view (ShuffleNet's channel shuffle); alone, from a
// row-major input, it would be a view, so its signature and timing are
// those of the transpose and the reshape together (the transpose a view
// there as in the model).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "runtime/execution_plan.h"

namespace tgr {

// The prefix of every step signature: step rows share the op_costs table with
// operator rows (ir/op_signature.h) and never collide with them.
inline constexpr std::string_view kStepSignaturePrefix = "step ";

// "node", "elementwise", "conv", "product", "alias".
std::string task_kind_name(Task::Kind kind);

// Whether the task launches nothing (all its outputs are views of its inputs).
bool step_is_free(const Task& task);

// At a precision other than fp32 (runtime/precision.h) the signature says
// what the step computes in: at bf16 and fp16 each float32 operand is
// written as the type it is stored in ("conv2d(bfloat16:1x64x56x56,...)":
// the signature of the same step of a graph typed so), at tf32 the kind is
// preceded by "tf32 " ("step tf32 conv: ..."). Costs and kernel choices
// timed at one precision are never read at another.
std::string step_signature(const Graph& graph, const Task& task, Precision precision = Precision::kFp32);
inline constexpr std::string_view kTf32Word = "tf32";
// The precision step_signature wrote `signature` at: tf32 by its word, bf16
// and fp16 by their operand types (a graph typed bfloat16 costs as bf16),
// else fp32. Operator rows (no step prefix) are fp32.
Precision signature_precision(std::string_view signature);

// A step signature read back: the kind's name and each node's operator
// signature with the sources of its operands (-1: outside the task).
struct StepNodeSignature {
  std::string op_signature;
  std::vector<int> source;         // per operand: the task's node index computing it, or -1
  std::vector<int> source_output;  // per operand: which output of that node
};
struct ParsedStepSignature {
  std::string kind;
  bool tf32 = false;  // "step tf32 KIND: ...": products and convolutions on TF32 tensor cores
  std::vector<StepNodeSignature> nodes;
};
// Throws ParseError for a string that is not a step signature.
ParsedStepSignature parse_step_signature(std::string_view signature);

// What `calibrate` times for a task of `model`'s plan: `copies` independent
// copies of the task's nodes. A value the task reads from outside is a graph
// input, shared by the copies; a weight (a constant node) is that constant,
// a value computed at load a constant of its type and shape (float: values
// in [-0.5, 0.5), integers: zeros, always valid indices), each copy with its
// own (so that, as in the model, a step's weights are not in L2); each copy's last
// node's outputs are graph outputs. Its plan (with fusion) has `copies`
// tasks of the task's signature, so its replay time divided by `copies` is
// the step's time with the launch overhead of one CUDA graph shared.
// `plan` is `model`'s (its `folded`).
// `spacer_elements` > 0: after each copy, a relu of one more shared input of
// that many floats: the plan then runs copy, spacer, copy, ... so that each
// copy follows a light step, as a step mostly does in a model (why:
// runtime/cuda/step_timing.h).
Graph step_graph(const Graph& model, const ExecutionPlan& plan, const Task& task, int copies,
                 int64_t spacer_elements = 0);

// `copies` relus of one input of `elements` floats: the spacers alone.
Graph spacer_graph(int copies, int64_t elements);

// Bytes of the weights (constants and values computed at load) the task
// reads: what each copy of step_graph holds of its own.
int64_t step_weight_bytes(const Graph& model, const ExecutionPlan& plan, const Task& task);

// How many copies make the copies' weights at least twice `cache_bytes`
// (the GPU's L2): `least` at fewest, `most` at most. Eight copies of
// ResNet-50's 3 x 3 convolution on 256 channels (2.4 MB of weights each) fit
// in an H100's 50 MB L2, so every replay read them from L2 and timed it at
// 55 us; in the model, whose weights (102 MB) do not fit, each run reads
// them from memory: 75 us when the copies' weights exceed L2 as well.
int copies_streaming_weights(int64_t weight_bytes, int64_t cache_bytes, int least, int most);

// The cost of one step, in ms, from a replay of `copies` copies of it with
// their spacers (`replay_ms`) and a replay of the spacers alone
// (`spacers_ms`, 0 without spacers): (replay - spacers) / copies. A step
// that costs less than the noise of that difference (a view-like reshape)
// may come out below zero: it is 0 then, and `clamped` (when given) says so.
double step_cost_ms(double replay_ms, double spacers_ms, int copies, bool* clamped = nullptr);

// How `calibrate` times a step, as stored beside each cost (op_costs.method):
// "copies 8..64, spacer 65536 floats" (the copies per replay, at least and at
// most; the spacer's floats, or "back to back"). A cost timed another way is
// measured again rather than mixed with costs timed this way.
std::string calibration_method(int least_copies, int most_copies, int64_t spacer_elements);

}  // namespace tgr
