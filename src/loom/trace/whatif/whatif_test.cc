#include "loom/trace/whatif/whatif.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "loom/trace/dfg/testing/synthetic_run.h"
#include "loom/trace/dfg/trace_builder.h"
#include "loom/trace/ingest/collective_match.h"

namespace loom::trace::whatif {
namespace {

using dfg::ModelSpec;
using dfg::NodeKind;

// Comm-bound: FW 100, BW 2 x 50, one 2000 B bucket, 1 ns/B, α = 0: 2210 ns (comm 2000).
ModelSpec CommBound() {
  ModelSpec s = dfg::SyntheticSpec(2, {100}, {50, 50}, {1000, 1000}, 10, 1 << 20);
  s.alpha_ns = 0;
  s.ns_per_byte = 1;
  return s;
}

// 4 buckets of 500 B, each fully hidden behind the next backward piece except the last.
ModelSpec Overlapping() {
  ModelSpec s =
      dfg::SyntheticSpec(2, {100}, {1000, 1000, 1000, 1000}, {500, 500, 500, 500}, 10, 500);
  s.alpha_ns = 0;
  s.ns_per_byte = 1;
  return s;
}

double Predict(const ModelSpec& s, const WhatIf& w) {
  auto r = RunWhatIf(s, w);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return -1;
  EXPECT_NEAR(r->predicted.critical_path.total_ns(), r->predicted.iteration_ns, 1e-6);
  return r->predicted.iteration_ns;
}

TEST(WhatIfTest, BandwidthTimesTwoHalvesTheCommPart) {
  WhatIf w;
  w.bandwidth_scale = 2;
  auto r = RunWhatIf(CommBound(), w);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_DOUBLE_EQ(r->base.iteration_ns, 2210);
  EXPECT_DOUBLE_EQ(r->base.critical_path.comm_ns, 2000);
  EXPECT_DOUBLE_EQ(r->predicted.iteration_ns, 1210);
  EXPECT_DOUBLE_EQ(r->predicted.critical_path.comm_ns, 1000);
  EXPECT_DOUBLE_EQ(r->predicted.critical_path.compute_ns, r->base.critical_path.compute_ns);
  // A per-rank egress link scales too.
  ModelSpec slow = CommBound();
  slow.ranks[0].egress_ns_per_byte = 2;
  EXPECT_DOUBLE_EQ(Predict(slow, w), 200 + 2 * 1000 + 10);
  // The optimizer's all-gather (1000 B per ring step) halves too.
  ModelSpec z = CommBound();
  z.update_collectives = {{2000, dfg::CollectiveKind::kAllGather}};
  EXPECT_DOUBLE_EQ(Predict(z, w), 210 + 1000 + 500);
  w.bandwidth_scale = 0.5;
  EXPECT_DOUBLE_EQ(Predict(CommBound(), w), 4210);
  w.bandwidth_scale = 0;
  EXPECT_FALSE(RunWhatIf(CommBound(), w).ok());
}

TEST(WhatIfTest, BandwidthScalesATokenBucketsRateNotItsBurst) {
  ModelSpec tb = CommBound();
  tb.burst_bytes = 1e9;  // every transfer fits in the bucket: line rate, whatever the token rate
  tb.line_ns_per_byte = 0.5;
  WhatIf w;
  w.bandwidth_scale = 2;
  auto a = ApplyWhatIf(tb, w);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_DOUBLE_EQ(a->ns_per_byte, 0.5);
  EXPECT_DOUBLE_EQ(a->burst_bytes, 1e9);
  EXPECT_DOUBLE_EQ(a->line_ns_per_byte, 0.5);
  EXPECT_DOUBLE_EQ(Predict(tb, w), 210 + 2 * 500);
  // A 500 B burst, in the loop's steady state: an iteration leaves the bucket empty when its
  // last chunk has left; the 10 ns update and the next 200 ns of compute refill 210 B at 1 ns/B,
  // so the first 1000 B chunk takes 790 ns and the second, from an empty bucket, 1000 ns. At x2
  // the first chunk's 500 ns at line rate refill 1000 B (capped at the burst): both at line rate.
  tb.burst_bytes = 500;
  w.bandwidth_scale = 1;
  EXPECT_DOUBLE_EQ(Predict(tb, w), 210 + 790 + 1000);
  w.bandwidth_scale = 2;
  EXPECT_DOUBLE_EQ(Predict(tb, w), 210 + 500 + 500);
}

// A shaped link replaces every link, the ranks' own egress fits included: the token-bucket case
// above (burst 500 B, 1 ns/B tokens, 0.5 ns/B line) and a plain 2 ns/B link.
TEST(WhatIfTest, LinkShapeReplacesEveryLink) {
  ModelSpec s = CommBound();
  s.ranks[0].egress_ns_per_byte = 3;
  WhatIf w;
  w.link_shape = LinkShape{1e9, 500, 2e9};
  auto a = ApplyWhatIf(s, w);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_DOUBLE_EQ(a->ns_per_byte, 1);
  EXPECT_DOUBLE_EQ(a->burst_bytes, 500);
  EXPECT_DOUBLE_EQ(a->line_ns_per_byte, 0.5);
  EXPECT_DOUBLE_EQ(a->ranks[0].egress_ns_per_byte, -1);
  EXPECT_DOUBLE_EQ(Predict(s, w), 210 + 790 + 1000);
  w.link_shape = LinkShape{0.5e9, 0, 0};
  EXPECT_DOUBLE_EQ(Predict(s, w), 210 + 4000);
  // The shape applies after bandwidth x k and the cap: they do not change it.
  w.bandwidth_scale = 4;
  w.bandwidth_cap_bytes_per_s = 1e10;
  EXPECT_DOUBLE_EQ(Predict(s, w), 210 + 4000);
  EXPECT_EQ(w.Describe(), "bandwidth x4, links at most 10000 MB/s, links 500 MB/s");
  // With the target link's own α, every link's latency (the ranks' egress fits included) is it.
  WhatIf with_alpha;
  with_alpha.link_shape = LinkShape{0.5e9, 0, 0, s.alpha_ns + 100};
  ModelSpec s_alpha = s;
  s_alpha.ranks[0].egress_alpha_ns = 7;
  auto shaped = ApplyWhatIf(s_alpha, with_alpha);
  ASSERT_TRUE(shaped.ok()) << shaped.status();
  EXPECT_DOUBLE_EQ(shaped->alpha_ns, s.alpha_ns + 100);
  EXPECT_DOUBLE_EQ(shaped->ranks[0].egress_alpha_ns, -1);
  ModelSpec s_plus = s;
  s_plus.alpha_ns += 100;
  WhatIf plain;
  plain.link_shape = LinkShape{0.5e9, 0, 0};
  EXPECT_DOUBLE_EQ(Predict(s_alpha, with_alpha), Predict(s_plus, plain));
  EXPECT_GT(Predict(s_alpha, with_alpha), 210 + 4000);
  EXPECT_NE(with_alpha.Describe().find("link latency"), std::string::npos) << with_alpha.Describe();

  w = WhatIf{};
  w.link_shape = LinkShape{1e9, 500, 1e9};  // line rate not above the token rate
  EXPECT_EQ(ApplyWhatIf(s, w).status().code(), StatusCode::kInvalidArgument);
  w.link_shape = LinkShape{0, 0, 0};
  EXPECT_EQ(ApplyWhatIf(s, w).status().code(), StatusCode::kInvalidArgument);
  s.topology = dfg::LinkTopology::kShared;
  w.link_shape = LinkShape{1e9, 0, 0};
  EXPECT_EQ(ApplyWhatIf(s, w).status().code(), StatusCode::kFailedPrecondition);
}

TEST(WhatIfTest, OverlapOffIsComputePlusCommSum) {
  WhatIf w;
  EXPECT_DOUBLE_EQ(Predict(Overlapping(), w), 4610);
  w.overlap = false;
  const double off = Predict(Overlapping(), w);
  EXPECT_DOUBLE_EQ(off, 4110 + 2000);
  EXPECT_DOUBLE_EQ(off, replay::Analytical(Overlapping()).sum_ns);
}

TEST(WhatIfTest, BucketRegroupingPreservesBytesAndChangesBuckets) {
  ModelSpec s = Overlapping();
  for (int64_t b : {int64_t{1}, int64_t{1000}, int64_t{1} << 30}) {
    WhatIf w;
    w.bucket_bytes = b;
    auto r = RunWhatIf(s, w);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->spec.TotalGradBytes(), s.TotalGradBytes());
    EXPECT_EQ(r->spec.num_buckets(), b == 1 ? 4 : b == 1000 ? 2 : 1);
    int64_t sync_bytes = 0;
    for (int v : r->graph.NodesOf(NodeKind::kSync, 0)) sync_bytes += r->graph.nodes()[v].bytes;
    EXPECT_EQ(sync_bytes, 2000);
    int64_t wire = 0;  // per rank: 2(N-1) steps of bucket/N
    for (int v : r->graph.NodesOf(NodeKind::kSend, 1)) wire += r->graph.nodes()[v].bytes;
    EXPECT_EQ(wire, 2000);
  }
  // One bucket: nothing overlaps; 2 steps of 1000 B after backward.
  WhatIf one;
  one.bucket_bytes = int64_t{1} << 30;
  EXPECT_DOUBLE_EQ(Predict(s, one), 4100 + 2000 + 10);
}

// ZeRO-1 gathers parameters bucket by bucket: one all-gather per bucket follows the regrouping.
TEST(WhatIfTest, BucketRegroupingRegroupsPerBucketParameterGathers) {
  ModelSpec s = Overlapping();
  s.update_collectives.assign(4, {500, dfg::CollectiveKind::kAllGather});
  for (dfg::RankModel& m : s.ranks) {
    m.update_sync_ns = {10, 20, 30, 40};
    m.update_finish_ns = {5, 5, 5, 5};
  }
  auto count_update_syncs = [](const WhatIfResult& r) {
    int n = 0;
    for (int v : r.graph.NodesOf(NodeKind::kSync, 0)) {
      n += r.graph.nodes()[v].name.find("Update.") != std::string::npos;
    }
    return n;
  };
  WhatIf two;
  two.bucket_bytes = 1000;
  auto r2 = RunWhatIf(s, two);
  ASSERT_TRUE(r2.ok()) << r2.status();
  ASSERT_EQ(r2->spec.update_collectives.size(), 2u);
  EXPECT_EQ(r2->spec.update_collectives[0].bytes, 1000);
  EXPECT_EQ(r2->spec.update_collectives[1].bytes, 1000);
  EXPECT_EQ(r2->spec.ranks[1].update_sync_ns, (std::vector<double>{25, 25}));
  EXPECT_EQ(r2->spec.ranks[1].update_finish_ns, (std::vector<double>{0, 0}));
  EXPECT_EQ(count_update_syncs(*r2), 2);

  WhatIf one;
  one.bucket_bytes = int64_t{1} << 30;
  auto r1 = RunWhatIf(s, one);
  ASSERT_TRUE(r1.ok()) << r1.status();
  ASSERT_EQ(r1->spec.update_collectives.size(), 1u);
  EXPECT_EQ(r1->spec.update_collectives[0].bytes, 2000);
  EXPECT_EQ(count_update_syncs(*r1), 1);
  // Without a bucket what-if the profile's four stay.
  WhatIf none;
  auto base = RunWhatIf(s, none);
  ASSERT_TRUE(base.ok());
  EXPECT_EQ(count_update_syncs(*base), 4);

  // The gradient-norm all-reduce before the gathers keeps its place and its measurements.
  ModelSpec norm = s;
  norm.update_collectives.insert(norm.update_collectives.begin(),
                                 {8, dfg::CollectiveKind::kAllReduce});
  for (dfg::RankModel& m : norm.ranks) {
    m.update_sync_ns = {7, 10, 20, 30, 40};
    m.update_finish_ns = {3, 5, 5, 5, 5};
  }
  auto rn = RunWhatIf(norm, one);
  ASSERT_TRUE(rn.ok()) << rn.status();
  ASSERT_EQ(rn->spec.update_collectives.size(), 2u);
  EXPECT_EQ(rn->spec.update_collectives[0].kind, dfg::CollectiveKind::kAllReduce);
  EXPECT_EQ(rn->spec.update_collectives[0].bytes, 8);
  EXPECT_EQ(rn->spec.update_collectives[1].bytes, 2000);
  EXPECT_EQ(rn->spec.ranks[0].update_sync_ns, (std::vector<double>{7, 25}));
  EXPECT_EQ(rn->spec.ranks[0].update_finish_ns, (std::vector<double>{3, 0}));
  // Measurements that do not cover every old collective are dropped, not shifted.
  norm.ranks[0].update_sync_ns = {7, 10};
  rn = RunWhatIf(norm, one);
  ASSERT_TRUE(rn.ok()) << rn.status();
  EXPECT_TRUE(rn->spec.ranks[0].update_sync_ns.empty());
  EXPECT_EQ(rn->spec.ranks[1].update_sync_ns, (std::vector<double>{7, 25}));

  // Update collectives that are not one all-gather per bucket are left alone.
  ModelSpec other = Overlapping();
  other.update_collectives = {{2000, dfg::CollectiveKind::kAllGather}};
  auto r3 = RunWhatIf(other, two);
  ASSERT_TRUE(r3.ok());
  ASSERT_EQ(r3->spec.update_collectives.size(), 1u);
  EXPECT_EQ(r3->spec.update_collectives[0].bytes, 2000);
}

TEST(WhatIfTest, StragglerAppliesDproRatioToComputeOfOneRank) {
  WhatIf w;
  w.stragglers = {{1, 2.0}};
  // Rank 1: FW 200, BW 200, then the 2000 ns ring, UPDATE 20.
  EXPECT_DOUBLE_EQ(Predict(CommBound(), w), 400 + 2000 + 20);
  w.stragglers = {{2, 2.0}};
  EXPECT_FALSE(RunWhatIf(CommBound(), w).ok());
}

TEST(WhatIfTest, WorldSizeExtrapolatesTheRing) {
  WhatIf w;
  w.world_size = 4;  // 6 steps of 500 B
  auto r = RunWhatIf(CommBound(), w);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->predicted.iteration_ns, 210 + 3000);
  EXPECT_EQ(r->graph.NodesOf(NodeKind::kSend).size(), 4u * 6);
  w.world_size = 1;  // no communication at all
  EXPECT_DOUBLE_EQ(Predict(CommBound(), w), 210);
}

