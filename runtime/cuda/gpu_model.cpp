#include "runtime/cuda/gpu_model.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>

#include "runtime/cuda/lower.h"
#include "util/statistics.h"

namespace tgr::gpu {

bool gpu_available() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

namespace {

// A host value as the slot stores it: floats in the slot's storage type, integers as int64.
std::vector<char> stored_bytes(const ConstantValue& v, const ValueSlot& s) {
  std::vector<char> bytes(static_cast<size_t>(s.bytes));
  if (v.is_float()) encode_floats(v.real.data, s.storage, bytes.data());
  else std::memcpy(bytes.data(), v.ints.data.data(), bytes.size());
  return bytes;
}

}  // namespace

struct GpuModel::Impl {
  Graph graph;
  GpuOptions options;
  ExecutionPlan plan;
  std::unique_ptr<GpuContext> gpu;
  DeviceBuffer arena, weights;
  std::vector<Step> steps;
  cudaGraph_t cuda_graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ModelStats stats;

  ~Impl() {
    if (exec) cudaGraphExecDestroy(exec);
    if (cuda_graph) cudaGraphDestroy(cuda_graph);
  }

  void enqueue(const std::vector<bool>* keep = nullptr) {
    for (size_t k = 0; k < steps.size(); ++k)
      if (!keep || (*keep)[k]) steps[k].run();
  }

  void launch() {
    if (exec) TGR_GPU_CHECK(cudaGraphLaunch(exec, gpu->stream), (Where{"replay"}));
    else enqueue();
  }

  void sync(const char* phase) { TGR_GPU_CHECK(cudaStreamSynchronize(gpu->stream), (Where{phase})); }

  // Captures the steps as one CUDA graph; on failure the model runs step by step.
  void capture() {
    const Where where{"capture"};
    TGR_GPU_CHECK(cudaStreamBeginCapture(gpu->stream, cudaStreamCaptureModeThreadLocal), where);
    try {
      enqueue();
    } catch (...) {
      cudaGraph_t broken = nullptr;
      cudaStreamEndCapture(gpu->stream, &broken);
      if (broken) cudaGraphDestroy(broken);
      throw;
    }
    TGR_GPU_CHECK(cudaStreamEndCapture(gpu->stream, &cuda_graph), where);
    TGR_GPU_CHECK(cudaGraphInstantiate(&exec, cuda_graph, 0), where);
  }
};

GpuModel::GpuModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GpuModel::GpuModel(GpuModel&&) noexcept = default;
GpuModel& GpuModel::operator=(GpuModel&&) noexcept = default;
GpuModel::~GpuModel() = default;

GpuModel GpuModel::load(const Graph& graph, const GpuOptions& options) {
  if (!gpu_available()) throw GpuError("load: no CUDA device is visible");
  auto m = std::make_unique<Impl>();
  m->graph = graph;
  m->options = options;
  try {
    PlanOptions plan_options;
    plan_options.fuse = options.fuse;
    plan_options.precision = options.precision;
    plan_options.attention = options.attention;
    m->plan = make_execution_plan(m->graph, plan_options);
  } catch (const std::invalid_argument& e) {
    throw GpuError(e.what());
  }
  m->gpu = std::make_unique<GpuContext>();
  m->arena = DeviceBuffer(static_cast<size_t>(m->plan.arena_bytes), "arena");
  m->weights = DeviceBuffer(static_cast<size_t>(m->plan.weight_bytes), "weights");
  // Constants (weights and values folded at load).
  const auto& nodes = m->graph.nodes();
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const ValueSlot& s : m->plan.slots[i]) {
      if (s.home != ValueSlot::Home::kConstant) continue;
      const ConstantValue& c = m->plan.constants[s.constant];
      const std::vector<char> bytes = stored_bytes(c, s);
      TGR_GPU_CHECK(cudaMemcpy(m->weights.data() + s.offset, bytes.data(), bytes.size(), cudaMemcpyHostToDevice),
                    (Where{"upload", static_cast<int>(i), nodes[i].name}));
    }
  LowerCtx ctx{m->graph, m->plan, *m->gpu, m->arena.data(), m->weights.data(), options.conv_workspace_limit};
  ctx.conv_choice = options.conv_choice;
  ctx.compile_elementwise = options.compile_elementwise;
  ctx.compiled_programs = &m->stats.compiled_programs;
  ctx.interpreted_programs = &m->stats.interpreted_programs;
  for (size_t t = 0; t < m->plan.tasks.size(); ++t) {
    Step s = lower_task(ctx, m->plan.tasks[t], t);
    if (s.run) m->steps.push_back(std::move(s));
  }
  // Exactly what the chosen algorithms need (timing their rivals at load may have grown it).
  if (m->gpu->conv_workspace.bytes() != m->gpu->conv_workspace_needed)
    m->gpu->conv_workspace = DeviceBuffer(m->gpu->conv_workspace_needed, "convolution workspace");
  // One eager run loads every kernel before capture (and reports errors by node).
  m->enqueue();
  m->sync("first run");
  if (options.cuda_graph) m->capture();
  ModelStats& st = m->stats;
  st.graph_ops = m->graph.num_ops();
  st.steps = static_cast<int>(m->steps.size());
  st.folded = m->plan.folded_nodes;
  st.fused = m->plan.fused_nodes;
  st.arena_bytes = m->plan.arena_bytes;
  st.unshared_bytes = m->plan.unshared_bytes;
  st.weight_bytes = m->plan.weight_bytes;
  st.workspace_bytes = static_cast<int64_t>(m->gpu->conv_workspace.bytes());
  st.cuda_graph = m->exec != nullptr;
  return GpuModel(std::move(m));
}

