#include "loom/trace/ingest/trace_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace loom::trace::ingest {
namespace {

std::string TestData(const std::string& name) {
  std::string f = __FILE__;
  return f.substr(0, f.find_last_of('/')) + "/testdata/" + name;
}

std::string TempPath(const std::string& name) {
  return "/tmp/loom_ingest_test_" + std::to_string(::getpid()) + "_" + name;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string WriteTemp(const std::string& name, const std::string& content) {
  const std::string p = TempPath(name);
  std::ofstream(p, std::ios::binary) << content;
  return p;
}

int Count(const RankTrace& t, EventKind k) {
  int n = 0;
  for (const TraceEvent& e : t.events) n += e.kind == k;
  return n;
}

std::vector<const TraceEvent*> OfKind(const RankTrace& t, EventKind k) {
  std::vector<const TraceEvent*> out;
  for (const TraceEvent& e : t.events) {
    if (e.kind == k) out.push_back(&e);
  }
  return out;
}

TEST(ParseCollectiveOp, NormalizesNames) {
  EXPECT_EQ(ParseCollectiveOp("gloo:all_reduce"), CollectiveOp::kAllReduce);
  EXPECT_EQ(ParseCollectiveOp("c10d::allreduce_"), CollectiveOp::kAllReduce);
  EXPECT_EQ(ParseCollectiveOp("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL"),
            CollectiveOp::kReduceScatter);
  EXPECT_EQ(ParseCollectiveOp("_allgather_base"), CollectiveOp::kAllGather);
  EXPECT_EQ(ParseCollectiveOp("gloo:broadcast"), CollectiveOp::kBroadcast);
  EXPECT_EQ(ParseCollectiveOp("reduce"), CollectiveOp::kReduce);
  EXPECT_EQ(ParseCollectiveOp("aten::mm"), CollectiveOp::kNone);
}

// A real torch 1.13 (no Kineto) 2-rank DDP/gloo profile; see testdata/make_legacy_trace.py.
TEST(ReadTrace, LegacyTorchArray) {
  Result<RankTrace> r = ReadTrace(TestData("legacy_gloo_rank1.json"));
  ASSERT_TRUE(r.ok()) << r.status();
  const RankTrace& t = *r;
  EXPECT_EQ(t.dialect, Dialect::kLegacyTorch);
  EXPECT_EQ(t.rank, 1);  // from the file name
  EXPECT_EQ(t.world_size, 0);
  EXPECT_TRUE(t.clock.timestamps_relative);
  EXPECT_EQ(t.events_seen, 507);
  EXPECT_EQ(t.events.size(), 507u);
  EXPECT_EQ(t.lane_names.size(), 3u);
  EXPECT_EQ(Count(t, EventKind::kStep), 3);
  EXPECT_EQ(Count(t, EventKind::kBackward), 18);
  EXPECT_EQ(Count(t, EventKind::kUpdate), 3);
  EXPECT_EQ(Count(t, EventKind::kForward), 3);  // DistributedDataParallel.forward
  EXPECT_EQ(Count(t, EventKind::kCommEnqueue), 3);
  const auto comm = OfKind(t, EventKind::kComm);
  ASSERT_EQ(comm.size(), 3u);
  const int64_t want_ts[] = {780000, 2987000, 8676000};
  const int64_t want_dur[] = {2180000, 4690000, 1029000};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(t.Name(*comm[i]), "gloo:all_reduce");
    EXPECT_EQ(comm[i]->op, CollectiveOp::kAllReduce);
    EXPECT_EQ(comm[i]->ts_ns, want_ts[i]);
    EXPECT_EQ(comm[i]->dur_ns, want_dur[i]);
    EXPECT_EQ(comm[i]->step, i + 1);  // inside ProfilerStep#i+1 (by time, other thread)
    EXPECT_NE(comm[i]->lane, 0);      // the gloo worker thread, not the main thread
  }
  // Sorted by start.
  for (size_t i = 1; i < t.events.size(); ++i) {
    EXPECT_LE(t.events[i - 1].ts_ns, t.events[i].ts_ns);
  }
}

TEST(ReadTrace, KinetoDict) {
  Result<RankTrace> r = ReadTrace(TestData("kineto_rank1.json"));
  ASSERT_TRUE(r.ok()) << r.status();
  const RankTrace& t = *r;
  EXPECT_EQ(t.dialect, Dialect::kKineto);
  EXPECT_EQ(t.rank, 1);
  EXPECT_EQ(t.world_size, 2);
  EXPECT_EQ(t.clock.base_time_ns, 1700000000000000000);
  EXPECT_FALSE(t.clock.timestamps_relative);
  EXPECT_EQ(t.events_seen, 18);  // 1 metadata + 16 slices + 1 ac2g flow
  EXPECT_EQ(t.events.size(), 16u);
  EXPECT_EQ(Count(t, EventKind::kStep), 2);
  EXPECT_EQ(Count(t, EventKind::kBackward), 2);
  EXPECT_EQ(Count(t, EventKind::kUpdate), 2);
  EXPECT_EQ(Count(t, EventKind::kCommEnqueue), 4);
  const auto comm = OfKind(t, EventKind::kComm);
  ASSERT_EQ(comm.size(), 4u);
  // ts 1700000000004065.556 µs converts exactly (a double would round to 0.25 µs).
  EXPECT_EQ(comm[0]->ts_ns, 1700000000004065556);
  EXPECT_EQ(comm[0]->dur_ns, 303000);
  EXPECT_EQ(comm[0]->bytes, 4096);  // Input Dims [[1024]] x float
  EXPECT_EQ(comm[1]->bytes, 4);
  EXPECT_EQ(t.GroupName(*comm[0]), "0");  // from record_param_comms
  EXPECT_EQ(comm[0]->seq, kUnknown);      // "Sequence number" is autograd's, not a comm seq
  EXPECT_EQ(comm[0]->step, 5);
  EXPECT_EQ(comm[2]->step, 6);
  EXPECT_EQ(comm[0]->op, CollectiveOp::kAllReduce);
}

TEST(ReadTrace, LoomExport) {
  Result<RankTrace> r = ReadTrace(TestData("loom_rank1.json"));
  ASSERT_TRUE(r.ok()) << r.status();
  const RankTrace& t = *r;
  EXPECT_EQ(t.dialect, Dialect::kLoom);
  EXPECT_EQ(t.rank, 1);
  EXPECT_EQ(t.world_size, 2);
  EXPECT_TRUE(t.clock.has_offset_estimate);
  EXPECT_EQ(t.clock.offset_estimate_ns, 1234000);
  EXPECT_EQ(Count(t, EventKind::kForward), 2);
  EXPECT_EQ(Count(t, EventKind::kBackward), 2);
  EXPECT_EQ(Count(t, EventKind::kUpdate), 2);
  EXPECT_EQ(Count(t, EventKind::kStep), 2);
  const auto comm = OfKind(t, EventKind::kComm);
  ASSERT_EQ(comm.size(), 4u);
  EXPECT_EQ(comm[1]->seq, 1);
  EXPECT_EQ(comm[1]->bytes, 4);
  EXPECT_EQ(t.GroupName(*comm[1]), "default");
  const auto sends = OfKind(t, EventKind::kSend);
  const auto recvs = OfKind(t, EventKind::kRecv);
  ASSERT_EQ(sends.size(), 4u);
  ASSERT_EQ(recvs.size(), 4u);
  EXPECT_EQ(t.Name(*sends[1]), "SEND.allreduce.0~>1_0");
  EXPECT_EQ(sends[1]->seq, 0);
  EXPECT_EQ(sends[1]->peer, 0);
  EXPECT_EQ(sends[1]->flow_id, 1 + 0 * 1000 + 1 * 10 + 1 * 3 + 0);
  EXPECT_EQ(recvs[1]->peer, 0);
  EXPECT_EQ(recvs[1]->flow_id, 1 + 0 * 1000 + 1 * 10 + 0 * 3 + 1);
  EXPECT_EQ(sends[2]->step, 6);
  EXPECT_EQ(sends[0]->bytes, 2048);
}

TEST(ReadTrace, FlowEventsBindToSendRecvWithoutFlowArgs) {
  // A loom-style trace whose slices lack "flow_id": the s/f flow events supply it.
  const std::string p = WriteTemp("flows.json", R"({"loom": {"clock_offset_ns": 0},
    "traceEvents": [
    {"ph":"X","name":"SEND.allreduce.3~>0_0","pid":0,"tid":1,"ts":10,"dur":5,"args":{"dst":1}},
    {"ph":"s","cat":"comm_flow","id":42,"pid":0,"tid":1,"ts":12.5},
    {"ph":"X","name":"RECV.allreduce.3~>0_0","pid":0,"tid":1,"ts":20,"dur":5,"args":{"src":1}},
    {"ph":"f","cat":"comm_flow","id":43,"bp":"e","pid":0,"tid":1,"ts":22.5}]})");
  Result<RankTrace> r = ReadTrace(p);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->events.size(), 2u);
  EXPECT_EQ(r->events[0].kind, EventKind::kSend);
  EXPECT_EQ(r->events[0].flow_id, 42);
  EXPECT_EQ(r->events[0].seq, 3);
  EXPECT_EQ(r->events[0].peer, 1);
  EXPECT_EQ(r->events[1].flow_id, 43);
  std::remove(p.c_str());
}

