#include "loom/overlap/sim/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "loom/overlap/sim/closed_form.h"

namespace loom::overlap {
namespace {

constexpr double kFlops = 60e9;

SimOptions IdealOptions() {
  SimOptions o;
  o.cost.fixed_s = 0;
  o.cost.penalty_rows = 0;
  o.cost.seconds_per_mac = 2.0 / kFlops;
  o.link.latency_s = 0;
  return o;
}

AgGemmShape Ag(int world) { return AgGemmShape{world, 512, 2048, 512, 4}; }
GemmRsShape Rs(int world) { return GemmRsShape{world, 512, 1024, 512, 4}; }

// Sets the link so that t_comm / t_comp = r for AG+GEMM.
SimOptions AgAtRatio(const AgGemmShape& s, double r, int splits) {
  SimOptions o = IdealOptions();
  o.splits = splits;
  o.link.bytes_per_second =
      AgGemmBandwidthForRatio(s.world, s.m_shard, s.k, s.n_local, s.elem_bytes, kFlops, r);
  return o;
}

SimOptions RsAtRatio(const GemmRsShape& s, double r, int splits) {
  SimOptions o = IdealOptions();
  o.splits = splits;
  o.link.bytes_per_second =
      GemmRsBandwidthForRatio(s.world, s.m_shard, s.k_local, s.n, s.elem_bytes, kFlops, r);
  return o;
}

TEST(ClosedFormTest, SpecNumbersAtW2R1) {
  EXPECT_DOUBLE_EQ(AgGemmSequentialIdeal(1, 1), 2.0);
  EXPECT_DOUBLE_EQ(AgGemmDecomposedIdeal(1, 1, 2), 1.5);
  EXPECT_DOUBLE_EQ(AgGemmFusedIdeal(1, 1, 2, 8), 1.0625);
  EXPECT_NEAR(AgGemmDecomposedIdeal(1, 1, 2) / AgGemmFusedIdeal(1, 1, 2, 8), 1.41, 0.005);
  EXPECT_DOUBLE_EQ(GemmRsDecomposedIdeal(1, 1, 2, 0.1), 1.6);
  EXPECT_DOUBLE_EQ(GemmRsFusedIdeal(1, 1, 2, 8, 0.0), 1.0625);
  EXPECT_DOUBLE_EQ(FusionBreakEvenRatio(4), 0.75);
  EXPECT_DOUBLE_EQ(CommComputeRatio(0.5, 2.0), 0.25);
}

TEST(ClosedFormTest, BandwidthForRatioMatchesSpecExample) {
  // Spec §7: W=2, fp32, F = 60 GFLOP/s, N_loc = 512: R = 1 at B ≈ 117 MB/s.
  const double b = AgGemmBandwidthForRatio(2, 512, 2048, 512, 4, 60e9, 1.0);
  EXPECT_NEAR(b, 117.2e6, 0.5e6);
  EXPECT_NEAR(AgGemmBandwidthForRatio(2, 512, 2048, 512, 4, 60e9, 2.0), b / 2, 1);
  const double t_c = AgGemmFlops(2, 512, 2048, 512) / 60e9;
  EXPECT_NEAR(CommComputeRatio(AgGemmLinkBytes(2, 512, 2048, 4) / b, t_c), 1.0, 1e-12);
}

TEST(SimulatorTest, AgGemmMatchesClosedFormsWithoutOverhead) {
  for (int w : {2, 4}) {
    const AgGemmShape s = Ag(w);
    for (double r : {0.25, 0.5, 1.0, 2.0}) {
      for (int splits : {1, 4, 8}) {
        SimOptions o = AgAtRatio(s, r, splits);
        auto p = PredictAgGemm(s, o);
        ASSERT_TRUE(p.ok()) << p.status().ToString();
        const double t_c = o.cost.Seconds(w * s.m_shard, s.n_local, s.k);
        const double t_m = r * t_c;
        SCOPED_TRACE("W=" + std::to_string(w) + " R=" + std::to_string(r) +
                     " S=" + std::to_string(splits));
        EXPECT_NEAR(p->sequential.seconds / AgGemmSequentialIdeal(t_c, t_m), 1.0, 0.03);
        EXPECT_NEAR(p->decomposed.seconds / AgGemmDecomposedIdeal(t_c, t_m, w), 1.0, 0.03);
        EXPECT_NEAR(p->fused.seconds / AgGemmFusedIdeal(t_c, t_m, w, splits), 1.0, 0.03);
        EXPECT_NEAR(p->fused.link_s, t_m, 1e-9);
      }
    }
  }
}

TEST(SimulatorTest, GemmRsMatchesClosedFormsWithoutOverhead) {
  for (int w : {2, 4}) {
    const GemmRsShape s = Rs(w);
    for (double r : {0.25, 0.5, 1.0, 2.0}) {
      for (int splits : {1, 4, 8}) {
        SimOptions o = RsAtRatio(s, r, splits);
        auto p = PredictGemmRs(s, o);
        ASSERT_TRUE(p.ok()) << p.status().ToString();
        const double t_c = o.cost.Seconds(w * s.m_shard, s.n, s.k_local);
        const double t_m = r * t_c;
        SCOPED_TRACE("W=" + std::to_string(w) + " R=" + std::to_string(r) +
                     " S=" + std::to_string(splits));
        EXPECT_NEAR(p->sequential.seconds / GemmRsSequentialIdeal(t_c, t_m, 0), 1.0, 0.03);
        EXPECT_NEAR(p->decomposed.seconds / GemmRsDecomposedIdeal(t_c, t_m, w, 0), 1.0, 0.03);
        EXPECT_NEAR(p->fused.seconds / GemmRsFusedIdeal(t_c, t_m, w, splits, 0), 1.0, 0.03);
      }
    }
  }
}

TEST(SimulatorTest, GemmRsSequentialAddsReductionTail) {
  const GemmRsShape s = Rs(2);
  SimOptions o = RsAtRatio(s, 1.0, 1);
  const double chunk_bytes = static_cast<double>(s.m_shard * s.n * s.elem_bytes);
  o.reduce_seconds_per_byte = 1e-4 / chunk_bytes;  // 100 µs per chunk
  auto v = SimulateGemmRs(s, OverlapMode::kSequential, o);
  ASSERT_TRUE(v.ok());
  const double t_c = o.cost.Seconds(2 * s.m_shard, s.n, s.k_local);
  EXPECT_NEAR(v->seconds, GemmRsSequentialIdeal(t_c, t_c, 1e-4), 1e-9);
}

TEST(SimulatorTest, OrderingFusedDecomposedSequentialAboveBreakEven) {
  for (int w : {2, 4}) {
    for (double r : {1.0, 2.0}) {
      ASSERT_GT(r, FusionBreakEvenRatio(w));
      for (int splits : {2, 4, 8, 16}) {
        SCOPED_TRACE("W=" + std::to_string(w) + " R=" + std::to_string(r) +
                     " S=" + std::to_string(splits));
        auto ag = PredictAgGemm(Ag(w), AgAtRatio(Ag(w), r, splits));
        ASSERT_TRUE(ag.ok());
        EXPECT_LT(ag->fused.seconds, ag->decomposed.seconds);
        EXPECT_LT(ag->decomposed.seconds, ag->sequential.seconds);
        auto rs = PredictGemmRs(Rs(w), RsAtRatio(Rs(w), r, splits));
        ASSERT_TRUE(rs.ok());
        EXPECT_LT(rs->fused.seconds, rs->decomposed.seconds);
        EXPECT_LT(rs->decomposed.seconds, rs->sequential.seconds);
      }
    }
  }
}

TEST(SimulatorTest, AtW2R1FusedIsAbout141TimesDecomposed) {
  auto p = PredictAgGemm(Ag(2), AgAtRatio(Ag(2), 1.0, 8));
  ASSERT_TRUE(p.ok());
  EXPECT_NEAR(p->decomposed.seconds / p->fused.seconds, 1.41, 0.02);
  EXPECT_EQ(p->chosen, OverlapMode::kFused);
}

TEST(SimulatorTest, FusedSplitCandidatesPickTheBestS) {
  SimOptions o = AgAtRatio(Ag(2), 1.0, 1);
  o.cost.fixed_s = 2e-3;  // a large per-tile overhead makes very fine splits lose
  o.fused_split_candidates = {1, 2, 4, 8, 16, 32};
  auto p = PredictAgGemm(Ag(2), o);
  ASSERT_TRUE(p.ok());
  for (int splits : o.fused_split_candidates) {
    SimOptions one = o;
    one.splits = splits;
    auto v = SimulateAgGemm(Ag(2), OverlapMode::kFused, one);
    ASSERT_TRUE(v.ok());
    EXPECT_LE(p->fused.seconds, v->seconds);
    if (splits == p->fused.splits) {
      EXPECT_DOUBLE_EQ(p->fused.seconds, v->seconds);
    }
  }
  EXPECT_GT(p->fused.splits, 1);
  EXPECT_LT(p->fused.splits, 32);
}

TEST(SimulatorTest, DecomposedMatchesFusedWhenRSmall) {
  for (int w : {2, 4}) {
    auto p = PredictAgGemm(Ag(w), AgAtRatio(Ag(w), 0.25, 8));
    ASSERT_TRUE(p.ok());
    EXPECT_NEAR(p->fused.seconds / p->decomposed.seconds, 1.0, 0.01);
    // Within the margin the simpler mode wins.
    EXPECT_EQ(p->chosen, OverlapMode::kDecomposed);
  }
}

TEST(SimulatorTest, AgTraceTilesStartOnlyAfterTheirChunks) {
  SimOptions o = AgAtRatio(Ag(2), 1.0, 8);
  o.rank = 1;
  auto v = SimulateAgGemm(Ag(2), OverlapMode::kFused, o);
  ASSERT_TRUE(v.ok());
  std::map<int, double> arrive;
  double last_arrival = 0;
  for (const SimEvent& e : v->trace.events) {
    if (e.kind == SimEventKind::kChunkArrive) {
      arrive[e.item] = e.time_s;
      last_arrival = std::max(last_arrival, e.time_s);
    }
  }
  ASSERT_EQ(arrive.size(), 8u);
  int remote_tiles = 0, remote_before_last = 0, tiles_seen = 0;
  for (const SimEvent& e : v->trace.events) {
    if (e.kind != SimEventKind::kTileStart) continue;
    ++tiles_seen;
    if (tiles_seen <= 8) {
      EXPECT_EQ(e.peer, 1) << "own shard first";
    }
    for (int c : e.waits_on) {
      // Trace order: the chunk's arrival was already seen (events sorted by time).
      ASSERT_TRUE(arrive.count(c)) << "tile " << e.item << " starts before chunk " << c;
      EXPECT_LE(arrive[c], e.time_s);
    }
    if (e.peer != 1) {
      ++remote_tiles;
      EXPECT_FALSE(e.waits_on.empty());
      if (e.time_s < last_arrival) ++remote_before_last;
    }
  }
  EXPECT_EQ(tiles_seen, 16);
  EXPECT_EQ(remote_tiles, 8);
  EXPECT_GE(remote_before_last, 1);
}

TEST(SimulatorTest, GemmRsOwnSegmentLastAndChunksAfterTheirTiles) {
  const GemmRsShape s = Rs(4);
  SimOptions o = RsAtRatio(s, 1.0, 4);
  o.rank = 1;
  for (OverlapMode mode : {OverlapMode::kDecomposed, OverlapMode::kFused}) {
    auto v = SimulateGemmRs(s, mode, o);
    ASSERT_TRUE(v.ok());
    std::vector<int> tile_peers;
    std::map<int, double> tile_end;
    for (const SimEvent& e : v->trace.events) {
      if (e.kind == SimEventKind::kTileStart) tile_peers.push_back(e.peer);
      if (e.kind == SimEventKind::kTileEnd) tile_end[e.item] = e.time_s;
      if (e.kind == SimEventKind::kChunkSend) {
        EXPECT_NE(e.peer, 1) << "no chunk to self";
        EXPECT_FALSE(tile_end.empty());
      }
    }
    const int per_seg = mode == OverlapMode::kFused ? 4 : 1;
    ASSERT_EQ(tile_peers.size(), 4u * per_seg);
    // XOR-swizzled destinations 1^1=0, 1^2=3, 1^3=2, then own segment 1 last.
    const int expect[] = {0, 3, 2, 1};
    for (int i = 0; i < 4 * per_seg; ++i) EXPECT_EQ(tile_peers[i], expect[i / per_seg]);
  }
}

TEST(SimulatorTest, AutoPicksSequentialOnFastLinkWithLargePenalty) {
  SimOptions o = IdealOptions();
  o.link.bytes_per_second = 0;  // unlimited
  o.cost.penalty_rows = 512;
  o.cost.fixed_s = 1e-4;
  auto p = PredictAgGemm(Ag(2), o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->chosen, OverlapMode::kSequential);
  EXPECT_LT(p->sequential.seconds, p->decomposed.seconds);
  EXPECT_LT(p->decomposed.seconds, p->fused.seconds);
  EXPECT_DOUBLE_EQ(p->chosen_seconds, p->sequential.seconds);
  auto rs = PredictGemmRs(Rs(2), o);
  ASSERT_TRUE(rs.ok());
  EXPECT_EQ(rs->chosen, OverlapMode::kSequential);
}

TEST(SimulatorTest, ChooseModeMargin) {
  EXPECT_EQ(ChooseMode(1.0, 0.97, 0.96, 0.05), OverlapMode::kSequential);
  EXPECT_EQ(ChooseMode(1.0, 0.90, 0.88, 0.05), OverlapMode::kDecomposed);
  EXPECT_EQ(ChooseMode(1.0, 0.90, 0.80, 0.05), OverlapMode::kFused);
  EXPECT_EQ(ChooseMode(1.0, 1.2, 0.94, 0.05), OverlapMode::kFused);
  EXPECT_EQ(ChooseMode(1.0, 1.2, 0.96, 0.05), OverlapMode::kSequential);
}

TEST(SimulatorTest, FitTileCostModelRecoversParameters) {
  TileCostModel truth;
  truth.fixed_s = 2e-5;
  truth.seconds_per_mac = 1.0 / 25e9;
  truth.penalty_rows = 30;
  std::vector<TileSample> samples;
  for (int64_t rows : {32, 64, 128, 256, 512}) {
    samples.push_back({rows, 512, 2048, truth.Seconds(rows, 512, 2048)});
  }
  auto fit = FitTileCostModel(samples, 30);
  ASSERT_TRUE(fit.ok());
  EXPECT_NEAR(fit->fixed_s, truth.fixed_s, 1e-9);
  EXPECT_NEAR(fit->seconds_per_mac * 25e9, 1.0, 1e-6);
  EXPECT_FALSE(FitTileCostModel({samples[0]}, 0).ok());
  EXPECT_FALSE(FitTileCostModel({samples[0], samples[0]}, 0).ok());
}

MoeShape Moe(int world, bool skewed) {
  MoeShape s;
  s.world = world;
  s.hidden = 1024;
  s.ffn = 2048;
  const int local_experts = 8 / world;
  for (int src = 0; src < world; ++src) {
    std::vector<int64_t> rows;
    for (int e = 0; e < local_experts; ++e) rows.push_back(skewed ? 1000 / (e + 1) + 7 : 1024);
    s.rows_from_source.push_back(rows);
  }
  return s;
}

TEST(SimulatorTest, MoeLayer0OrderingAndLocalTilesFirst) {
  for (bool skewed : {false, true}) {
    MoeShape s = Moe(2, skewed);
    SimOptions o = IdealOptions();
    double flops = 0, bytes = 0;
    for (const auto& row : s.rows_from_source) {
      for (int64_t r : row) flops += 2.0 * r * s.hidden * s.ffn;
    }
    for (int64_t r : s.rows_from_source[1]) bytes += static_cast<double>(r) * s.hidden * 4;
    o.link.bytes_per_second = LinkBandwidthForRatio(bytes, flops, kFlops, 1.0);
    o.splits = 8;
    auto p = PredictMoeLayer0(s, o);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_LT(p->fused.seconds, p->decomposed.seconds);
    EXPECT_LT(p->decomposed.seconds, p->sequential.seconds);
    // Stage order: all local-only tiles (peer == rank 0) before any tile with remote rows.
    bool seen_remote = false;
    std::map<int, double> arrive;
    for (const SimEvent& e : p->fused.trace.events) {
      if (e.kind == SimEventKind::kChunkArrive) arrive[e.item] = e.time_s;
      if (e.kind != SimEventKind::kTileStart) continue;
      if (e.peer != 0) seen_remote = true;
      if (seen_remote) {
        EXPECT_NE(e.peer, 0);
      }
      for (int c : e.waits_on) {
        ASSERT_TRUE(arrive.count(c));
        EXPECT_LE(arrive[c], e.time_s);
      }
    }
    EXPECT_TRUE(seen_remote);
  }
}

TEST(SimulatorTest, MoeLayer1SplitChoiceIsValid) {
  MoeShape s = Moe(2, false);
  SimOptions o = IdealOptions();
  o.link.bytes_per_second = 200e6;
  MoeLayer1Options l;
  l.cores = 4;
  auto chosen = ChooseMoeLayer1Split(s, l, o, 16);
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_GE(chosen->comm_workers, 1);
  EXPECT_LE(chosen->comm_workers, 3);
  EXPECT_TRUE(chosen->splits == 1 || chosen->splits == 2 || chosen->splits == 4 ||
              chosen->splits == 8 || chosen->splits == 16);
  // It is the minimum over the candidates.
  auto best = SimulateMoeLayer1(s, OverlapMode::kFused, *chosen, o);
  ASSERT_TRUE(best.ok());
  for (int splits : {1, 2, 4, 8, 16}) {
    for (int comm = 1; comm <= 3; ++comm) {
      MoeLayer1Options c = l;
      c.splits = splits;
      c.comm_workers = comm;
      auto v = SimulateMoeLayer1(s, OverlapMode::kFused, c, o);
      ASSERT_TRUE(v.ok());
      EXPECT_LE(best->seconds, v->seconds + 1e-15);
    }
  }
  auto p = PredictMoeLayer1(s, l, o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->moe_splits, chosen->splits);
  EXPECT_EQ(p->moe_comm_workers, chosen->comm_workers);
  EXPECT_LT(p->fused.seconds, p->sequential.seconds);
  // One core per rank: the split is degenerate (no dedicated comm worker).
  l.cores = 1;
  auto one = ChooseMoeLayer1Split(s, l, o, 8);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->comm_workers, 0);
  l.comm_workers = 1;
  EXPECT_FALSE(SimulateMoeLayer1(s, OverlapMode::kFused, l, o).ok());
}

TEST(SimulatorTest, ChromeTraceHasOneCompleteEventPerTileAndChunk) {
  auto v = SimulateAgGemm(Ag(2), OverlapMode::kFused, AgAtRatio(Ag(2), 1.0, 4));
  ASSERT_TRUE(v.ok());
  const auto doc = nlohmann::json::parse(SimTraceToChromeJson(v->trace, "ag_gemm fused"));
  int tiles = 0, chunks = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const std::string name = e["name"];
    if (name.rfind("tile", 0) == 0) ++tiles;
    if (name.rfind("chunk", 0) == 0) ++chunks;
    EXPECT_GE(e["dur"].get<double>(), 0.0);
  }
  EXPECT_EQ(tiles, 8);
  EXPECT_EQ(chunks, 4);
}

