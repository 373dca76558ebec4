// tgr._tgr.GpuSession and DeviceArray: tgr::Session (tgr/session.h) for the
// package's tgr.Session (python/tgr/session.py), which prepares the inputs:
// each is either a C-contiguous NumPy array of the input's device type
// (float32; int64 for int64 and bool inputs; at bf16 and fp16 a float32
// input's half type, as its uint16 bits: encode_half) or a DLPack
// capsule of a tensor of that type in the session GPU's memory. Outputs come back as NumPy arrays or as
// DeviceArray objects, which hand their memory to torch.from_dlpack,
// cupy.from_dlpack and the like without a copy.
#include "python/session_bindings.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "python/dlpack_abi.h"
#include "runtime/precision.h"
#include "tgr/session.h"

namespace py = pybind11;

namespace tgr::python {
namespace {

constexpr const char* kCapsuleName = "dltensor";
constexpr const char* kUsedCapsuleName = "used_dltensor";

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s;
  for (int64_t d : shape) {
    if (!s.empty()) s += 'x';
    s += std::to_string(d);
  }
  return s.empty() ? "scalar" : s;
}

// A device type's DLPack type (bool is held as int64 on the GPU: tgr/session.h).
dlpack::DataType dlpack_type(ElementType t) {
  switch (t) {
    case ElementType::kFloat32:
      return {dlpack::kFloat, 32, 1};
    case ElementType::kBFloat16:
      return {dlpack::kBfloat, 16, 1};
    case ElementType::kFloat16:
      return {dlpack::kFloat, 16, 1};
    case ElementType::kInt64:
    case ElementType::kBool:
      break;
  }
  return {dlpack::kInt, 64, 1};
}

// Calls `f` with a value of the C++ type of a device type's host buffers:
// run() passes NumPy arrays of it, a half type as its bits (uint16:
// encode_half; NumPy has no bfloat16), bool as int64.
template <class F>
auto with_host_type(ElementType t, F f) {
  switch (t) {
    case ElementType::kFloat32:
      return f(float{});
    case ElementType::kBFloat16:
    case ElementType::kFloat16:
      return f(uint16_t{});
    case ElementType::kInt64:
    case ElementType::kBool:
      break;
  }
  return f(int64_t{});
}

py::dtype numpy_type(ElementType t) {
  return with_host_type(t, [](auto v) { return py::dtype::of<decltype(v)>(); });
}

// An output on the GPU: its allocation is shared by every capsule handed out.
class DeviceArray {
 public:
  explicit DeviceArray(DeviceTensor t) : t_(std::move(t)) {}

  py::tuple shape() const {
    py::tuple s(t_.shape.size());
    for (size_t i = 0; i < t_.shape.size(); ++i) s[i] = t_.shape[i];
    return s;
  }
  std::string dtype() const { return t_.type == ElementType::kBool ? "int64" : element_type_name(t_.type); }
  int device() const { return t_.device; }
  uintptr_t data_ptr() const { return reinterpret_cast<uintptr_t>(t_.data); }
  py::tuple dlpack_device() const { return py::make_tuple(static_cast<int>(dlpack::kCUDA), t_.device); }

  // __dlpack__: the run that wrote this array had finished when it returned,
  // so the consumer's stream needs no wait and `stream` is not used.
  py::capsule dlpack() const {
    struct Context {
      std::shared_ptr<void> owner;
      std::vector<int64_t> shape;
    };
    auto* context = new Context{t_.owner, t_.shape};
    auto* managed = new dlpack::ManagedTensor{};
    managed->dl_tensor.data = t_.data;
    managed->dl_tensor.device = {dlpack::kCUDA, t_.device};
    managed->dl_tensor.ndim = static_cast<int32_t>(context->shape.size());
    managed->dl_tensor.dtype = dlpack_type(t_.type);
    managed->dl_tensor.shape = context->shape.data();
    managed->manager_ctx = context;
    managed->deleter = [](dlpack::ManagedTensor* self) {
      delete static_cast<Context*>(self->manager_ctx);
      delete self;
    };
    PyObject* capsule = PyCapsule_New(managed, kCapsuleName, [](PyObject* c) {
      // Not consumed (still "dltensor"): nobody took ownership, so free it here.
      if (PyCapsule_IsValid(c, kCapsuleName)) {
        auto* m = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(c, kCapsuleName));
        if (m && m->deleter) m->deleter(m);
      }
    });
    if (!capsule) {
      managed->deleter(managed);
      throw py::error_already_set();
    }
    return py::reinterpret_steal<py::capsule>(capsule);
  }

 private:
  DeviceTensor t_;
};

// The DLPack tensors of one run's inputs: marked consumed when read, and
// released (their producers' deleters called) after the run.
class ConsumedInputs {
 public:
  ConsumedInputs() = default;
  ConsumedInputs(const ConsumedInputs&) = delete;
  ConsumedInputs& operator=(const ConsumedInputs&) = delete;
  ~ConsumedInputs() {
    for (dlpack::ManagedTensor* m : taken_)
      if (m->deleter) m->deleter(m);
  }

