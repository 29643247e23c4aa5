// Tests of the MoE ops: routing generators and validation, the receive layout (sorted, own rows
// first, padding, stage order), MoeLayer0 / MoeLayer1 in every mode vs the single-process
// reference (W = 2 and 3, uniform / Zipf / an expert with no tokens, poison link), config
// mismatch, a missing rank (timeout), and the adaptive assignment. Ranks are threads.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "loom/base/check.h"
#include "loom/base/philox.h"
#include "loom/overlap/link/link_proxy.h"
#include "loom/overlap/ops/moe_layer0.h"
#include "loom/overlap/ops/moe_layer1.h"
#include "loom/overlap/ops/moe_routing.h"
#include "loom/overlap/ops/moe_test_util.h"
#include "loom/overlap/runtime/runtime.h"

namespace loom::overlap {
namespace {

using namespace moe_testing;  // NOLINT: the shared fixtures

// ---------------------------------------------------------------------------------------------
// Routing.

TEST(MoeRoutingTest, DeterministicDistinctNormalised) {
  const MoeOpShape shape = SmallShape(2);
  auto a = GenerateRouting(shape, 1, {.seed = 7});
  auto b = GenerateRouting(shape, 1, {.seed = 7});
  auto c = GenerateRouting(shape, 0, {.seed = 7});
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->expert, b->expert);
  EXPECT_EQ(a->gate, b->gate);
  EXPECT_NE(a->expert, c->expert);
  EXPECT_TRUE(ValidateRouting(shape, *a).ok());
  for (int64_t t = 0; t < a->tokens; ++t) {
    EXPECT_NE(a->expert[t * 2], a->expert[t * 2 + 1]);
    EXPECT_NEAR(a->gate[t * 2] + a->gate[t * 2 + 1], 1.f, 1e-5);
    EXPECT_GT(a->gate[t * 2], 0.f);
  }
}

TEST(MoeRoutingTest, ZipfSkewsAndExcludedExpertIsEmpty) {
  MoeOpShape shape = SmallShape(2);
  shape.tokens_per_rank = 2000;
  auto z = GenerateRouting(shape, 0, {.kind = RoutingKind::kZipf, .zipf_s = 1.5});
  ASSERT_TRUE(z.ok());
  const auto counts = CountPerExpert(shape, *z);
  EXPECT_GT(counts[0], 2 * counts[7]);
  auto u = GenerateRouting(shape, 0, {.excluded_expert = 5});
  ASSERT_TRUE(u.ok());
  const auto uc = CountPerExpert(shape, *u);
  EXPECT_EQ(uc[5], 0);
  int64_t total = 0;
  for (int64_t c : uc) total += c;
  EXPECT_EQ(total, 2000 * 2);
  EXPECT_EQ(ParseRoutingKind("zipf").value(), RoutingKind::kZipf);
  EXPECT_FALSE(ParseRoutingKind("pareto").ok());
}

TEST(MoeRoutingTest, ValidationErrors) {
  const MoeOpShape shape = SmallShape(2);
  auto r = GenerateRouting(shape, 0, {});
  ASSERT_TRUE(r.ok());
  Routing bad = *r;
  bad.expert[5] = 8;  // E = 8
  Status s = ValidateRouting(shape, bad);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("out of range"), std::string::npos) << s;
  bad = *r;
  bad.expert[1] = bad.expert[0];
  EXPECT_NE(ValidateRouting(shape, bad).message().find("repeated"), std::string::npos);
  bad = *r;
  bad.expert[2] = -1;
  EXPECT_EQ(ValidateRouting(shape, bad).code(), StatusCode::kInvalidArgument);
  bad = *r;
  bad.gate.pop_back();
  EXPECT_EQ(ValidateRouting(shape, bad).code(), StatusCode::kInvalidArgument);
  MoeOpShape too_many = shape;
  too_many.top_k = 9;
  EXPECT_NE(ValidateMoeShape(too_many).message().find("top_k"), std::string::npos);
  MoeOpShape uneven = shape;
  uneven.world = 3;
  EXPECT_EQ(ValidateMoeShape(uneven).code(), StatusCode::kInvalidArgument);  // 8 % 3 != 0
  EXPECT_FALSE(GenerateRouting(too_many, 0, {}).ok());
}

