#include "loom/trace/replay/dfg_json.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "loom/trace/dfg/model_spec.h"

namespace loom::trace::replay {
namespace {

using dfg::DeviceKind;
using dfg::Graph;
using dfg::NodeKind;
using nlohmann::json;

// rank0: FW(10, release 3) -> BW(20, ratio 1.5) -> SEND(dur 4 + link 100 + 2·1000) -> rank1 RECV(7)
Graph SmallGraph() {
  Graph g;
  const int c0 = g.AddDevice("rank0.compute", DeviceKind::kSerial, 0);
  const int m0 = g.AddDevice("rank0.comm", DeviceKind::kSerial, 0, /*is_comm=*/true, 5);
  const int m1 = g.AddDevice("rank1.comm", DeviceKind::kSerial, 1, /*is_comm=*/true);
  const int l0 = g.AddLink({"rank0.egress", 100, 2, false});
  const int fw = g.AddNode({.name = "rank0->FW.a",
                            .kind = NodeKind::kForward,
                            .rank = 0,
                            .device = c0,
                            .dur_ns = 10,
                            .release_ns = 3});
  const int bw = g.AddNode({.name = "rank0->BW.g0",
                            .kind = NodeKind::kBackward,
                            .rank = 0,
                            .device = c0,
                            .dur_ns = 20,
                            .bytes = 1000,
                            .ratio = 1.5});
  const int send = g.AddNode({.name = "rank0->Comm.b0.SEND~>0",
                              .kind = NodeKind::kSend,
                              .rank = 0,
                              .device = m0,
                              .dur_ns = 4,
                              .link = l0,
                              .bytes = 1000,
                              .bucket = 0,
                              .ring_step = 0});
  const int recv = g.AddNode({.name = "rank1->Comm.b0.RECV~>0",
                              .kind = NodeKind::kRecv,
                              .rank = 1,
                              .device = m1,
                              .dur_ns = 7,
                              .bytes = 1000,
                              .bucket = 0,
                              .ring_step = 0});
  g.AddEdge(fw, bw, 2);
  g.AddEdge(bw, send, 6);
  g.AddEdge(send, recv, 0);
  g.set_kappa(0, 1.25);
  return g;
}

TEST(DfgJsonTest, WritesNodesEdgesDevicesLinksAndLoomTimes) {
  Graph g = SmallGraph();
  ASSERT_TRUE(g.Finalize().ok());
  auto r = Replay(g, {.apply_kappa = false});
  ASSERT_TRUE(r.ok()) << r.status();
  // FW 3..13, BW 15..45, SEND 51..2155, RECV 2155..2162.
  ASSERT_DOUBLE_EQ(r->iteration_ns, 2162);
  auto text = DfgJson(g, &*r, {.source = "dir", .measured_iteration_ns = 2000});
  ASSERT_TRUE(text.ok()) << text.status();
  const json doc = json::parse(*text);
  EXPECT_EQ(doc["format"], "loom-dfg");
  EXPECT_EQ(doc["version"], 1);
  EXPECT_EQ(doc["source"], "dir");
  EXPECT_EQ(doc["ranks"], 2);
  ASSERT_EQ(doc["nodes"].size(), 4u);
  ASSERT_EQ(doc["edges"].size(), 3u);
  ASSERT_EQ(doc["devices"].size(), 3u);
  ASSERT_EQ(doc["links"].size(), 1u);
  EXPECT_DOUBLE_EQ(doc["kappa"][0].get<double>(), 1.25);
  EXPECT_DOUBLE_EQ(doc["kappa"][1].get<double>(), 1.0);

  const json& fw = doc["nodes"][0];
  EXPECT_EQ(fw["name"], "rank0->FW.a");
  EXPECT_EQ(fw["kind"], "FW");
  EXPECT_EQ(fw["device_name"], "rank0.compute");
  EXPECT_DOUBLE_EQ(fw["release_ns"].get<double>(), 3);
  EXPECT_EQ(fw["priority"], 0);
  const json& bw = doc["nodes"][1];
  EXPECT_DOUBLE_EQ(bw["duration_ns"].get<double>(), 30);  // 20 · 1.5
  EXPECT_EQ(bw["priority"], 2);
  EXPECT_DOUBLE_EQ(bw["loom_start_ns"].get<double>(), 15);
  EXPECT_DOUBLE_EQ(bw["loom_end_ns"].get<double>(), 45);
  const json& send = doc["nodes"][2];
  EXPECT_EQ(send["kind"], "SEND");
  EXPECT_EQ(send["device"], 1);
  EXPECT_EQ(send["link"], 0);
  EXPECT_DOUBLE_EQ(send["link_ns"].get<double>(), 2100);      // α 100 + 1000 B · 2 ns/B
  EXPECT_DOUBLE_EQ(send["duration_ns"].get<double>(), 2104);  // + dur 4
  EXPECT_EQ(send["priority"], 100);
  EXPECT_EQ(send["bucket"], 0);
  EXPECT_EQ(send["ring_step"], 0);
  const json& recv = doc["nodes"][3];
  EXPECT_EQ(recv["rank"], 1);
  EXPECT_DOUBLE_EQ(recv["loom_end_ns"].get<double>(), 2162);

  EXPECT_EQ(doc["edges"][1]["from"], 1);
  EXPECT_EQ(doc["edges"][1]["to"], 2);
  EXPECT_DOUBLE_EQ(doc["edges"][1]["gap_ns"].get<double>(), 6);
  EXPECT_EQ(doc["devices"][1]["is_comm"], true);
  EXPECT_DOUBLE_EQ(doc["devices"][1]["gap_ns"].get<double>(), 5);
  EXPECT_EQ(doc["devices"][1]["kind"], "serial");
  EXPECT_DOUBLE_EQ(doc["links"][0]["alpha_ns"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(doc["links"][0]["ns_per_byte"].get<double>(), 2);

  EXPECT_DOUBLE_EQ(doc["loom"]["predicted_iteration_ns"].get<double>(), 2162);
  EXPECT_DOUBLE_EQ(doc["loom"]["measured_iteration_ns"].get<double>(), 2000);
  EXPECT_FALSE(doc["loom"].contains("baseline_sum_ns"));
}

TEST(DfgJsonTest, BuiltGraphRoundTripsCountsAndDurations) {
  // 2 ranks, 3 backward pieces of 1 KiB in buckets of 2 KiB: buckets {0,1}, {2}; allreduce
  // ring of 2 steps per bucket.
  dfg::ModelSpec spec = dfg::SyntheticSpec(2, {100}, {200, 300, 400}, {1024, 1024, 1024}, 50, 2048);
  spec.alpha_ns = 1000;
  spec.ns_per_byte = 0.5;
  auto g = dfg::BuildGraph(spec);
  ASSERT_TRUE(g.ok()) << g.status();
  DfgJsonInfo info;
  info.baseline_sum_ns = 9;
  auto text = DfgJson(*g, nullptr, info);
  ASSERT_TRUE(text.ok()) << text.status();
  const json doc = json::parse(*text);
  ASSERT_EQ(doc["nodes"].size(), g->nodes().size());
  ASSERT_EQ(doc["edges"].size(), g->edges().size());
  int sends = 0;
  for (const json& n : doc["nodes"]) {
    EXPECT_FALSE(n.contains("loom_start_ns"));
    if (n["kind"] == "SEND") {
      ++sends;
      // chunk = bucket bytes / 2 ranks; work = α + chunk · 0.5.
      const double chunk = n["bytes"].get<double>();
      EXPECT_DOUBLE_EQ(n["duration_ns"].get<double>(), 1000 + chunk * 0.5) << n["name"];
    }
  }
  EXPECT_EQ(sends, 2 /*buckets*/ * 2 /*ranks*/ * 2 /*ring steps*/);
  EXPECT_DOUBLE_EQ(doc["loom"]["baseline_sum_ns"].get<double>(), 9);
  EXPECT_FALSE(doc["loom"].contains("predicted_iteration_ns"));
}

TEST(DfgJsonTest, RejectsUnfinalizedGraphAndMismatchedReplay) {
  Graph g = SmallGraph();
  auto unfinalized = DfgJson(g, nullptr, {});
  ASSERT_FALSE(unfinalized.ok());
  EXPECT_NE(unfinalized.status().ToString().find("not finalized"), std::string::npos);
  ASSERT_TRUE(g.Finalize().ok());
  ReplayResult wrong;
  wrong.timing.resize(2);
  auto mismatched = DfgJson(g, &wrong, {});
  ASSERT_FALSE(mismatched.ok());
  EXPECT_NE(mismatched.status().ToString().find("2 node timings for 4 nodes"), std::string::npos);
}

TEST(DfgJsonTest, WriteDfgJsonWritesTheFile) {
  Graph g = SmallGraph();
  ASSERT_TRUE(g.Finalize().ok());
  const std::string path =
      (std::filesystem::temp_directory_path() / "loom_dfg_json_test.json").string();
  ASSERT_TRUE(WriteDfgJson(g, nullptr, {}, path).ok());
  std::ifstream in(path);
  const json doc = json::parse(in);
  EXPECT_EQ(doc["nodes"].size(), 4u);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace loom::trace::replay
