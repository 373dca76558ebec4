#include "tgr/session.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "onnx/onnx_import.h"
#include "runtime/views.h"

#ifdef TGR_HAVE_CUDA
#include <cuda_runtime.h>

#include "rules_db/rules_db.h"
#include "runtime/cuda/device_info.h"
#include "runtime/cuda/gpu_error.h"
#include "runtime/cuda/gpu_model.h"
#include "runtime/kernel_choices.h"
#include "runtime/precision.h"
#endif

namespace tgr {

const char* element_type_name(ElementType type) {
  switch (type) {
    case ElementType::kFloat32:
      return "float32";
    case ElementType::kInt64:
      return "int64";
    case ElementType::kBool:
      return "bool";
    case ElementType::kBFloat16:
      return "bfloat16";
    case ElementType::kFloat16:
      return "float16";
  }
  return "?";
}

int64_t TensorInfo::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

// The graph type an element type stands for, and back (one mapping: the
// session's types are the graph's, float32 named as the public API names it).
DType graph_dtype(ElementType t) {
  switch (t) {
    case ElementType::kFloat32:
      return DType::kFloat;
    case ElementType::kInt64:
      return DType::kInt64;
    case ElementType::kBool:
      return DType::kBool;
    case ElementType::kBFloat16:
      return DType::kBFloat16;
    case ElementType::kFloat16:
      return DType::kFloat16;
  }
  return DType::kFloat;
}

}  // namespace

size_t TensorInfo::device_bytes() const {
  return static_cast<size_t>(elements() * device_element_bytes(graph_dtype(device_type)));  // bool: 8, as int64
}

HostTensor HostTensor::float32(std::vector<int64_t> shape, std::vector<float> values) {
  HostTensor t;
  t.shape = std::move(shape);
  t.floats = std::move(values);
  return t;
}

HostTensor HostTensor::int64(std::vector<int64_t> shape, std::vector<int64_t> values) {
  HostTensor t;
  t.type = ElementType::kInt64;
  t.shape = std::move(shape);
  t.ints = std::move(values);
  return t;
}

HostTensor HostTensor::filled(const TensorInfo& info, double value) {
  HostTensor t;
  t.type = info.type;
  t.shape = info.shape;
  if (info.type == ElementType::kFloat32)
    t.floats.assign(static_cast<size_t>(info.elements()), static_cast<float>(value));
  else t.ints.assign(static_cast<size_t>(info.elements()), static_cast<int64_t>(value));
  return t;
}

#ifdef TGR_HAVE_CUDA

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s;
  for (int64_t d : shape) {
    if (!s.empty()) s += 'x';
    s += std::to_string(d);
  }
  return s.empty() ? "scalar" : s;
}

// What a tensor given for `t` must be: host tensors of its type, device
// tensors of its device type.
ElementType expected_type(const TensorInfo& t, const HostTensor*) { return t.type; }
ElementType expected_type(const TensorInfo& t, const DeviceTensor*) { return t.device_type; }

// The index of `name` in `infos`; raises naming the model's inputs.
size_t index_of(const std::vector<TensorInfo>& infos, const std::string& name) {
  for (size_t i = 0; i < infos.size(); ++i)
    if (infos[i].name == name) return i;
  std::string names;
  for (const auto& t : infos) names += (names.empty() ? "" : ", ") + t.name;
  throw SessionError("the model has no input '" + name + "' (its inputs: " + names + ")");
}

// The tensors given by name, in the model's order; raises for a missing,
// unknown or mistyped one.
template <class Tensor>
std::vector<const Tensor*> in_model_order(const std::vector<TensorInfo>& infos,
                                          const std::map<std::string, Tensor>& given) {
  std::vector<const Tensor*> ordered(infos.size(), nullptr);
  for (const auto& [name, tensor] : given) {
    const size_t i = index_of(infos, name);
    const ElementType want = expected_type(infos[i], &tensor);
    if (tensor.type != want || tensor.shape != infos[i].shape)
      throw SessionError("input '" + name + "' is " + element_type_name(want) + " " + shape_text(infos[i].shape) +
                         (want != infos[i].type ? " on the GPU" : "") + ", given " + element_type_name(tensor.type) +
                         " " + shape_text(tensor.shape));
    ordered[i] = &tensor;
  }
  for (size_t i = 0; i < infos.size(); ++i)
    if (!ordered[i]) throw SessionError("no tensor given for the model's input '" + infos[i].name + "'");
  return ordered;
}

