// The DLPack exchange structures (the unversioned ABI, DLPack 0.8, capsule
// name "dltensor"), written from the DLPack specification
// (dmlc.github.io/dlpack): what torch, CuPy, JAX and NumPy pass through
// `__dlpack__`. Only what the session's bindings read and write.
#pragma once

#include <cstdint>

namespace tgr::python::dlpack {

enum DeviceType : int32_t { kCPU = 1, kCUDA = 2, kCUDAHost = 3, kCUDAManaged = 13 };
enum TypeCode : uint8_t { kInt = 0, kUInt = 1, kFloat = 2, kBfloat = 4, kBool = 6 };

struct Device {
  DeviceType device_type;
  int32_t device_id;
};

struct DataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};

struct Tensor {
  void* data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null: row-major
  uint64_t byte_offset;
};

struct ManagedTensor {
  Tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor* self);
};

}  // namespace tgr::python::dlpack
