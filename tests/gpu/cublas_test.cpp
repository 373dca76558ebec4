// GPU tests (label `gpu`): skipped, visibly, where no GPU is visible; run on
// the GPU machine with tools/run_gpu_tests.sh (README.md).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>

#include "ir/kernels/gemm.h"
#include "runtime/cuda/device_info.h"
#include "runtime/interpreter.h"

namespace tgr {
namespace {

bool have_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

#define SKIP_WITHOUT_GPU() \
  if (!have_gpu()) GTEST_SKIP() << "no GPU visible: run on the GPU machine (tools/run_gpu_tests.sh)"

// cuBLAS in full float32 (no TF32) agrees with the CPU reference gemm.
TEST(Gpu, CublasSgemmMatchesTheReferenceGemm) {
  SKIP_WITHOUT_GPU();
  std::printf("%s\n", cuda_device_report().c_str());
  const int64_t M = 97, N = 130, K = 301;
  const auto a = random_tensor<float>({M, K}, 1), b = random_tensor<float>({K, N}, 2);
  Tensor<float> expected({M, N});
  gemm<float>(M, N, K, a.data.data(), K, b.data.data(), N, expected.data.data(), N);

  float *da, *db, *dc;
  ASSERT_EQ(cudaMalloc(&da, a.data.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&db, b.data.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dc, expected.data.size() * 4), cudaSuccess);
  cudaMemcpy(da, a.data.data(), a.data.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data.data(), b.data.size() * 4, cudaMemcpyHostToDevice);
  cublasHandle_t handle;
  ASSERT_EQ(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH), CUBLAS_STATUS_SUCCESS);
  const float one = 1, zero = 0;
  // Row-major C = A B is column-major C^T = B^T A^T.
  ASSERT_EQ(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, db, N, da, K, &zero, dc, N),
            CUBLAS_STATUS_SUCCESS);
  Tensor<float> actual({M, N});
  ASSERT_EQ(cudaMemcpy(actual.data.data(), dc, actual.data.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  cublasDestroy(handle);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  double num = 0, den = 0;
  for (size_t i = 0; i < actual.data.size(); ++i) {
    num += std::pow(actual.data[i] - expected.data[i], 2);
    den += std::pow(expected.data[i], 2);
  }
  EXPECT_LT(std::sqrt(num / den), 1e-5);
}

}  // namespace
}  // namespace tgr
