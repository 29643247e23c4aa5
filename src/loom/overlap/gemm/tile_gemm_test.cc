#include "loom/overlap/gemm/tile_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "loom/overlap/gemm/internal/isa_check.h"

namespace loom::overlap {
namespace {

std::vector<float> Random(int64_t count, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(count));
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7;
  for (float& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<float>(static_cast<double>(s >> 40) / static_cast<double>(1ull << 24)) * 2.0f -
        1.0f;
  }
  return v;
}

// The ISAs this CPU can run (always includes the scalar reference kernel).
std::vector<GemmIsa> AvailableIsas() {
  std::vector<GemmIsa> isas = {GemmIsa::kScalar};
  if (DetectGemmIsa() == GemmIsa::kAvx2 || DetectGemmIsa() == GemmIsa::kAvx512) {
    isas.push_back(GemmIsa::kAvx2);
  }
  if (DetectGemmIsa() == GemmIsa::kAvx512) isas.push_back(GemmIsa::kAvx512);
  return isas;
}

// One problem: A (m × k, stride lda), B (k × n, stride ldb), the double-precision reference
// C = A·B and, per element, the error scale sum_k |a||b|.
struct Problem {
  int64_t m, n, k, lda, ldb;
  std::vector<float> a, b, ref;
  std::vector<double> scale;

  Problem(int64_t m_, int64_t n_, int64_t k_, int64_t lda_pad = 0, int64_t ldb_pad = 0)
      : m(m_), n(n_), k(k_), lda(k_ + lda_pad), ldb(n_ + ldb_pad) {
    a = Random(m * lda, static_cast<uint64_t>(m * 1000003 + k));
    b = Random(k * ldb, static_cast<uint64_t>(n * 7919 + k));
    ref.assign(static_cast<size_t>(m * n), 0.0f);
    ReferenceGemm(a.data(), lda, b.data(), ldb, ref.data(), n, m, n, k);
    scale.assign(static_cast<size_t>(m * n), 0.0);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t kk = 0; kk < k; ++kk) {
        const double ai = std::fabs(a[i * lda + kk]);
        for (int64_t j = 0; j < n; ++j) scale[i * n + j] += ai * std::fabs(b[kk * ldb + j]);
      }
    }
  }

  // Largest |got − expected| / sum|a||b| over C[0..m, n0..n1); `base` is what C held before an
  // accumulating run (or nullptr).
  double MaxRelError(const std::vector<float>& c, int64_t ldc, int64_t n0, int64_t n1,
                     const std::vector<float>* base = nullptr) const {
    double worst = 0;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = n0; j < n1; ++j) {
        double expected = ref[i * n + j];
        if (base != nullptr) expected += (*base)[i * ldc + j];
        const double err = std::fabs(c[i * ldc + j] - expected) / (scale[i * n + j] + 1e-30);
        worst = std::max(worst, err);
      }
    }
    return worst;
  }
};

constexpr double kTolerance = 2e-5;  // relative to sum_k |a_ik||b_kj|
constexpr float kSentinel = -12345.0f;

TEST(TileGemmTest, IsaNamesAndDetection) {
  EXPECT_EQ(GemmIsaName(GemmIsa::kScalar), "scalar");
  EXPECT_EQ(GemmIsaName(GemmIsa::kAvx2), "avx2");
  EXPECT_EQ(GemmIsaName(GemmIsa::kAvx512), "avx512");
  EXPECT_NE(DetectGemmIsa(), GemmIsa::kAuto);
  Result<TileGemm> g = TileGemm::Pack(Random(4, 1).data(), 2, 2, 2);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->isa(), DetectGemmIsa());
}

