// Measures TileGemm against OpenBLAS SGEMM on one core: the `tile_gemm_vs_openblas` number of
// `loom bench overlap` and of the `loom_overlap_gemm_bench` executable.
//
// Arms, interleaved within every trial (A B C D, A B C D, ...) after one warm-up round:
//   openblas_one_call   one cblas_sgemm over all M rows (the baseline)
//   openblas_tiles      M / tile_rows cblas_sgemm calls of tile_rows rows (OpenBLAS repacks B)
//   tile_gemm_<isa>     TileGemm::Run over the same row tiles, B packed once before timing
// OpenBLAS is set to one thread for the measurement (and restored afterwards).
//
//   LOOM_ASSIGN_OR_RETURN(GemmEfficiency e, MeasureTileGemmVsOpenBlas(1024, 2048, 512, 64, 11));
//   printf("%.2f\n", e.ratio);
//
// Thread-safety: not reentrant (it changes OpenBLAS's global thread count); call from one thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/overlap/gemm/tile_gemm.h"

namespace loom::overlap {

struct GemmEfficiencyOptions {
  int64_t m = 1024;        // rows of A and C
  int64_t k = 2048;        // depth
  int64_t n = 512;         // columns of B and C
  int64_t tile_rows = 64;  // rows per tile call (the last tile may be shorter)
  int trials = 11;         // timed rounds over all arms (one untimed warm-up round precedes them)
  // TileGemm ISAs to time; empty: every SIMD ISA this CPU has (avx2, avx512). kScalar may be
  // listed explicitly (slow). An ISA the CPU lacks is an error.
  std::vector<GemmIsa> isas;
  uint64_t seed = 1;  // inputs are uniform in [-1, 1)
};

// One arm's per-trial throughputs and summary.
struct GemmArmStats {
  std::string name;            // "openblas_one_call", "openblas_tiles", "tile_gemm_avx2", ...
  std::vector<double> gflops;  // one entry per trial
  double median_gflops = 0;
  double p25_gflops = 0;  // interquartile range = [p25, p75]
  double p75_gflops = 0;
  // Median over trials of (this arm / openblas_one_call in the same trial): robust to drift.
  double median_ratio_vs_one_call = 0;
};

struct GemmEfficiency {
  GemmEfficiencyOptions options;
  std::vector<GemmArmStats> arms;        // openblas_one_call, openblas_tiles, then one per ISA
  GemmIsa ratio_isa = GemmIsa::kScalar;  // the ISA of `ratio` (DetectGemmIsa() if timed)
  double ratio = 0;                      // median_ratio_vs_one_call of tile_gemm_<ratio_isa>
  double pack_seconds = 0;  // one TileGemm::Pack of B (ratio_isa), not included in the arms
  // max |tile − openblas| / max(1, sum_k |a_ik|) over C and all ISAs (|b| ≤ 1, so the divisor
  // bounds sum_k |a_ik||b_kj|).
  double max_rel_error = 0;
};

// Runs the interleaved arms. kInvalidArgument on bad sizes, trials < 1 or an unavailable ISA;
// kInternal if a TileGemm result disagrees with OpenBLAS beyond 1e-4 relative error.
Result<GemmEfficiency> MeasureGemmEfficiency(const GemmEfficiencyOptions& options);

// Shorthand used by `loom bench overlap`: the detected ISA only.
Result<GemmEfficiency> MeasureTileGemmVsOpenBlas(int64_t m, int64_t k, int64_t n, int64_t tile_rows,
                                                 int trials);

}  // namespace loom::overlap
