#include "loom/overlap/gemm/gemm_efficiency.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "loom/base/clock.h"

namespace loom::overlap {
namespace {

// Restores OpenBLAS's thread count when the measurement ends.
class OpenBlasSingleThread {
 public:
  OpenBlasSingleThread() : saved_(openblas_get_num_threads()) { openblas_set_num_threads(1); }
  ~OpenBlasSingleThread() { openblas_set_num_threads(saved_); }

 private:
  int saved_;
};

std::vector<float> RandomMatrix(int64_t count, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(count));
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (float& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<float>(static_cast<double>(s >> 40) / static_cast<double>(1ull << 24)) * 2.0f -
        1.0f;
  }
  return v;
}

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

void Summarize(GemmArmStats* arm, const std::vector<double>& baseline) {
  arm->median_gflops = Quantile(arm->gflops, 0.5);
  arm->p25_gflops = Quantile(arm->gflops, 0.25);
  arm->p75_gflops = Quantile(arm->gflops, 0.75);
  std::vector<double> ratios;
  for (size_t t = 0; t < arm->gflops.size(); ++t) ratios.push_back(arm->gflops[t] / baseline[t]);
  arm->median_ratio_vs_one_call = Quantile(ratios, 0.5);
}

Status CheckOptions(const GemmEfficiencyOptions& o) {
  if (o.m <= 0 || o.k <= 0 || o.n <= 0 || o.tile_rows <= 0) {
    return InvalidArgumentError(
        "MeasureGemmEfficiency: sizes must be positive, got M=" + std::to_string(o.m) +
        " K=" + std::to_string(o.k) + " N=" + std::to_string(o.n) +
        " tile_rows=" + std::to_string(o.tile_rows));
  }
  if (o.trials < 1) {
    return InvalidArgumentError("MeasureGemmEfficiency: trials must be ≥ 1, got " +
                                std::to_string(o.trials));
  }
  return OkStatus();
}

}  // namespace

Result<GemmEfficiency> MeasureGemmEfficiency(const GemmEfficiencyOptions& options) {
  LOOM_RETURN_IF_ERROR(CheckOptions(options));
  GemmEfficiency out;
  out.options = options;
  const int64_t m = options.m, k = options.k, n = options.n, tile = options.tile_rows;
  std::vector<GemmIsa> isas = options.isas;
  if (isas.empty()) {
    const GemmIsa best = DetectGemmIsa();
    if (best == GemmIsa::kAvx512) isas = {GemmIsa::kAvx2, GemmIsa::kAvx512};
    if (best == GemmIsa::kAvx2) isas = {GemmIsa::kAvx2};
    if (best == GemmIsa::kScalar) isas = {GemmIsa::kScalar};
  }
  const std::vector<float> a = RandomMatrix(m * k, options.seed);
  const std::vector<float> b = RandomMatrix(k * n, options.seed + 1);
  std::vector<float> c_ref(static_cast<size_t>(m * n)), c(static_cast<size_t>(m * n));

  std::vector<TileGemm> gemms;
  out.ratio_isa = isas.front();
  for (GemmIsa isa : isas) {
    if (isa == DetectGemmIsa()) out.ratio_isa = isa;
  }
  for (GemmIsa isa : isas) {
    Stopwatch sw;
    LOOM_ASSIGN_OR_RETURN(TileGemm g, TileGemm::Pack(b.data(), k, n, n, {.isa = isa}));
    if (isa == out.ratio_isa) out.pack_seconds = sw.Seconds();
    gemms.push_back(std::move(g));
  }

  OpenBlasSingleThread single_thread;
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * k;
  auto one_call = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0f, a.data(), static_cast<int>(k), b.data(),
                static_cast<int>(n), 0.0f, c_ref.data(), static_cast<int>(n));
  };
  auto blas_tiles = [&] {
    for (int64_t r = 0; r < m; r += tile) {
      const int64_t rows = std::min(tile, m - r);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(rows),
                  static_cast<int>(n), static_cast<int>(k), 1.0f, a.data() + r * k,
                  static_cast<int>(k), b.data(), static_cast<int>(n), 0.0f, c.data() + r * n,
                  static_cast<int>(n));
    }
  };
  auto tile_gemm = [&](const TileGemm& g) {
    for (int64_t r = 0; r < m; r += tile) {
      g.Run(a.data() + r * k, k, std::min(tile, m - r), c.data() + r * n, n);
    }
  };
  auto timed = [&](auto&& fn) {
    Stopwatch sw;
    fn();
    return flops / sw.Seconds() * 1e-9;
  };

  auto add_arm = [&](std::string name) {
    GemmArmStats arm;
    arm.name = std::move(name);
    out.arms.push_back(std::move(arm));
  };
  add_arm("openblas_one_call");
  add_arm("openblas_tiles");
  for (GemmIsa isa : isas) add_arm("tile_gemm_" + std::string(GemmIsaName(isa)));

  // Warm-up round; also checks every ISA against the one-call result.
  one_call();
  blas_tiles();
  std::vector<double> row_scale(static_cast<size_t>(m), 0.0);  // per-row sum |a| · max|b|
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t kk = 0; kk < k; ++kk) row_scale[i] += std::fabs(a[i * k + kk]);
  }
  for (const TileGemm& g : gemms) {
    tile_gemm(g);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const double err = std::fabs(c[i * n + j] - c_ref[i * n + j]) / std::max(1.0, row_scale[i]);
        out.max_rel_error = std::max(out.max_rel_error, err);
      }
    }
  }
  if (!(out.max_rel_error <= 1e-4)) {
    return InternalError(
        "MeasureGemmEfficiency: TileGemm disagrees with OpenBLAS (max relative "
        "error " +
        std::to_string(out.max_rel_error) + ")");
  }

  for (int t = 0; t < options.trials; ++t) {
    out.arms[0].gflops.push_back(timed(one_call));
    out.arms[1].gflops.push_back(timed(blas_tiles));
    for (size_t i = 0; i < gemms.size(); ++i) {
      out.arms[2 + i].gflops.push_back(timed([&] { tile_gemm(gemms[i]); }));
    }
  }
  const std::vector<double> baseline = out.arms[0].gflops;
  for (GemmArmStats& arm : out.arms) Summarize(&arm, baseline);
  for (size_t i = 0; i < isas.size(); ++i) {
    if (isas[i] == out.ratio_isa) out.ratio = out.arms[2 + i].median_ratio_vs_one_call;
  }
  return out;
}

Result<GemmEfficiency> MeasureTileGemmVsOpenBlas(int64_t m, int64_t k, int64_t n, int64_t tile_rows,
                                                 int trials) {
  GemmEfficiencyOptions o;
  o.m = m;
  o.k = k;
  o.n = n;
  o.tile_rows = tile_rows;
  o.trials = trials;
  o.isas = {DetectGemmIsa()};
  return MeasureGemmEfficiency(o);
}

}  // namespace loom::overlap