TEST(WhatIfTest, CompressionShrinksWireBytesAndAddsCodecCost) {
  WhatIf w;
  w.compression = dfg::CodecModel{"test", 0.25, 100, 0, 100, 0};
  auto r = RunWhatIf(CommBound(), w);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->predicted.iteration_ns, 200 + 100 + 500 + 100 + 10);
  EXPECT_EQ(r->graph.NodesOf(NodeKind::kCompress).size(), 2u);
  w.compress_buckets = {3};
  EXPECT_FALSE(RunWhatIf(CommBound(), w).ok());
  auto c = DefaultCodec("int4");
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->ratio, 4.25 / 32);
  EXPECT_FALSE(DefaultCodec("zstd").ok());
}

// The trainer's small-bucket bypass: buckets under compress_min_elements stay uncompressed.
TEST(WhatIfTest, CompressionLeavesBucketsUnderTheBypassThresholdUncompressed) {
  // Overlapping(): 4 buckets of 500 B = 125 fp32 elements each.
  WhatIf w;
  w.compression = dfg::CodecModel{"test", 0.25, 100, 0, 100, 0};
  w.compress_min_elements = 126;
  auto none = RunWhatIf(Overlapping(), WhatIf{});
  auto r = RunWhatIf(Overlapping(), w);
  ASSERT_TRUE(r.ok() && none.ok());
  EXPECT_EQ(r->graph.NodesOf(NodeKind::kCompress).size(), 0u);
  EXPECT_DOUBLE_EQ(r->predicted.iteration_ns, none->predicted.iteration_ns);
  EXPECT_NE(w.Describe().find("under 126 elements"), std::string::npos) << w.Describe();
  w.compress_min_elements = 125;  // not under: all four compressed (2 ranks each)
  r = RunWhatIf(Overlapping(), w);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->graph.NodesOf(NodeKind::kCompress).size(), 8u);
  ModelSpec s = Overlapping();
  ASSERT_TRUE(SetCompression(&s, *w.compression, {1, 2}).ok());
  EXPECT_EQ(ExemptSmallBuckets(&s, 200), 2);  // only the two compressed ones count
  EXPECT_FALSE(s.bucket_codec[1].enabled());
  EXPECT_EQ(ExemptSmallBuckets(&s, 0), 0);
}

