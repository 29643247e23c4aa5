#include "loom/overlap/ops/ag_gemm.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <tuple>

#include "loom/overlap/ops/op_test_util.h"

namespace loom::overlap {
namespace {

using testing::MaxAbsDiff;
using testing::RandomMatrix;
using testing::RunRanks;
using testing::SmallRuntimeOptions;

struct AgCase {
  int world = 2;
  AgGemmOpShape shape{37, 19, 23};
  OpConfig op;
  LinkOptions link;
};

// Expected C of `rank`: the gathered A of every rank (call `call`) times that rank's B.
std::vector<float> ExpectedAg(const AgCase& c, int rank, int call) {
  const int64_t m = c.world * c.shape.m_shard;
  std::vector<float> a_full;
  for (int s = 0; s < c.world; ++s) {
    auto a = RandomMatrix(c.shape.m_shard, c.shape.k, 1000 * call + s);
    a_full.insert(a_full.end(), a.begin(), a.end());
  }
  auto b = RandomMatrix(c.shape.k, c.shape.n_local, 500 + rank);
  std::vector<float> out(static_cast<size_t>(m * c.shape.n_local));
  ReferenceGemm(a_full.data(), c.shape.k, b.data(), c.shape.n_local, out.data(), c.shape.n_local, m,
                c.shape.n_local, c.shape.k);
  return out;
}

// Runs two calls (different A) per rank and checks both against the reference.
std::vector<Status> RunAgCase(const AgCase& c, std::vector<OpRunStats>* last = nullptr) {
  if (last != nullptr) last->assign(static_cast<size_t>(c.world), {});
  return RunRanks(
      c.world, SmallRuntimeOptions(), [&](int) { return c.link; },
      [&](int rank, Runtime& rt, LinkProxy& proxy) -> Status {
        AgGemm op(&rt, &proxy, c.shape, {.op = c.op, .gemm = {}});
        auto b = RandomMatrix(c.shape.k, c.shape.n_local, 500 + rank);
        LOOM_RETURN_IF_ERROR(op.Prepare(b.data()));
        for (int call = 0; call < 2; ++call) {
          auto a = RandomMatrix(c.shape.m_shard, c.shape.k, 1000 * call + rank);
          std::vector<float> out(static_cast<size_t>(c.world * c.shape.m_shard * c.shape.n_local),
                                 -7.0f);
          LOOM_ASSIGN_OR_RETURN(OpRunStats st, op.Run(a.data(), out.data()));
          if (st.mode_run == OverlapMode::kAuto) return InternalError("auto not resolved");
          const double err = MaxAbsDiff(out, ExpectedAg(c, rank, call));
          if (!(err < 1e-4)) {
            return InternalError("rank " + std::to_string(rank) + " call " + std::to_string(call) +
                                 " mode " + std::string(OverlapModeName(st.mode_run)) +
                                 ": max |err| = " + std::to_string(err));
          }
          if (last != nullptr) (*last)[static_cast<size_t>(rank)] = std::move(st);
        }
        return OkStatus();
      });
}

class AgGemmModes : public ::testing::TestWithParam<testing::ModeParam> {};

TEST_P(AgGemmModes, MatchesReferenceOnOddShapes) {
  AgCase c;
  testing::ApplyModeParam(GetParam(), &c.world, &c.op, &c.link);
  for (const Status& s : RunAgCase(c)) EXPECT_TRUE(s.ok()) << s;
}

INSTANTIATE_TEST_SUITE_P(All, AgGemmModes, testing::ModeParamValues(), testing::ModeParamName);

TEST(AgGemm, ShardSmallerThanSplitsAndTiles) {
  AgCase c;
  c.world = 3;
  c.shape = {2, 5, 3};  // chunks of 0 rows (S=3 > 2 rows), one edge tile per shard
  c.op = {.mode = OverlapMode::kFused, .splits = 3, .tile_rows = 64};
  c.link.mode = LinkMode::kPoison;
  for (const Status& s : RunAgCase(c)) EXPECT_TRUE(s.ok()) << s;
}

// kAuto with a fixed tile cost (no measurement noise): a link as slow as the compute (R = 1)
// makes the simulator pick fused; an unlimited link leaves nothing to hide, so the simplest mode
// (sequential) is kept. Every rank resolves the same mode and the values stay right.
OverlapMode AutoModeFor(LinkOptions link) {
  AgCase c;
  c.shape = {64, 64, 64};
  c.op = {.mode = OverlapMode::kAuto, .splits = 4, .tile_rows = 8, .tile_cost_s = 1e-3};
  c.link = link;
  std::vector<OpRunStats> stats;
  for (const Status& s : RunAgCase(c, &stats)) EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(stats[0].mode_run, stats[1].mode_run);
  return stats[0].mode_run;
}

TEST(AgGemm, AutoPicksFusedOnASlowLinkAndSequentialOnAnUnlimitedOne) {
  // t_c = 16 tiles · 1 ms; t_m = 16 KiB at 1 MiB/s ≈ 16 ms: R ≈ 1.
  EXPECT_EQ(AutoModeFor({.bytes_per_second = 1 << 20, .mode = LinkMode::kPoison}),
            OverlapMode::kFused);
  EXPECT_EQ(AutoModeFor({.mode = LinkMode::kUnlimited}), OverlapMode::kSequential);
}

TEST(AgGemm, ComputeOnlyAndCommOnly) {
  AgCase c;
  c.op = {.mode = OverlapMode::kFused, .splits = 2, .tile_rows = 16};
  auto st = RunRanks(
      2, SmallRuntimeOptions(), [&](int) { return c.link; },
      [&](int rank, Runtime& rt, LinkProxy& proxy) -> Status {
        AgGemm op(&rt, &proxy, c.shape, {.op = c.op, .gemm = {}});
        auto b = RandomMatrix(c.shape.k, c.shape.n_local, 500 + rank);
        LOOM_RETURN_IF_ERROR(op.Prepare(b.data()));
        LOOM_ASSIGN_OR_RETURN(OpRunStats comm, op.RunCommOnly());
        if (comm.link.messages != 2) return InternalError("expected 2 chunk messages");
        if (comm.link.bytes != c.shape.m_shard * c.shape.k * 4) return InternalError("bytes");
        auto a = RandomMatrix(c.shape.m_shard, c.shape.k, rank);
        std::vector<float> out(static_cast<size_t>(2 * c.shape.m_shard * c.shape.n_local));
        LOOM_ASSIGN_OR_RETURN(OpRunStats comp, op.RunComputeOnly(a.data(), out.data()));
        if (comp.link.messages != 0 || comp.compute_s <= 0) return InternalError("compute only");
        // A real call still works after both (epochs stay in step).
        LOOM_ASSIGN_OR_RETURN(OpRunStats run, op.Run(a.data(), out.data()));
        if (run.link.messages != 2) return InternalError("run messages");
        return OkStatus();
      });
  for (const Status& s : st) EXPECT_TRUE(s.ok()) << s;
}

TEST(AgGemm, MismatchedConfigNamesTheRank) {
  auto st = RunRanks(
      3, SmallRuntimeOptions(), [](int) { return LinkOptions{}; },
      [&](int rank, Runtime& rt, LinkProxy& proxy) -> Status {
        OpConfig op{.mode = OverlapMode::kFused, .splits = rank == 2 ? 4 : 3};
        AgGemm ag(&rt, &proxy, AgGemmOpShape{8, 4, 4}, {.op = op, .gemm = {}});
        std::vector<float> b(16, 1.0f);
        return ag.Prepare(b.data());
      });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(st[r].code(), StatusCode::kInvalidArgument) << st[r];
    EXPECT_NE(st[r].message().find("rank 2"), std::string::npos) << st[r];
    EXPECT_NE(st[r].message().find("ag_gemm"), std::string::npos) << st[r];
  }
}

TEST(AgGemm, MissingPeerTimesOutWithSignalDump) {
  auto st = RunRanks(
      2, SmallRuntimeOptions(std::chrono::milliseconds(3000)), [](int) { return LinkOptions{}; },
      [&](int rank, Runtime& rt, LinkProxy& proxy) -> Status {
        OpConfig op{
            .mode = OverlapMode::kFused, .splits = 2, .timeout = std::chrono::milliseconds(300)};
        AgGemm ag(&rt, &proxy, AgGemmOpShape{8, 4, 4}, {.op = op, .gemm = {}});
        std::vector<float> b(16, 1.0f), a(32, 1.0f), c(64);
        LOOM_RETURN_IF_ERROR(ag.Prepare(b.data()));
        if (rank == 1) return OkStatus();  // never runs: its chunks never arrive on rank 0
        return ag.Run(a.data(), c.data()).status();
      });
  EXPECT_TRUE(st[1].ok()) << st[1];
  EXPECT_EQ(st[0].code(), StatusCode::kDeadlineExceeded) << st[0];
  EXPECT_NE(st[0].message().find("ag_gemm rank 0 (fused)"), std::string::npos) << st[0];
  EXPECT_NE(st[0].message().find("sig"), std::string::npos) << st[0];  // the signal dump
}

// Ordering on a slow modelled link (each chunk ≥ 20 ms): every tile starts after the earliest
// possible arrival of its chunks, and in fused mode some remote tile starts before the last
// chunk can have arrived. Ordering only, no wall-clock threshold.
void CheckOrdering(OverlapMode mode) {
  AgCase c;
  c.shape = {48, 64, 16};
  c.op = {.mode = mode, .splits = 3, .tile_rows = 8, .record_trace = true};
  c.link.mode = LinkMode::kPoison;
  c.link.bytes_per_second = 16 * 64 * 4 / 0.025;  // one 16-row chunk = 25 ms
  std::vector<OpRunStats> stats;
  for (const Status& s : RunAgCase(c, &stats)) ASSERT_TRUE(s.ok()) << s;
  int early_remote = 0;
  for (int r = 0; r < c.world; ++r) {
    int64_t last_arrival = 0;
    for (int src = 0; src < c.world; ++src) {
      for (const ChunkTrace& ch : stats[src].chunks) {
        if (ch.dst_rank == r) last_arrival = std::max(last_arrival, ch.earliest_arrival_ns);
      }
    }
    ASSERT_GT(last_arrival, 0);
    for (const TileTrace& t : stats[r].tiles) {
      if (t.src_rank == r) continue;
      int64_t need = 0;
      int found = 0;
      for (const ChunkTrace& ch : stats[t.src_rank].chunks) {
        if (ch.dst_rank == r && ch.chunk >= t.chunk_beg && ch.chunk <= t.chunk_end) {
          need = std::max(need, ch.earliest_arrival_ns);
          ++found;
        }
      }
      ASSERT_GT(found, 0) << "tile " << t.tile;
      EXPECT_GE(t.start_ns, need) << "rank " << r << " tile " << t.tile << " started before "
                                  << "its chunks could arrive";
      if (t.start_ns < last_arrival) ++early_remote;
    }
  }
  if (mode == OverlapMode::kFused) {
    EXPECT_GT(early_remote, 0);
  } else {
    EXPECT_EQ(early_remote, 0);
  }
}

TEST(AgGemm, FusedTilesWaitForTheirChunksAndOverlap) { CheckOrdering(OverlapMode::kFused); }
TEST(AgGemm, SequentialTilesStartAfterLastChunk) { CheckOrdering(OverlapMode::kSequential); }
TEST(AgGemm, DecomposedTilesStartAfterTheirShard) { CheckOrdering(OverlapMode::kDecomposed); }

#ifndef LOOM_OVERLAP_TSAN  // fork under TSan is not meaningful here
// Process mode: two forked ranks over /dev/shm, fused, poison link.
int ProcessRank(const std::string& job, int rank) {
  RuntimeOptions o = SmallRuntimeOptions(std::chrono::milliseconds(20000));
  auto rt = CreateProcessRuntime(job, rank, 2, o);
  if (!rt.ok()) return 2;
  LinkProxy proxy(rt->get(), {.bytes_per_second = 1e9, .mode = LinkMode::kPoison});
  if (!proxy.Start().ok()) return 3;
  AgCase c;
  c.op = {.mode = OverlapMode::kFused, .splits = 3, .tile_rows = 8};
  AgGemm op(rt->get(), &proxy, c.shape, {.op = c.op, .gemm = {}});
  auto b = RandomMatrix(c.shape.k, c.shape.n_local, 500 + rank);
  if (!op.Prepare(b.data()).ok()) return 4;
  for (int call = 0; call < 2; ++call) {
    auto a = RandomMatrix(c.shape.m_shard, c.shape.k, 1000 * call + rank);
    std::vector<float> out(static_cast<size_t>(2 * c.shape.m_shard * c.shape.n_local));
    if (!op.Run(a.data(), out.data()).ok()) return 5;
    if (!(MaxAbsDiff(out, ExpectedAg(c, rank, call)) < 1e-4)) return 6;
  }
  // Keep the segment until the peer is done with it.
  if (!(*rt)->barrier_all("ag_gemm process test end").ok()) return 7;
  proxy.Stop();
  return 0;
}

TEST(AgGemm, ProcessModeFused) {
  const std::string job = "ag-gemm-test-" + std::to_string(getpid());
  pid_t pids[2];
  for (int r = 0; r < 2; ++r) {
    pids[r] = fork();
    ASSERT_GE(pids[r], 0);
    if (pids[r] == 0) _exit(ProcessRank(job, r));
  }
  for (int r = 0; r < 2; ++r) {
    int status = 0;
    ASSERT_EQ(waitpid(pids[r], &status, 0), pids[r]);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "rank " << r;
  }
}

// Process mode, a rank that dies after Prepare: rank 0's call fails naming rank 1 (never hangs).
int DyingPeerRank(const std::string& job, int rank) {
  auto rt =
      CreateProcessRuntime(job, rank, 2, SmallRuntimeOptions(std::chrono::milliseconds(20000)));
  if (!rt.ok()) return 2;
  LinkProxy proxy(rt->get(), {.bytes_per_second = 1e9, .mode = LinkMode::kCopy});
  if (!proxy.Start().ok()) return 3;
  OpConfig op{.mode = OverlapMode::kFused, .splits = 2, .timeout = std::chrono::milliseconds(2000)};
  AgGemm ag(rt->get(), &proxy, AgGemmOpShape{8, 4, 4}, {.op = op, .gemm = {}});
  std::vector<float> b(16, 1.0f), a(32, 1.0f), c(64);
  if (!ag.Prepare(b.data()).ok()) return 4;
  if (rank == 1) _exit(0);  // dies without detaching
  Status s = ag.Run(a.data(), c.data()).status();
  proxy.Stop();
  if (s.ok()) return 5;
  if (s.message().find("rank 1") == std::string::npos) return 6;
  if (s.message().find("ag_gemm rank 0") == std::string::npos) return 7;
  return 0;
}

TEST(AgGemm, ProcessModeDeadPeerIsNamed) {
  const std::string job = "ag-gemm-dead-" + std::to_string(getpid());
  pid_t pids[2];
  for (int r = 0; r < 2; ++r) {
    pids[r] = fork();
    ASSERT_GE(pids[r], 0);
    if (pids[r] == 0) _exit(DyingPeerRank(job, r));
  }
  for (int r = 0; r < 2; ++r) {
    int status = 0;
    ASSERT_EQ(waitpid(pids[r], &status, 0), pids[r]);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "rank " << r;
  }
}
#endif  // LOOM_OVERLAP_TSAN

}  // namespace
}  // namespace loom::overlap