TEST(ReadTrace, ForcedDialect) {
  ReadOptions o;
  o.dialect = Dialect::kKineto;
  Result<RankTrace> r = ReadTrace(TestData("loom_rank0.json"), o);  // loom is a Kineto superset
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->dialect, Dialect::kKineto);
  o.dialect = Dialect::kLegacyTorch;
  r = ReadTrace(TestData("kineto_rank0.json"), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("dialect forced to legacy-torch but the file is a kineto"),
            std::string::npos)
      << r.status();
  o.dialect = Dialect::kLoom;
  r = ReadTrace(TestData("legacy_gloo_rank0.json"), o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bare array"), std::string::npos) << r.status();
  EXPECT_EQ(*DetectDialect(TestData("loom_rank0.json")), Dialect::kLoom);
  EXPECT_EQ(*DetectDialect(TestData("kineto_rank0.json")), Dialect::kKineto);
  EXPECT_EQ(*DetectDialect(TestData("legacy_gloo_rank0.json")), Dialect::kLegacyTorch);
}

TEST(ReadTrace, RankOverrideAndFilter) {
  ReadOptions o;
  o.rank = 7;
  o.keep_other = false;
  Result<RankTrace> r = ReadTrace(TestData("legacy_gloo_rank0.json"), o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->rank, 7);
  // 3 steps + 3 FW + 18 BW + 3 UPDATE + 3 enqueue + 3 comm.
  EXPECT_EQ(r->events.size(), 33u);
  EXPECT_EQ(r->events_seen, 507);
  for (const TraceEvent& e : r->events) EXPECT_EQ(e.rank, 7);
  o.keep_other = true;
  o.filter = [](const TraceEvent& e, std::string_view name) { return name == "aten::mm"; };
  r = ReadTrace(TestData("legacy_gloo_rank0.json"), o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->events.size(), 9u);
}

