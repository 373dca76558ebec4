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

TEST(GpuDeviceInfo, TensorCorePeaksFollowTheTableAndTf32IsHalfOfBf16) {
  EXPECT_EQ(tensor_flops_per_clock(9, 0), 4096);  // H100, H200: 132 SMs x 4096 x 1.83 GHz = 989 TFLOP/s
  EXPECT_EQ(tensor_flops_per_clock(8, 0), 2048);  // A100: 108 x 2048 x 1.41 GHz = 312 TFLOP/s
  EXPECT_EQ(tensor_flops_per_clock(7, 5), 0);     // T4: no bfloat16
  const GpuLimits limits = gpu_fp32_limits();
  EXPECT_EQ(limits.tf32_tensor_flops, limits.bf16_tensor_flops / 2);
  if (!gpu::gpu_available()) {
    EXPECT_EQ(limits.bf16_tensor_flops, 0);
    return;
  }
  // On a listed GPU the tensor cores' peak is far above float32's.
  if (limits.bf16_tensor_flops > 0) {
    EXPECT_GT(limits.bf16_tensor_flops, 4 * limits.fp32_flops) << gpu_device_name();
  }
}

}  // namespace
}  // namespace tgr
