// Portable reference micro-kernel (plain C++, baseline ISA flags) for TileGemm.
#include "loom/overlap/gemm/internal/gemm_driver_inl.h"

namespace loom::overlap::internal {
namespace {

struct ScalarKernel {
  static constexpr GemmBlocking kBlocking = kScalarBlocking;
  static constexpr int kNr = static_cast<int>(kScalarBlocking.nr);
  static constexpr int kMr = static_cast<int>(kScalarBlocking.mr);

  template <int R>
  static void Tile(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                   bool accumulate) {
    float acc[R][kNr] = {};
    for (int64_t kk = 0; kk < kc; ++kk) {
      for (int r = 0; r < R; ++r) {
        const float av = a[kk * kMr + r];
        for (int j = 0; j < kNr; ++j) acc[r][j] += av * b[kk * kNr + j];
      }
    }
    for (int r = 0; r < R; ++r) {
      float* crow = c + r * ldc;
      for (int j = 0; j < kNr; ++j) crow[j] = accumulate ? crow[j] + acc[r][j] : acc[r][j];
    }
  }
};

}  // namespace

void RunScalarGemm(const GemmArgs& args) { RunBlocked<ScalarKernel>(args); }
void PackScalarA(const float* a, int64_t lda, int64_t m, int64_t k, float* dst) {
  PackAllA<ScalarKernel>(a, lda, m, k, dst);
}

}  // namespace loom::overlap::internal
