// loom_overlap_gemm_bench: TileGemm (64-row tiles, B packed once) vs OpenBLAS SGEMM on one core.
//
//   nice -n 10 ./loom_overlap_gemm_bench [--trials 11] [--tile-rows 64] [--scalar]
//       [--shape M,K,N ...] [--json FILE]
//
// Default shapes: (1024, 2048, 512) (the target) and the benchmark's (M_shard, K, N)
// shapes (512, 2048, 512), (1024, 4096, 256), (256, 2048, 1024). Arms are interleaved within each
// trial; medians, IQRs and the per-trial ratio tile / OpenBLAS-one-call are printed.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loom/overlap/gemm/gemm_efficiency.h"

namespace {

struct Shape {
  int64_t m, k, n;
};

int Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--trials N] [--tile-rows R] [--scalar] [--shape M,K,N]... "
               "[--json FILE]\n",
               argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace loom::overlap;  // NOLINT(build/namespaces)
  int trials = 11;
  int64_t tile_rows = 64;
  bool scalar = false;
  std::string json_path;
  std::vector<Shape> shapes;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--trials" && has_value) {
      trials = std::atoi(argv[++i]);
    } else if (arg == "--tile-rows" && has_value) {
      tile_rows = std::atoll(argv[++i]);
    } else if (arg == "--scalar") {
      scalar = true;
    } else if (arg == "--json" && has_value) {
      json_path = argv[++i];
    } else if (arg == "--shape" && has_value) {
      Shape s{};
      if (std::sscanf(argv[++i], "%ld,%ld,%ld", &s.m, &s.k, &s.n) != 3) return Usage(argv[0]);
      shapes.push_back(s);
    } else {
      return Usage(argv[0]);
    }
  }
  if (shapes.empty())
    shapes = {{1024, 2048, 512}, {512, 2048, 512}, {1024, 4096, 256}, {256, 2048, 1024}};
  std::vector<GemmIsa> isas = {GemmIsa::kAvx2, GemmIsa::kAvx512};
  if (DetectGemmIsa() == GemmIsa::kAvx2) isas = {GemmIsa::kAvx2};
  if (DetectGemmIsa() == GemmIsa::kScalar) isas = {};
  if (scalar || isas.empty()) isas.insert(isas.begin(), GemmIsa::kScalar);

  std::printf(
      "TileGemm vs OpenBLAS sgemm, 1 thread, tile_rows=%ld, %d trials (median [IQR] "
      "GFLOP/s; ratio = median per-trial tile/one-call)\n",
      tile_rows, trials);
  nlohmann::json report = {{"tile_rows", tile_rows},
                           {"trials", trials},
                           {"detected_isa", std::string(GemmIsaName(DetectGemmIsa()))},
                           {"shapes", nlohmann::json::array()}};
  for (const Shape& s : shapes) {
    GemmEfficiencyOptions o;
    o.m = s.m;
    o.k = s.k;
    o.n = s.n;
    o.tile_rows = tile_rows;
    o.trials = trials;
    o.isas = isas;
    loom::Result<GemmEfficiency> r = MeasureGemmEfficiency(o);
    if (!r.ok()) {
      std::fprintf(stderr, "error: %s\n", r.status().ToString().c_str());
      return 1;
    }
    std::printf("\nM=%ld K=%ld N=%ld (pack B %.2f ms, max rel err %.1e)\n", s.m, s.k, s.n,
                r->pack_seconds * 1e3, r->max_rel_error);
    std::printf("  %-20s %8s %18s %8s\n", "arm", "median", "IQR", "ratio");
    nlohmann::json shape = {{"m", s.m},
                            {"k", s.k},
                            {"n", s.n},
                            {"pack_ms", r->pack_seconds * 1e3},
                            {"max_rel_error", r->max_rel_error},
                            {"tile_gemm_vs_openblas", r->ratio},
                            {"ratio_isa", std::string(GemmIsaName(r->ratio_isa))},
                            {"arms", nlohmann::json::array()}};
    for (const GemmArmStats& arm : r->arms) {
      std::printf("  %-20s %8.1f   [%6.1f, %6.1f] %8.3f\n", arm.name.c_str(), arm.median_gflops,
                  arm.p25_gflops, arm.p75_gflops, arm.median_ratio_vs_one_call);
      shape["arms"].push_back({{"name", arm.name},
                               {"median_gflops", arm.median_gflops},
                               {"p25_gflops", arm.p25_gflops},
                               {"p75_gflops", arm.p75_gflops},
                               {"ratio_vs_one_call", arm.median_ratio_vs_one_call},
                               {"gflops", arm.gflops}});
    }
    report["shapes"].push_back(shape);
  }
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    f << report.dump(2) << "\n";
    if (!f) {
      std::fprintf(stderr, "error: cannot write %s\n", json_path.c_str());
      return 1;
    }
  }
  return 0;
}