TEST(TileGemmTest, EveryIsaMatchesReferenceOnOddShapes) {
  const int64_t sizes[] = {1, 7, 63, 65, 129, 257};
  for (int64_t m : sizes) {
    for (int64_t n : sizes) {
      for (int64_t k : sizes) {
        const Problem p(m, n, k);
        for (GemmIsa isa : AvailableIsas()) {
          Result<TileGemm> g = TileGemm::Pack(p.b.data(), k, n, n, {.isa = isa});
          ASSERT_TRUE(g.ok()) << g.status();
          ASSERT_EQ(g->isa(), isa);
          std::vector<float> c(static_cast<size_t>(m * n), kSentinel);
          g->Run(p.a.data(), k, m, c.data(), n);
          ASSERT_LE(p.MaxRelError(c, n, 0, n), kTolerance)
              << GemmIsaName(isa) << " M=" << m << " N=" << n << " K=" << k;
        }
      }
    }
  }
}

TEST(TileGemmTest, DeepKAcrossSeveralBlocksAndPaddedStrides) {
  // K = 1000 spans several K-blocks and ends in a partial one; lda, ldb, ldc exceed the shape.
  const Problem p(70, 50, 1000, /*lda_pad=*/3, /*ldb_pad=*/5);
  const int64_t ldc = p.n + 9;
  for (GemmIsa isa : AvailableIsas()) {
    Result<TileGemm> g = TileGemm::Pack(p.b.data(), p.k, p.n, p.ldb, {.isa = isa});
    ASSERT_TRUE(g.ok()) << g.status();
    std::vector<float> c(static_cast<size_t>(p.m * ldc), kSentinel);
    g->Run(p.a.data(), p.lda, p.m, c.data(), ldc);
    EXPECT_LE(p.MaxRelError(c, ldc, 0, p.n), kTolerance) << GemmIsaName(isa);
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = p.n; j < ldc; ++j) {
        ASSERT_EQ(c[i * ldc + j], kSentinel) << GemmIsaName(isa) << " wrote past N at " << i;
      }
    }
  }
}

TEST(TileGemmTest, AccumulateAddsToExistingC) {
  const Problem p(65, 77, 300);
  for (GemmIsa isa : AvailableIsas()) {
    Result<TileGemm> g = TileGemm::Pack(p.b.data(), p.k, p.n, p.n, {.isa = isa});
    ASSERT_TRUE(g.ok()) << g.status();
    const std::vector<float> base = Random(p.m * p.n, 99);
    std::vector<float> c = base;
    g->Run(p.a.data(), p.k, p.m, c.data(), p.n, /*accumulate=*/true);
    EXPECT_LE(p.MaxRelError(c, p.n, 0, p.n, &base), kTolerance) << GemmIsaName(isa);
    // Without accumulate the old contents are overwritten.
    g->Run(p.a.data(), p.k, p.m, c.data(), p.n, /*accumulate=*/false);
    EXPECT_LE(p.MaxRelError(c, p.n, 0, p.n), kTolerance) << GemmIsaName(isa);
  }
}

TEST(TileGemmTest, ColumnSubRangeWritesOnlyItsColumns) {
  const Problem p(29, 100, 270);
  // Ranges aligned and unaligned to the panels, inside one panel, up to the ragged end, empty.
  const std::pair<int64_t, int64_t> ranges[] = {{0, 100}, {5, 37},   {3, 9},   {32, 64},
                                                {16, 48}, {90, 100}, {50, 50}, {0, 1}};
  for (GemmIsa isa : AvailableIsas()) {
    Result<TileGemm> g = TileGemm::Pack(p.b.data(), p.k, p.n, p.n, {.isa = isa});
    ASSERT_TRUE(g.ok()) << g.status();
    for (auto [n0, n1] : ranges) {
      for (bool accumulate : {false, true}) {
        const std::vector<float> base(static_cast<size_t>(p.m * p.n), accumulate ? 0.5f : 0.0f);
        std::vector<float> c = base;
        for (int64_t i = 0; i < p.m; ++i) {
          for (int64_t j = 0; j < p.n; ++j) {
            if (j < n0 || j >= n1) c[i * p.n + j] = kSentinel;
          }
        }
        g->Run(p.a.data(), p.k, p.m, c.data(), p.n, n0, n1, accumulate);
        EXPECT_LE(p.MaxRelError(c, p.n, n0, n1, accumulate ? &base : nullptr), kTolerance)
            << GemmIsaName(isa) << " n0=" << n0 << " n1=" << n1;
        for (int64_t i = 0; i < p.m; ++i) {
          for (int64_t j = 0; j < p.n; ++j) {
            if (j >= n0 && j < n1) continue;
            ASSERT_EQ(c[i * p.n + j], kSentinel) << GemmIsaName(isa) << " n0=" << n0 << " n1=" << n1
                                                 << " wrote (" << i << "," << j << ")";
          }
        }
      }
    }
  }
}

