#include "runtime/cuda/gpu_context.h"

#include "runtime/cuda/gpu_error.h"

namespace tgr::gpu {

DeviceBuffer::DeviceBuffer(size_t bytes, const char* what) : bytes_(bytes) {
  if (bytes > 0) TGR_GPU_CHECK(cudaMalloc(&ptr_, bytes), (Where{what}));
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

GpuContext::GpuContext() {
  const Where where{"load"};
  TGR_GPU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), where);
  TGR_GPU_CHECK(cublasCreate(&cublas), where);
  TGR_GPU_CHECK(cublasSetStream(cublas, stream), where);
  TGR_GPU_CHECK(cublasSetMathMode(cublas, CUBLAS_DEFAULT_MATH), where);
  cublas_workspace = DeviceBuffer(size_t{32} << 20, "cuBLAS workspace");
  TGR_GPU_CHECK(cublasSetWorkspace(cublas, cublas_workspace.data(), cublas_workspace.bytes()), where);
  TGR_GPU_CHECK(cublasLtCreate(&cublaslt), where);
  TGR_GPU_CHECK(cudnnCreate(&cudnn), where);
  TGR_GPU_CHECK(cudnnSetStream(cudnn, stream), where);
}

GpuContext::~GpuContext() {
  if (cudnn) cudnnDestroy(cudnn);
  if (cublaslt) cublasLtDestroy(cublaslt);
  if (cublas) cublasDestroy(cublas);
  if (stream) cudaStreamDestroy(stream);
}

}  // namespace tgr::gpu