void GpuModel::set_inputs(std::span<const ConstantValue> inputs) {
  const Graph& g = impl_->graph;
  if (inputs.size() != g.inputs().size())
    throw GpuError("run: the graph has " + std::to_string(g.inputs().size()) + " inputs, given " +
                   std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int32_t node = g.inputs()[i];
    const Node& n = g.node(node);
    const ConstantValue& v = inputs[i];
    if (v.dtype != n.output_dtypes[0] || v.shape() != n.output_shapes[0])
      throw GpuError("run: input '" + n.name + "' is " + std::string(dtype_name(n.output_dtypes[0])) + " " +
                     shape_to_string(n.output_shapes[0]) + ", given " + std::string(dtype_name(v.dtype)) + " " +
                     shape_to_string(v.shape()));
    const ValueSlot& s = impl_->plan.slot({node, 0});
    const std::vector<char> bytes = stored_bytes(v, s);
    // Synchronous: `bytes` is a temporary.
    TGR_GPU_CHECK(cudaMemcpy(impl_->arena.data() + s.offset, bytes.data(), bytes.size(), cudaMemcpyHostToDevice),
                  (Where{"input", node, n.name}));
  }
  impl_->sync("inputs");
}

void GpuModel::execute() {
  impl_->launch();
  impl_->sync("run");
}

std::vector<ConstantValue> GpuModel::outputs() const {
  const Graph& g = impl_->graph;
  std::vector<ConstantValue> out;
  for (ValueRef v : g.outputs()) {
    const ValueSlot& s = impl_->plan.slot(v);
    const char* base = s.home == ValueSlot::Home::kConstant ? impl_->weights.data() : impl_->arena.data();
    ConstantValue c;
    c.dtype = g.dtype(v);
    std::vector<char> bytes(static_cast<size_t>(s.bytes));
    TGR_GPU_CHECK(cudaMemcpy(bytes.data(), base + s.offset, bytes.size(), cudaMemcpyDeviceToHost),
                  (Where{"output", v.node, g.node(v.node).name}));
    if (c.is_float()) {
      c.real = Tensor<float>(g.shape(v));
      decode_floats(bytes.data(), s.storage, c.real.data);
    } else {
      c.ints = Tensor<int64_t>(g.shape(v));
      std::memcpy(c.ints.data.data(), bytes.data(), bytes.size());
    }
    out.push_back(std::move(c));
  }
  return out;
}

void* GpuModel::input_data(size_t i) const {
  const Graph& g = impl_->graph;
  if (i >= g.inputs().size())
    throw GpuError("input " + std::to_string(i) + ": the graph has " + std::to_string(g.inputs().size()) + " inputs");
  return impl_->arena.data() + impl_->plan.slot({g.inputs()[i], 0}).offset;
}

const void* GpuModel::output_data(size_t k) const {
  const Graph& g = impl_->graph;
  if (k >= g.outputs().size())
    throw GpuError("output " + std::to_string(k) + ": the graph has " + std::to_string(g.outputs().size()) +
                   " outputs");
  const ValueSlot& s = impl_->plan.slot(g.outputs()[k]);
  return (s.home == ValueSlot::Home::kConstant ? impl_->weights.data() : impl_->arena.data()) + s.offset;
}

void GpuModel::launch() { impl_->launch(); }

void* GpuModel::stream() const { return impl_->gpu->stream; }

std::vector<ConstantValue> GpuModel::run(std::span<const ConstantValue> inputs) {
  set_inputs(inputs);
  execute();
  return outputs();
}

