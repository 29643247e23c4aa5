// TileGemm: C[m rows, n cols] (+)= A[m rows, K] · B[K, n cols] in fp32 over tiles, with B packed
// once per op into column panels and kept, so that computing a 64-row tile costs no repacking
// (OpenBLAS repacks B per call: 64-row calls run at ~2/3 of one big call here).
//
//   LOOM_ASSIGN_OR_RETURN(TileGemm g, TileGemm::Pack(b, K, N, /*ldb=*/N));
//   g.Run(a_tile, /*lda=*/K, /*m=*/64, c_tile, /*ldc=*/N, /*n0=*/0, /*n1=*/N);
//
// Micro-kernels: scalar reference, AVX2+FMA and AVX-512F, chosen at run time by cpuid (the
// binary also runs on AVX2-only machines); `isa` in Options forces one (tests compare them).
// Any M, N, K (edge tiles are handled; nothing needs padding). Row-major everywhere.
//
// Thread-safety: a packed TileGemm is immutable; Run may be called concurrently from several
// threads on disjoint C regions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "loom/base/status.h"

namespace loom::overlap {

namespace internal {
// 64-byte aligned storage for packed panels (aligned vector loads in the micro-kernels).
void* AllocatePanelMemory(std::size_t bytes);
void FreePanelMemory(void* p);

template <typename T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <typename U>
  AlignedAllocator(const AlignedAllocator<U>&) {}  // NOLINT(runtime/explicit)
  T* allocate(std::size_t n) { return static_cast<T*>(AllocatePanelMemory(n * sizeof(T))); }
  void deallocate(T* p, std::size_t) { FreePanelMemory(p); }
  template <typename U>
  bool operator==(const AlignedAllocator<U>&) const {
    return true;
  }
};
}  // namespace internal

enum class GemmIsa { kAuto, kScalar, kAvx2, kAvx512 };
std::string_view GemmIsaName(GemmIsa isa);
// The best ISA this CPU supports (kAvx512 > kAvx2 > kScalar).
GemmIsa DetectGemmIsa();

struct TileGemmOptions {
  GemmIsa isa = GemmIsa::kAuto;  // kAuto: DetectGemmIsa(); a forced ISA the CPU lacks is an error
};

class TileGemm {
 public:
  TileGemm() = default;
  // Packs B (K × N, row stride ldb ≥ N). kInvalidArgument on bad sizes or an unsupported ISA.
  static Result<TileGemm> Pack(const float* b, int64_t k, int64_t n, int64_t ldb,
                               const TileGemmOptions& options = {});

  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  GemmIsa isa() const { return isa_; }

  // C[0..m, n0..n1) = A[0..m, 0..K) · B[:, n0..n1) (accumulate: +=). `c` points at row 0,
  // column 0 of C (columns n0..n1 are written at c + i*ldc + j). 0 ≤ n0 ≤ n1 ≤ N.
  void Run(const float* a, int64_t lda, int64_t m, float* c, int64_t ldc, int64_t n0, int64_t n1,
           bool accumulate = false) const;
  void Run(const float* a, int64_t lda, int64_t m, float* c, int64_t ldc,
           bool accumulate = false) const {
    Run(a, lda, m, c, ldc, 0, n_, accumulate);
  }

  // A packed once for many column sub-ranges (a GEMM split along N: Run packs each MC × KC
  // block of A per call, which costs ~30 % of a 128-column call at K = 2048):
  //   std::vector<float> pa(g.PackedAFloats(m));            // or a larger shared buffer
  //   g.PackA(a, lda, m, pa.data());
  //   for (split s) g.RunPackedA(pa.data(), m, c, ldc, n0(s), n1(s));
  // The packed layout is this TileGemm's ISA's; RunPackedA computes exactly what Run computes.
  int64_t PackedAFloats(int64_t m) const;
  void PackA(const float* a, int64_t lda, int64_t m, float* packed_a) const;
  void RunPackedA(const float* packed_a, int64_t m, float* c, int64_t ldc, int64_t n0, int64_t n1,
                  bool accumulate = false) const;

  // Floating-point operations of one Run over m rows and all N columns (2·m·N·K).
  double Flops(int64_t m) const { return 2.0 * static_cast<double>(m) * n_ * k_; }

 private:
  void Dispatch(const float* a, int64_t lda, const float* packed_a, int64_t m, float* c,
                int64_t ldc, int64_t n0, int64_t n1, bool accumulate) const;

  int64_t k_ = 0;
  int64_t n_ = 0;
  GemmIsa isa_ = GemmIsa::kScalar;
  int64_t panel_cols_ = 0;  // columns per packed panel (the micro-kernel's NR)
  // ceil(N / panel_cols) panels of K × panel_cols (row k of panel p holds B[k, p·NR .. +NR)),
  // zero-padded past column N; 64-byte aligned.
  std::vector<float, internal::AlignedAllocator<float>> packed_;
};

// Reference: C = A·B with a plain triple loop in double accumulation (tests' ground truth).
void ReferenceGemm(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                   int64_t m, int64_t n, int64_t k);

}  // namespace loom::overlap
