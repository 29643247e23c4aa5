#include "loom/trace/dfg/dfg.h"

#include <gtest/gtest.h>

#include "loom/trace/dfg/link_fit.h"
#include "loom/trace/dfg/model_spec.h"

namespace loom::trace::dfg {
namespace {

TEST(DfgTest, BuildGraphHasDprosNodesAndEdges) {
  ModelSpec s = SyntheticSpec(3, {100}, {10, 10, 10}, {300, 300, 300}, 5, 600);
  ASSERT_EQ(s.num_buckets(), 2);  // [g0 g1] [g2]
  auto g = BuildGraph(s);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->NodesOf(NodeKind::kSync).size(), 3u * 2);
  EXPECT_EQ(g->NodesOf(NodeKind::kSend).size(), 3u * 2 * 4);  // 2(N-1) ring steps
  EXPECT_EQ(g->NodesOf(NodeKind::kRecv, 1).size(), 2u * 4);
  EXPECT_EQ(g->devices().size(), 6u);
  // SEND_r[s] -> RECV_{r+1}[s] crosses ranks; chunk = bucket / N.
  int cross = 0;
  for (const Edge& e : g->edges()) {
    const Node& a = g->nodes()[e.from];
    const Node& b = g->nodes()[e.to];
    if (a.kind == NodeKind::kSend && b.kind == NodeKind::kRecv) {
      ++cross;
      EXPECT_EQ(b.rank, (a.rank + 1) % 3);
      EXPECT_EQ(a.ring_step, b.ring_step);
      EXPECT_EQ(a.bytes, a.bucket == 0 ? 200 : 100);
    }
  }
  EXPECT_EQ(cross, 3 * 2 * 4);
  // Every SEND[0] waits for all three ranks' Sync.
  const int send0 = g->NodesOf(NodeKind::kSend, 0)[0];
  int syncs = 0;
  for (int e : g->in_edges()[send0])
    syncs += g->nodes()[g->edges()[e].from].kind == NodeKind::kSync;
  EXPECT_EQ(syncs, 3);
}

TEST(DfgTest, ValidateNamesTheProblem) {
  ModelSpec s = SyntheticSpec(2, {100}, {10, 10}, {300, 300}, 5, 0);
  s.ranks[1].bw_ns.pop_back();
  Status st = BuildGraph(s).status();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("rank 1"), std::string::npos);
  s = SyntheticSpec(2, {100}, {10, 10}, {300, 300}, 5, 0);
  s.kappa = 0.5;
  EXPECT_FALSE(BuildGraph(s).ok());
  s.kappa = 1;
  s.bucket_begin = {0, 5};
  EXPECT_FALSE(BuildGraph(s).ok());
}

