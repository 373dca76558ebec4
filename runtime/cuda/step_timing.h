// Timing one step of the GPU runtime's plan as the runtime runs it: what
// `calibrate` stores per step signature (runtime/step_signature.h) and the
// tgr-gpu target's cost model reads (optimizer/plan_cost_model.h).
//
// The step's graph (step_graph: --copies independent copies of the task's
// nodes, more for a step whose weights would otherwise stay in L2; weights
// as constants, values from other steps as inputs; a light spacer step after
// each copy) is loaded with fusion on, so each copy is planned, lowered and
// fused exactly as in the model, captured as one CUDA graph, replayed
// (median of `iters` after warm-up, CUDA events), the spacers' own replay
// subtracted, and the time divided by the copies: the launch overhead of a
// replay is shared as in a model's replay.
//
// Why the spacer: in a model no step runs right after a copy of itself, and
// a library step (a cuDNN convolution, a cuBLAS product) timed back to back
// with its copies costs what it does nowhere in the model: back to back,
// convolutions measured well above or below their time in the model's
// replay, with a relu between the copies close to it (`bench
// --profile-replay`; the figures are in docs/benchmarks-archive.md). Which
// step precedes it in the model does not matter as much: pricing a
// convolution that follows a convolution at its back-to-back time made the
// predictions worse.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "runtime/execution_plan.h"

namespace tgr::gpu {

struct StepTiming {
  int copies = 8;
  int iters = 50;
  int warmup = 5;
  // > 0: more copies (up to max_copies) until the copies' weights are twice
  // this many bytes (the GPU's L2, l2_cache_bytes()), so that each replay
  // reads them from memory as a model larger than L2 does
  // (copies_streaming_weights, runtime/step_signature.h).
  int64_t cache_bytes = 0;
  int max_copies = 64;
  // > 0: a light step (a relu of this many floats) after each copy, its own
  // time (the spacers replayed alone) subtracted; 0: the copies back to back.
  int64_t spacer_elements = kSpacerElements;
  static constexpr int64_t kSpacerElements = 65536;  // 256 KB: a small feature map
};

// The L2 cache of GPU 0, in bytes (0 without a GPU).
int64_t l2_cache_bytes();

// Milliseconds of one run of `task` (a task of `plan`, `model`'s plan), at the
// plan's precision; 0 for a free step.
// Never below 0: a step timed below zero once its spacers' time is taken
// off is 0 (step_cost_ms), and `clamped` (when given) says so.
double measure_step_ms(const Graph& model, const ExecutionPlan& plan, const Task& task, const StepTiming& timing = {},
                       bool* clamped = nullptr);

// Inputs for a graph's inputs: random floats; integers 0 (always a valid index).
std::vector<ConstantValue> timing_inputs(const Graph& graph);

}  // namespace tgr::gpu
