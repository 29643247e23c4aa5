// Tests of MoePair: every schedule (layer by layer in each mode, and the cross-layer fused one)
// against the single-process reference over poison links (W = 2 and 3, uniform / Zipf / an expert
// with no tokens, two calls with different routings), the cross-layer schedule's order on a slow
// link (layer-1 tiles fill layer 0's waits; the combine goes out after the dispatch), and a rank
// configured with a different schedule. Ranks are threads.
#include "loom/overlap/ops/moe_pair.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "loom/overlap/ops/moe_test_util.h"

namespace loom::overlap {
namespace {

using namespace moe_testing;  // NOLINT: the shared fixtures

struct PairCase {
  int world;
  RoutingOptions routing;
  OverlapMode mode;
  bool cross_layer;
  int splits;
  int64_t tile_rows;
};

std::string Name(const PairCase& c) {
  return "W=" + std::to_string(c.world) + " " + std::string(RoutingKindName(c.routing.kind)) +
         " excl=" + std::to_string(c.routing.excluded_expert) + " " +
         std::string(OverlapModeName(c.mode)) + (c.cross_layer ? "+cross" : "") +
         " S=" + std::to_string(c.splits) + " tile=" + std::to_string(c.tile_rows);
}

// Two calls (different routings) of one MoePair per rank; checks h (every valid row) and y.
void RunPairCase(const PairCase& c) {
  SCOPED_TRACE(Name(c));
  const MoeOpShape shape = SmallShape(c.world);
  const std::vector<Problem> problems = TwoProblems(shape, c.routing);
  std::vector<std::string> failures(static_cast<size_t>(c.world));
  auto statuses = RunRanks(c.world, PoisonLink(), [&](int rank, Runtime* rt, LinkProxy* proxy) {
    MoePair moe(rt, proxy, shape,
                {.op = {.mode = c.mode, .splits = c.splits, .tile_rows = c.tile_rows},
                 .cross_layer = c.cross_layer,
                 .decomposed_chunks = 3,
                 .gemm = {}});
    const Problem& p0 = problems[0];
    LOOM_RETURN_IF_ERROR(moe.Prepare(p0.Local(p0.w1, rank).data(), p0.Local(p0.w2, rank).data()));
    bool cross = c.cross_layer && c.mode == OverlapMode::kFused;
    if (c.mode == OverlapMode::kAuto) cross = moe.resolved() == "fused/cross_layer";
    if (moe.cross_layer() != cross) failures[rank] += "cross_layer(); ";
    std::vector<float> h(moe.max_rows() * shape.ffn);
    std::vector<float> y(shape.tokens_per_rank * shape.hidden);
    std::string& fail = failures[rank];
    for (const Problem& p : problems) {
      LOOM_ASSIGN_OR_RETURN(OpRunStats st,
                            moe.Run(p.x[rank].data(), p.routings[rank], h.data(), y.data()));
      if (st.wall_s <= 0 || st.compute_s <= 0) fail += "stats not filled; ";
      if (moe.parts().cross_layer != cross) fail += "parts().cross_layer; ";
      if (cross && st.link.messages == 0 && c.world > 1) fail += "no link messages; ";
      fail += CheckH(p, moe.layout(), h);
      fail += CheckY(p, rank, y);
    }
    // t_comp and t_comm references: the parts are then those calls' layers.
    LOOM_ASSIGN_OR_RETURN(OpRunStats comp, moe.RunComputeOnly(h.data(), y.data()));
    const MoePairParts cp = moe.parts();
    if (cp.cross_layer || cp.layer[0].compute_s <= 0 || cp.layer[1].compute_s <= 0 ||
        comp.wait_s != 0) {
      fail += "compute-only parts; ";
    }
    LOOM_ASSIGN_OR_RETURN(OpRunStats comm, moe.RunCommOnly(problems.back().x[rank].data(),
                                                           problems.back().routings[rank]));
    const MoePairParts mp = moe.parts();
    if (mp.cross_layer || mp.layer[0].compute_s != 0 ||
        (c.world > 1 && mp.layer[1].link.messages == 0) ||
        comm.link.messages != mp.layer[0].link.messages + mp.layer[1].link.messages) {
      fail += "comm-only parts; ";
    }
    return OkStatus();
  });
  ExpectRanksPassed(statuses, failures);
}

TEST(MoePairTest, EveryScheduleMatchesReference) {
  const RoutingOptions uniform = StandardRoutings()[0];
  for (const RoutingOptions& ro : StandardRoutings()) {
    RunPairCase({2, ro, OverlapMode::kSequential, true, 4, 8});
    RunPairCase({2, ro, OverlapMode::kDecomposed, true, 4, 8});
    RunPairCase({2, ro, OverlapMode::kFused, false, 4, 8});
    RunPairCase({2, ro, OverlapMode::kFused, true, 4, 8});
    RunPairCase({2, ro, OverlapMode::kFused, true, 3, 16});  // edge tiles, uneven splits
  }
  RunPairCase({2, uniform, OverlapMode::kFused, true, 1, 64});  // one split, one tile per expert
  RunPairCase({1, uniform, OverlapMode::kFused, true, 4, 8});   // one rank: no remote rows
  RunPairCase({2, uniform, OverlapMode::kAuto, true, 4, 8});    // auto: layer by layer
}

TEST(MoePairTest, CrossLayerThreeRanks) {
  // SmallShape(3) has 6 experts; tiles can span two remote segments.
  const RoutingOptions zipf{.kind = RoutingKind::kZipf, .seed = 4, .excluded_expert = 5};
  RunPairCase({3, zipf, OverlapMode::kFused, true, 2, 8});
  RunPairCase({3, {.seed = 6}, OverlapMode::kFused, true, 5, 4});
}

TEST(MoePairTest, CrossLayerFillsLayer0WaitsThenCombines) {
  // A slow link (0.05 MB/s: ~70 ms of dispatch per rank, so the order holds under TSan's
  // slowdown too) and S = 8: while layer 0 waits for the peer's chunks, layer-1 tiles of own rows
  // run — the first one before the peer's last chunk can have arrived (its modelled earliest
  // arrival, a lower bound) — and every combine chunk is pushed after this rank's dispatch
  // chunks.
  const MoeOpShape shape = SmallShape(2);
  const Problem p = MakeProblem(shape, {.seed = 41});
  std::vector<OpRunStats> stats(2);
  std::vector<MoePairParts> parts(2);
  auto statuses = RunRanks(
      2, {.bytes_per_second = 0.05e6, .latency_s = 0, .mode = LinkMode::kPoison},
      [&](int rank, Runtime* rt, LinkProxy* proxy) -> Status {
        MoePair moe(
            rt, proxy, shape,
            {.op = {.mode = OverlapMode::kFused, .splits = 8, .tile_rows = 4, .record_trace = true},
             .cross_layer = true,
             .decomposed_chunks = 2,
             .gemm = {}});
        LOOM_RETURN_IF_ERROR(moe.Prepare(p.Local(p.w1, rank).data(), p.Local(p.w2, rank).data()));
        std::vector<float> h(moe.max_rows() * shape.ffn);
        std::vector<float> y(shape.tokens_per_rank * shape.hidden);
        LOOM_ASSIGN_OR_RETURN(stats[rank],
                              moe.Run(p.x[rank].data(), p.routings[rank], h.data(), y.data()));
        parts[rank] = moe.parts();
        const std::string bad = CheckY(p, rank, y);
        return bad.empty() ? OkStatus() : InternalError(bad);
      });
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(statuses[r].ok()) << "rank " << r << ": " << statuses[r];
    // 8 dispatch chunks, then 8 combine chunks, in submission order.
    const std::vector<ChunkTrace>& mine = stats[r].chunks;
    ASSERT_EQ(mine.size(), 16u) << "rank " << r;
    for (size_t i = 1; i < mine.size(); ++i) EXPECT_LE(mine[i - 1].submit_ns, mine[i].submit_ns);
    EXPECT_GT(mine[8].submit_ns, mine[7].submit_ns);
    const int64_t peer_last_dispatch = stats[1 - r].chunks[7].earliest_arrival_ns;
    EXPECT_GT(parts[r].fill_tiles, 0) << "rank " << r;
    EXPECT_GT(parts[r].fill_s, 0) << "rank " << r;
    EXPECT_GT(parts[r].first_fill_ns, 0);
    EXPECT_LT(parts[r].first_fill_ns, peer_last_dispatch) << "rank " << r;
    EXPECT_GT(parts[r].layer[0].wait_s, 0) << "rank " << r;
  }
}

// Auto with tiles costed at `tile_cost_s` (given, not measured: a deterministic choice), S = 8
// and a link of `bytes_per_second`: returns both ranks' resolved schedules; checks y.
std::vector<std::string> RunAuto(double tile_cost_s, double bytes_per_second) {
  const MoeOpShape shape = SmallShape(2);
  const Problem p = MakeProblem(shape, {.seed = 8});
  std::vector<std::string> resolved(2);
  auto statuses = RunRanks(
      2, {.bytes_per_second = bytes_per_second, .latency_s = 0, .mode = LinkMode::kPoison},
      [&](int rank, Runtime* rt, LinkProxy* proxy) -> Status {
        MoePair moe(rt, proxy, shape,
                    {.op = {.mode = OverlapMode::kAuto,
                            .splits = 8,
                            .tile_rows = 8,
                            .tile_cost_s = tile_cost_s},
                     .cross_layer = true,
                     .decomposed_chunks = 2,
                     .gemm = {}});
        LOOM_RETURN_IF_ERROR(moe.Prepare(p.Local(p.w1, rank).data(), p.Local(p.w2, rank).data()));
        resolved[rank] = moe.resolved();
        std::vector<float> h(moe.max_rows() * shape.ffn);
        std::vector<float> y(shape.tokens_per_rank * shape.hidden);
        LOOM_RETURN_IF_ERROR(
            moe.Run(p.x[rank].data(), p.routings[rank], h.data(), y.data()).status());
        if (moe.parts().cross_layer != moe.cross_layer()) return InternalError("parts()");
        const std::string bad = CheckY(p, rank, y);
        return bad.empty() ? OkStatus() : InternalError(bad);
      });
  ExpectRanksPassed(statuses, {});
  return resolved;
}

TEST(MoePairTest, AutoRunsCrossLayerWhereLayer0PicksFused) {
  // 2 ms tiles on a 0.2 MB/s link: the simulator picks fused for both layers.
  EXPECT_EQ(RunAuto(2e-3, 0.2e6), std::vector<std::string>(2, "fused/cross_layer"));
  // 0.5 ms tiles on a 1 MB/s link: fused for layer 0, decomposed for layer 1 (alone).
  EXPECT_EQ(RunAuto(5e-4, 1e6), std::vector<std::string>(2, "fused/cross_layer"));
  // 2 ms tiles on a 5 MB/s link: communication is small, sequential for both: layer by layer.
  EXPECT_EQ(RunAuto(2e-3, 5e6), std::vector<std::string>(2, "sequential/sequential"));
}

TEST(MoePairTest, DifferentScheduleAcrossRanksFailsAtPrepare) {
  const MoeOpShape shape = SmallShape(2);
  const Problem p = MakeProblem(shape, {.seed = 2});
  auto statuses = RunRanks(2, PoisonLink(), [&](int rank, Runtime* rt, LinkProxy* proxy) {
    MoePair moe(rt, proxy, shape,
                {.op = {.mode = OverlapMode::kFused, .splits = 4, .tile_rows = 8},
                 .cross_layer = rank == 0,
                 .decomposed_chunks = 2,
                 .gemm = {}});
    return moe.Prepare(p.Local(p.w1, rank).data(), p.Local(p.w2, rank).data());
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_FALSE(statuses[r].ok()) << "rank " << r;
    EXPECT_EQ(statuses[r].code(), StatusCode::kInvalidArgument) << statuses[r];
    EXPECT_NE(statuses[r].message().find("moe_pair"), std::string::npos) << statuses[r];
  }
}

}  // namespace
}  // namespace loom::overlap
