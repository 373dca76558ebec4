#include "runtime/cuda/device_info.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <chrono>
#include <optional>

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

namespace {
// The current GPU's index; none where no GPU is visible.
std::optional<int> current_gpu() {
  int device = 0, count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0 || cudaGetDevice(&device) != cudaSuccess)
    return std::nullopt;
  return device;
}
}  // namespace

std::string gpu_device_name() {
  const std::optional<int> device = current_gpu();
  cudaDeviceProp prop{};
  if (!device || cudaGetDeviceProperties(&prop, *device) != cudaSuccess) return "";
  return prop.name;
}

std::string gpu_library_versions() {
  return "cuDNN " + std::to_string(cudnnGetVersion()) + ", cuBLAS " + std::to_string(CUBLAS_VER_MAJOR) + "." +
         std::to_string(CUBLAS_VER_MINOR);
}

namespace {
// Float32 lanes of one multiprocessor: 64 on compute capability 6.0, 7.x and
// 8.0 (P100, V100, T4, A100), 128 on the others since 6.x (consumer Ampere,
// Ada, Hopper, Blackwell).
int fp32_lanes_per_multiprocessor(int major, int minor) {
  if ((major == 6 && minor == 0) || major == 7 || (major == 8 && minor == 0)) return 64;
  return 128;
}
}  // namespace

int tensor_flops_per_clock(int major, int minor) {
  if (major == 8 && minor == 0) return 2048;
  if (major == 8 && (minor == 6 || minor == 9)) return 512;
  if (major == 9 && minor == 0) return 4096;
  if (major == 10) return 8192;
  return 0;
}

GpuLimits gpu_fp32_limits() {
  const std::optional<int> gpu = current_gpu();
  if (!gpu) return {};
  const int device = *gpu;
  int sms = 0, major = 0, minor = 0, clock_khz = 0, memory_clock_khz = 0, bus_bits = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device);
  cudaDeviceGetAttribute(&memory_clock_khz, cudaDevAttrMemoryClockRate, device);
  cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device);
  GpuLimits limits;
  limits.fp32_flops = 2.0 * sms * fp32_lanes_per_multiprocessor(major, minor) * clock_khz * 1e3;
  limits.bandwidth = 2.0 * memory_clock_khz * 1e3 * bus_bits / 8;
  limits.bf16_tensor_flops = static_cast<double>(sms) * tensor_flops_per_clock(major, minor) * clock_khz * 1e3;
  limits.tf32_tensor_flops = limits.bf16_tensor_flops / 2;
  return limits;
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