// A packed once (PackA) and reused over column sub-ranges gives bit-for-bit what Run gives: the
// same micro-panels reach the same micro-kernel. Rows span several MC blocks with a ragged last
// micro-panel, K several KC slices, and A has a padded stride.
TEST(TileGemmTest, PrepackedAMatchesRunBitForBit) {
  const Problem p(161, 100, 700, /*lda_pad=*/3);
  const std::pair<int64_t, int64_t> ranges[] = {{0, 100}, {5, 37}, {32, 64}, {90, 100}, {0, 1}};
  for (GemmIsa isa : AvailableIsas()) {
    Result<TileGemm> g = TileGemm::Pack(p.b.data(), p.k, p.n, p.n, {.isa = isa});
    ASSERT_TRUE(g.ok()) << g.status();
    const int64_t floats = g->PackedAFloats(p.m);
    EXPECT_GE(floats, p.m * p.k) << GemmIsaName(isa);
    EXPECT_LT(floats, (p.m + 16) * p.k) << GemmIsaName(isa);  // at most MR − 1 padding rows
    std::vector<float> packed(static_cast<size_t>(floats), kSentinel);
    g->PackA(p.a.data(), p.lda, p.m, packed.data());
    for (auto [n0, n1] : ranges) {
      for (bool accumulate : {false, true}) {
        std::vector<float> expected(static_cast<size_t>(p.m * p.n), 0.25f);
        std::vector<float> got = expected;
        g->Run(p.a.data(), p.lda, p.m, expected.data(), p.n, n0, n1, accumulate);
        g->RunPackedA(packed.data(), p.m, got.data(), p.n, n0, n1, accumulate);
        ASSERT_EQ(got, expected) << GemmIsaName(isa) << " n0=" << n0 << " n1=" << n1;
      }
    }
    std::vector<float> c(static_cast<size_t>(p.m * p.n));
    g->RunPackedA(packed.data(), p.m, c.data(), p.n, 0, p.n);
    EXPECT_LE(p.MaxRelError(c, p.n, 0, p.n), kTolerance) << GemmIsaName(isa);
  }
}

TEST(TileGemmTest, ZeroRowsIsANoOp) {
  const Problem p(1, 20, 10);
  Result<TileGemm> g = TileGemm::Pack(p.b.data(), p.k, p.n, p.n);
  ASSERT_TRUE(g.ok()) << g.status();
  std::vector<float> c(20, kSentinel);
  g->Run(p.a.data(), p.k, 0, c.data(), p.n);
  for (float x : c) EXPECT_EQ(x, kSentinel);
  EXPECT_EQ(g->k(), 10);
  EXPECT_EQ(g->n(), 20);
  EXPECT_DOUBLE_EQ(g->Flops(64), 2.0 * 64 * 20 * 10);
}

