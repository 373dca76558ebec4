// The GPU executor: loads a graph onto the GPU once (constants folded and
// uploaded, one arena for every intermediate by the memory plan, cuDNN
// algorithms chosen, the whole model captured as a CUDA graph) and then runs
// it many times. At GpuOptions::precision (runtime/precision.h): float32 with
// TF32 off by default (cuBLAS default math, cuDNN FMA math), TF32 tensor
// cores, or every float value and weight stored in bfloat16 or float16.
// Inputs and outputs are float32 at every precision (converted on the way in
// and out). Built only with CUDA (TGR_HAVE_CUDA).
//
//   auto model = gpu::GpuModel::load(graph);
//   std::vector<ConstantValue> out = model.run(inputs);
//   double ms = model.replay_ms(100);
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/precision.h"

namespace tgr::gpu {

// Which implementation runs a convolution that has one besides cuDNN (a 1x1
// convolution as a product on cuBLAS, a depthwise one on the runtime's own
// kernel, runtime/cuda/kernels_conv.cu): the faster of the two, timed at
// load on the real shapes (the default), or always cuDNN, or always the
// other one where it applies (tests pin one to check each).
enum class ConvChoice { kFaster, kCudnn, kOther };

struct GpuOptions {
  bool cuda_graph = true;  // capture the model as one CUDA graph and replay it
  bool fuse = true;        // elementwise chains; conv + bias (+ residual) + relu
  bool attention = true;   // with fuse: scaled-dot-product attention as one step (runtime/attention.h)
  size_t conv_workspace_limit = size_t{256} << 20;
  ConvChoice conv_choice = ConvChoice::kFaster;
  // Elementwise programs compiled for the device with NVRTC (ew_compile.h);
  // false: every program runs on the interpreter kernel.
  bool compile_elementwise = true;
  Precision precision = Precision::kFp32;
};

struct ModelStats {
  int graph_ops = 0;      // operator nodes of the graph
  int steps = 0;          // kernel steps after folding, fusion and aliasing
  int folded = 0;         // nodes computed at load
  int fused = 0;          // nodes merged into another node's step
  int64_t arena_bytes = 0, unshared_bytes = 0, weight_bytes = 0, workspace_bytes = 0;
  bool cuda_graph = false;
  int compiled_programs = 0;     // elementwise programs running as their own compiled kernels
  int interpreted_programs = 0;  // elementwise programs on the interpreter kernel
};

// One step's time in a profile: its operators ("conv2d+add+relu") and node.
struct StepTime {
  std::string label;
  int node = -1;
  double ms = 0;
};

class GpuModel {
 public:
  // Raises GpuError naming the node and operator for anything the runtime
  // cannot run, and for a missing GPU.
  static GpuModel load(const Graph& graph, const GpuOptions& options = {});
  GpuModel(GpuModel&&) noexcept;
  GpuModel& operator=(GpuModel&&) noexcept;
  ~GpuModel();

  // Inputs in declaration order (Graph::inputs()), any element types.
  std::vector<ConstantValue> run(std::span<const ConstantValue> inputs);
  void set_inputs(std::span<const ConstantValue> inputs);
  void execute();  // one run (a graph replay when captured), then waits
  std::vector<ConstantValue> outputs() const;

  // The device bytes of input `i` (Graph::inputs() order) and of output `k`
  // (Graph::outputs() order), row-major: fixed for the model's life, since its
  // CUDA graph reads and writes these addresses. Callers that keep their
  // tensors on the GPU copy into and out of them on stream() (tgr/session.h).
  void* input_data(size_t i) const;
  const void* output_data(size_t k) const;
  // Enqueues one run (a graph replay when captured) on stream(), not waiting.
  void launch();
  void* stream() const;  // the model's cudaStream_t

  // Median time of one run over `iters` runs after `warmup`, by CUDA events.
  double replay_ms(int iters = 100, int warmup = 10);
  // Median time of each step over `iters` runs (steps enqueued behind a
  // delay kernel, timed by events between them).
  std::vector<StepTime> profile(int iters = 20);
  // The model's steps in launch order (label and node; ms 0).
  std::vector<StepTime> steps() const;
  // Median time of one replay of a CUDA graph of only the steps `keep`
  // marks (indices of steps(); captured for this call, dropped after), over
  // `iters` runs after `warmup`. The full replay's time minus this is what
  // the other steps cost inside the model's replay, where their neighbours'
  // launches and caches are the model's (bench --profile-replay). The values
  // the left-out steps would write keep what they held: for timing only.
  double replay_ms_keeping(const std::vector<bool>& keep, int iters = 20, int warmup = 2);

  const ModelStats& stats() const;
  std::string device_name() const;

 private:
  struct Impl;
  explicit GpuModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Whether a CUDA device is visible.
bool gpu_available();

}  // namespace tgr::gpu
