// Internal interface between TileGemm (tile_gemm.cc, built for the baseline ISA) and its
// per-ISA blocked drivers (tile_gemm_{scalar,avx2,avx512}.cc, each built with its own -m flags).
// Block sizes are constants here, not functions in the ISA files, so that reading them never
// executes code compiled for an ISA the CPU may lack.
//
// This header is included by the ISA files: keep it free of inline code from other headers
// (status.h, std templates), which an -mavx512f build could emit as a shared weak symbol.
//
// Thread-safety: the drivers are pure functions of their arguments; the caller provides a
// per-thread workspace.
#pragma once

#include <cstdint>

namespace loom::overlap::internal {

// Micro-kernel shape (MR rows × NR columns of C in registers) and cache blocking
// (KC: depth of one packed slice; MC: rows of A packed at once) for one ISA.
struct GemmBlocking {
  int64_t mr;
  int64_t nr;
  int64_t kc;
  int64_t mc;
};

inline constexpr GemmBlocking kScalarBlocking{4, 16, 256, 64};
inline constexpr GemmBlocking kAvx2Blocking{6, 16, 384, 72};
inline constexpr GemmBlocking kAvx512Blocking{12, 32, 256, 72};

// Floats of workspace a driver needs: the packed MC × KC block of A plus one MR × NR edge tile.
constexpr int64_t WorkspaceFloats(const GemmBlocking& b) { return b.mc * b.kc + b.mr * b.nr + 16; }

// One call of a blocked driver: C[0..m, n0..n1) (+)= A[0..m, 0..k) · B[:, n0..n1).
struct GemmArgs {
  const float* a;
  int64_t lda;
  int64_t m;
  const float* packed_b;  // ceil(n / NR) panels of k × NR floats, 64-byte aligned
  int64_t k;
  float* c;
  int64_t ldc;
  int64_t n0;
  int64_t n1;
  bool accumulate;
  float* workspace;  // ≥ WorkspaceFloats(blocking) floats, 64-byte aligned
};

void RunScalarGemm(const GemmArgs& args);
void RunAvx2Gemm(const GemmArgs& args);    // only call when the CPU has AVX2 and FMA
void RunAvx512Gemm(const GemmArgs& args);  // only call when the CPU has AVX-512F

}  // namespace loom::overlap::internal
