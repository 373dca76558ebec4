// The GPU's float32 limits from its attributes (runtime/cuda/device_info.h),
// which `bench` reports a model's achieved share of: zeros where no GPU is
// visible (so a caller falls back), otherwise within the range of the
// data-centre GPUs this runtime is built for.
#include "runtime/cuda/device_info.h"

#include <gtest/gtest.h>

#include "tests/gpu/gpu_test_util.h"

namespace tgr {
namespace {

TEST(GpuDeviceInfo, Fp32LimitsAreThoseOfARealGpuOrZeroWithout) {
  const GpuLimits limits = gpu_fp32_limits();
  if (!gpu::gpu_available()) {
    EXPECT_EQ(limits.fp32_flops, 0);
    EXPECT_EQ(limits.bandwidth, 0);
    return;
  }
  // An H100 or H200 SXM: about 67 TFLOP/s; 3.35 and 4.8 TB/s.
  EXPECT_GT(limits.fp32_flops, 5e12) << gpu_device_name();
  EXPECT_LT(limits.fp32_flops, 2e14) << gpu_device_name();
  EXPECT_GT(limits.bandwidth, 2e11) << gpu_device_name();
  EXPECT_LT(limits.bandwidth, 2e13) << gpu_device_name();
}

}  // namespace
}  // namespace tgr
