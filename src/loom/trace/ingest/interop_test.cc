// End to end with loom's own tracer: two ranks as threads over the in-process communicator,
// rank 1's tracer clock skewed by a known amount, Kineto export -> ReadTraces ->
// MatchCollectives -> SolveClockOffsets. Keeps the loom dialect in sync with tracer/.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "loom/base/tensor_view.h"
#include "loom/base/trace_sink.h"
#include "loom/comm/inproc/inproc_transport.h"
#include "loom/comm/testing/run_ranks.h"
#include "loom/trace/ingest/clock_align.h"
#include "loom/trace/ingest/collective_match.h"
#include "loom/trace/ingest/trace_reader.h"
#include "loom/trace/tracer/clock_sync.h"
#include "loom/trace/tracer/tracer.h"

namespace loom::trace::ingest {
namespace {

TEST(Interop, LoomTracerExportIsReadMatchedAndAligned) {
  constexpr int64_t kSkew = 3'000'000;  // rank 1's clock runs 3 ms ahead: θ1 = -3 ms
  Tracer t0({.rank = 0, .world_size = 2});
  Tracer t1({.rank = 1, .world_size = 2, .clock_skew_ns = kSkew});
  RankRouter router({&t0, &t1});
  auto comms = comm::MakeInProcCommunicators(2);
  comm::testing::RunRanks(2, [&](int r) {
    auto off = EstimateClockOffset(*comms[r], r == 0 ? t0 : t1);
    ASSERT_TRUE(off.ok()) << off.status();
    (r == 0 ? t0 : t1).set_clock_offset(*off);
  });
  constexpr int kSteps = 6;
  const int64_t n_big = 16 * 1024, n_small = 4;
  {
    ScopedTraceSinkInstall install(&router);
    for (int step = 0; step < kSteps; ++step) {
      t0.SetStep(step);
      t1.SetStep(step);
      router.Refresh();
      comm::testing::RunRanks(2, [&](int r) {
        std::vector<float> big(n_big, 1.0f), small(n_small, 1.0f);
        comm::CommOptions o{.algorithm = comm::Algorithm::kRing, .segment_bytes = 16 << 10};
        ASSERT_TRUE(
            comms[r]->AllReduce(TensorView::Of(big.data(), n_big), comm::ReduceOp::kSum, o).ok());
        ASSERT_TRUE(comms[r]
                        ->AllReduce(TensorView::Of(small.data(), n_small), comm::ReduceOp::kSum, o)
                        .ok());
      });
    }
  }
  const std::string dir = "/tmp/loom_ingest_interop_" + std::to_string(::getpid());
  const std::vector<std::string> paths = {dir + "_rank0.trace.json", dir + "_rank1.trace.json"};
  ASSERT_TRUE(t0.WriteKinetoJson(paths[0]).ok());
  ASSERT_TRUE(t1.WriteKinetoJson(paths[1]).ok());

  Result<std::vector<RankTrace>> traces = ReadTraces(paths);
  ASSERT_TRUE(traces.ok()) << traces.status();
  for (const RankTrace& t : *traces) {
    EXPECT_EQ(t.dialect, Dialect::kLoom);
    EXPECT_EQ(t.world_size, 2);
    EXPECT_TRUE(t.clock.has_offset_estimate);
  }
  Result<MatchResult> m = MatchCollectives(&*traces);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->collectives.size(), static_cast<size_t>(2 * kSteps));
  for (size_t i = 0; i < m->collectives.size(); ++i) {
    EXPECT_EQ(m->collectives[i].seq, static_cast<int64_t>(i));  // the communicator's seq
    EXPECT_EQ(m->collectives[i].op, CollectiveOp::kAllReduce);
    EXPECT_EQ(m->collectives[i].bytes, (i % 2 == 0 ? n_big : n_small) * 4);
  }
  EXPECT_FALSE(m->p2p.empty());
  Result<ClockAlignment> a = SolveClockOffsets(*traces, *m);
  ASSERT_TRUE(a.ok()) << a.status();
  const RankOffset& r1 = a->ranks[1];
  ASSERT_TRUE(r1.bounded);
  // Causality always holds, so the true offset is inside the feasible interval (no timing
  // threshold: how tight the interval is depends on this machine's load).
  EXPECT_LE(r1.lo_ns, -kSkew);
  EXPECT_GE(r1.hi_ns, -kSkew);
  std::printf(
      "[ interop] θ1 in [%lld, %lld] ns, midpoint error %lld ns; tracer ping-pong "
      "estimate error %lld ns\n",
      static_cast<long long>(r1.lo_ns), static_cast<long long>(r1.hi_ns),
      static_cast<long long>(r1.offset_ns + kSkew), static_cast<long long>(r1.estimate_ns + kSkew));
  for (const std::string& p : paths) std::remove(p.c_str());
}

}  // namespace
}  // namespace loom::trace::ingest