TEST(WhatIfTest, GraphPassesMatchSpecPasses) {
  ModelSpec s = Overlapping();
  s.kappa = 1.2;
  s.topology = dfg::LinkTopology::kShared;
  auto g = dfg::BuildGraph(s);
  ASSERT_TRUE(g.ok());
  ASSERT_TRUE(ScaleBandwidth(&*g, 0.5).ok());
  ASSERT_TRUE(DisableOverlap(&*g).ok());
  ASSERT_TRUE(SetStraggler(&*g, 0, 1.5).ok());
  auto via_graph = replay::Replay(*g);
  ASSERT_TRUE(via_graph.ok());
  WhatIf w;
  w.bandwidth_scale = 0.5;
  w.overlap = false;
  w.stragglers = {{0, 1.5}};
  EXPECT_NEAR(via_graph->iteration_ns, Predict(s, w), 1e-6);
}

TEST(WhatIfTest, CodecCostsFitBenchJson) {
  const std::string path = ::testing::TempDir() + "/codecs.json";
  {
    std::ofstream f(path);
    f.precision(17);
    f << R"({"bench":"codecs","results":[)";
    bool first = true;
    for (double n : {1024.0, 4096.0, 16384.0}) {
      const double enc = 1000 + 0.5 * n, dec = 500 + 0.25 * n;
      f << (first ? "" : ",") << R"({"codec":"int4:g128:stochastic","elements":)" << n
        << R"(,"encode_gbs":)" << 4 * n / enc << R"(,"decode_gbs":)" << 4 * n / dec
        << R"(,"bits_per_element":4.25})";
      first = false;
    }
    f << "]}";
  }
  auto c = CodecFromBenchJson(path, "int4");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_NEAR(c->encode_a_ns, 1000, 1e-6);
  EXPECT_NEAR(c->encode_ns_per_elem, 0.5, 1e-9);
  EXPECT_NEAR(c->decode_a_ns, 500, 1e-6);
  EXPECT_NEAR(c->ratio, 4.25 / 32, 1e-12);
  Status missing = CodecFromBenchJson(path, "int8").status();
  EXPECT_NE(missing.message().find(path), std::string::npos);
  {
    std::ofstream f(path);
    f << "{\"results\": [";
  }
  Status bad = CodecFromBenchJson(path, "int4").status();
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("codecs.json"), std::string::npos) << bad;
  std::remove(path.c_str());
}

// The model fitted to a trace with exactly known timing replays to the measured step (10 ms).
TEST(WhatIfTest, TraceModelReplaysTheMeasuredIteration) {
  auto traces = dfg::testing::MakeRun(6, true);
  auto match = ingest::MatchCollectives(&traces);
  ASSERT_TRUE(match.ok());
  auto m = dfg::BuildModelFromTraces(traces, *match);
  ASSERT_TRUE(m.ok()) << m.status();
  WhatIf w;
  w.bandwidth_scale = 2;
  auto r = RunWhatIf(m->spec, w);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->base.iteration_ns, m->measured_iteration_ns, 1e-6 * m->measured_iteration_ns);
  // Twice the bandwidth: bucket 0 stays hidden under backward; bucket 1 (2 ring steps of
  // 10 µs + 500 KB at 1 ns/B) no longer queues behind bucket 0 and its wire time halves:
  // it ends at 6300 + 2 x 260 + 20 = 6840 µs instead of 7380 µs.
  EXPECT_NEAR(r->predicted.iteration_ns, m->measured_iteration_ns - 540e3, 1);
}

}  // namespace
}  // namespace loom::trace::whatif