namespace {

struct Events {
  std::vector<cudaEvent_t> e;
  explicit Events(size_t n) : e(n, nullptr) {
    for (auto& x : e) TGR_GPU_CHECK(cudaEventCreate(&x), (Where{"timing"}));
  }
  ~Events() {
    for (auto& x : e)
      if (x) cudaEventDestroy(x);
  }
  float ms(size_t a, size_t b) const {
    float t = 0;
    TGR_GPU_CHECK(cudaEventElapsedTime(&t, e[a], e[b]), (Where{"timing"}));
    return t;
  }
};

// Median time of `launch` on `stream` over `iters` runs after `warmup`, by CUDA events.
double median_launch_ms(const std::function<void()>& launch, cudaStream_t stream, int iters, int warmup) {
  const Where where{"timing"};
  for (int i = 0; i < warmup; ++i) launch();
  TGR_GPU_CHECK(cudaStreamSynchronize(stream), where);
  Events ev(2);
  std::vector<double> times;
  for (int i = 0; i < iters; ++i) {
    TGR_GPU_CHECK(cudaEventRecord(ev.e[0], stream), where);
    launch();
    TGR_GPU_CHECK(cudaEventRecord(ev.e[1], stream), where);
    TGR_GPU_CHECK(cudaStreamSynchronize(stream), where);
    times.push_back(ev.ms(0, 1));
  }
  return median(times);
}

}  // namespace

double GpuModel::replay_ms(int iters, int warmup) {
  Impl& m = *impl_;
  return median_launch_ms([&] { m.launch(); }, m.gpu->stream, iters, warmup);
}

std::vector<StepTime> GpuModel::profile(int iters) {
  Impl& m = *impl_;
  const size_t n = m.steps.size();
  Events ev(n + 1);
  // Enough delay for the host to enqueue every step (~30 us each), in whole milliseconds.
  const int64_t cycles =
      delay_cycles(1000.0 * static_cast<double>(1 + static_cast<int64_t>(n) * 30 / 1000), Where{"profile"});
  std::vector<std::vector<double>> times(n);
  for (int it = 0; it < iters + 1; ++it) {
    launch_delay(cycles, m.gpu->stream);
    TGR_GPU_CHECK(cudaEventRecord(ev.e[0], m.gpu->stream), (Where{"profile"}));
    for (size_t k = 0; k < n; ++k) {
      m.steps[k].run();
      TGR_GPU_CHECK(cudaEventRecord(ev.e[k + 1], m.gpu->stream), (Where{"profile"}));
    }
    m.sync("profile");
    if (it == 0) continue;  // warm-up
    for (size_t k = 0; k < n; ++k) times[k].push_back(ev.ms(k, k + 1));
  }
  std::vector<StepTime> out;
  for (size_t k = 0; k < n; ++k) out.push_back({m.steps[k].label, m.steps[k].node, median(times[k])});
  return out;
}

std::vector<StepTime> GpuModel::steps() const {
  std::vector<StepTime> out;
  for (const Step& s : impl_->steps) out.push_back({s.label, s.node, 0});
  return out;
}

double GpuModel::replay_ms_keeping(const std::vector<bool>& keep, int iters, int warmup) {
  Impl& m = *impl_;
  if (keep.size() != m.steps.size())
    throw GpuError("replay: " + std::to_string(keep.size()) + " step marks for " + std::to_string(m.steps.size()) +
                   " steps");
  const Where where{"partial replay"};
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  TGR_GPU_CHECK(cudaStreamBeginCapture(m.gpu->stream, cudaStreamCaptureModeThreadLocal), where);
  try {
    m.enqueue(&keep);
  } catch (...) {
    cudaStreamEndCapture(m.gpu->stream, &graph);
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  TGR_GPU_CHECK(cudaStreamEndCapture(m.gpu->stream, &graph), where);
  double ms = 0;
  try {
    TGR_GPU_CHECK(cudaGraphInstantiate(&exec, graph, 0), where);
    ms = median_launch_ms([&] { TGR_GPU_CHECK(cudaGraphLaunch(exec, m.gpu->stream), where); }, m.gpu->stream, iters,
                          warmup);
  } catch (...) {
    if (exec) cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    throw;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return ms;
}

const ModelStats& GpuModel::stats() const { return impl_->stats; }

std::string GpuModel::device_name() const {
  int device = 0;
  cudaGetDevice(&device);
  cudaDeviceProp prop{};
  TGR_GPU_CHECK(cudaGetDeviceProperties(&prop, device), (Where{"device"}));
  return prop.name;
}

}  // namespace tgr::gpu
