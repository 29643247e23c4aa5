#include "loom/trace/dfg/trace_builder.h"

#include <gtest/gtest.h>

#include <cmath>

#include "loom/trace/dfg/testing/synthetic_run.h"
#include "loom/trace/ingest/collective_match.h"
#include "loom/trace/ingest/testing/synthetic.h"

namespace loom::trace::dfg {
namespace {

using ingest::EventKind;
using ingest::testing::TraceBuilder;
using testing::kAlpha;
using testing::kNsPerByte;
using testing::kUs;
using testing::MakeRun;

TEST(TraceBuilderTest, FitsLinkDurationsGapsAndBuckets) {
  auto traces = MakeRun(6, true);
  auto match = ingest::MatchCollectives(&traces);
  ASSERT_TRUE(match.ok()) << match.status();
  TraceModelOptions o;
  o.split_bytes = 512 * 1024;
  auto m = BuildModelFromTraces(traces, *match, o);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->steps.size(), 5u);  // first skipped
  const ModelSpec& s = m->spec;
  EXPECT_EQ(s.world_size, 2);
  EXPECT_EQ(s.num_buckets(), 2);
  EXPECT_EQ(s.TotalGradBytes(), 3'000'000);
  EXPECT_EQ(s.BucketBytes(0), 2'000'000);
  EXPECT_EQ(s.grads.size(), 4u + 2u);  // 2 MB and 1 MB in <= 512 KiB pieces
  EXPECT_NEAR(m->link.alpha_ns, kAlpha, 1);
  EXPECT_NEAR(m->link.ns_per_byte, kNsPerByte, 1e-6);
  EXPECT_FALSE(m->kappa.identified);  // overlap is the same in every step
  EXPECT_DOUBLE_EQ(s.kappa, 1.0);
  ASSERT_EQ(s.ranks[0].pre.size(), 1u);  // forward; wait_grad_sync is skipped
  EXPECT_EQ(s.ranks[0].pre[0].name, "forward");
  EXPECT_DOUBLE_EQ(s.ranks[0].pre[0].dur_ns, 2000 * kUs);
  EXPECT_DOUBLE_EQ(s.ranks[0].head_ns, 100 * kUs);
  EXPECT_DOUBLE_EQ(s.ranks[0].pre_to_bw_gap_ns, 200 * kUs);
  double bw = 0, first_bucket_bw = 0;
  for (size_t i = 0; i < s.grads.size(); ++i) {
    bw += s.ranks[1].bw_ns[i];
    if (static_cast<int>(i) < s.bucket_begin[1]) first_bucket_bw += s.ranks[1].bw_ns[i];
  }
  EXPECT_NEAR(bw, 4000 * kUs, 1);
  EXPECT_NEAR(first_bucket_bw, 2000 * kUs, 1);
  EXPECT_DOUBLE_EQ(s.ranks[0].update_ns, 500 * kUs);
  EXPECT_DOUBLE_EQ(s.step_gap_ns, 20 * kUs);
  EXPECT_DOUBLE_EQ(m->measured_iteration_ns, 10'000 * kUs);
}

TEST(TraceBuilderTest, CollectivesInsideTheOptimizerBecomeUpdateCollectives) {
  auto traces = MakeRun(4, false, /*zero1=*/true);
  auto match = ingest::MatchCollectives(&traces);
  ASSERT_TRUE(match.ok()) << match.status();
  auto m = BuildModelFromTraces(traces, *match);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->spec.num_buckets(), 2);
  ASSERT_EQ(m->spec.update_collectives.size(), 1u);
  EXPECT_EQ(m->spec.update_collectives[0].kind, CollectiveKind::kAllGather);
  EXPECT_EQ(m->spec.update_collectives[0].bytes, 3'000'000);
  EXPECT_DOUBLE_EQ(m->spec.ranks[1].update_ns, 300 * kUs);
  auto g = BuildGraph(m->spec);
  ASSERT_TRUE(g.ok()) << g.status();
  int on_compute = 0;
  for (int v : g->NodesOf(NodeKind::kSend))
    on_compute += !g->devices()[g->nodes()[v].device].is_comm;
  EXPECT_EQ(on_compute, 2);  // one all-gather ring step per rank, on the main thread
}

TEST(TraceBuilderTest, FitsKappaFromBackwardStretchedByComm) {
  auto traces = MakeRun(12, false, false, /*kappa=*/1.5);
  auto match = ingest::MatchCollectives(&traces);
  ASSERT_TRUE(match.ok()) << match.status();
  auto m = BuildModelFromTraces(traces, *match);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->kappa.identified);
  EXPECT_NEAR(m->kappa.kappa, 1.5, 0.01);
  // Backward de-rated to its isolated 4 ms.
  double bw = 0;
  for (double d : m->spec.ranks[0].bw_ns) bw += d;
  EXPECT_NEAR(bw + m->spec.ranks[0].bw_tail_ns, 4000 * kUs, 5 * kUs);
  // A given κ wins over the fit.
  TraceModelOptions o;
  o.kappa = 1.2;
  auto fixed = BuildModelFromTraces(traces, *match, o);
  ASSERT_TRUE(fixed.ok());
  EXPECT_DOUBLE_EQ(fixed->spec.kappa, 1.2);
}

TEST(TraceBuilderTest, ErrorsNameTheFile) {
  std::vector<ingest::RankTrace> traces;
  TraceBuilder b(0, 1);
  b.Add(EventKind::kForward, "forward", 0, 10);
  traces.push_back(b.Build());
  ingest::MatchResult match;
  Status s = BuildModelFromTraces(traces, match).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("synthetic_rank0.json"), std::string::npos) << s;
  EXPECT_NE(s.message().find("ProfilerStep"), std::string::npos) << s;
}

}  // namespace
}  // namespace loom::trace::dfg