TEST(TileGemmTest, ConcurrentRunsOnDisjointRowTiles) {
  const Problem p(256, 96, 513);
  for (GemmIsa isa : AvailableIsas()) {
    Result<TileGemm> g = TileGemm::Pack(p.b.data(), p.k, p.n, p.n, {.isa = isa});
    ASSERT_TRUE(g.ok()) << g.status();
    std::vector<float> c(static_cast<size_t>(p.m * p.n), kSentinel);
    const TileGemm& gemm = *g;
    auto worker = [&](int parity) {
      // 64-row tiles; thread 0 takes even tiles, thread 1 odd ones; each repeats to overlap.
      for (int rep = 0; rep < 3; ++rep) {
        for (int64_t t = parity; t * 64 < p.m; t += 2) {
          gemm.Run(p.a.data() + t * 64 * p.k, p.k, 64, c.data() + t * 64 * p.n, p.n);
        }
      }
    };
    std::thread t0(worker, 0), t1(worker, 1);
    t0.join();
    t1.join();
    EXPECT_LE(p.MaxRelError(c, p.n, 0, p.n), kTolerance) << GemmIsaName(isa);
  }
}

TEST(TileGemmTest, PackRejectsBadShapes) {
  const std::vector<float> b = Random(64, 3);
  for (auto [k, n, ldb] : {std::tuple<int64_t, int64_t, int64_t>{0, 4, 4},
                           {-1, 4, 4},
                           {4, 0, 4},
                           {4, -3, 4},
                           {4, 8, 7}}) {
    Result<TileGemm> g = TileGemm::Pack(b.data(), k, n, ldb);
    ASSERT_FALSE(g.ok()) << "K=" << k << " N=" << n << " ldb=" << ldb;
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  }
  Result<TileGemm> g = TileGemm::Pack(b.data(), 4, 8, 7);
  EXPECT_NE(g.status().message().find("ldb=7"), std::string::npos) << g.status();
  EXPECT_FALSE(TileGemm::Pack(nullptr, 4, 4, 4).ok());
}

TEST(TileGemmTest, ForcedIsaIsAcceptedExactlyWhenTheCpuHasIt) {
  const std::vector<float> b = Random(64, 4);
  const GemmIsa best = DetectGemmIsa();
  const auto rank = [](GemmIsa isa) {
    return isa == GemmIsa::kAvx512 ? 2 : isa == GemmIsa::kAvx2 ? 1 : 0;
  };
  for (GemmIsa isa : {GemmIsa::kScalar, GemmIsa::kAvx2, GemmIsa::kAvx512}) {
    Result<TileGemm> g = TileGemm::Pack(b.data(), 8, 8, 8, {.isa = isa});
    if (rank(isa) <= rank(best)) {
      ASSERT_TRUE(g.ok()) << GemmIsaName(isa) << ": " << g.status();
      EXPECT_EQ(g->isa(), isa);
    } else {
      ASSERT_FALSE(g.ok()) << GemmIsaName(isa) << " accepted on a CPU without it";
      EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(g.status().message().find(GemmIsaName(isa)), std::string::npos);
    }
  }
}

TEST(TileGemmTest, IsaCheckRejectsWhatAnOlderCpuLacks) {
  // An AVX2-only CPU: AVX-512 is refused with a message naming both ISAs.
  Status s = internal::CheckGemmIsaSupported(GemmIsa::kAvx512, true, false, GemmIsa::kAvx2);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("avx512"), std::string::npos) << s;
  EXPECT_NE(s.message().find("best available: avx2"), std::string::npos) << s;
  EXPECT_TRUE(internal::CheckGemmIsaSupported(GemmIsa::kAvx2, true, false, GemmIsa::kAvx2).ok());
  // A pre-AVX2 CPU runs only the scalar kernel.
  EXPECT_FALSE(
      internal::CheckGemmIsaSupported(GemmIsa::kAvx2, false, false, GemmIsa::kScalar).ok());
  EXPECT_FALSE(
      internal::CheckGemmIsaSupported(GemmIsa::kAvx512, false, true, GemmIsa::kScalar).ok());
  EXPECT_TRUE(
      internal::CheckGemmIsaSupported(GemmIsa::kScalar, false, false, GemmIsa::kScalar).ok());
}

}  // namespace
}  // namespace loom::overlap
