// AVX-512F micro-kernel (MR × NR, NR/16 zmm per row) for TileGemm. Built with -mavx512f -mfma;
// TileGemm calls it only after checking cpuid. Everything here has internal linkage (see
// internal/gemm_driver_inl.h).
#include <immintrin.h>

#include "loom/overlap/gemm/internal/gemm_driver_inl.h"

namespace loom::overlap::internal {
namespace {

struct Avx512Kernel {
  static constexpr GemmBlocking kBlocking = kAvx512Blocking;
  static_assert(kAvx512Blocking.nr % 16 == 0, "NR must be a multiple of one zmm (16 floats)");
  static constexpr int64_t kMr = kAvx512Blocking.mr;
  static constexpr int kVecs = static_cast<int>(kAvx512Blocking.nr / 16);

  template <int R>
  static void Tile(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                   bool accumulate) {
    __m512 acc[R][kVecs];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_setzero_ps();
    }
#pragma GCC unroll 4
    for (int64_t kk = 0; kk < kc; ++kk) {
      __m512 bv[kVecs];
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) bv[v] = _mm512_load_ps(b + 16 * v);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const __m512 av = _mm512_set1_ps(a[r]);
#pragma GCC unroll 4
        for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
      }
      a += kMr;
      b += kBlocking.nr;
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      float* crow = c + r * ldc;
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) {
        __m512 x = acc[r][v];
        if (accumulate) x = _mm512_add_ps(x, _mm512_loadu_ps(crow + 16 * v));
        _mm512_storeu_ps(crow + 16 * v, x);
      }
    }
  }
};

}  // namespace

void RunAvx512Gemm(const GemmArgs& args) { RunBlocked<Avx512Kernel>(args); }
void PackAvx512A(const float* a, int64_t lda, int64_t m, int64_t k, float* dst) {
  PackAllA<Avx512Kernel>(a, lda, m, k, dst);
}

}  // namespace loom::overlap::internal