TEST(ReadTraces, DuplicateRanksAreAnError) {
  ReadOptions o;
  o.rank = 0;
  Result<std::vector<RankTrace>> r =
      ReadTraces({TestData("legacy_gloo_rank0.json"), TestData("legacy_gloo_rank1.json")}, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("both claim rank 0"), std::string::npos) << r.status();
  r = ReadTraces({TestData("kineto_rank1.json"), TestData("kineto_rank0.json")});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].rank, 0);
  EXPECT_EQ((*r)[1].rank, 1);
}

TEST(ReadTraceDir, ReadsEveryJsonSortedByRank) {
  const std::string dir = TempPath("dir");
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(TestData("loom_rank1.json"), dir + "/b.json");
  std::filesystem::copy_file(TestData("loom_rank0.json"), dir + "/a_rank0.json");
  std::ofstream(dir + "/notes.txt") << "not a trace";
  Result<std::vector<RankTrace>> r = ReadTraceDir(dir);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].rank, 0);
  EXPECT_EQ((*r)[1].rank, 1);
  std::filesystem::remove_all(dir);
  r = ReadTraceDir(dir);
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

// ---- Bad input: each error names the file, the rank and where. ----

Status ReadStatus(const std::string& path) {
  Result<RankTrace> r = ReadTrace(path);
  return r.ok() ? OkStatus() : r.status();
}