  // The device address of `capsule`'s tensor, checked against `input`.
  const void* take(const py::capsule& capsule, const TensorInfo& input, int session_device) {
    const std::string what = "input '" + input.name + "'";
    if (!PyCapsule_IsValid(capsule.ptr(), kCapsuleName))
      throw py::value_error(what + ": a DLPack capsule that was already consumed, or not a \"dltensor\" capsule");
    auto* managed = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), kCapsuleName));
    PyCapsule_SetName(capsule.ptr(), kUsedCapsuleName);
    taken_.push_back(managed);
    const dlpack::Tensor& t = managed->dl_tensor;
    if (t.device.device_type != dlpack::kCUDA && t.device.device_type != dlpack::kCUDAManaged)
      throw SessionError(what + ": a DLPack tensor of device type " + std::to_string(t.device.device_type) +
                         " is not in GPU memory (give host tensors as NumPy arrays)");
    if (t.device.device_id != session_device)
      throw SessionError(what + ": the tensor is on GPU " + std::to_string(t.device.device_id) +
                         ", the session on GPU " + std::to_string(session_device));
    const dlpack::DataType want = dlpack_type(input.device_type);
    if (t.dtype.code != want.code || t.dtype.bits != want.bits || t.dtype.lanes != 1)
      throw SessionError(what + " is " + element_type_name(input.device_type) +
                         (input.device_type != input.type ? " on the GPU at this precision" : "") +
                         ", given a DLPack tensor of type code " + std::to_string(t.dtype.code) + ", " +
                         std::to_string(t.dtype.bits) + " bits" +
                         (input.type == ElementType::kBool ? " (a bool input on the GPU is given as int64 0/1)" : ""));
    const std::vector<int64_t> shape(t.shape, t.shape + t.ndim);
    if (shape != input.shape)
      throw SessionError(what + " is " + shape_text(input.shape) + ", given " + shape_text(shape));
    // Row-major and dense (axes of one element may have any stride).
    int64_t expected = 1;
    for (int32_t a = t.ndim - 1; t.strides && a >= 0; --a) {
      if (t.shape[a] != 1 && t.strides[a] != expected)
        throw SessionError(what + ": the tensor is not contiguous (make it so, e.g. .contiguous())");
      expected *= t.shape[a];
    }
    return static_cast<const char*>(t.data) + t.byte_offset;
  }

 private:
  std::vector<dlpack::ManagedTensor*> taken_;
};

class GpuSession {
 public:
  GpuSession(const std::string& path, const std::map<std::string, std::vector<int64_t>>& input_shapes,
             const std::string& costs_db, bool cuda_graph, const std::string& precision) {
    SessionOptions options;
    options.precision = precision;
    options.input_shapes = input_shapes;
    options.costs_db = costs_db;
    options.cuda_graph = cuda_graph;
    py::gil_scoped_release unlocked;
    session_ = std::make_unique<Session>(path, options);
  }

  static py::list infos(const std::vector<TensorInfo>& infos) {
    py::list out;
    for (const TensorInfo& t : infos)
      out.append(py::make_tuple(t.name, element_type_name(t.type), t.shape, element_type_name(t.device_type)));
    return out;
  }
  py::list inputs() const { return infos(session_->inputs()); }
  py::list outputs() const { return infos(session_->outputs()); }
  uintptr_t stream() const { return reinterpret_cast<uintptr_t>(session_->stream()); }
  int device() const { return session_->device(); }
  std::string device_name() const { return session_->device_name(); }
  size_t stored_kernel_choices() const { return session_->stored_kernel_choices(); }
  double replay_ms(int iters, int warmup) {
    py::gil_scoped_release unlocked;
    return session_->replay_ms(iters, warmup);
  }

  // `inputs`: one per model input, in order, each a NumPy array (prepared by
  // tgr.Session) or a DLPack capsule. Returns NumPy arrays, or DeviceArray
  // objects with `on_device`.
  py::list run(const py::list& inputs, bool on_device) {
    const auto& specs = session_->inputs();
    if (inputs.size() != specs.size())
      throw py::value_error("the model has " + std::to_string(specs.size()) + " inputs, given " +
                            std::to_string(inputs.size()));
    ConsumedInputs consumed;
    std::vector<py::array> host_inputs;  // kept alive until the run is done
    std::vector<const void*> in;
    for (size_t i = 0; i < specs.size(); ++i) {
      if (py::isinstance<py::capsule>(inputs[i])) {
        in.push_back(consumed.take(inputs[i].cast<py::capsule>(), specs[i], session_->device()));
      } else {
        host_inputs.push_back(host_input(inputs[i], specs[i]));
        in.push_back(host_inputs.back().data());
      }
    }
    py::list result;
    std::vector<void*> out;
    std::vector<DeviceTensor> device_outputs;
    for (size_t k = 0; k < session_->outputs().size(); ++k) {
      const TensorInfo& info = session_->outputs()[k];
      if (on_device) {
        device_outputs.push_back(session_->allocate_output(k));
        out.push_back(device_outputs.back().data);
      } else {
        // array_t: strides from sizeof(T). py::array(dtype, shape) takes them
        // from the dtype's itemsize, which pybind11 before 2.12 reads at
        // NumPy 1's offset: under NumPy 2 every stride came out 0. A half
        // type comes back as its bits (tgr.Session decodes them).
        py::array a =
            with_host_type(info.device_type, [&](auto v) { return py::array(py::array_t<decltype(v)>(info.shape)); });
        out.push_back(a.mutable_data());
        result.append(a);
      }
    }
    {
      py::gil_scoped_release unlocked;
      session_->run_buffers(in, out);
    }
    for (DeviceTensor& t : device_outputs) result.append(DeviceArray(std::move(t)));
    return result;
  }

