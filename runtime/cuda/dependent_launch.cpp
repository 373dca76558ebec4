#include "runtime/cuda/dependent_launch.h"

#include <cstdlib>
#include <cstring>

namespace tgr::gpu {

bool dependent_launch() {
  static const bool enabled = [] {
    const char* env = std::getenv("TGR_GPU_DEPENDENT_LAUNCH");
    if (env && std::strcmp(env, "0") == 0) return false;
    int device = 0, major = 0;
    if (cudaGetDevice(&device) != cudaSuccess) return false;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) return false;
    return major >= 9;
  }();
  return enabled;
}

DependentLaunchConfig::DependentLaunchConfig(dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream) {
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = dependent_launch() ? 1 : 0;
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
}

}  // namespace tgr::gpu
