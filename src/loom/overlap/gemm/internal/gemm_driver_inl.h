// The blocked GEMM loop nest shared by the per-ISA drivers (included only by
// tile_gemm_{scalar,avx2,avx512}.cc). Every function is a template over a kernel type that has
// internal linkage in its including file, so each ISA gets its own copy and the linker can never
// merge an AVX-512 instantiation into code that runs on an AVX2-only CPU. Do not call std::
// templates from here for the same reason (an out-of-line copy built with -mavx512f could be
// picked by the linker for everybody).
//
// Loop order (BLIS/Goto with B already packed): rows in MC blocks → K in KC slices (pack the
// MC × KC block of A into MR-row micro-panels) → NR-column panels of B (a KC × NR slice stays in
// L1 across the row micro-panels) → MR-row micro-panels → micro-kernel.
//
// Kernel requirements (K is the kernel type):
//   static constexpr GemmBlocking kBlocking;
//   template <int R> static void Tile(int64_t kc, const float* a, const float* b, float* c,
//                                     int64_t ldc, bool accumulate);
// Tile<R> computes R ≤ MR rows × NR columns: a is a packed micro-panel (MR floats per k), b a
// packed KC × NR slice (NR floats per k, 64-byte aligned); c (+)= a·b.
#pragma once

#include <cstdint>

#include "loom/overlap/gemm/internal/gemm_kernels.h"

namespace loom::overlap::internal {

template <typename K, int R>
inline void DispatchTile(int64_t rows, int64_t kc, const float* a, const float* b, float* c,
                         int64_t ldc, bool accumulate) {
  if constexpr (R >= 1) {
    if (rows == R) {
      K::template Tile<R>(kc, a, b, c, ldc, accumulate);
    } else {
      DispatchTile<K, R - 1>(rows, kc, a, b, c, ldc, accumulate);
    }
  }
}

// Packs rows [0, mc) × depth [0, kc) of A into MR-row micro-panels: panel q holds
// dst[q·MR·kc + kk·MR + r] = A[q·MR + r, kk]. Rows past mc in the last panel are left unset
// (Tile<R> reads only its R rows).
template <typename K>
inline void PackA(const float* a, int64_t lda, int64_t mc, int64_t kc, float* dst) {
  constexpr int64_t kMr = K::kBlocking.mr;
  for (int64_t q = 0; q * kMr < mc; ++q) {
    const int64_t rows = mc - q * kMr < kMr ? mc - q * kMr : kMr;
    float* panel = dst + q * kMr * kc;
    for (int64_t r = 0; r < rows; ++r) {
      const float* src = a + (q * kMr + r) * lda;
      for (int64_t kk = 0; kk < kc; ++kk) panel[kk * kMr + r] = src[kk];
    }
  }
}

// Packs all of A (m rows, depth k) block by block in the layout of PackedAFloats.
template <typename K>
void PackAllA(const float* a, int64_t lda, int64_t m, int64_t k, float* dst) {
  constexpr int64_t kMr = K::kBlocking.mr;
  constexpr int64_t kKc = K::kBlocking.kc;
  constexpr int64_t kMc = K::kBlocking.mc;
  for (int64_t ic = 0; ic < m; ic += kMc) {
    const int64_t mc = m - ic < kMc ? m - ic : kMc;
    const int64_t panel_rows = (mc + kMr - 1) / kMr * kMr;
    for (int64_t pc = 0; pc < k; pc += kKc) {
      const int64_t kc = k - pc < kKc ? k - pc : kKc;
      PackA<K>(a + ic * lda + pc, lda, mc, kc, dst + ic * k + panel_rows * pc);
    }
  }
}

template <typename K>
void RunBlocked(const GemmArgs& g) {
  constexpr int64_t kMr = K::kBlocking.mr;
  constexpr int64_t kNr = K::kBlocking.nr;
  constexpr int64_t kKc = K::kBlocking.kc;
  constexpr int64_t kMc = K::kBlocking.mc;
  static_assert(kMc % kMr == 0, "MC must be a multiple of MR");
  if (g.m <= 0 || g.n0 >= g.n1 || g.k <= 0) return;
  float* a_work = g.workspace;
  float* edge = g.workspace + kMc * kKc;
  const int64_t p_begin = g.n0 / kNr;
  const int64_t p_end = (g.n1 + kNr - 1) / kNr;
  for (int64_t ic = 0; ic < g.m; ic += kMc) {
    const int64_t mc = g.m - ic < kMc ? g.m - ic : kMc;
    for (int64_t pc = 0; pc < g.k; pc += kKc) {
      const int64_t kc = g.k - pc < kKc ? g.k - pc : kKc;
      const bool accumulate = g.accumulate || pc > 0;
      const float* a_pack = a_work;
      if (g.packed_a != nullptr) {
        a_pack = g.packed_a + ic * g.k + (mc + kMr - 1) / kMr * kMr * pc;
      } else {
        PackA<K>(g.a + ic * g.lda + pc, g.lda, mc, kc, a_work);
      }
      for (int64_t p = p_begin; p < p_end; ++p) {
        const float* b = g.packed_b + p * g.k * kNr + pc * kNr;
        const int64_t col0 = p * kNr;
        const int64_t j0 = g.n0 > col0 ? g.n0 : col0;
        const int64_t j1 = g.n1 < col0 + kNr ? g.n1 : col0 + kNr;
        const bool full = j1 - j0 == kNr;
        for (int64_t ir = 0; ir < mc; ir += kMr) {
          const int64_t rows = mc - ir < kMr ? mc - ir : kMr;
          const float* a = a_pack + ir * kc;
          float* c = g.c + (ic + ir) * g.ldc;
          if (full) {
            DispatchTile<K, kMr>(rows, kc, a, b, c + col0, g.ldc, accumulate);
            continue;
          }
          // Edge panel (zero-padded columns or a sub-range that cuts the panel): compute the
          // whole MR × NR tile into `edge`, then add/copy only columns [j0, j1).
          DispatchTile<K, kMr>(rows, kc, a, b, edge, kNr, false);
          for (int64_t r = 0; r < rows; ++r) {
            float* crow = c + r * g.ldc;
            const float* erow = edge + r * kNr - col0;
            if (accumulate) {
              for (int64_t j = j0; j < j1; ++j) crow[j] += erow[j];
            } else {
              for (int64_t j = j0; j < j1; ++j) crow[j] = erow[j];
            }
          }
        }
      }
    }
  }
}

}  // namespace loom::overlap::internal
