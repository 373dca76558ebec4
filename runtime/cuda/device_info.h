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
//
// And its dense tensor-core peaks, from the same attributes: multiprocessors
// x the peak clock x dense bfloat16 FLOPs per multiprocessor per clock with
// float32 accumulation (tensor_flops_per_clock: 2048 on compute capability
// 8.0, A100's 312 TFLOP/s; 512 on 8.6 and 8.9, the data-center parts, which
// GeForce cards halve with float32 accumulation; 4096 on 9.0, H100's and
// H200's 989 TFLOP/s at their 1830 MHz boost, about 1070 at the 1980 MHz the
// attribute reports; 8192 on 10.x); float16 runs at the same rate and TF32 at
// half of it. Zero for a GPU the table does not list.
struct GpuLimits {
  double fp32_flops = 0;         // FLOP/s
  double bandwidth = 0;          // bytes/s of device memory
  double bf16_tensor_flops = 0;  // FLOP/s, dense, float32 accumulation (float16 alike)
  double tf32_tensor_flops = 0;  // FLOP/s, dense
};
GpuLimits gpu_fp32_limits();
// Dense bfloat16 tensor-core FLOPs per multiprocessor per clock (float32
// accumulation) of compute capability major.minor; 0 when not listed.
int tensor_flops_per_clock(int major, int minor);

// Keeps the GPU busy (memory writes) for about `seconds`, so that its clocks
// are up before anything is timed or chosen by timing (convolution
// algorithms are timed at load): an idle H100 reported 345 MHz of its 1980.
// Does nothing without a GPU.
void warm_up_gpu(double seconds);
}  // namespace tgr