TEST(SimulatorTest, BadInputsAreErrors) {
  SimOptions o = IdealOptions();
  EXPECT_FALSE(SimulateAgGemm(Ag(2), OverlapMode::kAuto, o).ok());
  AgGemmShape bad = Ag(2);
  bad.k = 0;
  EXPECT_FALSE(SimulateAgGemm(bad, OverlapMode::kFused, o).ok());
  o.rank = 2;
  EXPECT_FALSE(SimulateGemmRs(Rs(2), OverlapMode::kFused, o).ok());
  MoeShape m = Moe(2, false);
  m.rows_from_source.pop_back();
  EXPECT_FALSE(SimulateMoeLayer0(m, OverlapMode::kFused, IdealOptions()).ok());
}

TEST(SimulatorTest, OddShapesUseEdgeSplits) {
  AgGemmShape s{3, 101, 77, 53, 4};
  SimOptions o = AgAtRatio(s, 1.0, 8);
  o.tile_n = 16;
  auto v = SimulateAgGemm(s, OverlapMode::kFused, o);
  ASSERT_TRUE(v.ok());
  EXPECT_NEAR(v->compute_s, o.cost.Seconds(3 * 101, 53, 77), 1e-12);
  EXPECT_NEAR(v->link_s, 2.0 * 101 * 77 * 4 / o.link.bytes_per_second, 1e-12);
}

}  // namespace
}  // namespace loom::overlap