TEST(ReadTraceErrors, Truncated) {
  const std::string full = Slurp(TestData("kineto_rank1.json"));
  const size_t cut = full.find("gloo:all_reduce") + 40;
  const std::string p = WriteTemp("trunc_rank1.json", full.substr(0, cut));
  const Status s = ReadStatus(p);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), "trace ingest: '" + p + "' (rank 1) is truncated: unexpected end of " +
                             "file at byte " + std::to_string(cut) +
                             " (after event #4, inside event #5)");
  std::remove(p.c_str());
}

TEST(ReadTraceErrors, TruncatedLegacyNamesRankFromFileName) {
  const std::string full = Slurp(TestData("legacy_gloo_rank0.json"));
  const std::string p = WriteTemp("legacy_rank3.json", full.substr(0, 1000));
  const Status s = ReadStatus(p);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("(rank 3) is truncated: unexpected end of file at byte 1000"),
            std::string::npos)
      << s;
  std::remove(p.c_str());
}

TEST(ReadTraceErrors, Malformed) {
  const std::string p = WriteTemp("bad.json", R"({"distributedInfo": {"rank": 2}, "traceEvents": [
{"ph":"X","name":"a","ts":1,"dur":1},
{"ph":"X","name":"b","ts":2,"dur":1,}]})");
  const Status s = ReadStatus(p);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  const std::string want = "trace ingest: '" + p + "' (rank 2): malformed JSON at byte ";
  EXPECT_EQ(s.message().substr(0, want.size()), want) << s;
  EXPECT_NE(s.message().find("(after event #0, inside event #1)"), std::string::npos) << s;
  EXPECT_NE(s.message().find("syntax error"), std::string::npos) << s;
  std::remove(p.c_str());
}

TEST(ReadTraceErrors, MissingTsAndDur) {
  const std::string doc = R"([{"ph":"X","name":"aten::mm","ts":1,"dur":2},
{"ph":"X","name":"aten::add","dur":2}])";
  const std::string p = WriteTemp("missing_rank4.json", doc);
  const Status s = ReadStatus(p);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "trace ingest: '" + p + "' (rank 4): event #1 at byte " +
                             std::to_string(doc.find("{\"ph\":\"X\",\"name\":\"aten::add")) +
                             " ('aten::add') has no \"ts\"");
  const std::string p2 = WriteTemp("nodur.json", R"([{"ph":"X","name":"x","ts":1}])");
  EXPECT_NE(ReadStatus(p2).message().find("(rank unknown): event #0 at byte 1 ('x') has no "
                                          "\"dur\""),
            std::string::npos)
      << ReadStatus(p2);
  std::remove(p.c_str());
  std::remove(p2.c_str());
}