bool is_half(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

// The graph's half type a device type holds, nullopt for the others.
std::optional<DType> half_dtype(ElementType t) {
  const DType d = graph_dtype(t);
  return is_half(d) ? std::optional(d) : std::nullopt;
}

// The session's type for graph type `t` (graph_dtype's inverse).
ElementType element_type(DType t) {
  switch (t) {
    case DType::kFloat:
      return ElementType::kFloat32;
    case DType::kInt64:
      return ElementType::kInt64;
    case DType::kBool:
      return ElementType::kBool;
    case DType::kFloat16:
      return ElementType::kFloat16;
    case DType::kBFloat16:
      return ElementType::kBFloat16;
  }
  return ElementType::kFloat32;
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw SessionError(std::string(what) + ": " + cudaGetErrorString(status));
}

// The stream-ordered memory pool of a session's outputs: kept alive by every
// output allocated from it, so that outputs outlive their session.
std::shared_ptr<CUmemPoolHandle_st> make_output_pool(int device) {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  check(cudaMemPoolCreate(&pool, &props), "creating the output memory pool");
  // Freed memory stays in the pool for the next run's outputs.
  uint64_t keep = UINT64_MAX;
  cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  return std::shared_ptr<CUmemPoolHandle_st>(pool, [](cudaMemPool_t p) { cudaMemPoolDestroy(p); });
}

}  // namespace

struct Session::Impl {
  std::string path;
  std::vector<TensorInfo> inputs, outputs;
  std::unique_ptr<gpu::GpuModel> model;
  std::shared_ptr<CUmemPoolHandle_st> output_pool;
  cudaEvent_t inputs_ready = nullptr;  // recorded on a caller's wait_stream
  int device = 0;
  size_t stored_choices = 0;

  ~Impl() {
    if (inputs_ready) cudaEventDestroy(inputs_ready);
  }
  cudaStream_t stream() const { return static_cast<cudaStream_t>(model->stream()); }
  [[noreturn]] void fail(const std::string& what) const { throw SessionError("'" + path + "': " + what); }

  // Copies each input in (host or device memory: cudaMemcpyDefault), runs,
  // copies each output out, then waits.
  void run(const std::vector<const void*>& in, const std::vector<void*>& out, cudaStream_t wait_stream) {
    if (wait_stream) {
      check(cudaEventRecord(inputs_ready, wait_stream), "waiting for the caller's stream");
      check(cudaStreamWaitEvent(stream(), inputs_ready, 0), "waiting for the caller's stream");
    }
    try {
      for (size_t i = 0; i < in.size(); ++i)
        check(cudaMemcpyAsync(model->input_data(i), in[i], inputs[i].device_bytes(), cudaMemcpyDefault, stream()),
              ("copying input '" + inputs[i].name + "'").c_str());
      model->launch();
      for (size_t k = 0; k < out.size(); ++k)
        check(cudaMemcpyAsync(out[k], model->output_data(k), outputs[k].device_bytes(), cudaMemcpyDefault, stream()),
              ("copying output '" + outputs[k].name + "'").c_str());
      check(cudaStreamSynchronize(stream()), "run");
    } catch (const gpu::GpuError& e) {
      fail(e.what());
    }
  }
};

