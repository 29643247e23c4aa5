// loom_overlap_gemm_rs_gap_bench: where the fused GEMM+RS loses to the closed form's 1.41x over
// decomposed (W = 2, R = 1, S = 8). For each benchmark shape it measures on this machine the
// tile GEMM's per-call cost (64-row fused tiles, whole-segment decomposed calls, the whole-M
// sequential call) and the owner's reduction (sum of two partials, the loop of GemmRs::Reduce),
// interleaved rep by rep, and predicts decomposed (segment calls' cost per MAC) and fused(S)
// (64-row tiles' cost per MAC) with the discrete-event simulator for a sweep of R = t_comm /
// t_comp (t_comp = the decomposed GEMM time), beside the closed form (no tile overhead, no
// reduction). Columns: dec/fus = simulated decomposed / best fused; dec/S8 at S = 8; closed8 =
// closed form at S = 8; "S8 same$" = S = 8 simulated at the segment calls' speed (no tile
// overhead, reduction kept); closedS* = closed form at the best S. One table per shape; no files.
//
//   ./build/src/loom/overlap/sim/loom_overlap_gemm_rs_gap_bench [--reps 7] [--shape 512,2048,512]
//
// The measured costs are single-thread and unpinned; run it on a quiet core (nice -n -5) for
// stable numbers. The link is the simulator's serial paced link (the proxy's model).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "loom/base/clock.h"
#include "loom/overlap/gemm/tile_gemm.h"
#include "loom/overlap/sim/closed_form.h"
#include "loom/overlap/sim/simulator.h"

