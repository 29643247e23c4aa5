#include "loom/overlap/ops/gemm_rs.h"

#include <gtest/gtest.h>

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

struct RsCase {
  int world = 2;
  GemmRsOpShape shape{101, 19, 23};  // M not a multiple of W
  OpConfig op;
  LinkOptions link;
};

// Σ_r A_r · B_r over all ranks (call `call`), rows [row0, row0 + rows).
std::vector<float> ExpectedRs(const RsCase& c, int call, int64_t row0, int64_t rows) {
  const int64_t n = c.shape.n;
  std::vector<double> sum(static_cast<size_t>(rows * n), 0.0);
  std::vector<float> part(static_cast<size_t>(c.shape.m * n));
  for (int r = 0; r < c.world; ++r) {
    auto a = RandomMatrix(c.shape.m, c.shape.k_local, 1000 * call + r);
    auto b = RandomMatrix(c.shape.k_local, n, 500 + r);
    ReferenceGemm(a.data(), c.shape.k_local, b.data(), n, part.data(), n, c.shape.m, n,
                  c.shape.k_local);
    for (int64_t i = 0; i < rows * n; ++i) sum[i] += part[row0 * n + i];
  }
  return std::vector<float>(sum.begin(), sum.end());
}

std::vector<Status> RunRsCase(const RsCase& c, std::vector<OpRunStats>* last = nullptr) {
  if (last != nullptr) last->assign(static_cast<size_t>(c.world), {});
  return RunRanks(
      c.world, SmallRuntimeOptions(), [&](int) { return c.link; },
      [&](int rank, Runtime& rt, LinkProxy& proxy) -> Status {
        GemmRs op(&rt, &proxy, c.shape, {.op = c.op, .gemm = {}});
        auto b = RandomMatrix(c.shape.k_local, c.shape.n, 500 + rank);
        LOOM_RETURN_IF_ERROR(op.Prepare(b.data()));
        const int64_t rows = op.SegmentRows(rank);
        for (int call = 0; call < 2; ++call) {
          auto a = RandomMatrix(c.shape.m, c.shape.k_local, 1000 * call + rank);
          std::vector<float> out(static_cast<size_t>(rows * c.shape.n), -7.0f);
          LOOM_ASSIGN_OR_RETURN(OpRunStats st, op.Run(a.data(), out.data()));
          if (st.mode_run == OverlapMode::kAuto) return InternalError("auto not resolved");
          const double err = MaxAbsDiff(out, ExpectedRs(c, call, op.SegmentBegin(rank), rows));
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

class GemmRsModes : public ::testing::TestWithParam<testing::ModeParam> {};

TEST_P(GemmRsModes, MatchesReferenceOnOddShapes) {
  RsCase c;
  testing::ApplyModeParam(GetParam(), &c.world, &c.op, &c.link);
  for (const Status& s : RunRsCase(c)) EXPECT_TRUE(s.ok()) << s;
}

INSTANTIATE_TEST_SUITE_P(All, GemmRsModes, testing::ModeParamValues(), testing::ModeParamName);

TEST(GemmRs, TinyMWithEmptySegmentsAndChunks) {
  for (OverlapMode mode :
       {OverlapMode::kSequential, OverlapMode::kDecomposed, OverlapMode::kFused}) {
    RsCase c;
    c.world = 4;
    c.shape = {5, 3, 4};  // seg_rows 2: segments of 2, 2, 1, 0 rows; S=3 → empty chunks
    c.op = {.mode = mode, .splits = 3, .tile_rows = 1};
    c.link.mode = LinkMode::kPoison;
    for (const Status& s : RunRsCase(c)) EXPECT_TRUE(s.ok()) << s;
  }
}

TEST(GemmRs, SegmentOrderOwnLastAndXorForPowerOfTwo) {
  auto st = RunRanks(
      4, SmallRuntimeOptions(), [](int) { return LinkOptions{}; },
      [&](int rank, Runtime& rt, LinkProxy& proxy) -> Status {
        GemmRs op(&rt, &proxy, GemmRsOpShape{16, 2, 2}, {.op = {}, .gemm = {}});
        std::vector<float> b(4, 1.0f);
        LOOM_RETURN_IF_ERROR(op.Prepare(b.data()));
        std::vector<int> want;
        for (int j = 1; j < 4; ++j) want.push_back(rank ^ j);
        want.push_back(rank);
        if (op.SegmentOrder() != want)
          return InternalError("order of rank " + std::to_string(rank));
        return OkStatus();
      });
  for (const Status& s : st) EXPECT_TRUE(s.ok()) << s;
}

TEST(GemmRs, ComputeOnlyAndCommOnly) {
  RsCase c;
  c.op = {.mode = OverlapMode::kFused, .splits = 2, .tile_rows = 16};
  auto st = RunRanks(
      2, SmallRuntimeOptions(), [&](int) { return c.link; },
      [&](int rank, Runtime& rt, LinkProxy& proxy) -> Status {
        GemmRs op(&rt, &proxy, c.shape, {.op = c.op, .gemm = {}});
        auto b = RandomMatrix(c.shape.k_local, c.shape.n, 500 + rank);
        LOOM_RETURN_IF_ERROR(op.Prepare(b.data()));
        LOOM_ASSIGN_OR_RETURN(OpRunStats comm, op.RunCommOnly());
        if (comm.link.messages != 2) return InternalError("expected 2 chunk messages");
        auto a = RandomMatrix(c.shape.m, c.shape.k_local, rank);
        std::vector<float> out(static_cast<size_t>(op.SegmentRows(rank) * c.shape.n));
        LOOM_ASSIGN_OR_RETURN(OpRunStats comp, op.RunComputeOnly(a.data(), out.data()));
        if (comp.link.messages != 0 || comp.compute_s <= 0) return InternalError("compute only");
        LOOM_ASSIGN_OR_RETURN(OpRunStats run, op.Run(a.data(), out.data()));
        if (run.link.messages != 2) return InternalError("run messages");
        const double err =
            MaxAbsDiff(out, ExpectedRs(c, 0, op.SegmentBegin(rank), op.SegmentRows(rank)));
        if (!(err < 1e-4)) return InternalError("value after comm/compute only");
        return OkStatus();
      });
  for (const Status& s : st) EXPECT_TRUE(s.ok()) << s;
}

TEST(GemmRs, MismatchedConfigNamesTheRank) {
  auto st = RunRanks(
      2, SmallRuntimeOptions(), [](int) { return LinkOptions{}; },
      [&](int rank, Runtime& rt, LinkProxy& proxy) -> Status {
        GemmRs op(&rt, &proxy, GemmRsOpShape{16, rank == 1 ? 3 : 2, 2}, {.op = {}, .gemm = {}});
        std::vector<float> b(6, 1.0f);
        return op.Prepare(b.data());
      });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(st[r].code(), StatusCode::kInvalidArgument) << st[r];
    EXPECT_NE(st[r].message().find("rank 1"), std::string::npos) << st[r];
  }
}

TEST(GemmRs, MissingPeerTimesOutWithSignalDump) {
  auto st = RunRanks(
      3, SmallRuntimeOptions(std::chrono::milliseconds(3000)), [](int) { return LinkOptions{}; },
      [&](int rank, Runtime& rt, LinkProxy& proxy) -> Status {
        OpConfig op{
            .mode = OverlapMode::kFused, .splits = 2, .timeout = std::chrono::milliseconds(300)};
        GemmRs rs(&rt, &proxy, GemmRsOpShape{12, 4, 4}, {.op = op, .gemm = {}});
        std::vector<float> b(16, 1.0f), a(48, 1.0f), out(16);
        LOOM_RETURN_IF_ERROR(rs.Prepare(b.data()));
        if (rank == 2) return OkStatus();  // never runs
        return rs.Run(a.data(), out.data()).status();
      });
  EXPECT_TRUE(st[2].ok()) << st[2];
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(st[r].code(), StatusCode::kDeadlineExceeded) << st[r];
    EXPECT_NE(st[r].message().find("gemm_rs rank " + std::to_string(r) + " (fused)"),
              std::string::npos)
        << st[r];
    EXPECT_NE(st[r].message().find("rank 2's chunk"), std::string::npos) << st[r];
  }
}

// Fused on a slow modelled link: chunks leave while tiles are still being computed (some chunk
// is submitted before the rank's last tile starts); sequential submits only after all tiles.
void CheckSendOrdering(OverlapMode mode) {
  RsCase c;
  c.shape = {96, 64, 16};
  c.op = {.mode = mode, .splits = 3, .tile_rows = 8, .record_trace = true};
  c.link.mode = LinkMode::kPoison;
  c.link.bytes_per_second = 16 * 16 * 4 / 0.02;  // one 16-row chunk = 20 ms
  std::vector<OpRunStats> stats;
  for (const Status& s : RunRsCase(c, &stats)) ASSERT_TRUE(s.ok()) << s;
  for (int r = 0; r < c.world; ++r) {
    ASSERT_FALSE(stats[r].chunks.empty());
    ASSERT_FALSE(stats[r].tiles.empty());
    int64_t first_submit = stats[r].chunks.front().submit_ns;
    int64_t last_tile_start = 0;
    for (const TileTrace& t : stats[r].tiles)
      last_tile_start = std::max(last_tile_start, t.start_ns);
    // A chunk leaves only after every tile that writes it has ended.
    for (const ChunkTrace& ch : stats[r].chunks) {
      for (const TileTrace& t : stats[r].tiles) {
        const int64_t seg_rows = 48;
        const int64_t chunk_rows = 16;
        const int64_t row0 = ch.dst_rank * seg_rows + ch.chunk * chunk_rows;
        const bool overlaps = t.row0 < row0 + chunk_rows && row0 < t.row0 + t.rows;
        if (mode == OverlapMode::kFused && overlaps) {
          EXPECT_GE(ch.submit_ns, t.end_ns) << "chunk sent before its tile finished";
        }
      }
    }
    if (mode == OverlapMode::kFused) {
      EXPECT_LT(first_submit, last_tile_start) << "rank " << r;
    } else {
      EXPECT_GE(first_submit, last_tile_start) << "rank " << r;
    }
  }
}

TEST(GemmRs, FusedSendsChunksWhileComputing) { CheckSendOrdering(OverlapMode::kFused); }
TEST(GemmRs, SequentialSendsAfterCompute) { CheckSendOrdering(OverlapMode::kSequential); }

}  // namespace
}  // namespace loom::overlap