 private:
  // A C-contiguous array of the input's device type (numpy_type) and shape
  // (tgr.Session converts; this checks).
  static py::array host_input(const py::handle& value, const TensorInfo& spec) {
    const py::dtype want = numpy_type(spec.device_type);
    if (!py::isinstance<py::array>(value))
      throw py::type_error("input '" + spec.name + "': a NumPy array or a DLPack capsule, given " +
                           std::string(py::str(value.get_type())));
    py::array a = py::reinterpret_borrow<py::array>(value);
    const std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
    if (!a.dtype().is(want) || !(a.flags() & py::array::c_style))
      throw py::type_error("input '" + spec.name + "': a C-contiguous " +
                           std::string(py::str(static_cast<const py::handle&>(want))) + " array");
    if (shape != spec.shape)
      throw SessionError("input '" + spec.name + "' is " + shape_text(spec.shape) + ", given " + shape_text(shape));
    return a;
  }

  std::unique_ptr<Session> session_;
};

// The graph type of a half device type's name ("bfloat16", "float16").
DType half_type(const std::string& name) {
  if (name == element_type_name(ElementType::kBFloat16)) return DType::kBFloat16;
  if (name == element_type_name(ElementType::kFloat16)) return DType::kFloat16;
  throw py::value_error("'" + name + "' is not a half type (bfloat16, float16)");
}

// float32 values as the bits of a half type (rounded to nearest even), and
// back: what tgr.Session's run() passes and gets at precision bf16 and fp16.
py::array_t<uint16_t> encode_half(const py::array_t<float, py::array::c_style | py::array::forcecast>& values,
                                  const std::string& type) {
  py::array_t<uint16_t> bits(std::vector<py::ssize_t>(values.shape(), values.shape() + values.ndim()));
  encode_floats(std::span<const float>(values.data(), static_cast<size_t>(values.size())), half_type(type),
                bits.mutable_data());
  return bits;
}

py::array_t<float> decode_half(const py::array_t<uint16_t, py::array::c_style | py::array::forcecast>& bits,
                               const std::string& type) {
  py::array_t<float> values(std::vector<py::ssize_t>(bits.shape(), bits.shape() + bits.ndim()));
  decode_floats(bits.data(), half_type(type),
                std::span<float>(values.mutable_data(), static_cast<size_t>(bits.size())));
  return values;
}

}  // namespace

void register_session(py::module_& m) {
  m.def("encode_half", &encode_half, py::arg("values"), py::arg("type"));
  m.def("decode_half", &decode_half, py::arg("bits"), py::arg("type"));
  m.def("session_built_with_cuda", &Session::built_with_cuda);
  m.def("gpu_available", &Session::gpu_available);
  py::class_<DeviceArray>(m, "DeviceArray")
      .def_property_readonly("shape", &DeviceArray::shape)
      .def_property_readonly("dtype", &DeviceArray::dtype)
      .def_property_readonly("device", &DeviceArray::device)
      .def_property_readonly("data_ptr", &DeviceArray::data_ptr)
      .def("__dlpack_device__", &DeviceArray::dlpack_device)
      .def(
          "__dlpack__",
          [](const DeviceArray& a, const py::object& /*stream*/, const py::object& /*max_version*/,
             const py::object& /*dl_device*/, const py::object& /*copy*/) { return a.dlpack(); },
          py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
          py::arg("dl_device") = py::none(), py::arg("copy") = py::none());
  py::class_<GpuSession>(m, "GpuSession")
      .def(py::init<const std::string&, const std::map<std::string, std::vector<int64_t>>&, const std::string&, bool,
                    const std::string&>(),
           py::arg("path"), py::arg("input_shapes"), py::arg("costs_db"), py::arg("cuda_graph"), py::arg("precision"))
      .def("inputs", &GpuSession::inputs)
      .def("outputs", &GpuSession::outputs)
      .def_property_readonly("stream", &GpuSession::stream)
      .def_property_readonly("device", &GpuSession::device)
      .def_property_readonly("device_name", &GpuSession::device_name)
      .def_property_readonly("stored_kernel_choices", &GpuSession::stored_kernel_choices)
      .def("replay_ms", &GpuSession::replay_ms, py::arg("iters"), py::arg("warmup"))
      .def("run", &GpuSession::run, py::arg("inputs"), py::arg("on_device"));
}

}  // namespace tgr::python
