#include "loom/trace/ingest/collective_match.h"

#include <gtest/gtest.h>

#include "loom/trace/ingest/testing/synthetic.h"
#include "loom/trace/ingest/trace_reader.h"

namespace loom::trace::ingest {
namespace {

using testing::TraceBuilder;

std::string TestData(const std::string& name) {
  std::string f = __FILE__;
  return f.substr(0, f.find_last_of('/')) + "/testdata/" + name;
}

TEST(MatchCollectives, RealLegacyTwoRankDdp) {
  Result<std::vector<RankTrace>> traces =
      ReadTraces({TestData("legacy_gloo_rank0.json"), TestData("legacy_gloo_rank1.json")});
  ASSERT_TRUE(traces.ok()) << traces.status();
  Result<MatchResult> m = MatchCollectives(&*traces);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->collectives.size(), 3u);
  for (int s = 0; s < 3; ++s) {
    const MatchedCollective& c = m->collectives[s];
    EXPECT_EQ(c.group, "default");
    EXPECT_EQ(c.seq, s);
    EXPECT_EQ(c.op, CollectiveOp::kAllReduce);
    ASSERT_EQ(c.trace_index.size(), 2u);
    // Inferred seq written back; both sides are the s-th gloo:all_reduce (step s + 1).
    for (size_t k = 0; k < 2; ++k) {
      const TraceEvent& e = (*traces)[c.trace_index[k]].events[c.event_index[k]];
      EXPECT_EQ(e.seq, s);
      EXPECT_EQ(e.step, s + 1);
    }
  }
  EXPECT_TRUE(m->p2p.empty());
}

TEST(MatchCollectives, LoomExportWithSeqAndFlows) {
  Result<std::vector<RankTrace>> traces =
      ReadTraces({TestData("loom_rank0.json"), TestData("loom_rank1.json")});
  ASSERT_TRUE(traces.ok()) << traces.status();
  Result<MatchResult> m = MatchCollectives(&*traces);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->collectives.size(), 4u);
  EXPECT_EQ(m->collectives[1].seq, 1);
  EXPECT_EQ(m->collectives[1].bytes, 4);
  ASSERT_EQ(m->p2p.size(), 8u);
  for (const MatchedP2P& p : m->p2p) {
    const TraceEvent& s = (*traces)[p.send_trace].events[p.send_event];
    const TraceEvent& r = (*traces)[p.recv_trace].events[p.recv_event];
    EXPECT_EQ(s.flow_id, r.flow_id);
    EXPECT_EQ(s.peer, (*traces)[p.recv_trace].rank);
    EXPECT_EQ(r.peer, (*traces)[p.send_trace].rank);
    EXPECT_EQ(s.seq, r.seq);
  }
}

TEST(MatchCollectives, KinetoInfersSeqPerGroup) {
  Result<std::vector<RankTrace>> traces =
      ReadTraces({TestData("kineto_rank0.json"), TestData("kineto_rank1.json")});
  ASSERT_TRUE(traces.ok()) << traces.status();
  Result<MatchResult> m = MatchCollectives(&*traces);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->collectives.size(), 4u);
  EXPECT_EQ(m->collectives[0].group, "0");
  EXPECT_EQ(m->collectives[0].bytes, 4096);
  EXPECT_EQ(m->collectives[3].seq, 3);
  EXPECT_EQ(m->collectives[3].bytes, 4);
}

std::vector<RankTrace> TwoRanks(const std::vector<std::pair<std::string, int64_t>>& r0,
                                const std::vector<std::pair<std::string, int64_t>>& r1,
                                const std::string& group = "") {
  TraceBuilder a(0, 2), b(1, 2);
  int64_t t = 1000;
  for (const auto& [name, bytes] : r0) a.Comm(name, t += 1000, 500, bytes, group);
  t = 1000;
  for (const auto& [name, bytes] : r1) b.Comm(name, t += 1000, 500, bytes, group);
  std::vector<RankTrace> v;
  v.push_back(a.Build());
  v.push_back(b.Build());
  return v;
}

TEST(MatchCollectivesErrors, OpMismatchNamesRanksSeqAndBothNames) {
  auto traces = TwoRanks({{"gloo:all_reduce", 64}, {"gloo:all_reduce", 64}},
                         {{"gloo:all_reduce", 64}, {"gloo:broadcast", 64}});
  Result<MatchResult> m = MatchCollectives(&traces);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(m.status().message(),
            "collective match: op mismatch at group 'default' seq 1: rank 0 has "
            "'gloo:all_reduce' (all_reduce, 64 B) group 'default' seq 1 on rank 0 but rank 1 has "
            "'gloo:broadcast' (broadcast, 64 B) group 'default' seq 1 on rank 1");
}

TEST(MatchCollectivesErrors, SizeMismatch) {
  auto traces = TwoRanks({{"allreduce", 64}}, {{"allreduce", 128}}, "tp");
  Result<MatchResult> m = MatchCollectives(&traces);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "collective match: size mismatch at group 'tp' seq 0: rank 0 has 'allreduce' "
            "(all_reduce, 64 B) group 'tp' seq 0 on rank 0 but rank 1 has 'allreduce' "
            "(all_reduce, 128 B) group 'tp' seq 0 on rank 1");
  MatchOptions o;
  o.check_bytes = false;
  EXPECT_TRUE(MatchCollectives(&traces, o).ok());
}