TEST(MoeRoutingTest, SplitOfInvertsSplitBegin) {
  for (int64_t rows : {1, 5, 37, 64}) {
    for (int32_t splits : {1, 3, 4, 8}) {
      for (int64_t row = 0; row < rows; ++row) {
        const int32_t s = SplitOf(rows, splits, row);
        EXPECT_LE(SplitBegin(rows, splits, s), row);
        EXPECT_GT(SplitBegin(rows, splits, s + 1), row);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Layout.

void CheckLayout(const MoeOpShape& shape, const std::vector<Routing>& routings, int rank,
                 int64_t tile_rows) {
  const RecvLayout l = BuildRecvLayout(shape, rank, routings, tile_rows);
  const int W = shape.world, epr = shape.experts_per_rank();
  const auto counts = CountAll(shape, routings);
  EXPECT_EQ(SegmentRow0s(shape, counts, rank, tile_rows), l.seg_row0);
  ASSERT_EQ(static_cast<int64_t>(l.rows.size()), l.total_rows);
  int64_t valid = 0;
  for (int le = 0; le < epr; ++le) {
    EXPECT_EQ(l.group_row0[le] % tile_rows, 0) << "group " << le << " not tile aligned";
    const int64_t padded = (l.group_rows[le] + tile_rows - 1) / tile_rows * tile_rows;
    const int64_t end = le + 1 < epr ? l.group_row0[le + 1] : l.total_rows;
    EXPECT_EQ(end - l.group_row0[le], padded);
    // Sorted by rotated source (own first), then (token, slot); every row routed to this expert.
    int prev_seg = 0;
    int64_t prev_key = -1;
    for (int64_t r = l.group_row0[le]; r < l.group_row0[le] + l.group_rows[le]; ++r) {
      const RowRef& ref = l.rows[r];
      ASSERT_GE(ref.src, 0);
      EXPECT_EQ(routings[ref.src].expert[ref.token * shape.top_k + ref.slot], rank * epr + le);
      const int seg = l.SegmentOfSource(ref.src);
      const int64_t key = int64_t{ref.token} * shape.top_k + ref.slot;
      if (seg == prev_seg) {
        EXPECT_GT(key, prev_key);
      } else {
        EXPECT_GT(seg, prev_seg);
      }
      prev_seg = seg;
      prev_key = key;
      ++valid;
    }
    if (l.group_rows[le] > 0 && l.SegmentRows(le, 0) > 0) {
      EXPECT_EQ(l.rows[l.group_row0[le]].src, rank) << "own rows must come first";
    }
    for (int64_t r = l.group_row0[le] + l.group_rows[le]; r < end; ++r) {
      EXPECT_EQ(l.rows[r].src, -1) << "padding row " << r;
    }
  }
  int64_t expected = 0;
  for (int src = 0; src < W; ++src) {
    for (int le = 0; le < epr; ++le) expected += counts[src * shape.num_experts + rank * epr + le];
  }
  EXPECT_EQ(valid, expected);
  // Tiles: cover every valid row once, never cross a group, stage = last segment, ordered.
  int64_t covered = 0;
  for (size_t i = 0; i < l.tiles.size(); ++i) {
    const MoeTile& t = l.tiles[i];
    EXPECT_LE(t.rows, tile_rows);
    EXPECT_GE(t.row0, l.group_row0[t.local_expert]);
    EXPECT_LE(t.row0 + t.rows, l.group_row0[t.local_expert] + l.group_rows[t.local_expert]);
    EXPECT_EQ(t.stage, t.seg_end);
    EXPECT_EQ(t.stage, (l.SourceOfSegment(t.seg_end) - rank + W) % W);
    EXPECT_EQ(l.SegmentOfSource(l.rows[t.row0 + t.rows - 1].src), t.seg_end);
    EXPECT_EQ(l.SegmentOfSource(l.rows[t.row0].src), t.seg_beg);
    if (i > 0) {
      EXPECT_LE(l.tiles[i - 1].stage, t.stage);
    }
    covered += t.rows;
  }
  EXPECT_EQ(covered, valid);
  EXPECT_LE(l.total_rows, MaxRecvRows(shape, tile_rows));
}

TEST(MoeLayoutTest, SortedOwnFirstPaddedStaged) {
  for (int world : {2, 4}) {
    for (RoutingKind kind : {RoutingKind::kUniform, RoutingKind::kZipf}) {
      const MoeOpShape shape = SmallShape(world);
      std::vector<Routing> routings;
      for (int r = 0; r < world; ++r) {
        routings.push_back(*GenerateRouting(shape, r, {.kind = kind, .excluded_expert = 3}));
      }
      for (int rank = 0; rank < world; ++rank) {
        for (int64_t tile_rows : {1, 4, 16}) CheckLayout(shape, routings, rank, tile_rows);
      }
    }
  }
}

TEST(MoeLayoutTest, HandExample) {
  // W = 2, E = 2 (one expert per rank), top-1, 3 tokens per rank.
  const MoeOpShape shape{
      .world = 2, .num_experts = 2, .top_k = 1, .tokens_per_rank = 3, .hidden = 1, .ffn = 1};
  Routing r0{.tokens = 3, .top_k = 1, .expert = {1, 0, 1}, .gate = {1, 1, 1}};
  Routing r1{.tokens = 3, .top_k = 1, .expert = {1, 1, 0}, .gate = {1, 1, 1}};
  const std::vector<Routing> routings{r0, r1};
  const RecvLayout l = BuildRecvLayout(shape, 1, routings, 2);
  // Rank 1 owns expert 1: own rows (tokens 0, 1 of rank 1) then rank 0's (tokens 0, 2); 4 rows.
  ASSERT_EQ(l.total_rows, 4);
  EXPECT_EQ(l.rows[0].src, 1);
  EXPECT_EQ(l.rows[1].token, 1);
  EXPECT_EQ(l.rows[2].src, 0);
  EXPECT_EQ(l.rows[3].token, 2);
  ASSERT_EQ(l.tiles.size(), 2u);
  EXPECT_EQ(l.tiles[0].stage, 0);  // own rows only
  EXPECT_EQ(l.tiles[1].stage, 1);  // needs rank 0's chunk
  const RecvLayout l0 = BuildRecvLayout(shape, 0, routings, 2);
  ASSERT_EQ(l0.total_rows, 2);  // one own row + one from rank 1, padded to 2
  EXPECT_EQ(l0.rows[0].src, 0);
  EXPECT_EQ(l0.rows[1].src, 1);
  EXPECT_EQ(l0.tiles.size(), 1u);
  EXPECT_EQ(l0.tiles[0].stage, 1);
}

// ---------------------------------------------------------------------------------------------
// Layer 0 and layer 1 vs the reference.

struct Case {
  int world;
  RoutingOptions routing;
  OverlapMode mode;
  int32_t splits;
  int64_t tile_rows;
  int32_t compute_workers = 1;
  int32_t comm_workers = 1;
};

std::string Name(const Case& c) {
  return "W=" + std::to_string(c.world) + " " + std::string(RoutingKindName(c.routing.kind)) +
         " excl=" + std::to_string(c.routing.excluded_expert) + " " +
         std::string(OverlapModeName(c.mode)) + " S=" + std::to_string(c.splits) +
         " tile=" + std::to_string(c.tile_rows) + " workers=" + std::to_string(c.compute_workers) +
         "+" + std::to_string(c.comm_workers);
}

// Runs layer 0 then layer 1 twice (different routings, to exercise epochs) and checks h and y.
void RunCase(const Case& c) {
  SCOPED_TRACE(Name(c));
  const MoeOpShape shape = SmallShape(c.world);
  const std::vector<Problem> problems = TwoProblems(shape, c.routing);
  std::vector<std::string> failures(static_cast<size_t>(c.world));
  auto statuses = RunRanks(c.world, PoisonLink(), [&](int rank, Runtime* rt, LinkProxy* proxy) {
    const OpConfig op{.mode = c.mode, .splits = c.splits, .tile_rows = c.tile_rows};
    MoeLayer0 l0(rt, proxy, shape, {.op = op, .gemm = {}});
    MoeLayer1 l1(rt, proxy, shape,
                 {.op = op,
                  .compute_workers = c.compute_workers,
                  .comm_workers = c.comm_workers,
                  .decomposed_chunks = 3,
                  .gemm = {}});
    const Problem& p0 = problems[0];
    LOOM_RETURN_IF_ERROR(l0.Prepare(p0.Local(p0.w1, rank).data()));
    LOOM_RETURN_IF_ERROR(l1.Prepare(p0.Local(p0.w2, rank).data()));
    std::vector<float> h(l0.max_rows() * shape.ffn);
    std::vector<float> y(shape.tokens_per_rank * shape.hidden);
    std::string& fail = failures[rank];
    for (const Problem& p : problems) {
      LOOM_ASSIGN_OR_RETURN(OpRunStats s0, l0.Run(p.x[rank].data(), p.routings[rank], h.data()));
      if (c.mode != OverlapMode::kAuto && s0.mode_run != c.mode) fail += "layer0 mode; ";
      fail += CheckH(p, l0.layout(), h);
      LOOM_ASSIGN_OR_RETURN(OpRunStats s1, l1.Run(h.data(), p.routings[rank], y.data()));
      if (s1.wall_s <= 0) fail += "layer1 wall_s; ";
      fail += CheckY(p, rank, y);
    }
    return OkStatus();
  });
  ExpectRanksPassed(statuses, failures);
}

TEST(MoeOpsTest, EveryModeMatchesReference) {
  const std::vector<RoutingOptions> ro = StandardRoutings();
  const RoutingOptions &uniform = ro[0], &zipf = ro[1], &empty = ro[2];
  std::vector<Case> cases;
  for (OverlapMode mode :
       {OverlapMode::kSequential, OverlapMode::kDecomposed, OverlapMode::kFused}) {
    cases.push_back({2, uniform, mode, 4, 8});
    cases.push_back({2, zipf, mode, 3, 16});
    cases.push_back({2, empty, mode, 5, 4});
  }
  for (const Case& c : cases) RunCase(c);
}

TEST(MoeOpsTest, ThreeRanks) {
  // SmallShape(3) has 6 experts (8 do not divide over 3 ranks).
  for (OverlapMode mode :
       {OverlapMode::kSequential, OverlapMode::kDecomposed, OverlapMode::kFused}) {
    SCOPED_TRACE(OverlapModeName(mode));
    RunCase({3, {.kind = RoutingKind::kZipf, .seed = 4, .excluded_expert = 5}, mode, 2, 8});
  }
}

TEST(MoeOpsTest, FusedWorkerCountsAndAuto) {
  RunCase({2, {.seed = 21}, OverlapMode::kFused, 8, 8, /*compute=*/2, /*comm=*/2});
  RunCase({2, {.seed = 22}, OverlapMode::kFused, 1, 64, 1, 1});
  RunCase({2, {.seed = 23}, OverlapMode::kAuto, 4, 8, 1, 1});
}

TEST(MoeOpsTest, FusedRemoteTileStartsBeforeLastChunkArrives) {
  // A slow link (0.2 MB/s: ~2 ms per chunk, ~17 ms in all) and S = 8: some tile that needs the
  // peer's rows starts before the peer's last chunk can have arrived (its modelled earliest
  // arrival, a lower bound); the margin (~15 ms) absorbs scheduling noise.
  const MoeOpShape shape = SmallShape(2);
  const Problem p = MakeProblem(shape, {.seed = 41});
  std::vector<OpRunStats> stats(2);
  std::vector<std::vector<MoeTile>> tiles(2);
  auto statuses = RunRanks(
      2, {.bytes_per_second = 0.2e6, .latency_s = 0, .mode = LinkMode::kPoison},
      [&](int rank, Runtime* rt, LinkProxy* proxy) -> Status {
        const OpConfig op{
            .mode = OverlapMode::kFused, .splits = 8, .tile_rows = 4, .record_trace = true};
        MoeLayer0 l0(rt, proxy, shape, {.op = op, .gemm = {}});
        LOOM_RETURN_IF_ERROR(l0.Prepare(p.Local(p.w1, rank).data()));
        std::vector<float> h(l0.max_rows() * shape.ffn);
        LOOM_ASSIGN_OR_RETURN(stats[rank], l0.Run(p.x[rank].data(), p.routings[rank], h.data()));
        tiles[rank] = l0.layout().tiles;
        return OkStatus();
      });
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(statuses[r].ok()) << statuses[r];
    const OpRunStats& peer = stats[1 - r];
    ASSERT_EQ(peer.chunks.size(), 8u);
    const int64_t last_arrival = peer.chunks.back().earliest_arrival_ns;
    ASSERT_EQ(stats[r].tiles.size(), tiles[r].size());
    int64_t first_remote_start = -1;
    for (size_t i = 0; i < tiles[r].size(); ++i) {
      if (i > 0) {
        EXPECT_LE(tiles[r][i - 1].stage, tiles[r][i].stage);
      }
      if (tiles[r][i].stage == 1 && first_remote_start < 0) {
        first_remote_start = stats[r].tiles[i].start_ns;
      }
    }
    ASSERT_GE(first_remote_start, 0) << "rank " << r << " has no remote tile";
    EXPECT_LT(first_remote_start, last_arrival) << "rank " << r;
  }
}

// ---------------------------------------------------------------------------------------------
// Bad input.

TEST(MoeOpsTest, MismatchedConfigDetectedAtPrepare) {
  auto statuses = RunRanks(2, PoisonLink(), [&](int rank, Runtime* rt, LinkProxy* proxy) {
    MoeOpShape shape = SmallShape(2);
    if (rank == 1) shape.ffn = 48;
    std::vector<float> w(shape.experts_per_rank() * shape.hidden * shape.ffn, 0.f);
    MoeLayer0 l0(rt, proxy, shape, {});
    return l0.Prepare(w.data());
  });
  int bad = 0;
  for (const Status& s : statuses) {
    if (!s.ok()) {
      ++bad;
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
      EXPECT_NE(s.message().find("moe_layer0"), std::string::npos) << s;
    }
  }
  EXPECT_GE(bad, 1);
}

TEST(MoeOpsTest, BadRoutingFailsAndPeerTimesOutNamingTheExchange) {
  const MoeOpShape shape = SmallShape(2);
  const Problem p = MakeProblem(shape, {.seed = 1});
  auto statuses = RunRanks(
      2, PoisonLink(),
      [&](int rank, Runtime* rt, LinkProxy* proxy) -> Status {
        MoeLayer0 l0(rt, proxy, shape, {.op = {.mode = OverlapMode::kFused}, .gemm = {}});
        LOOM_RETURN_IF_ERROR(l0.Prepare(p.Local(p.w1, rank).data()));
        Routing routing = p.routings[rank];
        if (rank == 1) routing.expert[3] = 99;  // out of range: rank 1 never publishes
        std::vector<float> h(l0.max_rows() * shape.ffn);
        return l0.Run(p.x[rank].data(), routing, h.data()).status();
      },
      std::chrono::milliseconds(400));
  EXPECT_EQ(statuses[1].code(), StatusCode::kInvalidArgument) << statuses[1];
  EXPECT_NE(statuses[1].message().find("out of range"), std::string::npos) << statuses[1];
  EXPECT_EQ(statuses[0].code(), StatusCode::kDeadlineExceeded) << statuses[0];
  EXPECT_NE(statuses[0].message().find("routing exchange"), std::string::npos) << statuses[0];
}

TEST(MoeOpsTest, RunBeforePrepareAndDelayOnlyRejected) {
  auto statuses = RunRanks(
      1, {.mode = LinkMode::kDelayOnly}, [&](int rank, Runtime* rt, LinkProxy* proxy) -> Status {
        const MoeOpShape shape = SmallShape(1);
        MoeLayer0 l0(rt, proxy, shape, {});
        std::vector<float> x(shape.tokens_per_rank * shape.hidden), h(l0.max_rows() * shape.ffn);
        auto r = GenerateRouting(shape, 0, {});
        if (l0.Run(x.data(), *r, h.data()).status().code() != StatusCode::kFailedPrecondition) {
          return InternalError("Run before Prepare not rejected");
        }
        std::vector<float> w(shape.experts_per_rank() * shape.hidden * shape.ffn);
        return l0.Prepare(w.data());
      });
  EXPECT_EQ(statuses[0].code(), StatusCode::kFailedPrecondition) << statuses[0];
}

// ---------------------------------------------------------------------------------------------
// Compute-only / comm-only and the adaptive assignment.

TEST(MoeOpsTest, ComputeOnlyCommOnlyAndAssignment) {
  const MoeOpShape shape = SmallShape(2);
  const Problem p = MakeProblem(shape, {.kind = RoutingKind::kZipf, .seed = 31});
  std::vector<std::string> failures(2);
  auto statuses = RunRanks(2, PoisonLink(), [&](int rank, Runtime* rt, LinkProxy* proxy) {
    const OpConfig op{.mode = OverlapMode::kFused, .splits = 4, .tile_rows = 8};
    MoeLayer0 l0(rt, proxy, shape, {.op = op, .gemm = {}});
    MoeLayer1 l1(rt, proxy, shape, {.op = op, .gemm = {}});
    LOOM_RETURN_IF_ERROR(l0.Prepare(p.Local(p.w1, rank).data()));
    LOOM_RETURN_IF_ERROR(l1.Prepare(p.Local(p.w2, rank).data()));
    std::vector<float> h(l0.max_rows() * shape.ffn), h2(h.size());
    std::vector<float> y(shape.tokens_per_rank * shape.hidden), y2(y.size());
    LOOM_RETURN_IF_ERROR(l0.RunCommOnly(p.x[rank].data(), p.routings[rank]).status());
    LOOM_RETURN_IF_ERROR(l0.RunComputeOnly(h2.data()).status());
    LOOM_RETURN_IF_ERROR(l0.Run(p.x[rank].data(), p.routings[rank], h.data()).status());
    for (const MoeTile& t : l0.layout().tiles) {
      for (int64_t i = t.row0 * shape.ffn; i < (t.row0 + t.rows) * shape.ffn; ++i) {
        if (h[i] != h2[i]) {
          failures[rank] += "compute-only h differs at " + std::to_string(i) + "; ";
          break;
        }
      }
    }
    LOOM_RETURN_IF_ERROR(l1.Run(h.data(), p.routings[rank], y.data()).status());
    LOOM_ASSIGN_OR_RETURN(OpRunStats comm, l1.RunCommOnly(p.routings[rank]));
    if (comm.link.messages < 4) failures[rank] += "comm-only sent too few messages; ";
    LOOM_ASSIGN_OR_RETURN(OpRunStats comp, l1.RunComputeOnly(h.data(), y2.data()));
    if (comp.compute_s <= 0) failures[rank] += "compute-only compute_s; ";
    LOOM_ASSIGN_OR_RETURN(MoeLayer1Profile prof, l1.ProfileSplits(h.data()));
    if (!(prof.seconds_per_mac > 0 && prof.reduce_seconds_per_byte > 0)) {
      failures[rank] += "profile not positive; ";
    }
    LOOM_ASSIGN_OR_RETURN(MoeLayer1OpOptions pick, l1.ChooseAssignment(prof, 4));
    if (pick.comm_workers < 1 || pick.comm_workers > 3 ||
        pick.compute_workers + pick.comm_workers != 4 || pick.op.splits < 1) {
      failures[rank] += "bad assignment; ";
    }
    if (l1.ChooseAssignment(prof, 1).ok()) failures[rank] += "1 core accepted; ";
    return OkStatus();
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(statuses[r].ok()) << statuses[r];
    EXPECT_EQ(failures[r], "");
  }
}

}  // namespace
}  // namespace loom::overlap
