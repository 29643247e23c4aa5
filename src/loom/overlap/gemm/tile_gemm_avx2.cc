// AVX2+FMA micro-kernel (6 × 16: 12 ymm accumulators) for TileGemm. Built with -mavx2 -mfma;
// TileGemm calls it only after checking cpuid. Everything here has internal linkage (see
// internal/gemm_driver_inl.h).
#include <immintrin.h>

#include "loom/overlap/gemm/internal/gemm_driver_inl.h"

namespace loom::overlap::internal {
namespace {

struct Avx2Kernel {
  static constexpr GemmBlocking kBlocking = kAvx2Blocking;
  static_assert(kAvx2Blocking.nr == 16, "the AVX2 kernel holds two ymm per row");
  static constexpr int64_t kMr = kAvx2Blocking.mr;

  template <int R>
  static void Tile(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                   bool accumulate) {
    __m256 c0[R];
    __m256 c1[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      c0[r] = _mm256_setzero_ps();
      c1[r] = _mm256_setzero_ps();
    }
#pragma GCC unroll 4
    for (int64_t kk = 0; kk < kc; ++kk) {
      const __m256 b0 = _mm256_load_ps(b);
      const __m256 b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m256 av = _mm256_broadcast_ss(a + r);
        c0[r] = _mm256_fmadd_ps(av, b0, c0[r]);
        c1[r] = _mm256_fmadd_ps(av, b1, c1[r]);
      }
      a += kMr;
      b += 16;
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      float* crow = c + r * ldc;
      if (accumulate) {
        c0[r] = _mm256_add_ps(c0[r], _mm256_loadu_ps(crow));
        c1[r] = _mm256_add_ps(c1[r], _mm256_loadu_ps(crow + 8));
      }
      _mm256_storeu_ps(crow, c0[r]);
      _mm256_storeu_ps(crow + 8, c1[r]);
    }
  }
};

}  // namespace

void RunAvx2Gemm(const GemmArgs& args) { RunBlocked<Avx2Kernel>(args); }
void PackAvx2A(const float* a, int64_t lda, int64_t m, int64_t k, float* dst) {
  PackAllA<Avx2Kernel>(a, lda, m, k, dst);
}

}  // namespace loom::overlap::internal
