#include "loom/trace/evaluation/link_probe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>

namespace loom::trace::evaluation {
namespace {

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// Two sizes of reduce_scatter and allgather plus an allreduce row (ignored); the probe uses the
// largest size only: (524288 + 524288) B / (2000 + 3000) µs = 209.7 MB/s.
TEST(LinkProbe, GoodputFromLoomsArmAtTheLargestSize) {
  const std::string doc = R"({"bench":"collectives","results":[
    {"op":"reduce_scatter","bytes":262144,"arms":{"loom":{"time_us_median":900,"wire_bytes_per_rank":131072}}},
    {"op":"reduce_scatter","bytes":1048576,"arms":{"loom":{"time_us_median":2000,"wire_bytes_per_rank":524288},
                                                   "gloo_ring":{"time_us_median":1,"wire_bytes_per_rank":524288}}},
    {"op":"allgather","bytes":1048576,"arms":{"loom":{"time_us_median":3000,"wire_bytes_per_rank":524288}}},
    {"op":"allreduce","bytes":4194304,"arms":{"loom":{"time_us_median":10,"wire_bytes_per_rank":1}}}]})";
  Result<LinkProbe> p = ReadLinkProbe(WriteFile("probe.json", doc));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->ops.size(), 2u);
  EXPECT_EQ(p->ops[0].op, "reduce_scatter");
  EXPECT_EQ(p->ops[1].op, "allgather");
  EXPECT_EQ(p->ops[1].bytes, 1048576);
  EXPECT_NEAR(p->goodput_bytes_per_s, 1048576.0 / 5e-3, 1e-3);
  EXPECT_EQ(p->all_ops.size(), 3u);  // the 256 KiB reduce_scatter too
}

// 1 MiB wire in 5 ms; the model's rest: 2 ops x (100 µs sync + 8 segments (64 KiB) x 50 µs α +
// 20 µs recv + 524288 B x 0.5 ns) = 2 x 782.144 µs, so β = 1 MiB / 3.435712 ms. A profile whose
// latencies exceed the probe is floored at 4x the raw goodput.
TEST(LinkProbe, VethRateNetOfTheModelsLatencies) {
  LinkProbe p;
  p.ops = {{"reduce_scatter", 1048576, 524288, 2000}, {"allgather", 1048576, 524288, 3000}};
  dfg::ModelSpec spec;
  spec.sync_ns = 100e3;
  spec.alpha_ns = 50e3;
  spec.segment_bytes = 65536;
  spec.recv_ns = 20e3;
  spec.recv_ns_per_byte = 0.5;
  EXPECT_NEAR(ModelVethRate(p, spec), 1048576.0 / 3.435712e-3, 1e-3);
  spec.alpha_ns = 1e6;
  EXPECT_NEAR(ModelVethRate(p, spec), 4 * 1048576.0 / 5e-3, 1e-3);
}

// Probe rows made exactly by the model's pricing with α = 40 µs and β = 1 GB/s (1 ns/B) at
// 32 KiB (1 segment of 64 KiB) and 512 KiB (8 segments): the fit recovers both.
TEST(LinkProbe, VethLatencyAndRateFromTwoSizes) {
  dfg::ModelSpec spec;
  spec.sync_ns = 100e3;
  spec.alpha_ns = 180e3;  // the profile's (shaped) link: not what the veth has
  spec.segment_bytes = 65536;
  spec.recv_ns = 20e3;
  spec.recv_ns_per_byte = 0.5;
  auto row = [&](const char* op, int64_t bytes, double alpha_ns, double ns_per_byte) {
    const double wire = bytes / 2.0;
    const double segs = std::max(1.0, std::ceil(wire / 65536));
    const double t_ns = 100e3 + 20e3 + 0.5 * wire + segs * alpha_ns + ns_per_byte * wire;
    return LinkProbeOp{op, bytes, wire, t_ns / 1e3};
  };
  LinkProbe p;
  p.all_ops = {row("reduce_scatter", 65536, 40e3, 1), row("allgather", 65536, 40e3, 1),
               row("reduce_scatter", 1048576, 40e3, 1), row("allgather", 1048576, 40e3, 1)};
  p.ops = {p.all_ops[2], p.all_ops[3]};
  VethLinkFit fit = FitVethLink(p, spec);
  EXPECT_EQ(fit.sizes, 2);
  EXPECT_NEAR(fit.alpha_ns, 40e3, 1e-3);
  EXPECT_NEAR(fit.bytes_per_s, 1e9, 1e-3);

  // A veth whose small messages are relatively faster (negative intercept): α clamps to 0 and
  // the rate is refitted through the origin.
  p.all_ops = {row("reduce_scatter", 65536, 0, 1), row("reduce_scatter", 1048576, 0, 1)};
  p.all_ops[0].time_us -= 30;
  fit = FitVethLink(p, spec);
  EXPECT_DOUBLE_EQ(fit.alpha_ns, 0);
  EXPECT_GT(fit.bytes_per_s, 0);

  // One size: no latency identified, the rate is ModelVethRate's (net of the profile's α).
  p.all_ops = p.ops;
  fit = FitVethLink(p, spec);
  EXPECT_EQ(fit.sizes, 1);
  EXPECT_LT(fit.alpha_ns, 0);
  EXPECT_DOUBLE_EQ(fit.bytes_per_s, ModelVethRate(p, spec));
}

TEST(LinkProbe, BadDocumentsNameTheFile) {
  Result<LinkProbe> missing = ReadLinkProbe(::testing::TempDir() + "/no_such_probe.json");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);

  const std::string garbage = WriteFile("garbage.json", "{not json");
  Result<LinkProbe> g = ReadLinkProbe(garbage);
  EXPECT_EQ(g.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(g.status().message().find(garbage), std::string::npos);

  const std::string allreduce_only = WriteFile("allreduce_only.json", R"({"results":[
    {"op":"allreduce","bytes":1024,"arms":{"loom":{"time_us_median":5,"wire_bytes_per_rank":1024}}}]})");
  EXPECT_EQ(ReadLinkProbe(allreduce_only).status().code(), StatusCode::kDataLoss);

  const std::string zero_time = WriteFile("zero_time.json", R"({"results":[
    {"op":"allgather","bytes":1024,"arms":{"loom":{"time_us_median":0,"wire_bytes_per_rank":512}}}]})");
  Result<LinkProbe> z = ReadLinkProbe(zero_time);
  EXPECT_EQ(z.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(z.status().message().find("allgather"), std::string::npos);
}

}  // namespace
}  // namespace loom::trace::evaluation
