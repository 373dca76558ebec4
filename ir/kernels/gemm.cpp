#include "ir/kernels/gemm.h"

#include <tbb/blocked_range2d.h>
#include <tbb/parallel_for.h>

#include <algorithm>

namespace tgr {

namespace {

constexpr int64_t kRowsPerMicroTile = 4;
constexpr int64_t kColumnBlock = 256;  // columns of C per task
constexpr int64_t kDepthBlock = 256;   // rows of B kept hot in cache

// acc[MR x NR] stays in registers over a whole depth block; NR spans 64 bytes.
template <class T, int64_t MR, int64_t NR>
[[gnu::always_inline]] inline void micro_tile(int64_t K, const T* __restrict A, int64_t lda,
                                              const T* __restrict B, int64_t ldb, T* __restrict C,
                                              int64_t ldc) {
  T acc[MR][NR] = {};
  for (int64_t k = 0; k < K; ++k) {
    const T* b = B + k * ldb;
    for (int64_t r = 0; r < MR; ++r) {
      const T a = A[r * lda + k];
      for (int64_t c = 0; c < NR; ++c) acc[r][c] += a * b[c];
    }
  }
  for (int64_t r = 0; r < MR; ++r)
    for (int64_t c = 0; c < NR; ++c) C[r * ldc + c] += acc[r][c];
}

// Edges of C that do not fill a micro tile.
template <class T>
[[gnu::always_inline]] inline void edge_tile(int64_t rows, int64_t cols, int64_t K, const T* A,
                                             int64_t lda, const T* B, int64_t ldb, T* C, int64_t ldc) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < K; ++k) {
      const T a = A[r * lda + k];
      const T* b = B + k * ldb;
      T* c = C + r * ldc;
      for (int64_t j = 0; j < cols; ++j) c[j] += a * b[j];
    }
}

// C[rows, cols] += A[rows, K] * B[K, cols] for one block of C.
template <class T>
[[gnu::always_inline]] inline void block_product(int64_t rows, int64_t cols, int64_t K, const T* A,
                                                 int64_t lda, const T* B, int64_t ldb, T* C,
                                                 int64_t ldc) {
  constexpr int64_t NR = 64 / sizeof(T);
  constexpr int64_t MR = kRowsPerMicroTile;
  for (int64_t k0 = 0; k0 < K; k0 += kDepthBlock) {
    const int64_t kb = std::min(kDepthBlock, K - k0);
    const T* Ak = A + k0;
    const T* Bk = B + k0 * ldb;
    int64_t i = 0;
    for (; i + MR <= rows; i += MR) {
      int64_t j = 0;
      for (; j + NR <= cols; j += NR)
        micro_tile<T, MR, NR>(kb, Ak + i * lda, lda, Bk + j, ldb, C + i * ldc + j, ldc);
      if (j < cols) edge_tile(MR, cols - j, kb, Ak + i * lda, lda, Bk + j, ldb, C + i * ldc + j, ldc);
    }
    if (i < rows) edge_tile(rows - i, cols, kb, Ak + i * lda, lda, Bk, ldb, C + i * ldc, ldc);
  }
}

#if defined(__x86_64__)
#define TGR_MULTIVERSION __attribute__((target_clones("arch=haswell", "default")))
#else
#define TGR_MULTIVERSION
#endif

TGR_MULTIVERSION void block_product_f32(int64_t rows, int64_t cols, int64_t K, const float* A,
                                        int64_t lda, const float* B, int64_t ldb, float* C,
                                        int64_t ldc) {
  block_product<float>(rows, cols, K, A, lda, B, ldb, C, ldc);
}

TGR_MULTIVERSION void block_product_f64(int64_t rows, int64_t cols, int64_t K, const double* A,
                                        int64_t lda, const double* B, int64_t ldb, double* C,
                                        int64_t ldc) {
  block_product<double>(rows, cols, K, A, lda, B, ldb, C, ldc);
}

void block_product_field(int64_t rows, int64_t cols, int64_t K, const Fp* A, int64_t lda,
                         const Fp* B, int64_t ldb, Fp* C, int64_t ldc) {
  edge_tile(rows, cols, K, A, lda, B, ldb, C, ldc);
}

template <class T>
void block_product_any(int64_t rows, int64_t cols, int64_t K, const T* A, int64_t lda, const T* B,
                       int64_t ldb, T* C, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) block_product_f32(rows, cols, K, A, lda, B, ldb, C, ldc);
  else if constexpr (std::is_same_v<T, double>) block_product_f64(rows, cols, K, A, lda, B, ldb, C, ldc);
  else block_product_field(rows, cols, K, A, lda, B, ldb, C, ldc);
}

}  // namespace

template <class T>
void gemm(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb, T* C,
          int64_t ldc) {
  for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, T{});
  if (K == 0) return;
  // Rows split into groups of micro tiles; small products run inline.
  const int64_t row_grain = std::max<int64_t>(kRowsPerMicroTile, 64);
  if (M * N * K < (int64_t{1} << 16)) {
    block_product_any<T>(M, N, K, A, lda, B, ldb, C, ldc);
    return;
  }
  tbb::parallel_for(tbb::blocked_range2d<int64_t>(0, M, row_grain, 0, N, kColumnBlock),
                    [&](const tbb::blocked_range2d<int64_t>& r) {
                      const int64_t i0 = r.rows().begin(), j0 = r.cols().begin();
                      block_product_any<T>(r.rows().size(), r.cols().size(), K, A + i0 * lda, lda,
                                           B + j0, ldb, C + i0 * ldc + j0, ldc);
                    });
}

template void gemm<float>(int64_t, int64_t, int64_t, const float*, int64_t, const float*, int64_t,
                          float*, int64_t);
template void gemm<double>(int64_t, int64_t, int64_t, const double*, int64_t, const double*,
                           int64_t, double*, int64_t);
template void gemm<Fp>(int64_t, int64_t, int64_t, const Fp*, int64_t, const Fp*, int64_t, Fp*,
                       int64_t);

}  // namespace tgr
