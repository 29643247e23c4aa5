#include "loom/overlap/gemm/tile_gemm.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "loom/base/check.h"
#include "loom/overlap/gemm/internal/gemm_kernels.h"
#include "loom/overlap/gemm/internal/isa_check.h"

namespace loom::overlap {
namespace {

using internal::GemmBlocking;

bool CpuHasAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

bool CpuHasAvx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && CpuHasAvx2();
}

const GemmBlocking& BlockingFor(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::kAvx512:
      return internal::kAvx512Blocking;
    case GemmIsa::kAvx2:
      return internal::kAvx2Blocking;
    default:
      return internal::kScalarBlocking;
  }
}

constexpr int64_t MaxWorkspaceFloats() {
  int64_t n = internal::WorkspaceFloats(internal::kScalarBlocking);
  if (internal::WorkspaceFloats(internal::kAvx2Blocking) > n) {
    n = internal::WorkspaceFloats(internal::kAvx2Blocking);
  }
  if (internal::WorkspaceFloats(internal::kAvx512Blocking) > n) {
    n = internal::WorkspaceFloats(internal::kAvx512Blocking);
  }
  return n;
}

// Per-thread scratch for the packed block of A (Run is const and may run on many threads).
float* ThreadWorkspace() {
  struct FreeDeleter {
    void operator()(float* p) const { std::free(p); }
  };
  constexpr int64_t kBytes = (MaxWorkspaceFloats() * 4 + 63) / 64 * 64;
  thread_local std::unique_ptr<float, FreeDeleter> buffer(
      static_cast<float*>(std::aligned_alloc(64, kBytes)));
  LOOM_CHECK(buffer != nullptr) << "TileGemm: cannot allocate " << kBytes << " B of workspace";
  return buffer.get();
}

}  // namespace

namespace internal {

// Plain 64-byte aligned memory. MADV_HUGEPAGE was tried: packing 4 MiB got ~3x faster
// (0.7 vs 2.5 ms), but the first huge-page fault of a process took 20-37 ms (direct compaction
// with THP defrag=madvise), a stall we do not want inside an op's construction.
void* AllocatePanelMemory(std::size_t bytes) {
  const std::size_t rounded = bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void FreePanelMemory(void* p) { std::free(p); }

Status CheckGemmIsaSupported(GemmIsa isa, bool has_avx2_fma, bool has_avx512f, GemmIsa best) {
  const bool ok = isa == GemmIsa::kScalar || (isa == GemmIsa::kAvx2 && has_avx2_fma) ||
                  (isa == GemmIsa::kAvx512 && has_avx512f && has_avx2_fma);
  if (ok) return OkStatus();
  return InvalidArgumentError(
      "TileGemm::Pack: ISA " + std::string(GemmIsaName(isa)) +
      " was forced but this CPU lacks it (best available: " + std::string(GemmIsaName(best)) + ")");
}

}  // namespace internal

std::string_view GemmIsaName(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::kAuto:
      return "auto";
    case GemmIsa::kScalar:
      return "scalar";
    case GemmIsa::kAvx2:
      return "avx2";
    case GemmIsa::kAvx512:
      return "avx512";
  }
  return "unknown";
}

GemmIsa DetectGemmIsa() {
  if (CpuHasAvx512()) return GemmIsa::kAvx512;
  if (CpuHasAvx2()) return GemmIsa::kAvx2;
  return GemmIsa::kScalar;
}