namespace loom::overlap {
namespace {

struct Shape {
  int64_t m_shard, k, n;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Seconds of one call of fn.
template <typename Fn>
double TimeOnce(Fn fn) {
  const int64_t t0 = NowNanos();
  fn();
  return 1e-9 * static_cast<double>(NowNanos() - t0);
}

struct Measured {
  double tile64_s = 0;         // one 64-row fused tile (all N columns)
  double segment_s = 0;        // one m_shard-row call (decomposed)
  double whole_s = 0;          // one W·m_shard-row call (sequential)
  double reduce_s = 0;         // owner's sum of two m_shard × N partials
  TileCostModel fused_cost;    // per MAC of the 64-row tiles (the fused schedule's calls)
  TileCostModel segment_cost;  // per MAC of whole-segment calls (decomposed)
};

Result<Measured> Measure(const Shape& s, int reps) {
  const int64_t m = 2 * s.m_shard;
  std::vector<float> a(m * s.k), b(s.k * s.n), c(m * s.n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) * 0.1f - 0.3f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 5) * 0.1f - 0.2f;
  LOOM_ASSIGN_OR_RETURN(TileGemm g, TileGemm::Pack(b.data(), s.k, s.n, s.n));
  Measured out;
  const int64_t tile = std::min<int64_t>(64, s.m_shard);
  const int64_t tiles = m / tile;
  std::vector<float> out_seg(s.m_shard * s.n), p1(s.m_shard * s.n, 1.0f);
  // The four measurements interleaved in every rep (the machine's speed drifts), medians kept.
  auto tile_pass = [&] {  // the fused schedule: M/64 tiles back to back, all N columns each
    for (int64_t r = 0; r + tile <= m; r += tile) {
      g.Run(a.data() + r * s.k, s.k, tile, c.data() + r * s.n, s.n);
    }
  };
  auto segment_pass = [&] {  // decomposed: one call per segment
    for (int64_t r = 0; r < m; r += s.m_shard) {
      g.Run(a.data() + r * s.k, s.k, s.m_shard, c.data() + r * s.n, s.n);
    }
  };
  auto whole = [&] { g.Run(a.data(), s.k, m, c.data(), s.n); };
  auto reduce = [&] {  // GemmRs::Reduce: copy partial 0, add partial 1, row by row
    for (int64_t r = 0; r < s.m_shard; ++r) {
      float* dst = out_seg.data() + r * s.n;
      std::memcpy(dst, c.data() + r * s.n, s.n * sizeof(float));
      const float* p = p1.data() + r * s.n;
      for (int64_t j = 0; j < s.n; ++j) dst[j] += p[j];
    }
  };
  tile_pass();
  segment_pass();
  whole();
  reduce();
  std::vector<double> tt, ts, tw, tr;
  for (int i = 0; i < reps; ++i) {
    tt.push_back(TimeOnce(tile_pass) / static_cast<double>(tiles));
    ts.push_back(TimeOnce(segment_pass) / 2.0);
    tw.push_back(TimeOnce(whole));
    tr.push_back(TimeOnce(reduce));
  }
  out.tile64_s = Median(tt);
  out.segment_s = Median(ts);
  out.whole_s = Median(tw);
  out.reduce_s = Median(tr);
  // Per-MAC costs: the fused items from the 64-row tiles, the decomposed ones from segment calls.
  const double macs_tile = static_cast<double>(tile) * s.n * s.k;
  out.fused_cost.seconds_per_mac = out.tile64_s / macs_tile;
  out.segment_cost.seconds_per_mac = out.segment_s / (macs_tile * s.m_shard / tile);
  return out;
}

Status Report(const Shape& s, int reps) {
  LOOM_ASSIGN_OR_RETURN(Measured me, Measure(s, reps));
  const GemmRsShape shape{.world = 2, .m_shard = s.m_shard, .k_local = s.k, .n = s.n};
  const double bytes = GemmRsLinkBytes(2, s.m_shard, s.n, 4);
  const double flops = GemmRsFlops(2, s.m_shard, s.k, s.n);
  const double t_c = me.segment_s * 2;  // R is relative to the decomposed GEMM time
  std::printf("\n## gemm_rs %ldx%ldx%ld (W = 2): measured per call (median of %d, interleaved)\n",
              static_cast<long>(s.m_shard), static_cast<long>(s.k), static_cast<long>(s.n), reps);
  std::printf(
      "  64-row tile %.3f ms (%.1f GFLOP/s), segment of %ld rows %.2f ms (%.1f GFLOP/s), "
      "whole M %.2f ms (%.1f GFLOP/s)\n",
      me.tile64_s * 1e3, 2.0 / me.fused_cost.seconds_per_mac / 1e9, static_cast<long>(s.m_shard),
      me.segment_s * 1e3, flops / (2 * me.segment_s) / 1e9, me.whole_s * 1e3,
      flops / me.whole_s / 1e9);
  std::printf(
      "  tiles vs segment calls: %+.1f%% GEMM time; owner's reduce of one segment %.3f ms "
      "(%.1f%% of t_c)\n",
      100 * (me.fused_cost.seconds_per_mac / me.segment_cost.seconds_per_mac - 1),
      me.reduce_s * 1e3, 100 * me.reduce_s / t_c);
  std::printf("  %5s %9s %9s %8s %9s %8s %8s %9s %9s\n", "R", "dec ms", "fused ms", "best S",
              "dec/fus", "dec/S8", "closed8", "S8 same$", "closedS*");
  for (double r : {0.5, 0.75, 1.0, 1.25, 1.5, 2.0}) {
    SimOptions o;
    o.link.bytes_per_second = bytes / (r * t_c);
    o.reduce_seconds_per_byte = me.reduce_s / bytes;
    o.record_trace = false;
    o.cost = me.segment_cost;
    LOOM_ASSIGN_OR_RETURN(VariantPrediction dec,
                          SimulateGemmRs(shape, OverlapMode::kDecomposed, o));
    VariantPrediction best, s8, s8_same;
    for (int splits : {1, 2, 4, 8, 16}) {
      o.splits = splits;
      o.cost = me.fused_cost;
      LOOM_ASSIGN_OR_RETURN(VariantPrediction f, SimulateGemmRs(shape, OverlapMode::kFused, o));
      if (splits == 8) {
        s8 = f;
        o.cost = me.segment_cost;  // the fused schedule at the segment calls' GEMM speed
        LOOM_ASSIGN_OR_RETURN(s8_same, SimulateGemmRs(shape, OverlapMode::kFused, o));
      }
      if (best.seconds == 0 || f.seconds < best.seconds) best = f;
    }
    const double t_m = r * t_c;
    const double dec_ideal = GemmRsDecomposedIdeal(t_c, t_m, 2, 0);
    std::printf("  %5.2f %9.2f %9.2f %8d %9.3f %8.3f %8.3f %9.3f %9.3f\n", r, dec.seconds * 1e3,
                best.seconds * 1e3, best.splits, dec.seconds / best.seconds,
                dec.seconds / s8.seconds, dec_ideal / GemmRsFusedIdeal(t_c, t_m, 2, 8, 0),
                dec.seconds / s8_same.seconds,
                dec_ideal / GemmRsFusedIdeal(t_c, t_m, 2, best.splits, 0));
  }
  return OkStatus();
}

}  // namespace
}  // namespace loom::overlap

int main(int argc, char** argv) {
  int reps = 7;
  std::vector<loom::overlap::Shape> shapes = {
      {512, 2048, 512}, {1024, 4096, 256}, {256, 2048, 1024}};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--shape" && i + 1 < argc) {
      long m = 0, k = 0, n = 0;
      if (std::sscanf(argv[++i], "%ld,%ld,%ld", &m, &k, &n) != 3 || m < 1 || k < 1 || n < 1) {
        std::fprintf(stderr, "--shape wants M_SHARD,K,N (positive), got '%s'\n", argv[i]);
        return 2;
      }
      shapes = {{m, k, n}};
    } else {
      std::fprintf(stderr, "usage: %s [--reps N] [--shape M_SHARD,K,N]\n", argv[0]);
      return 2;
    }
  }
  std::printf(
      "GEMM+RS gap: simulated decomposed vs fused(S) from measured tile costs "
      "(modelled paced link; closed form = spec section 7, no tile overhead)\n");
  for (const auto& s : shapes) {
    if (loom::Status st = loom::overlap::Report(s, reps); !st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      return 1;
    }
  }
  return 0;
}
