#include "loom/trace/evaluation/link_probe.h"

#include <gtest/gtest.h>

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