Result<TileGemm> TileGemm::Pack(const float* b, int64_t k, int64_t n, int64_t ldb,
                                const TileGemmOptions& options) {
  if (k <= 0 || n <= 0) {
    return InvalidArgumentError("TileGemm::Pack: B must be non-empty, got K=" + std::to_string(k) +
                                ", N=" + std::to_string(n));
  }
  if (ldb < n) {
    return InvalidArgumentError("TileGemm::Pack: ldb=" + std::to_string(ldb) +
                                " is smaller than N=" + std::to_string(n));
  }
  if (b == nullptr) return InvalidArgumentError("TileGemm::Pack: B is null");
  GemmIsa isa = options.isa == GemmIsa::kAuto ? DetectGemmIsa() : options.isa;
  LOOM_RETURN_IF_ERROR(
      internal::CheckGemmIsaSupported(isa, CpuHasAvx2(), CpuHasAvx512(), DetectGemmIsa()));
  TileGemm g;
  g.k_ = k;
  g.n_ = n;
  g.isa_ = isa;
  const int64_t nr = BlockingFor(isa).nr;
  g.panel_cols_ = nr;
  const int64_t panels = (n + nr - 1) / nr;
  g.packed_.assign(static_cast<size_t>(panels * k * nr), 0.0f);
  for (int64_t kk = 0; kk < k; ++kk) {  // read B row by row; each row feeds every panel
    for (int64_t p = 0; p < panels; ++p) {
      const int64_t col0 = p * nr;
      const int64_t cols = n - col0 < nr ? n - col0 : nr;
      std::memcpy(g.packed_.data() + (p * k + kk) * nr, b + kk * ldb + col0,
                  static_cast<size_t>(cols) * sizeof(float));
    }
  }
  return g;
}

void TileGemm::Run(const float* a, int64_t lda, int64_t m, float* c, int64_t ldc, int64_t n0,
                   int64_t n1, bool accumulate) const {
  LOOM_CHECK(lda >= k_ || m <= 1) << "TileGemm::Run: lda=" << lda << " < K=" << k_;
  Dispatch(a, lda, nullptr, m, c, ldc, n0, n1, accumulate);
}

int64_t TileGemm::PackedAFloats(int64_t m) const {
  return internal::PackedAFloats(BlockingFor(isa_), m, k_);
}

void TileGemm::PackA(const float* a, int64_t lda, int64_t m, float* packed_a) const {
  LOOM_CHECK(k_ > 0) << "TileGemm::PackA on an unpacked TileGemm";
  LOOM_CHECK(m >= 0 && (lda >= k_ || m <= 1)) << "TileGemm::PackA: m=" << m << " lda=" << lda;
  if (m == 0) return;
  switch (isa_) {
    case GemmIsa::kAvx512:
      internal::PackAvx512A(a, lda, m, k_, packed_a);
      break;
    case GemmIsa::kAvx2:
      internal::PackAvx2A(a, lda, m, k_, packed_a);
      break;
    default:
      internal::PackScalarA(a, lda, m, k_, packed_a);
      break;
  }
}

void TileGemm::RunPackedA(const float* packed_a, int64_t m, float* c, int64_t ldc, int64_t n0,
                          int64_t n1, bool accumulate) const {
  LOOM_CHECK(packed_a != nullptr || m == 0) << "TileGemm::RunPackedA: packed_a is null";
  Dispatch(nullptr, k_, packed_a, m, c, ldc, n0, n1, accumulate);
}

void TileGemm::Dispatch(const float* a, int64_t lda, const float* packed_a, int64_t m, float* c,
                        int64_t ldc, int64_t n0, int64_t n1, bool accumulate) const {
  LOOM_CHECK(k_ > 0) << "TileGemm::Run on an unpacked TileGemm";
  LOOM_CHECK(m >= 0 && 0 <= n0 && n0 <= n1 && n1 <= n_)
      << "TileGemm::Run: m=" << m << " n0=" << n0 << " n1=" << n1 << " N=" << n_;
  LOOM_CHECK(ldc >= n1 || m <= 1) << "TileGemm::Run: ldc=" << ldc << " < n1=" << n1;
  if (m == 0 || n0 == n1) return;
  const internal::GemmArgs args{a,  lda, m,          packed_.data(),   k_,      c,
                                ldc, n0, n1, accumulate, ThreadWorkspace(), packed_a};
  switch (isa_) {
    case GemmIsa::kAvx512:
      internal::RunAvx512Gemm(args);
      break;
    case GemmIsa::kAvx2:
      internal::RunAvx2Gemm(args);
      break;
    default:
      internal::RunScalarGemm(args);
      break;
  }
}

void ReferenceGemm(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                   int64_t m, int64_t n, int64_t k) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int64_t kk = 0; kk < k; ++kk) {
        acc += static_cast<double>(a[i * lda + kk]) * static_cast<double>(b[kk * ldb + j]);
      }
      c[i * ldc + j] = static_cast<float>(acc);
    }
  }
}

}  // namespace loom::overlap
