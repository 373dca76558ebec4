// The CUDA stream, cuBLAS, cuBLASLt and cuDNN handles and the shared workspaces of one
// loaded model. The math of each product and convolution (TF32 or not,
// half types on tensor cores) is set where it is described, by the plan's
// precision (lower_matmul.cpp: the compute type; lower_conv.cpp: the math type).
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>

namespace tgr::gpu {

// One device allocation, freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes, const char* what);
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr, o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
  char* data() const { return static_cast<char*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

struct GpuContext {
  GpuContext();
  ~GpuContext();
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;

  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  cublasLtHandle_t cublaslt = nullptr;  // products with an epilogue (bias, relu); shares cublas_workspace
  cudnnHandle_t cudnn = nullptr;
  DeviceBuffer cublas_workspace;  // set on the handle (and given to cuBLASLt), so graph capture needs no allocation
  DeviceBuffer conv_workspace;    // the largest any chosen convolution algorithm needs
  size_t conv_workspace_needed = 0;
};

}  // namespace tgr::gpu