Session::Session(const std::string& model_path, const SessionOptions& options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.path = model_path;
  if (!gpu::gpu_available()) m.fail("no CUDA device is visible (a GPU session needs an NVIDIA GPU and its driver)");
  check(cudaGetDevice(&m.device), "the current CUDA device");
  onnx_io::ImportOptions import_options;
  for (const auto& [name, dims] : options.input_shapes) import_options.input_shapes[name] = dims;
  onnx_io::ImportedModel imported;
  try {
    imported = onnx_io::import_model_file(model_path, import_options);
  } catch (const std::exception& e) {
    m.fail(e.what());
  }
  const Graph& graph = imported.graph;
  auto boundary_type = [&](const char* kind, const std::string& name, DType t) {
    // A half-typed model boundary is refused: the session's half types are the storage of float32 values.
    if (!is_half(t)) return element_type(t);
    m.fail(std::string(kind) + " '" + name + "' is " + std::string(dtype_name(t)) +
           ": the GPU session takes float32, int64 and bool inputs and outputs (keep the model's boundary float32: "
           "optimize --convert-to without --convert-io, and SessionOptions::precision for half storage)");
  };
  for (int32_t node : graph.inputs()) {
    const Node& n = graph.node(node);
    m.inputs.push_back({n.name, boundary_type("input", n.name, n.output_dtypes[0]), n.output_shapes[0]});
  }
  for (size_t k = 0; k < graph.outputs().size(); ++k) {
    const ValueRef v = graph.outputs()[k];
    const std::string& name = graph.output_names().at(k);
    m.outputs.push_back({name, boundary_type("output", name, graph.dtype(v)), graph.shape(v)});
  }
  const std::optional<Precision> precision = parse_precision(options.precision);
  if (!precision) m.fail("precision '" + options.precision + "' is not one of " + std::string(kPrecisionNames));
  // At bf16/fp16 the model's float32 input and output slots hold the half
  // type (the execution plan's storage), and the session copies device bytes.
  const ElementType float_device_type = element_type(storage_dtype(DType::kFloat, *precision));
  for (auto* infos : {&m.inputs, &m.outputs})
    for (TensorInfo& t : *infos) t.device_type = t.type == ElementType::kFloat32 ? float_device_type : t.type;
  if (!options.costs_db.empty()) {
    const auto stored =
        rules_db::RulesDb::open_read_only(options.costs_db).kernel_choices(gpu_device_name(), gpu_library_versions());
    KernelChoices::process().seed(stored);
    m.stored_choices = stored.size();
  }
  gpu::GpuOptions gpu_options;
  gpu_options.cuda_graph = options.cuda_graph;
  gpu_options.precision = *precision;
  try {
    m.model = std::make_unique<gpu::GpuModel>(gpu::GpuModel::load(graph, gpu_options));
  } catch (const gpu::GpuError& e) {
    m.fail(e.what());
  }
  check(cudaEventCreateWithFlags(&m.inputs_ready, cudaEventDisableTiming), "creating an event");
  m.output_pool = make_output_pool(m.device);
}

void Session::run_buffers(const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
                          void* wait_stream) {
  Impl& m = *impl_;
  if (inputs.size() != m.inputs.size() || outputs.size() != m.outputs.size())
    m.fail("run: the model has " + std::to_string(m.inputs.size()) + " inputs and " + std::to_string(m.outputs.size()) +
           " outputs, given " + std::to_string(inputs.size()) + " and " + std::to_string(outputs.size()));
  m.run(inputs, outputs, static_cast<cudaStream_t>(wait_stream));
}

std::map<std::string, HostTensor> Session::run(const std::map<std::string, HostTensor>& inputs) {
  Impl& m = *impl_;
  std::vector<const void*> in;
  std::vector<std::vector<uint16_t>> half_inputs;  // float32 values in the half type the GPU holds
  half_inputs.reserve(m.inputs.size());
  size_t i = 0;
  for (const HostTensor* t : in_model_order(m.inputs, inputs)) {
    const TensorInfo& info = m.inputs[i++];
    const bool is_float = t->type == ElementType::kFloat32;
    const size_t count = is_float ? t->floats.size() : t->ints.size();
    if (static_cast<int64_t>(count) != info.elements())
      m.fail("an input of shape " + shape_text(t->shape) + " holds " + std::to_string(count) + " values");
    if (!is_float) {
      in.push_back(t->ints.data());
    } else if (const std::optional<DType> half = half_dtype(info.device_type)) {
      half_inputs.emplace_back(count);
      encode_floats(t->floats, *half, half_inputs.back().data());
      in.push_back(half_inputs.back().data());
    } else {
      in.push_back(t->floats.data());
    }
  }
  std::map<std::string, HostTensor> result;
  std::vector<void*> out;
  std::vector<std::vector<uint16_t>> half_outputs(m.outputs.size());
  for (size_t k = 0; k < m.outputs.size(); ++k) {
    const TensorInfo& info = m.outputs[k];
    HostTensor& t = result[info.name] = HostTensor::filled(info, 0);
    if (info.type != ElementType::kFloat32) {
      out.push_back(t.ints.data());
    } else if (half_dtype(info.device_type)) {
      half_outputs[k].resize(t.floats.size());
      out.push_back(half_outputs[k].data());
    } else {
      out.push_back(t.floats.data());
    }
  }
  m.run(in, out, nullptr);
  for (size_t k = 0; k < m.outputs.size(); ++k)
    if (const std::optional<DType> half = half_dtype(m.outputs[k].device_type))
      decode_floats(half_outputs[k].data(), *half, result[m.outputs[k].name].floats);
  return result;
}

