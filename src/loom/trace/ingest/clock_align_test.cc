#include "loom/trace/ingest/clock_align.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "loom/trace/ingest/testing/synthetic.h"
#include "loom/trace/ingest/trace_reader.h"

namespace loom::trace::ingest {
namespace {

using testing::GenerateRun;
using testing::RunSpec;
using testing::TraceBuilder;

std::string TestData(const std::string& name) {
  std::string f = __FILE__;
  return f.substr(0, f.find_last_of('/')) + "/testdata/" + name;
}

// Random per-rank offsets of 0.5-5 ms with random sign (rank 0: 0).
std::vector<int64_t> RandomOffsets(int world, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> off(world, 0);
  for (int r = 1; r < world; ++r) {
    const int64_t mag = std::uniform_int_distribution<int64_t>(500'000, 5'000'000)(rng);
    off[r] = (rng() & 1) ? mag : -mag;
  }
  return off;
}

// After alignment no rank may end a matched collective before another started it.
void ExpectCausal(const std::vector<RankTrace>& t, const MatchResult& m) {
  for (const MatchedCollective& c : m.collectives) {
    for (size_t i = 0; i < c.trace_index.size(); ++i) {
      for (size_t j = 0; j < c.trace_index.size(); ++j) {
        const TraceEvent& a = t[c.trace_index[i]].events[c.event_index[i]];
        const TraceEvent& b = t[c.trace_index[j]].events[c.event_index[j]];
        EXPECT_LE(a.ts_ns, b.end_ns()) << "seq " << c.seq;
      }
    }
  }
}

struct Case {
  int world;
  bool p2p;
  unsigned seed;
};

class RecoverOffsets : public ::testing::TestWithParam<Case> {};

TEST_P(RecoverOffsets, Within50Microseconds) {
  const Case c = GetParam();
  RunSpec spec;
  spec.world = c.world;
  spec.ring_p2p = c.p2p;
  spec.seed = c.seed;
  const std::vector<int64_t> truth = RandomOffsets(c.world, c.seed * 7 + 1);
  std::vector<RankTrace> traces = GenerateRun(spec, truth);
  Result<MatchResult> m = MatchCollectives(&traces);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->collectives.size(), static_cast<size_t>(spec.steps * (spec.buckets + 1)));
  Result<ClockAlignment> a = SolveClockOffsets(traces, *m);
  ASSERT_TRUE(a.ok()) << a.status();
  int64_t worst = 0;
  for (const RankOffset& r : a->ranks) {
    ASSERT_TRUE(r.bounded) << "rank " << r.rank;
    const int64_t want = truth[r.rank] - truth[0];
    EXPECT_LE(r.lo_ns, want) << "rank " << r.rank;  // the truth is always feasible
    EXPECT_GE(r.hi_ns, want) << "rank " << r.rank;
    EXPECT_LE(std::llabs(r.offset_ns - want), 50'000) << "rank " << r.rank;
    worst = std::max<int64_t>(worst, std::llabs(r.offset_ns - want));
  }
  std::printf("[ align  ] world %d p2p %d seed %u: worst |error| %lld ns\n", c.world, c.p2p, c.seed,
              static_cast<long long>(worst));
  ApplyClockOffsets(*a, &traces);
  ExpectCausal(traces, *m);
}

INSTANTIATE_TEST_SUITE_P(Synthetic, RecoverOffsets,
                         ::testing::Values(Case{2, false, 1}, Case{4, false, 2}, Case{8, false, 3},
                                           Case{4, true, 4}, Case{2, true, 5}));

TEST(SolveClockOffsets, LoomTestdataAgreesWithExportedEstimate) {
  Result<std::vector<RankTrace>> traces =
      ReadTraces({TestData("loom_rank0.json"), TestData("loom_rank1.json")});
  ASSERT_TRUE(traces.ok()) << traces.status();
  Result<MatchResult> m = MatchCollectives(&*traces);
  ASSERT_TRUE(m.ok()) << m.status();
  Result<ClockAlignment> a = SolveClockOffsets(*traces, *m);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->ranks.size(), 2u);
  const RankOffset& r1 = a->ranks[1];
  EXPECT_EQ(r1.rank, 1);
  EXPECT_TRUE(r1.bounded);
  // make_synthetic_traces.py: true offset 1,234,567 ns; the tracer's estimate 1,234,000 ns.
  // Tightest constraints: small allreduce (rank 0 starts 4 µs before rank 1, both end together,
  // durations 25/21 µs): θ ∈ [truth − 25 µs, truth + 21 µs]; SEND/RECV are looser.
  EXPECT_EQ(r1.lo_ns, 1'234'567 - 25'000);
  EXPECT_EQ(r1.hi_ns, 1'234'567 + 21'000);
  EXPECT_EQ(r1.offset_ns, 1'234'567 - 2'000);
  EXPECT_TRUE(r1.has_estimate);
  EXPECT_EQ(r1.estimate_ns, 1'234'000);
  EXPECT_TRUE(r1.estimate_in_interval);
  EXPECT_EQ(a->constraints, 4 * 2 + 8);
}

TEST(SolveClockOffsets, KinetoTestdata) {
  Result<std::vector<RankTrace>> traces =
      ReadTraces({TestData("kineto_rank0.json"), TestData("kineto_rank1.json")});
  ASSERT_TRUE(traces.ok()) << traces.status();
  Result<MatchResult> m = MatchCollectives(&*traces);
  ASSERT_TRUE(m.ok()) << m.status();
  Result<ClockAlignment> a = SolveClockOffsets(*traces, *m);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_LE(std::llabs(a->ranks[1].offset_ns - 1'234'567), 50'000);
  EXPECT_FALSE(a->ranks[1].has_estimate);
}

TEST(SolveClockOffsets, RealLegacyTraceIsFeasibleAfterAlignment) {
  Result<std::vector<RankTrace>> traces =
      ReadTraces({TestData("legacy_gloo_rank0.json"), TestData("legacy_gloo_rank1.json")});
  ASSERT_TRUE(traces.ok()) << traces.status();
  Result<MatchResult> m = MatchCollectives(&*traces);
  ASSERT_TRUE(m.ok()) << m.status();
  Result<ClockAlignment> a = SolveClockOffsets(*traces, *m);
  ASSERT_TRUE(a.ok()) << a.status();
  const RankOffset& r1 = a->ranks[1];
  ASSERT_TRUE(r1.bounded);
  EXPECT_LE(r1.lo_ns, r1.hi_ns);
  // Both processes started profiling within a few ms of each other.
  EXPECT_LT(std::llabs(r1.offset_ns), 5'000'000);
  std::printf("[ align  ] real legacy 2-rank gloo: θ1 in [%lld, %lld] ns, midpoint %lld\n",
              static_cast<long long>(r1.lo_ns), static_cast<long long>(r1.hi_ns),
              static_cast<long long>(r1.offset_ns));
  ApplyClockOffsets(*a, &*traces);
  ExpectCausal(*traces, *m);
  EXPECT_EQ((*traces)[1].clock.applied_offset_ns, r1.offset_ns);
}

TEST(SolveClockOffsets, ContradictoryMatchReportsTheCycle) {
  // Rank 1's seq 0 and seq 1 are swapped relative to the truth: seq 0 (at t=1 ms on rank 0)
  // pairs with an event 10.1 ms later on rank 1 and seq 1 with one 10 ms earlier, with 50 µs
  // durations, so θ1 − θ0 ≥ +9.95 ms and θ1 − θ0 ≤ −10.05 ms at once.
  TraceBuilder a(0, 2), b(1, 2);
  a.Comm("allreduce", 1'000'000, 50'000, 8, "", 0);
  a.Comm("allreduce", 21'000'000, 50'000, 8, "", 1);
  b.Comm("allreduce", 11'000'000, 50'000, 8, "", 1);
  b.Comm("allreduce", 11'100'000, 50'000, 8, "", 0);
  std::vector<RankTrace> traces;
  traces.push_back(a.Build());
  traces.push_back(b.Build());
  Result<MatchResult> m = MatchCollectives(&traces);
  ASSERT_TRUE(m.ok()) << m.status();
  Result<ClockAlignment> al = SolveClockOffsets(traces, *m);
  ASSERT_FALSE(al.ok());
  EXPECT_EQ(al.status().code(), StatusCode::kInvalidArgument);
  const std::string& msg = al.status().message();
  EXPECT_NE(msg.find("clock align: bad match"), std::string::npos) << msg;
  EXPECT_NE(
      msg.find("\n  theta[rank 0] - theta[rank 1] <= -9950000 ns from collective all_reduce group "
               "'default' seq 1 ('allreduce')"),
      std::string::npos)
      << msg;
  EXPECT_NE(
      msg.find("\n  theta[rank 1] - theta[rank 0] <= -10050000 ns from collective all_reduce group "
               "'default' seq 0 ('allreduce')"),
      std::string::npos)
      << msg;
  EXPECT_NE(msg.find("total weight -20000000 ns"), std::string::npos) << msg;
}

TEST(SolveClockOffsets, SendEndBoundIsTighter) {
  RunSpec spec;
  spec.world = 3;
  spec.ring_p2p = true;
  spec.buckets = 1;
  spec.arrival_jitter_ns = 3'000'000;
  spec.small_ns = 2'000'000;  // no short collective: alignment rests on SEND/RECV
  spec.steps = 10;
  const std::vector<int64_t> truth = {0, 2'500'000, -1'700'000};
  std::vector<RankTrace> traces = GenerateRun(spec, truth);
  Result<MatchResult> m = MatchCollectives(&traces);
  ASSERT_TRUE(m.ok()) << m.status();
  AlignOptions o;
  Result<ClockAlignment> loose = SolveClockOffsets(traces, *m, o);
  o.p2p_bound = AlignOptions::P2PBound::kSendEnd;
  Result<ClockAlignment> tight = SolveClockOffsets(traces, *m, o);
  ASSERT_TRUE(loose.ok() && tight.ok());
  for (int r = 1; r < 3; ++r) {
    const int64_t want = truth[r];
    EXPECT_LE(tight->ranks[r].hi_ns - tight->ranks[r].lo_ns,
              loose->ranks[r].hi_ns - loose->ranks[r].lo_ns);
    EXPECT_LE(tight->ranks[r].lo_ns, want);
    EXPECT_GE(tight->ranks[r].hi_ns, want);
    EXPECT_LE(std::llabs(tight->ranks[r].offset_ns - want), 50'000) << "rank " << r;
  }
  o.use_p2p = false;
  o.reference_rank = 9;
  EXPECT_EQ(SolveClockOffsets(traces, *m, o).status().code(), StatusCode::kInvalidArgument);
}

TEST(SolveClockOffsets, UnconnectedRankFallsBackToEstimate) {
  TraceBuilder a(0, 2), b(1, 2);
  a.Comm("allreduce", 1000, 10, 8, "g0");
  std::vector<RankTrace> traces;
  traces.push_back(a.Build());
  traces.push_back(b.Build());
  traces[1].clock.has_offset_estimate = true;
  traces[1].clock.offset_estimate_ns = 777;
  Result<MatchResult> m = MatchCollectives(&traces);
  ASSERT_TRUE(m.ok()) << m.status();
  Result<ClockAlignment> al = SolveClockOffsets(traces, *m);
  ASSERT_TRUE(al.ok()) << al.status();
  EXPECT_FALSE(al->ranks[1].bounded);
  EXPECT_EQ(al->ranks[1].offset_ns, 777);
  EXPECT_TRUE(al->ranks[1].estimate_in_interval);
}

}  // namespace
}  // namespace loom::trace::ingest
