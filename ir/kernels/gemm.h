// Dense matrix product used by the matmul and convolution kernels:
//   C[M x N] = A[M x K] * B[K x N]   (row-major, leading dimensions given)
// Parallel over blocks of C with TBB. For float and double a register-blocked
// micro-kernel, compiled for AVX2/FMA and for baseline x86-64 and picked at
// run time; for the field a plain loop (fingerprints use small shapes).
#pragma once

#include <cstdint>

#include "ir/field.h"

namespace tgr {

template <class T>
void gemm(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb, T* C,
          int64_t ldc);

extern template void gemm<float>(int64_t, int64_t, int64_t, const float*, int64_t, const float*,
                                 int64_t, float*, int64_t);
extern template void gemm<double>(int64_t, int64_t, int64_t, const double*, int64_t, const double*,
                                  int64_t, double*, int64_t);
extern template void gemm<Fp>(int64_t, int64_t, int64_t, const Fp*, int64_t, const Fp*, int64_t, Fp*,
                              int64_t);

}  // namespace tgr