DeviceTensor Session::allocate_output(size_t k) {
  Impl& m = *impl_;
  const TensorInfo& info = m.outputs.at(k);
  void* data = nullptr;
  check(cudaMallocFromPoolAsync(&data, std::max<size_t>(info.device_bytes(), 1), m.output_pool.get(), m.stream()),
        ("allocating output '" + info.name + "'").c_str());
  DeviceTensor t;
  t.type = info.device_type;
  t.shape = info.shape;
  t.data = data;
  t.device = m.device;
  // Freed once every stream's work so far is done: a framework may still
  // read it on its own stream when it drops its last reference.
  t.owner = std::shared_ptr<void>(data, [pool = m.output_pool, device = m.device](void* p) {
    int current = 0;
    cudaGetDevice(&current);
    cudaSetDevice(device);
    cudaDeviceSynchronize();
    cudaFreeAsync(p, cudaStreamLegacy);
    cudaSetDevice(current);
  });
  return t;
}

std::map<std::string, DeviceTensor> Session::run_on_device(const std::map<std::string, DeviceTensor>& inputs,
                                                           void* wait_stream) {
  Impl& m = *impl_;
  std::vector<const void*> in;
  for (const DeviceTensor* t : in_model_order(m.inputs, inputs)) {
    if (t->device != m.device)
      m.fail("an input is on GPU " + std::to_string(t->device) + ", the session on GPU " + std::to_string(m.device));
    in.push_back(t->data);
  }
  std::map<std::string, DeviceTensor> result;
  std::vector<void*> out;
  for (size_t k = 0; k < m.outputs.size(); ++k) out.push_back((result[m.outputs[k].name] = allocate_output(k)).data);
  m.run(in, out, static_cast<cudaStream_t>(wait_stream));
  return result;
}

void* Session::stream() const { return impl_->model->stream(); }
int Session::device() const { return impl_->device; }
std::string Session::device_name() const { return impl_->model->device_name(); }
size_t Session::stored_kernel_choices() const { return impl_->stored_choices; }

double Session::replay_ms(int iters, int warmup) {
  try {
    return impl_->model->replay_ms(iters, warmup);
  } catch (const gpu::GpuError& e) {
    impl_->fail(e.what());
  }
}

bool Session::built_with_cuda() { return true; }
bool Session::gpu_available() { return gpu::gpu_available(); }

#else  // a build without CUDA: every session is refused, saying why.

struct Session::Impl {
  std::vector<TensorInfo> inputs, outputs;
};

namespace {
[[noreturn]] void no_cuda(const std::string& path) {
  throw SessionError("'" + path +
                     "': this tgr was built without CUDA (the CUDA toolkit, cuBLAS or cuDNN was not found when it "
                     "was built), so it has no GPU session; build it where they are (docs/library.md)");
}
}  // namespace

Session::Session(const std::string& model_path, const SessionOptions&) { no_cuda(model_path); }
void Session::run_buffers(const std::vector<const void*>&, const std::vector<void*>&, void*) { no_cuda(""); }
std::map<std::string, HostTensor> Session::run(const std::map<std::string, HostTensor>&) { no_cuda(""); }
DeviceTensor Session::allocate_output(size_t) { no_cuda(""); }
std::map<std::string, DeviceTensor> Session::run_on_device(const std::map<std::string, DeviceTensor>&, void*) {
  no_cuda("");
}
void* Session::stream() const { return nullptr; }
int Session::device() const { return 0; }
std::string Session::device_name() const { return ""; }
size_t Session::stored_kernel_choices() const { return 0; }
double Session::replay_ms(int, int) { no_cuda(""); }
bool Session::built_with_cuda() { return false; }
bool Session::gpu_available() { return false; }

#endif

Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;
const std::vector<TensorInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<TensorInfo>& Session::outputs() const { return impl_->outputs; }

}  // namespace tgr