TEST(ReadTraceErrors, NegativeDuration) {
  const std::string doc = R"({"distributedInfo":{"rank":1},"traceEvents":[
{"ph":"X","name":"gloo:all_reduce","ts":5,"dur":-3.5}]})";
  const std::string p = WriteTemp("neg.json", doc);
  const Status s = ReadStatus(p);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "trace ingest: '" + p + "' (rank 1): event #0 at byte " +
                             std::to_string(doc.find("{\"ph\"")) +
                             " ('gloo:all_reduce') has a negative dur (-3.5 us)");
  std::remove(p.c_str());
}

TEST(ReadTraceErrors, UnknownDialect) {
  const std::string p = WriteTemp("weird.json", R"({"events": [], "unit": "ns"})");
  Status s = ReadStatus(p);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("unknown trace dialect"), std::string::npos) << s;
  EXPECT_NE(s.message().find("top-level keys: [events, unit]"), std::string::npos) << s;
  const std::string p2 = WriteTemp("num.json", "  42");
  s = ReadStatus(p2);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("byte 2 is '4'"), std::string::npos) << s;
  const std::string p3 = WriteTemp("empty.json", "");
  s = ReadStatus(p3);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("is empty"), std::string::npos) << s;
  EXPECT_EQ(ReadStatus(TempPath("does_not_exist.json")).code(), StatusCode::kNotFound);
  std::remove(p.c_str());
  std::remove(p2.c_str());
  std::remove(p3.c_str());
}

TEST(ReadTraceErrors, AmbiguousUnits) {
  // Epoch nanoseconds written where microseconds belong.
  const std::string p = WriteTemp(
      "ns.json", R"({"traceEvents":[{"ph":"X","name":"a","ts":1700000000000000000,"dur":5}]})");
  Status s = ReadStatus(p);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("\"ts\" = 1700000000000000000 is implausible as microseconds"),
            std::string::npos)
      << s;
  EXPECT_NE(s.message().find("units are ambiguous"), std::string::npos) << s;
  const std::string p2 = WriteTemp(
      "unit.json", R"({"time_unit":"ns","traceEvents":[{"ph":"X","name":"a","ts":1,"dur":5}]})");
  s = ReadStatus(p2);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("time_unit \"ns\" is not supported"), std::string::npos) << s;
  // displayTimeUnit is display only.
  const std::string p3 = WriteTemp(
      "disp.json",
      R"({"displayTimeUnit":"ns","traceEvents":[{"ph":"X","name":"a","ts":1.5,"dur":5}]})");
  Result<RankTrace> r = ReadTrace(p3);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->events[0].ts_ns, 1500);
  std::remove(p.c_str());
  std::remove(p2.c_str());
  std::remove(p3.c_str());
}

// Every proper prefix of a valid trace is an error (never a crash or a silent partial read),
// and random byte corruption never crashes.
TEST(ReadTraceErrors, EveryTruncationAndRandomCorruption) {
  for (const char* name : {"kineto_rank0.json", "loom_rank1.json"}) {
    const std::string full = Slurp(TestData(name));
    const size_t end = full.find_last_of('}');
    const std::string p = TempPath(std::string("cut_") + name);
    for (size_t cut = 0; cut <= end; cut += 7) {
      std::ofstream(p, std::ios::binary | std::ios::trunc) << full.substr(0, cut);
      const Status s = ReadStatus(p);
      ASSERT_FALSE(s.ok()) << name << " cut at " << cut;
      EXPECT_TRUE(s.code() == StatusCode::kDataLoss || s.code() == StatusCode::kInvalidArgument)
          << s;
    }
    uint64_t x = 88172645463325252ull;
    int failures = 0;
    for (int round = 0; round < 200; ++round) {
      std::string bad = full;
      for (int k = 0; k < 3; ++k) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        bad[x % bad.size()] = static_cast<char>(x >> 56);
      }
      std::ofstream(p, std::ios::binary | std::ios::trunc) << bad;
      failures += !ReadStatus(p).ok();
    }
    EXPECT_GT(failures, 0);
    std::remove(p.c_str());
  }
}

}  // namespace
}  // namespace loom::trace::ingest
