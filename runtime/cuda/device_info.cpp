#include "runtime/cuda/device_info.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

namespace tgr {

std::string cuda_device_report() {
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  std::string s = "CUDA runtime " + std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10) +
                  ", cuDNN " + std::to_string(cudnnGetVersion()) + ", cuBLAS " +
                  std::to_string(CUBLAS_VER_MAJOR) + "." + std::to_string(CUBLAS_VER_MINOR);
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

}  // namespace tgr
