#include "runtime/cuda/device_info.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <chrono>

namespace tgr {

std::string cuda_device_report() {
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  std::string s = "CUDA runtime " + std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10) + ", " +
                  gpu_library_versions();
  int count = 0;
  if (driver == 0 || cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return s + "; no GPU visible";
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, i);
    s += "; GPU " + std::to_string(i) + ": " + prop.name + " (" +
         std::to_string(prop.totalGlobalMem >> 30) + " GiB)";
  }
  return s;
}

std::string gpu_device_name() {
  int device = 0, count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0 || cudaGetDevice(&device) != cudaSuccess) return "";
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) return "";
  return prop.name;
}

std::string gpu_library_versions() {
  return "cuDNN " + std::to_string(cudnnGetVersion()) + ", cuBLAS " + std::to_string(CUBLAS_VER_MAJOR) + "." +
         std::to_string(CUBLAS_VER_MINOR);
}

void warm_up_gpu(double seconds) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return;
  void* buffer = nullptr;
  constexpr size_t kBytes = size_t{256} << 20;
  if (cudaMalloc(&buffer, kBytes) != cudaSuccess) return;
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    for (int i = 0; i < 20; ++i) cudaMemsetAsync(buffer, i, kBytes);
    cudaDeviceSynchronize();
  }
  cudaFree(buffer);
}

}  // namespace tgr
