// tgr::Session: an ONNX model (optimized by `optimize`, or any model tgr
// imports) loaded once onto tgr's CUDA runtime and run many times. This is the
// C++ library's public header: `cmake --install` puts it in
// PREFIX/include/tgr/session.h, and `find_package(tgr)` +
// `target_link_libraries(app PRIVATE tgr::runtime)` links it (docs/library.md).
//
// Loading does once what `bench` does before it times a model: import at fixed
// input shapes, the execution plan (folding, fusion, views), one arena for
// every intermediate value by the memory plan, the kernel choices (read from
// a costs database of `calibrate` when given, else timed at load), and the
// whole model captured as one CUDA graph. A run copies the inputs into the
// model's input buffers, replays the graph and copies the outputs out, all on
// the session's stream, then waits for it.
//
//   tgr::Session session("model.opt.onnx");
//   auto outputs = session.run({{"x", tgr::HostTensor::float32({1, 3, 224, 224}, pixels)}});
//
// Errors raise tgr::SessionError whose message names the model, the input or
// what is missing ("no CUDA device is visible", "built without CUDA").
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace tgr {

class SessionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The element types of a model's inputs and outputs, and of what the GPU
// holds for them. On the GPU a bool is held in 8 bytes, as an int64 0 or 1;
// at precision bf16 or fp16 a float32 value is held in bfloat16 or float16.
enum class ElementType : uint8_t { kFloat32, kInt64, kBool, kBFloat16, kFloat16 };
const char* element_type_name(ElementType type);  // "float32", "int64", "bool", "bfloat16", "float16"

// A model input or output: its name in the ONNX file, type and fixed shape.
struct TensorInfo {
  std::string name;
  ElementType type = ElementType::kFloat32;
  std::vector<int64_t> shape;
  // What the GPU holds it in: `type`, except a float32 at precision bf16 or
  // fp16 (SessionOptions::precision), held in bfloat16 or float16. Device
  // tensors and run_buffers' buffers are of this type.
  ElementType device_type = ElementType::kFloat32;
  int64_t elements() const;
  size_t device_bytes() const;  // its bytes on the GPU (8 per element for int64 and bool, 2 for the half types)
};

// A row-major tensor in host memory: float32 values in `floats`, int64 and
// bool (0 or 1) values in `ints`.
struct HostTensor {
  ElementType type = ElementType::kFloat32;
  std::vector<int64_t> shape;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  static HostTensor float32(std::vector<int64_t> shape, std::vector<float> values);
  static HostTensor int64(std::vector<int64_t> shape, std::vector<int64_t> values);
  static HostTensor filled(const TensorInfo& info, double value);  // every element `value`
};

// A row-major tensor in the memory of the session's GPU. An input names
// memory the caller owns (`data`); an output of run_on_device owns its
// allocation (shared by every copy of `owner`, freed with the last one).
struct DeviceTensor {
  ElementType type = ElementType::kFloat32;
  std::vector<int64_t> shape;
  void* data = nullptr;
  std::shared_ptr<void> owner;  // outputs only
  int device = 0;               // the CUDA device ordinal
};

struct SessionOptions {
  // Shapes for inputs with symbolic dimensions (as `--input-shape NAME=DIMS`);
  // every dimension of every input must be fixed after these.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // A rules database whose kernel_choices table `calibrate` filled for this
  // GPU: convolutions then run as calibrate timed them. Empty: each choice is
  // timed at load.
  std::string costs_db;
  bool cuda_graph = true;  // false: launch the steps one by one at each run
  // How the model runs on the GPU, as `bench --precision` (docs/gpu.md):
  // "fp32" (float32, TF32 off), "tf32" (float32 products and convolutions on
  // TF32 tensor cores), "bf16" or "fp16" (every float value stored in that
  // half type, its inputs and outputs too: TensorInfo::device_type). Any
  // other name raises SessionError.
  std::string precision = "fp32";
};

class Session {
 public:
  // Loads `model_path` onto the current CUDA device. Raises SessionError
  // without a GPU, in a build without CUDA, and for a model the runtime
  // cannot run (naming the node).
  explicit Session(const std::string& model_path, const SessionOptions& options = {});
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  const std::vector<TensorInfo>& inputs() const;   // in the model's order
  const std::vector<TensorInfo>& outputs() const;  // in the model's order

  // One run on host tensors, one per input by name (each of the input's type
  // and shape: float32 values whatever the precision, converted to and from
  // the half type the GPU holds at bf16 and fp16); returns every output by name.
  std::map<std::string, HostTensor> run(const std::map<std::string, HostTensor>& inputs);

  // One run on tensors in GPU memory, each of its TensorInfo::device_type
  // (bfloat16 for a float32 input at bf16): each input is copied device to device
  // into the model's input buffer (the CUDA graph reads fixed addresses), and
  // each output into a new device allocation the returned tensor owns. No
  // host copy. `wait_stream` (a cudaStream_t, may be null): the run starts
  // after the work queued there so far (a framework's stream that wrote the
  // inputs). Returns after the run finished.
  std::map<std::string, DeviceTensor> run_on_device(const std::map<std::string, DeviceTensor>& inputs,
                                                    void* wait_stream = nullptr);

  // The lowest level: input i's values at inputs[i] and room for output k's
  // at outputs[k] (the order of inputs() and outputs()), row-major in their
  // device type (TensorInfo::device_type: int64 for int64 and bool, the half
  // type for float32 at bf16 and fp16), each in host or GPU memory (copied
  // with cudaMemcpyDefault). `wait_stream` as above.
  void run_buffers(const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
                   void* wait_stream = nullptr);
  // A new device allocation for output k, as run_on_device returns it.
  DeviceTensor allocate_output(size_t k);

  // The session's CUDA stream (a cudaStream_t) and device ordinal.
  void* stream() const;
  int device() const;
  std::string device_name() const;
  // Median time of one graph replay (no copies) over `iters` after `warmup`,
  // by CUDA events: what `bench` reports for the model.
  double replay_ms(int iters = 100, int warmup = 10);
  size_t stored_kernel_choices() const;  // read from options.costs_db at load

  static bool built_with_cuda();
  static bool gpu_available();  // false without CUDA

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tgr
