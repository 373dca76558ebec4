// What the CUDA stack this binary was built with reports at run time: library
// versions and the visible GPUs. Built only when CUDA, cuBLAS and cuDNN are
// found (TGR_HAVE_CUDA); a machine without a GPU reports none.
#pragma once

#include <string>

namespace tgr {
std::string cuda_device_report();

// The current GPU's name ("NVIDIA H100 80GB HBM3"; "" with none visible):
// how op_costs and kernel_choices name a device.
std::string gpu_device_name();
// "cuDNN 91400, cuBLAS 13.1": the libraries whose timed choices
// (runtime/kernel_choices.h) hold only for these versions.
std::string gpu_library_versions();

// The current GPU's float32 limits without tensor cores, from its attributes:
// FLOP/s = multiprocessors x float32 lanes per multiprocessor (by compute
// capability) x 2 (a fused multiply-add) x the peak clock; bytes/s = 2 (double
// data rate) x the peak memory clock x the bus width. An H100 SXM gives about
// 67 TFLOP/s and 3.35 TB/s, an H200 67 TFLOP/s and 4.9 TB/s. `bench` reports
// a model's achieved share of them. Zeros with no GPU visible.
struct GpuLimits {
  double fp32_flops = 0;  // FLOP/s
  double bandwidth = 0;   // bytes/s of device memory
};
GpuLimits gpu_fp32_limits();

// Keeps the GPU busy (memory writes) for about `seconds`, so that its clocks
// are up before anything is timed or chosen by timing (convolution
// algorithms are timed at load): an idle H100 reported 345 MHz of its 1980.
// Does nothing without a GPU.
void warm_up_gpu(double seconds);
}  // namespace tgr
