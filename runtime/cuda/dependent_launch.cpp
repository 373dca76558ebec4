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

cudaLaunchAttribute dependent_launch_attribute() {
  cudaLaunchAttribute a{};
  a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  a.val.programmaticStreamSerializationAllowed = dependent_launch() ? 1 : 0;
  return a;
}

}  // namespace tgr::gpu