TEST(MatchCollectivesErrors, MissingCollective) {
  // Explicit sequence numbers: rank 1 lacks seq 1 in the middle.
  TraceBuilder a(0, 2), b(1, 2);
  a.Comm("allreduce", 1000, 10, 8, "", 0);
  a.Comm("allreduce", 2000, 10, 8, "", 1);
  a.Comm("allreduce", 3000, 10, 8, "", 2);
  b.Comm("allreduce", 1000, 10, 8, "", 0);
  b.Comm("allreduce", 3000, 10, 8, "", 2);
  std::vector<RankTrace> traces;
  traces.push_back(a.Build());
  traces.push_back(b.Build());
  Result<MatchResult> m = MatchCollectives(&traces);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "collective match: rank 1 ('synthetic_rank1.json') has no collective at group "
            "'default' seq 1, but rank 0 has 'allreduce' (all_reduce, 8 B) group 'default' seq 1 "
            "on rank 0; rank 1's last seq on this group is 2");
  MatchOptions o;
  o.allow_missing_at_end = true;  // not at the end: still an error
  EXPECT_FALSE(MatchCollectives(&traces, o).ok());
}

TEST(MatchCollectivesErrors, MissingAtEndIsAnErrorUnlessAllowed) {
  auto traces = TwoRanks({{"allreduce", 8}, {"allreduce", 8}, {"allreduce", 8}},
                         {{"allreduce", 8}, {"allreduce", 8}});
  Result<MatchResult> m = MatchCollectives(&traces);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("rank 1 ('synthetic_rank1.json') has no collective at "
                                      "group 'default' seq 2"),
            std::string::npos)
      << m.status();
  EXPECT_NE(m.status().message().find("allow_missing_at_end"), std::string::npos);
  MatchOptions o;
  o.allow_missing_at_end = true;
  m = MatchCollectives(&traces, o);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->collectives.size(), 2u);
  EXPECT_EQ(m->dropped_at_end, 1);
}

TEST(MatchCollectivesErrors, MismatchedRuns) {
  auto traces = TwoRanks({{"allreduce", 8}}, {{"allreduce", 8}});
  traces[1].world_size = 4;
  Result<MatchResult> m = MatchCollectives(&traces);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "collective match: traces from mismatched runs: rank 0 ('synthetic_rank0.json') has "
            "world_size 2 but rank 1 ('synthetic_rank1.json') has world_size 4");
  traces[1].world_size = 2;
  traces[0].run_id = "run-a";
  traces[1].run_id = "run-b";
  m = MatchCollectives(&traces);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("has run id 'run-a' but rank 1"), std::string::npos);
  traces[1].run_id = "run-a";
  traces[1].rank = 0;
  m = MatchCollectives(&traces);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("both claim rank 0"), std::string::npos);
}

TEST(MatchCollectivesErrors, DuplicateSeqOnOneRank) {
  TraceBuilder a(0, 1);
  a.Comm("allreduce", 1000, 10, 8, "", 4);
  a.Comm("allgather", 2000, 10, 8, "", 4);
  std::vector<RankTrace> traces;
  traces.push_back(a.Build());
  Result<MatchResult> m = MatchCollectives(&traces);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("has two collectives at group 'default' seq 4"),
            std::string::npos)
      << m.status();
}

TEST(MatchCollectivesErrors, UnmatchedSend) {
  TraceBuilder a(0, 2), b(1, 2);
  a.P2P(true, "SEND.allreduce.0~>0_0", 1000, 10, 1, 77);
  b.P2P(false, "RECV.allreduce.0~>0_0", 1000, 20, 0, 77);
  a.P2P(true, "SEND.allreduce.0~>1_0", 2000, 10, 1, 78);
  std::vector<RankTrace> traces;
  traces.push_back(a.Build());
  traces.push_back(b.Build());
  Result<MatchResult> m = MatchCollectives(&traces);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "collective match: SEND without its RECV: 'SEND.allreduce.0~>1_0' on rank 0 (flow id "
            "78)");
}

TEST(MatchCollectives, SendRecvWithoutFlowIdsMatchByName) {
  TraceBuilder a(0, 2), b(1, 2);
  a.P2P(true, "SEND.allreduce.3~>0_0", 1000, 10, 1, kUnknown);
  a.P2P(true, "SEND.allreduce.3~>0_0", 5000, 10, 1, kUnknown);
  b.P2P(false, "RECV.allreduce.3~>0_0", 900, 200, 0, kUnknown);
  b.P2P(false, "RECV.allreduce.3~>0_0", 4900, 200, 0, kUnknown);
  std::vector<RankTrace> traces;
  traces.push_back(a.Build());
  traces.push_back(b.Build());
  Result<MatchResult> m = MatchCollectives(&traces);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->p2p.size(), 2u);
  EXPECT_EQ(traces[0].events[m->p2p[0].send_event].ts_ns, 1000);
  EXPECT_EQ(traces[1].events[m->p2p[0].recv_event].ts_ns, 900);
  EXPECT_EQ(traces[1].events[m->p2p[1].recv_event].ts_ns, 4900);
}

}  // namespace
}  // namespace loom::trace::ingest
