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
  // A already packed for all of its rows and K (PackAllA's layout), or nullptr: the driver packs
  // each MC × KC block of A itself. With many column sub-ranges over the same rows (a GEMM split
  // along N), packing once saves re-packing A per sub-range (~30 % of a 128-column call).
  const float* packed_a = nullptr;
};

// Floats of A prepacked for m rows and depth k: MC-row blocks at ic·k, each holding its KC
// slices (slice pc of a block with mc rows at PanelRows(mc)·pc, PanelRows = mc rounded up to MR).
constexpr int64_t PackedAFloats(const GemmBlocking& b, int64_t m, int64_t k) {
  if (m <= 0 || k <= 0) return 0;
  const int64_t last = (m - 1) / b.mc * b.mc;
  return (last + (m - last + b.mr - 1) / b.mr * b.mr) * k;
}

void RunScalarGemm(const GemmArgs& args);
void RunAvx2Gemm(const GemmArgs& args);    // only call when the CPU has AVX2 and FMA
void RunAvx512Gemm(const GemmArgs& args);  // only call when the CPU has AVX-512F
// Packs A[0..m, 0..k) into `dst` (PackedAFloats of that ISA's blocking) for GemmArgs::packed_a.
void PackScalarA(const float* a, int64_t lda, int64_t m, int64_t k, float* dst);
void PackAvx2A(const float* a, int64_t lda, int64_t m, int64_t k, float* dst);
void PackAvx512A(const float* a, int64_t lda, int64_t m, int64_t k, float* dst);

}  // namespace loom::overlap::internal
