// The device side of programmatic dependent launch (dependent_launch.h), and
// the launch every kernel of the runtime's .cu files goes through.
#pragma once

#include <utility>

#include "runtime/cuda/dependent_launch.h"

namespace tgr::gpu {

// First statement of every runtime kernel: wait for the previous grid in the
// stream to complete, its writes visible. No kernel triggers its dependents
// early (griddepcontrol.launch_dependents): the next grid launches as this
// one's blocks exit. Triggering at the start measured faster on two models
// but slower on a third, where the trigger at exit is faster (H100,
// docs/benchmarks.md, "GPU (H100): the issue 15 table").
__device__ __forceinline__ void await_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// kernel<<<grid, block, shared_bytes, stream>>>(args...), with the dependent
// launch attribute. Errors are the launch's, as cudaGetLastError reports them.
template <class... Params, class... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
                   Args&&... args) {
  const DependentLaunchConfig launch(grid, block, shared_bytes, stream);
  cudaLaunchKernelEx(&launch.config, kernel, std::forward<Args>(args)...);
}

}  // namespace tgr::gpu