TEST(DfgTest, BucketsByBytesIsContiguousAndBounded) {
  std::vector<GradientPiece> g;
  for (int64_t b : {100, 200, 50, 400, 30, 30}) g.push_back({"x", b});
  EXPECT_EQ(BucketsByBytes(g, 300), (std::vector<int>{0, 2, 3, 4}));
  EXPECT_EQ(BucketsByBytes(g, 0), (std::vector<int>{0}));
  EXPECT_EQ(BucketsByBytes(g, 1), (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

TEST(LinkFitTest, RecoversAlphaAndBeta) {
  std::vector<LinkSample> s;
  for (double bytes : {1e3, 1e4, 1e5, 1e6}) {
    for (double segs : {1.0, 2.0}) s.push_back({bytes, 50'000 * segs + 2.0 * bytes, segs, 1});
  }
  auto f = FitLink(s);
  ASSERT_TRUE(f.ok());
  EXPECT_NEAR(f->alpha_ns, 50'000, 1e-3);
  EXPECT_NEAR(f->ns_per_byte, 2.0, 1e-9);
  EXPECT_NEAR(f->r2, 1.0, 1e-12);
  EXPECT_TRUE(f->alpha_identified);
  // Concurrency: two flows sharing the link took twice as long; β is the full link's.
  std::vector<LinkSample> shared = {{1e6, 2e6, 1, 2}, {2e6, 4e6, 1, 2}, {1e6, 1e6, 1, 1}};
  f = FitLink(shared);
  ASSERT_TRUE(f.ok());
  EXPECT_NEAR(f->ns_per_byte, 1.0, 1e-9);
  // One message size: α cannot be separated.
  f = FitLink({{1000, 3000, 1, 1}, {1000, 3000, 1, 1}});
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f->alpha_identified);
  EXPECT_DOUBLE_EQ(f->ns_per_byte, 3.0);
  // Times that do not grow with bytes: β is not identifiable (not a negative bandwidth).
  f = FitLink({{10, 100, 1, 1}, {1e6, 90, 1, 1}, {1e3, 110, 1, 1}});
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f->beta_identified);
  EXPECT_DOUBLE_EQ(f->ns_per_byte, 0);
  EXPECT_DOUBLE_EQ(f->alpha_ns, 100);
  EXPECT_NE(f->ToString().find("not identifiable"), std::string::npos);
  EXPECT_FALSE(FitLink({}).ok());
}

TEST(LinkFitTest, RobustFitIgnoresSlowOutliers) {
  std::vector<LinkSample> s;
  for (double bytes : {1e3, 1e4, 1e5, 1e6}) {
    for (int i = 0; i < 8; ++i) {
      const double stall = i % 4 == 3 ? 5e6 : 0;  // a descheduled receiver
      s.push_back({bytes, 50'000 + 2.0 * bytes + stall, 1, 1});
    }
  }
  auto robust = FitLink(s);
  ASSERT_TRUE(robust.ok());
  EXPECT_NEAR(robust->alpha_ns, 50'000, 1e-3);
  EXPECT_NEAR(robust->ns_per_byte, 2.0, 1e-9);
  EXPECT_EQ(robust->samples, 32);
  auto plain = FitLink(s, /*robust=*/false);
  ASSERT_TRUE(plain.ok());
  EXPECT_GT(plain->alpha_ns, 1e6);  // the stalls leak into α
  EXPECT_FALSE(FitLink({{-1, 5, 1, 1}}).ok());
}

TEST(LinkFitTest, StepTotalsEqualFitLinkOnExactData) {
  std::vector<LinkSample> s;
  for (int64_t step = 0; step < 4; ++step) {
    for (double bytes : {16.0, 1e4, 1e5, 1e6})
      s.push_back({bytes, 50'000 + 2.0 * bytes, 1, 1, 0, step});
  }
  auto f = FitLinkStepTotals(s);
  ASSERT_TRUE(f.ok());
  EXPECT_NEAR(f->alpha_ns, 50'000, 1e-3);
  EXPECT_NEAR(f->ns_per_byte, 2.0, 1e-9);
  EXPECT_EQ(f->steps, 4);
  EXPECT_NE(f->ToString().find("beta from 4 step totals"), std::string::npos);
  // Without step labels it is FitLink.
  for (LinkSample& x : s) x.step = -1;
  f = FitLinkStepTotals(s);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->steps, 0);
  EXPECT_NEAR(f->alpha_ns, 50'000, 1e-3);
}

TEST(LinkFitTest, StepTotalsResistBurstsWakeUpsAndAStalledStep) {
  // Per step: four 100 kB transfers, two out of a full token bucket (50 µs), two at the shaped
  // 40 ns/B; eight 16 B messages at 60 µs, five of them stretched by a late receiver (2 ms; a
  // majority, so the per-size median is a wake-up). Step 3 stalls every transfer by 50 ms.
  std::vector<LinkSample> s;
  for (int64_t step = 0; step < 5; ++step) {
    const double stall = step == 3 ? 50e6 : 0;
    for (int i = 0; i < 4; ++i) {
      s.push_back({1e5, (i < 2 ? 50e3 : 60e3 + 40.0 * 1e5) + stall, 1, 1, 0, step});
    }
    for (int i = 0; i < 8; ++i) s.push_back({16, (i < 5 ? 2e6 : 60e3) + stall, 1, 1, 0, step});
  }
  auto f = FitLinkStepTotals(s);
  ASSERT_TRUE(f.ok());
  // α: the lower quartile of the 16 B messages, not the wake-ups.
  EXPECT_NEAR(f->alpha_ns, 60e3, 1e-6);
  // β⁻¹: a step's bytes-weighted time, (2·(50 µs − α) + 2·(40 ns/B · 100 kB) + 5·(2 ms − α)
  //       + 3·(60 µs − α)) / (4 · 100 kB + 8 · 16 B), the same in the four unstalled steps (the
  //       wake-ups stay in the step's time, spread per byte instead of charged per message).
  const double t = 2 * (50e3 - 60e3) + 2 * (40.0 * 1e5) + 5 * (2e6 - 60e3);
  EXPECT_NEAR(f->ns_per_byte, t / (4e5 + 128), 1e-9);
  EXPECT_EQ(f->steps, 5);
  // The per-transfer fit on the same points charges a wake-up on every message.
  auto plain = FitLink(s);
  ASSERT_TRUE(plain.ok());
  EXPECT_GT(plain->alpha_ns, 1e6);
}

}  // namespace
}  // namespace loom::trace::dfg
