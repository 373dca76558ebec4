// Programmatic dependent launch (compute capability 9.0 and later): the
// runtime's own kernels (its .cu files' and the compiled elementwise
// programs) are launched with the stream attribute that lets a kernel be
// launched as the kernel before it in the stream finishes, instead of after
// it has ended and its writes are flushed. Every such kernel first waits, on
// the device, for the previous grid to complete and its memory to be
// visible (griddepcontrol.wait, dependent_launch.cuh): it reads and writes
// nothing before, so results are in the stream's order, and only the launch
// latency between two steps overlaps. cuBLAS and cuDNN launch their kernels
// as they do without it. Measured on the H100 (bench, CUDA-graph replays):
// docs/benchmarks.md, "GPU (H100): the issue 15 table".
//
// TGR_GPU_DEPENDENT_LAUNCH=0 in the environment turns the attribute off (the
// kernels' wait is then immediate), to compare the two in one build.
#pragma once

#include <cuda_runtime.h>

namespace tgr::gpu {

// Whether launches carry the attribute: the device is 9.0 or later and the
// environment has not turned it off (read once per process).
bool dependent_launch();

// A launch's configuration with the attribute (set or not by
// dependent_launch()), for cudaLaunchKernelEx and cudaLaunchKernelExC: the
// one place every launch of the runtime's own kernels gets it. `config`
// points at `attribute`, so it is neither copied nor moved.
struct DependentLaunchConfig {
  cudaLaunchAttribute attribute{};
  cudaLaunchConfig_t config{};
  DependentLaunchConfig(dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream);
  DependentLaunchConfig(const DependentLaunchConfig&) = delete;
  DependentLaunchConfig& operator=(const DependentLaunchConfig&) = delete;
};

}  // namespace tgr::gpu
