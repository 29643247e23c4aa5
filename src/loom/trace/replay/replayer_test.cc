#include "loom/trace/replay/replayer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "loom/trace/dfg/model_spec.h"
#include "loom/trace/replay/baselines.h"
#include "loom/trace/replay/synthetic_trace.h"

namespace loom::trace::replay {
namespace {

using dfg::DeviceKind;
using dfg::Graph;
using dfg::NodeKind;

ReplayResult MustReplay(const Graph& g, const ReplayOptions& o = {}) {
  auto r = Replay(g, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? std::move(r).value() : ReplayResult{};
}

void ExpectPathSums(const ReplayResult& r) {
  EXPECT_NEAR(r.critical_path.total_ns(), r.iteration_ns, 1e-6 * std::max(1.0, r.iteration_ns));
}

TEST(ReplayTest, ChainWithGapsOnOneDevice) {
  Graph g;
  const int c = g.AddDevice("rank0.compute", DeviceKind::kSerial, 0);
  const int a = g.AddNode({.name = "A",
                           .kind = NodeKind::kForward,
                           .rank = 0,
                           .device = c,
                           .dur_ns = 10,
                           .release_ns = 3});
  const int b =
      g.AddNode({.name = "B", .kind = NodeKind::kBackward, .rank = 0, .device = c, .dur_ns = 20});
  g.AddEdge(a, b, 5);
  ASSERT_TRUE(g.Finalize().ok());
  ReplayResult r = MustReplay(g);
  EXPECT_DOUBLE_EQ(r.timing[a].start_ns, 3);
  EXPECT_DOUBLE_EQ(r.timing[b].start_ns, 18);
  EXPECT_DOUBLE_EQ(r.iteration_ns, 38);
  EXPECT_DOUBLE_EQ(r.critical_path.compute_ns, 30);
  EXPECT_DOUBLE_EQ(r.critical_path.gap_ns, 8);
  EXPECT_DOUBLE_EQ(r.critical_path.wait_ns, 0);
  ASSERT_EQ(r.critical_path.steps.size(), 2u);
}

TEST(ReplayTest, PriorityAndDeviceGapOrderASerialDevice) {
  Graph g;
  const int c = g.AddDevice("rank0.compute", DeviceKind::kSerial, 0, false, /*gap_ns=*/2);
  const int u =
      g.AddNode({.name = "U", .kind = NodeKind::kUpdate, .rank = 0, .device = c, .dur_ns = 20});
  const int f =
      g.AddNode({.name = "F", .kind = NodeKind::kForward, .rank = 0, .device = c, .dur_ns = 10});
  ASSERT_TRUE(g.Finalize().ok());
  ReplayResult r = MustReplay(g);
  EXPECT_DOUBLE_EQ(r.timing[f].start_ns, 0);  // FW (priority 0) before UPDATE (3)
  EXPECT_DOUBLE_EQ(r.timing[u].start_ns, 12);
  EXPECT_DOUBLE_EQ(r.iteration_ns, 32);
  ASSERT_EQ(r.critical_path.steps.size(), 2u);
  EXPECT_TRUE(r.critical_path.steps[1].via_device);
  EXPECT_DOUBLE_EQ(r.critical_path.gap_ns, 2);
  ExpectPathSums(r);
}

TEST(ReplayTest, CrossRankSendPricedByLink) {
  Graph g;
  const int c0 = g.AddDevice("rank0.comm", DeviceKind::kSerial, 0, true);
  const int c1 = g.AddDevice("rank1.comm", DeviceKind::kSerial, 1, true);
  const int l = g.AddLink({"rank0.egress", /*alpha=*/100, /*ns_per_byte=*/2, false});
  const int s = g.AddNode(
      {.name = "SEND", .kind = NodeKind::kSend, .rank = 0, .device = c0, .link = l, .bytes = 1000});
  const int v =
      g.AddNode({.name = "RECV", .kind = NodeKind::kRecv, .rank = 1, .device = c1, .dur_ns = 7});
  g.AddEdge(s, v);
  ASSERT_TRUE(g.Finalize().ok());
  ReplayResult r = MustReplay(g);
  EXPECT_DOUBLE_EQ(r.timing[s].end_ns, 2100);
  EXPECT_DOUBLE_EQ(r.iteration_ns, 2107);
  EXPECT_DOUBLE_EQ(r.critical_path.comm_ns, 2107);
}

// Two flows on one shared link: processor sharing, exact times.
TEST(ReplayTest, SharedLinkSplitsBandwidth) {
  for (bool shared : {false, true}) {
    Graph g;
    const int c0 = g.AddDevice("rank0.comm", DeviceKind::kSerial, 0, true);
    const int c1 = g.AddDevice("rank1.comm", DeviceKind::kSerial, 1, true);
    const int l = g.AddLink({"lo", 0, 1, shared});
    const int a = g.AddNode(
        {.name = "A", .kind = NodeKind::kSend, .rank = 0, .device = c0, .link = l, .bytes = 1000});
    const int b = g.AddNode({.name = "B",
                             .kind = NodeKind::kSend,
                             .rank = 1,
                             .device = c1,
                             .link = l,
                             .bytes = 1000,
                             .release_ns = 500});
    ASSERT_TRUE(g.Finalize().ok());
    ReplayResult r = MustReplay(g);
    if (!shared) {
      EXPECT_DOUBLE_EQ(r.timing[a].end_ns, 1000);
      EXPECT_DOUBLE_EQ(r.timing[b].end_ns, 1500);
    } else {
      // A alone for 500 ns, then both at half rate: A's last 500 B take 1000 ns.
      EXPECT_DOUBLE_EQ(r.timing[a].end_ns, 1500);
      EXPECT_DOUBLE_EQ(r.timing[b].end_ns, 2000);
      EXPECT_DOUBLE_EQ(r.critical_path.gap_ns, 500);   // B's release
      EXPECT_DOUBLE_EQ(r.critical_path.wait_ns, 500);  // B's stretch by sharing
      ExpectPathSums(r);
    }
  }
}

TEST(ReplayTest, KappaSlowsComputeWhileCommRuns) {
  Graph g;
  const int cp = g.AddDevice("rank0.compute", DeviceKind::kSerial, 0);
  const int cm = g.AddDevice("rank0.comm", DeviceKind::kSerial, 0, true);
  g.set_kappa(0, 2.0);
  const int bw = g.AddNode(
      {.name = "BW", .kind = NodeKind::kBackward, .rank = 0, .device = cp, .dur_ns = 1000});
  const int s =
      g.AddNode({.name = "SYNC", .kind = NodeKind::kSync, .rank = 0, .device = cm, .dur_ns = 400});
  ASSERT_TRUE(g.Finalize().ok());
  ReplayResult r = MustReplay(g);
  EXPECT_DOUBLE_EQ(r.timing[s].end_ns, 400);
  EXPECT_DOUBLE_EQ(r.timing[bw].end_ns, 1200);  // 200 done at half speed, then 800 at full
  EXPECT_DOUBLE_EQ(r.critical_path.compute_ns, 1000);
  EXPECT_DOUBLE_EQ(r.critical_path.wait_ns, 200);
  ReplayOptions off;
  off.apply_kappa = false;
  EXPECT_DOUBLE_EQ(MustReplay(g, off).iteration_ns, 1000);
}

TEST(ReplayTest, CycleIsRejectedNamingANode) {
  Graph g;
  const int a = g.AddNode({.name = "A", .kind = NodeKind::kForward, .rank = 0});
  const int b = g.AddNode({.name = "B", .kind = NodeKind::kForward, .rank = 0});
  g.AddEdge(a, b);
  g.AddEdge(b, a);
  Status s = g.Finalize();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cycle"), std::string::npos);
  EXPECT_FALSE(Replay(g).ok());
}

// 2 ranks, one bucket of 2000 B, ring allreduce: every time is known.
dfg::ModelSpec TwoRankSpec() {
  dfg::ModelSpec s = dfg::SyntheticSpec(2, {100}, {50, 50}, {1000, 1000}, 10, 1 << 20);
  s.alpha_ns = 0;
  s.ns_per_byte = 1;
  return s;
}

TEST(ReplayTest, RingAllReduceScheduleIsExact) {
  auto g = dfg::BuildGraph(TwoRankSpec());
  ASSERT_TRUE(g.ok()) << g.status();
  ReplayResult r = MustReplay(*g);
  // FW 0-100, BW 100-200, 2 ring steps of 1000 B at 1 ns/B, UPDATE 2200-2210.
  EXPECT_DOUBLE_EQ(r.iteration_ns, 2210);
  for (int v : g->NodesOf(NodeKind::kUpdate)) EXPECT_DOUBLE_EQ(r.timing[v].start_ns, 2200);
  for (int v : g->NodesOf(NodeKind::kSend)) {
    EXPECT_DOUBLE_EQ(r.timing[v].end_ns - r.timing[v].start_ns, 1000);
  }
  EXPECT_DOUBLE_EQ(r.critical_path.compute_ns, 210);
  EXPECT_DOUBLE_EQ(r.critical_path.comm_ns, 2000);
  ExpectPathSums(r);
  // Rank 0's egress at half speed: every ring step waits for its 2000 ns transfer.
  dfg::ModelSpec slow = TwoRankSpec();
  slow.ranks[0].egress_ns_per_byte = 2;
  auto gslow = dfg::BuildGraph(slow);
  ASSERT_TRUE(gslow.ok());
  EXPECT_DOUBLE_EQ(MustReplay(*gslow).iteration_ns, 200 + 2 * 2000 + 10);
  // A 2000 B all-gather inside the optimizer: one ring step of 1000 B on the main thread.
  dfg::ModelSpec z = TwoRankSpec();
  z.update_collectives = {{2000, dfg::CollectiveKind::kAllGather}};
  auto gz = dfg::BuildGraph(z);
  ASSERT_TRUE(gz.ok()) << gz.status();
  EXPECT_DOUBLE_EQ(MustReplay(*gz).iteration_ns, 2210 + 1000);
  EXPECT_DOUBLE_EQ(Analytical(z).comm_ns, 2000 + 1000);
  // Shared link: both ranks' sends cross it at once: each ring step takes twice as long.
  dfg::ModelSpec s = TwoRankSpec();
  s.topology = dfg::LinkTopology::kShared;
  auto gs = dfg::BuildGraph(s);
  ASSERT_TRUE(gs.ok());
  ReplayResult rs = MustReplay(*gs);
  EXPECT_DOUBLE_EQ(rs.iteration_ns, 4210);
  EXPECT_DOUBLE_EQ(rs.critical_path.wait_ns, 2000);
  ExpectPathSums(rs);
}

TEST(ReplayTest, OverlapHidesCommBehindBackward) {
  // 4 gradients, 4 buckets: comm of early buckets overlaps later backward pieces.
  dfg::ModelSpec s =
      dfg::SyntheticSpec(2, {100}, {1000, 1000, 1000, 1000}, {500, 500, 500, 500}, 10, 500);
  s.alpha_ns = 0;
  s.ns_per_byte = 1;  // each bucket: 2 steps x 250 B = 500 ns
  ASSERT_EQ(s.num_buckets(), 4);
  auto g = dfg::BuildGraph(s);
  ASSERT_TRUE(g.ok());
  ReplayResult r = MustReplay(*g);
  // Backward ends at 4100; only the last bucket's 500 ns is exposed.
  EXPECT_DOUBLE_EQ(r.iteration_ns, 4100 + 500 + 10);
  ExpectPathSums(r);
  AnalyticalEstimate a = Analytical(s);
  EXPECT_DOUBLE_EQ(a.compute_ns, 4110);
  EXPECT_DOUBLE_EQ(a.comm_ns, 2000);
  EXPECT_DOUBLE_EQ(a.sum_ns, 6110);
  EXPECT_DOUBLE_EQ(a.overlappable_ns, 3000);
  EXPECT_DOUBLE_EQ(a.overlap_ns, 4110);
}

TEST(ReplayTest, CriticalPathSumsOnLargerGraphsWithKappaAndGaps) {
  std::vector<double> bw;
  std::vector<int64_t> bytes;
  for (int i = 0; i < 40; ++i) {
    bw.push_back(1000 + 37 * i);
    bytes.push_back(20000 + 1000 * (i % 7));
  }
  dfg::ModelSpec s = dfg::SyntheticSpec(4, {5000, 3000}, bw, bytes, 2000, 100000);
  s.kappa = 1.3;
  s.step_gap_ns = 20;
  s.bw_to_sync_gap_ns = 15;
  s.sync_ns = 30;
  s.recv_ns = 10;
  s.topology = dfg::LinkTopology::kShared;
  s.ranks[2].compute_ratio = 1.5;
  s.ranks[1].head_ns = 700;
  s.ranks[3].tail_ns = 900;
  auto g = dfg::BuildGraph(s);
  ASSERT_TRUE(g.ok()) << g.status();
  ReplayResult r = MustReplay(*g);
  EXPECT_GT(r.iteration_ns, 0);
  ExpectPathSums(r);
  // The synthetic trace has one complete event per node.
  auto j = nlohmann::json::parse(SyntheticTraceJson(*g, r));
  int x = 0;
  for (const auto& e : j["traceEvents"]) x += e["ph"] == "X";
  EXPECT_EQ(x, static_cast<int>(g->nodes().size()));
  EXPECT_NE(SummarizeCriticalPath(*g, r).find("compute"), std::string::npos);
}

TEST(ReplayTest, TokenBucketLinkChargesBurstRateAndQueue) {
  // One sender, tbf-like link: 25 MB/s tokens, 256 KiB burst, 1 ns/B line rate, α 100 µs.
  Graph g;
  const int comm = g.AddDevice("rank0.comm", DeviceKind::kSerial, 0, true);
  const int l = g.AddLink({"rank0.egress", 100'000, 40, false, 262'144, 1});
  auto send = [&](const char* name, int64_t bytes) {
    return g.AddNode({.name = name,
                      .kind = NodeKind::kSend,
                      .rank = 0,
                      .device = comm,
                      .link = l,
                      .bytes = bytes});
  };
  const int s1 = send("s1", 100'000), s2 = send("s2", 300'000), s3 = send("s3", 300'000);
  g.AddEdge(s1, s2, 0);
  g.AddEdge(s2, s3, 10'000'000);
  ASSERT_TRUE(g.Finalize().ok());
  ReplayOptions once;  // one iteration from full buckets (not the periodic steady state)
  once.periodic_token_buckets = false;
  auto r = Replay(g, once);
  ASSERT_TRUE(r.ok()) << r.status();
  // s1 out of the full bucket at line rate: 100 µs + α; 262144 − 100000 + 2500 tokens left.
  EXPECT_NEAR(r->timing[s1].end_ns, 200'000, 1e-3);
  // s2 at 200 µs: 164644 + 100 µs / 40 = 167144 tokens; the other 132856 B at 40 ns/B.
  EXPECT_NEAR(r->timing[s2].end_ns, 200'000 + 132'856.0 * 40 + 100'000, 1e-3);
  // s3 10 ms after s2 ended (the bucket emptied α earlier): 252500 tokens, 47500 B at the rate.
  EXPECT_NEAR(r->timing[s3].end_ns, 5'614'240 + 10'000'000 + 47'500.0 * 40 + 100'000, 1e-3);
  EXPECT_NEAR(r->iteration_ns, 17'614'240, 1e-3);
  // token_buckets off: the α-β time of the same link.
  ReplayOptions ab;
  ab.token_buckets = false;
  auto q = Replay(g, ab);
  ASSERT_TRUE(q.ok());
  EXPECT_NEAR(q->iteration_ns, 3 * 100'000 + 700'000.0 * 40 + 10'000'000, 1e-3);
}

TEST(ReplayTest, TokenBucketsReachThePeriodicSteadyState) {
  // A 300 kB SEND next to 10 ms of compute. From a full 256 KiB bucket it takes 1.6 ms, but each
  // 10 ms iteration refills only 250 kB: the buckets start 50 kB lower every iteration until
  // the SEND is the critical path; then an iteration leaves α = 100 µs of refill (2500 B) for
  // the next: 100 µs + (300000 − 2500) B x 40 ns/B = 12 ms per iteration.
  Graph g;
  const int comm = g.AddDevice("rank0.comm", DeviceKind::kSerial, 0, true);
  const int cpu = g.AddDevice("rank0.compute", DeviceKind::kSerial, 0);
  const int l = g.AddLink({"rank0.egress", 100'000, 40, false, 262'144, 0});
  g.AddNode({.name = "send",
             .kind = NodeKind::kSend,
             .rank = 0,
             .device = comm,
             .link = l,
             .bytes = 300'000});
  g.AddNode(
      {.name = "fw", .kind = NodeKind::kForward, .rank = 0, .device = cpu, .dur_ns = 10'000'000});
  ASSERT_TRUE(g.Finalize().ok());
  ReplayOptions once;
  once.periodic_token_buckets = false;
  auto first = Replay(g, once);
  ASSERT_TRUE(first.ok());
  EXPECT_NEAR(first->timing[0].end_ns, 100'000 + (300'000 - 262'144.0) * 40, 1e-3);
  EXPECT_EQ(first->periods, 1);
  auto r = Replay(g);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->iteration_ns, 12'000'000, 1e-3);
  EXPECT_EQ(r->periods, 8);  // 5 draining periods, 2 to the fixed point, 1 that repeats it
}

}  // namespace
}  // namespace loom::trace::replay
