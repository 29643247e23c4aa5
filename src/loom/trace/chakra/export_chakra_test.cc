// Export tests: node kinds and attributes, nesting, dependency rules, comm_type mapping,
// granularity, dropping, shared time origin and a file round trip.
#include "loom/trace/chakra/export_chakra.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace loom::trace::chakra {
namespace {

using ingest::CollectiveOp;
using ingest::EventKind;
using ingest::RankTrace;
using ingest::TraceEvent;

class Builder {
 public:
  explicit Builder(int rank) : names_(std::make_unique<ingest::NameTable>(&t_.names)) {
    t_.rank = rank;
    t_.world_size = 2;
    t_.path = "rank" + std::to_string(rank) + ".json";
  }
  // Times in µs.
  TraceEvent& Add(EventKind kind, std::string_view name, int64_t ts_us, int64_t dur_us,
                  int lane = 0, CollectiveOp op = CollectiveOp::kNone) {
    TraceEvent e;
    e.kind = kind;
    e.name = names_->Intern(name);
    e.ts_ns = ts_us * 1000;
    e.dur_ns = dur_us * 1000;
    e.lane = lane;
    e.rank = t_.rank;
    e.op = op;
    t_.events.push_back(e);
    return t_.events.back();
  }
  uint32_t Intern(std::string_view s) { return names_->Intern(s); }
  RankTrace Build() const {
    RankTrace t = t_;
    std::stable_sort(t.events.begin(), t.events.end(), [](const auto& a, const auto& b) {
      return a.ts_ns != b.ts_ns ? a.ts_ns < b.ts_ns : a.dur_ns > b.dur_ns;
    });
    return t;
  }

 private:
  RankTrace t_;
  std::unique_ptr<ingest::NameTable> names_;
};

const Node& Named(const ChakraTrace& t, std::string_view name) {
  for (const Node& n : t.nodes) {
    if (n.name == name) return n;
  }
  ADD_FAILURE() << "no node named " << name;
  static const Node kNone;
  return kNone;
}
bool Has(const ChakraTrace& t, std::string_view name) {
  return std::any_of(t.nodes.begin(), t.nodes.end(), [&](const Node& n) { return n.name == name; });
}
template <typename T>
T AttrOf(const Node& n, std::string_view name) {
  const Attr* a = n.FindAttr(name);
  if (a == nullptr || !std::holds_alternative<T>(a->value)) {
    ADD_FAILURE() << "node " << n.name << " lacks attr " << name << " of the expected type";
    return T{};
  }
  return std::get<T>(a->value);
}
using Ids = std::vector<uint64_t>;

// Only the cross-lane BW -> comm -> UPDATE rules in data_deps: no lane order, no BW splitting,
// no chaining of a group's collectives.
ChakraOptions RulesOnly() {
  ChakraOptions o;
  o.lane_order_as_data_deps = false;
  o.split_backward_at_collectives = false;
  o.collectives_in_group_order = false;
  return o;
}

ChakraTrace Build(const RankTrace& t, const ChakraOptions& o = {}) {
  Result<ChakraTrace> r = BuildChakraTrace(t, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : ChakraTrace{};
}

// One iteration: FW, two BWs, an allreduce on the comm lane, then UPDATE; then a barrier.
RankTrace OneStep() {
  Builder b(0);
  b.Add(EventKind::kStep, "ProfilerStep#3", 0, 470);
  b.Add(EventKind::kForward, "forward", 0, 100).step = 3;
  b.Add(EventKind::kBackward, "bw1", 100, 100);
  b.Add(EventKind::kBackward, "bw2", 200, 100);
  TraceEvent& ar =
      b.Add(EventKind::kComm, "gloo:all_reduce", 250, 130, 1, CollectiveOp::kAllReduce);
  ar.bytes = 4096;
  ar.seq = 0;
  b.Add(EventKind::kUpdate, "Optimizer.step#SGD.step", 400, 50);
  b.Add(EventKind::kComm, "barrier", 460, 10, 1, CollectiveOp::kBarrier).seq = 1;
  return b.Build();
}

TEST(ChakraExport, NodesAttributesAndDependencies) {
  const ChakraTrace t = Build(OneStep(), RulesOnly());
  ASSERT_EQ(t.nodes.size(), 6u);  // the ProfilerStep span only groups
  for (size_t i = 0; i < t.nodes.size(); ++i) EXPECT_EQ(t.nodes[i].id, i + 1);
  const Node& fw = Named(t, "forward");
  const Node& bw1 = Named(t, "bw1");
  const Node& bw2 = Named(t, "bw2");
  const Node& ar = Named(t, "gloo:all_reduce");
  const Node& up = Named(t, "Optimizer.step#SGD.step");
  const Node& barrier = Named(t, "barrier");
  EXPECT_EQ(fw.type, NodeType::kComp);
  EXPECT_EQ(fw.start_time_micros, 0u);
  EXPECT_EQ(fw.duration_micros, 100u);
  EXPECT_FALSE(AttrOf<bool>(fw, "is_cpu_op"));
  EXPECT_EQ(AttrOf<std::string>(fw, "loom_kind"), "FW");
  EXPECT_EQ(AttrOf<int64_t>(fw, "loom_step"), 3);
  EXPECT_EQ(ar.type, NodeType::kCommColl);
  EXPECT_EQ(ar.start_time_micros, 250u);
  EXPECT_EQ(ar.duration_micros, 130u);
  EXPECT_EQ(AttrOf<int64_t>(ar, "comm_type"), 0);  // ALL_REDUCE
  EXPECT_EQ(AttrOf<int64_t>(ar, "comm_size"), 4096);
  // ASTRA-sim std::stoi's pg_name: the default group has none (= all NPUs).
  EXPECT_EQ(ar.FindAttr("pg_name"), nullptr);
  EXPECT_EQ(AttrOf<std::string>(ar, "loom_pg_name"), "default");
  EXPECT_FALSE(AttrOf<bool>(ar, "is_cpu_op"));
  EXPECT_EQ(AttrOf<int64_t>(ar, "tid"), 1);
  // ctrl: previous node on the same lane.
  EXPECT_EQ(fw.ctrl_deps, Ids{});
  EXPECT_EQ(bw1.ctrl_deps, Ids{fw.id});
  EXPECT_EQ(bw2.ctrl_deps, Ids{bw1.id});
  EXPECT_EQ(up.ctrl_deps, Ids{bw2.id});
  EXPECT_EQ(ar.ctrl_deps, Ids{});
  EXPECT_EQ(barrier.ctrl_deps, Ids{ar.id});
  // data: last BW that ended before the collective started -> collective -> UPDATE.
  EXPECT_EQ(ar.data_deps, Ids{bw1.id});
  EXPECT_EQ(up.data_deps, Ids{ar.id});
  // The barrier comes after the UPDATE: no BW of its step precedes it.
  EXPECT_EQ(barrier.data_deps, Ids{});
  EXPECT_EQ(AttrOf<int64_t>(barrier, "comm_type"), 9);  // BARRIER
  EXPECT_TRUE(ValidateChakraGraph(t).ok());
}

TEST(ChakraExport, CommTypeForEveryCollectiveOp) {
  const std::vector<std::pair<CollectiveOp, std::optional<CommType>>> table = {
      {CollectiveOp::kNone, std::nullopt},
      {CollectiveOp::kAllReduce, CommType::kAllReduce},
      {CollectiveOp::kAllGather, CommType::kAllGather},
      {CollectiveOp::kReduceScatter, CommType::kReduceScatter},
      {CollectiveOp::kBroadcast, CommType::kBroadcast},
      {CollectiveOp::kReduce, CommType::kReduce},
      {CollectiveOp::kAllToAll, CommType::kAllToAll},
      {CollectiveOp::kBarrier, CommType::kBarrier},
      {CollectiveOp::kGather, CommType::kGather},
      {CollectiveOp::kScatter, CommType::kScatter},
      {CollectiveOp::kSend, std::nullopt},
      {CollectiveOp::kRecv, std::nullopt},
      {CollectiveOp::kOther, std::nullopt},
  };
  ASSERT_EQ(table.size(), static_cast<size_t>(CollectiveOp::kOther) + 1);  // every enumerator
  // Chakra's wire numbers.
  EXPECT_EQ(static_cast<int64_t>(CommType::kAllReduce), 0);
  EXPECT_EQ(static_cast<int64_t>(CommType::kReduce), 1);
  EXPECT_EQ(static_cast<int64_t>(CommType::kAllGather), 2);
  EXPECT_EQ(static_cast<int64_t>(CommType::kGather), 3);
  EXPECT_EQ(static_cast<int64_t>(CommType::kScatter), 4);
  EXPECT_EQ(static_cast<int64_t>(CommType::kBroadcast), 5);
  EXPECT_EQ(static_cast<int64_t>(CommType::kAllToAll), 6);
  EXPECT_EQ(static_cast<int64_t>(CommType::kReduceScatter), 7);
  EXPECT_EQ(static_cast<int64_t>(CommType::kBarrier), 9);
  Builder b(0);
  int64_t ts = 0;
  for (const auto& [op, expected] : table) {
    EXPECT_EQ(ToChakraCommType(op), expected) << ingest::CollectiveOpName(op);
    b.Add(EventKind::kComm, "c_" + std::string(ingest::CollectiveOpName(op)), ts, 5, 1, op);
    ts += 10;
  }
  const ChakraTrace t = Build(b.Build());
  for (const auto& [op, expected] : table) {
    const Node& n = Named(t, "c_" + std::string(ingest::CollectiveOpName(op)));
    if (expected) {
      EXPECT_EQ(n.type, NodeType::kCommColl);
      EXPECT_EQ(AttrOf<int64_t>(n, "comm_type"), static_cast<int64_t>(*expected));
    } else {  // no Chakra type: kept as time on the comm lane
      EXPECT_EQ(n.type, NodeType::kComp) << n.name;
      EXPECT_EQ(n.FindAttr("comm_type"), nullptr);
      EXPECT_EQ(AttrOf<std::string>(n, "loom_kind"), "COMM");
    }
  }
}

TEST(ChakraExport, NestedSpansAreFoldedOrSplit) {
  Builder b(0);
  b.Add(EventKind::kStep, "ProfilerStep#0", 0, 1000);
  // BW with ordinary children and a host enqueue: one node.
  b.Add(EventKind::kBackward, "AddmmBackward0", 0, 100);
  b.Add(EventKind::kOther, "aten::mm", 10, 20);
  b.Add(EventKind::kCommEnqueue, "c10d::allreduce_", 40, 5);
  // Unclassified wrapper around a BW: split into its own segments and the BW.
  b.Add(EventKind::kOther, "wrapper", 200, 200);
  b.Add(EventKind::kBackward, "inner_bw", 210, 40);
  // BW around a synchronous collective on its own lane: split around the collective.
  b.Add(EventKind::kBackward, "bw_sync", 500, 100);
  b.Add(EventKind::kOther, "aten::add", 505, 5);
  b.Add(EventKind::kComm, "allreduce", 520, 20, 0, CollectiveOp::kAllReduce);
  const ChakraTrace t = Build(b.Build());
  std::vector<std::string> names;
  for (const Node& n : t.nodes) names.push_back(n.name);
  EXPECT_EQ(names, (std::vector<std::string>{"AddmmBackward0", "wrapper#0", "inner_bw", "wrapper#1",
                                             "bw_sync#0", "allreduce", "bw_sync#1"}));
  EXPECT_EQ(Named(t, "wrapper#0").duration_micros, 10u);
  EXPECT_EQ(Named(t, "wrapper#1").start_time_micros, 250u);
  EXPECT_EQ(Named(t, "wrapper#1").duration_micros, 150u);
  EXPECT_EQ(AttrOf<std::string>(Named(t, "bw_sync#1"), "loom_kind"), "BW");
  EXPECT_EQ(Named(t, "bw_sync#0").duration_micros, 20u);
  EXPECT_EQ(Named(t, "bw_sync#1").duration_micros, 60u);
  EXPECT_EQ(Named(t, "allreduce").ctrl_deps, Ids{Named(t, "bw_sync#0").id});
  // The last BW time before it is the first segment of the enclosing BW.
  EXPECT_EQ(Named(t, "allreduce").data_deps, Ids{Named(t, "bw_sync#0").id});
  // A top-level host enqueue is a CPU op.
  Builder c(0);
  c.Add(EventKind::kCommEnqueue, "c10d::allreduce_", 0, 5);
  const ChakraTrace u = Build(c.Build());
  ASSERT_EQ(u.nodes.size(), 1u);
  EXPECT_TRUE(AttrOf<bool>(u.nodes[0], "is_cpu_op"));
}

RankTrace ChunkedAllReduce() {
  Builder b(0);
  b.Add(EventKind::kBackward, "bw", 0, 100);
  TraceEvent& ar = b.Add(EventKind::kComm, "allreduce", 100, 100, 1, CollectiveOp::kAllReduce);
  ar.seq = 7;
  ar.bytes = 1 << 20;
  TraceEvent& s =
      b.Add(EventKind::kSend, "SEND.allreduce.7~>0_0", 110, 20, 1, CollectiveOp::kAllReduce);
  s.peer = 1;
  s.seq = 7;
  s.flow_id = 55;
  s.bytes = 1 << 19;
  TraceEvent& r =
      b.Add(EventKind::kRecv, "RECV.allreduce.7~>0_0", 140, 50, 1, CollectiveOp::kAllReduce);
  r.peer = 1;
  r.seq = 7;
  r.bytes = 1 << 19;
  // A chunk recorded on another lane (not nested), tied to the collective by (op, group, seq).
  TraceEvent& s2 =
      b.Add(EventKind::kSend, "SEND.allreduce.7~>1_0", 150, 10, 2, CollectiveOp::kAllReduce);
  s2.peer = 1;
  s2.seq = 7;
  b.Add(EventKind::kUpdate, "update", 300, 10);
  return b.Build();
}

TEST(ChakraExport, CollectiveGranularityFoldsChunks) {
  const ChakraTrace t = Build(ChunkedAllReduce(), RulesOnly());
  std::vector<std::string> names;
  for (const Node& n : t.nodes) names.push_back(n.name);
  EXPECT_EQ(names, (std::vector<std::string>{"bw", "allreduce", "update"}));
  EXPECT_EQ(Named(t, "update").data_deps, Ids{Named(t, "allreduce").id});
}

TEST(ChakraExport, PointToPointGranularityWritesSendRecv) {
  ChakraOptions o = RulesOnly();
  o.granularity = CommGranularity::kPointToPoint;
  const ChakraTrace t = Build(ChunkedAllReduce(), o);
  EXPECT_FALSE(Has(t, "allreduce"));
  const Node& s = Named(t, "SEND.allreduce.7~>0_0");
  const Node& r = Named(t, "RECV.allreduce.7~>0_0");
  const Node& s2 = Named(t, "SEND.allreduce.7~>1_0");
  EXPECT_EQ(s.type, NodeType::kCommSend);
  EXPECT_EQ(r.type, NodeType::kCommRecv);
  EXPECT_EQ(AttrOf<int32_t>(s, "comm_src"), 0);
  EXPECT_EQ(AttrOf<int32_t>(s, "comm_dst"), 1);
  EXPECT_EQ(AttrOf<int32_t>(s, "comm_tag"), 55);
  EXPECT_EQ(AttrOf<int64_t>(s, "comm_size"), 1 << 19);
  EXPECT_EQ(AttrOf<int32_t>(r, "comm_src"), 1);
  EXPECT_EQ(AttrOf<int32_t>(r, "comm_dst"), 0);
  // No flow id: the tag is derived from the name after "SEND"/"RECV", the same on both ends.
  Builder peer(1);
  TraceEvent& pr =
      peer.Add(EventKind::kRecv, "RECV.allreduce.7~>0_0", 0, 5, 0, CollectiveOp::kAllReduce);
  pr.peer = 0;
  const ChakraTrace pt = Build(peer.Build(), o);
  ASSERT_EQ(pt.nodes.size(), 1u);
  EXPECT_EQ(AttrOf<int32_t>(pt.nodes[0], "comm_tag"), AttrOf<int32_t>(r, "comm_tag"));
  EXPECT_NE(AttrOf<int32_t>(r, "comm_tag"), 55);
  // BW -> first chunk of the collective; the latest-ending chunk -> UPDATE.
  EXPECT_EQ(s.data_deps, Ids{Named(t, "bw").id});
  EXPECT_EQ(r.data_deps, Ids{});
  EXPECT_EQ(s2.data_deps, Ids{});
  EXPECT_EQ(r.ctrl_deps, Ids{s.id});
  EXPECT_EQ(Named(t, "update").data_deps, Ids{r.id});
}

TEST(ChakraExport, DropsOnlyIsolatedZeroDurationNodes) {
  Builder b(0);
  b.Add(EventKind::kForward, "fw", 0, 10);
  b.Add(EventKind::kOther, "marker_in_chain", 20, 0);
  b.Add(EventKind::kOther, "lonely_marker", 30, 0, 5);
  b.Add(EventKind::kOther, "sub_us", 40, 0, 6).dur_ns = 400;  // rounds to 0 µs
  b.Add(EventKind::kForward, "fw2", 50, 10);
  ChakraTrace t = Build(b.Build());
  EXPECT_TRUE(Has(t, "marker_in_chain"));
  EXPECT_FALSE(Has(t, "lonely_marker"));
  EXPECT_FALSE(Has(t, "sub_us"));
  ASSERT_EQ(t.nodes.size(), 3u);
  for (size_t i = 0; i < t.nodes.size(); ++i) EXPECT_EQ(t.nodes[i].id, i + 1);
  EXPECT_EQ(Named(t, "fw2").ctrl_deps, Ids{Named(t, "marker_in_chain").id});
  ChakraOptions keep;
  keep.drop_isolated_zero_duration = false;
  EXPECT_EQ(Build(b.Build(), keep).nodes.size(), 5u);
}

TEST(ChakraExport, ManyStepsStayAcyclicWithBackwardEdgesOnly) {
  Builder b(0);
  int64_t ts = 0;
  for (int step = 0; step < 20; ++step) {
    b.Add(EventKind::kForward, "fw", ts, 50).step = step;
    for (int k = 0; k < 4; ++k) {
      b.Add(EventKind::kBackward, "bw" + std::to_string(k), ts + 50 + 20 * k, 20).step = step;
      // Buckets overlap the remaining backward and can run past the UPDATE start.
      TraceEvent& c =
          b.Add(EventKind::kComm, "ar", ts + 75 + 20 * k, 30 + 10 * k, 1, CollectiveOp::kAllReduce);
      c.seq = step * 4 + k;
    }
    b.Add(EventKind::kUpdate, "update", ts + 150, 20).step = step;
    ts += 200;
  }
  const ChakraTrace t = Build(b.Build(), RulesOnly());
  EXPECT_EQ(t.nodes.size(), 20u * 10u);
  EXPECT_TRUE(ValidateChakraGraph(t).ok());
  size_t data_edges = 0;
  for (const Node& n : t.nodes) {
    for (const auto* deps : {&n.ctrl_deps, &n.data_deps}) {
      for (uint64_t d : *deps) EXPECT_LT(d, n.id) << n.name;  // ids are a topological order
    }
    data_edges += n.data_deps.size();
  }
  // Per step: 4 BW -> bucket edges; the UPDATE waits for the 2 buckets done when it starts, and
  // the 2 buckets still running then join the next step's UPDATE.
  EXPECT_EQ(data_edges, 20u * 4 + 20u * 2 + 19u * 2);
}

// ASTRA-sim's Chakra feeder (chakra src/feeder/et_feeder.cpp) frees a node when its data_deps
// are done and ignores ctrl_deps: with loom's first export every FW/BW/UPDATE was issuable at
// time 0 and the next step's compute ran under this step's communication.
TEST(ChakraExport, DefaultsPutExecutionOrderIntoDataDepsForAstraSim) {
  const ChakraTrace t = Build(OneStep());
  std::vector<std::string> names;
  for (const Node& n : t.nodes) names.push_back(n.name);
  // bw2 is split where the allreduce of the comm lane starts (250 µs).
  EXPECT_EQ(names, (std::vector<std::string>{"forward", "bw1", "bw2#0", "bw2#1", "gloo:all_reduce",
                                             "Optimizer.step#SGD.step", "barrier"}));
  const Node& fw = Named(t, "forward");
  const Node& bw1 = Named(t, "bw1");
  const Node& bw2a = Named(t, "bw2#0");
  const Node& bw2b = Named(t, "bw2#1");
  const Node& ar = Named(t, "gloo:all_reduce");
  const Node& up = Named(t, "Optimizer.step#SGD.step");
  EXPECT_EQ(bw2a.duration_micros, 50u);
  EXPECT_EQ(bw2b.start_time_micros, 250u);
  EXPECT_EQ(bw2b.duration_micros, 50u);
  EXPECT_EQ(AttrOf<std::string>(bw2b, "loom_kind"), "BW");
  EXPECT_EQ(fw.data_deps, Ids{});
  EXPECT_EQ(bw1.data_deps, Ids{fw.id});
  EXPECT_EQ(bw2a.data_deps, Ids{bw1.id});
  EXPECT_EQ(bw2b.data_deps, Ids{bw2a.id});
  EXPECT_EQ(ar.data_deps, Ids{bw2a.id});  // the backward time before the bucket started
  EXPECT_EQ(up.data_deps, (Ids{bw2b.id, ar.id}));
  EXPECT_EQ(Named(t, "barrier").data_deps, Ids{ar.id});
  // Every node's same-lane predecessor is a data dep, and ctrl_deps are unchanged.
  std::map<int64_t, uint64_t> last;
  for (const Node& n : t.nodes) {
    const int64_t lane = AttrOf<int64_t>(n, "tid");
    if (last.count(lane)) {
      EXPECT_NE(std::find(n.data_deps.begin(), n.data_deps.end(), last[lane]), n.data_deps.end())
          << n.name;
      EXPECT_EQ(n.ctrl_deps, Ids{last[lane]}) << n.name;
    }
    last[lane] = n.id;
  }
  EXPECT_TRUE(ValidateChakraGraph(t).ok());
}

TEST(ChakraExport, BackwardSplitAtEachCollectiveOfAnotherLane) {
  Builder b(0);
  b.Add(EventKind::kForward, "fw", 0, 100);
  b.Add(EventKind::kBackward, "bw", 100, 300);
  b.Add(EventKind::kComm, "rs", 200, 50, 1, CollectiveOp::kReduceScatter).seq = 0;
  b.Add(EventKind::kComm, "rs", 300, 150, 1, CollectiveOp::kReduceScatter).seq = 1;
  b.Add(EventKind::kUpdate, "update", 460, 10);
  const ChakraTrace t = Build(b.Build());
  std::vector<std::string> names;
  for (const Node& n : t.nodes) names.push_back(n.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fw", "bw#0", "bw#1", "rs", "bw#2", "rs", "update"}));
  const Node& rs0 = t.nodes[3];
  const Node& rs1 = t.nodes[5];
  EXPECT_EQ(Named(t, "bw#0").duration_micros, 100u);
  EXPECT_EQ(Named(t, "bw#1").duration_micros, 100u);
  EXPECT_EQ(Named(t, "bw#2").duration_micros, 100u);
  EXPECT_EQ(rs0.data_deps, Ids{Named(t, "bw#0").id});
  EXPECT_EQ(rs1.data_deps, (Ids{rs0.id, Named(t, "bw#1").id}));
  EXPECT_EQ(Named(t, "update").data_deps, (Ids{Named(t, "bw#2").id, rs0.id, rs1.id}));
  // Unsplit, the first bucket would follow no backward at all (only its lane predecessor).
  ChakraOptions whole;
  whole.split_backward_at_collectives = false;
  const ChakraTrace u = Build(b.Build(), whole);
  ASSERT_EQ(u.nodes.size(), 5u);
  EXPECT_EQ(u.nodes[2].name, "rs");
  EXPECT_EQ(u.nodes[2].data_deps, Ids{});
}

// ASTRA-sim pairs the ranks' collectives by issue order; left open, the order can differ between
// ranks there (a bucket of step k+1 ready before step k's all-gathers on one rank) and the
// simulation ends without any NPU finishing. So a group's collectives are chained.
TEST(ChakraExport, CollectivesOfOneGroupAreChainedAcrossLanes) {
  Builder b(0);
  b.Add(EventKind::kBackward, "bw", 0, 10);
  b.Add(EventKind::kComm, "rs", 10, 20, 1, CollectiveOp::kReduceScatter).seq = 0;
  b.Add(EventKind::kUpdate, "optimizer", 30, 40);
  b.Add(EventKind::kComm, "ag", 40, 20, 0, CollectiveOp::kAllGather).seq = 1;
  b.Add(EventKind::kComm, "other_group", 45, 5, 2, CollectiveOp::kAllReduce).group = b.Intern("7");
  b.Add(EventKind::kBackward, "bw_next", 80, 10);
  b.Add(EventKind::kComm, "rs_next", 90, 20, 1, CollectiveOp::kReduceScatter).seq = 2;
  const ChakraTrace t = Build(b.Build());
  const Node& rs = Named(t, "rs");
  const Node& ag = Named(t, "ag");
  const Node& rs_next = Named(t, "rs_next");
  // The all-gather on the main lane follows the comm lane's reduce-scatter of its group.
  EXPECT_NE(std::find(ag.data_deps.begin(), ag.data_deps.end(), rs.id), ag.data_deps.end());
  // The next step's bucket (comm lane) follows the main lane's all-gather.
  EXPECT_EQ(rs_next.data_deps, (Ids{rs.id, ag.id, Named(t, "bw_next").id}));
  EXPECT_EQ(Named(t, "other_group").data_deps, Ids{});
  ChakraOptions open;
  open.collectives_in_group_order = false;
  EXPECT_EQ(Named(Build(b.Build(), open), "rs_next").data_deps,
            (Ids{Named(t, "rs").id, Named(t, "bw_next").id}));
}

TEST(ChakraExport, WaitSpansBecomeZeroDurationSyncPoints) {
  Builder b(0);
  b.Add(EventKind::kBackward, "backward", 0, 10);
  b.Add(EventKind::kComm, "reduce_scatter", 10, 50, 1, CollectiveOp::kReduceScatter).seq = 0;
  b.Add(EventKind::kOther, "wait_grad_sync", 12, 48);
  b.Add(EventKind::kUpdate, "optimizer", 60, 10);
  const ChakraTrace t = Build(b.Build());
  const Node& wait = Named(t, "wait_grad_sync");
  EXPECT_EQ(wait.type, NodeType::kComp);
  EXPECT_EQ(wait.duration_micros, 0u);  // ASTRA-sim must not replay the wait as compute
  EXPECT_EQ(AttrOf<int64_t>(wait, "loom_wait_us"), 48);
  EXPECT_EQ(Named(t, "optimizer").data_deps,
            (Ids{wait.id, Named(t, "reduce_scatter").id}));  // the wait is the collective dep
  ChakraOptions keep;
  keep.waits_as_sync = false;
  EXPECT_EQ(Named(Build(b.Build(), keep), "wait_grad_sync").duration_micros, 48u);
}

TEST(ChakraExport, CommSizeIsPerRankInputAndPgNameOnlyWhenNumeric) {
  Builder b(0);
  TraceEvent& ag = b.Add(EventKind::kComm, "allgather", 0, 10, 1, CollectiveOp::kAllGather);
  ag.bytes = 150144;  // loom records the gathered output
  ag.group = b.Intern("3");
  TraceEvent& rs = b.Add(EventKind::kComm, "rs", 20, 10, 1, CollectiveOp::kReduceScatter);
  rs.bytes = 186624;  // a reduce-scatter's input is the whole buffer
  rs.group = b.Intern("tp");
  RankTrace loom = b.Build();
  loom.dialect = ingest::Dialect::kLoom;
  const ChakraTrace t = Build(loom);
  EXPECT_EQ(AttrOf<int64_t>(Named(t, "allgather"), "comm_size"), 150144 / 2);
  EXPECT_EQ(AttrOf<int64_t>(Named(t, "allgather"), "loom_bytes"), 150144);
  EXPECT_EQ(AttrOf<std::string>(Named(t, "allgather"), "pg_name"), "3");
  EXPECT_EQ(AttrOf<int64_t>(Named(t, "rs"), "comm_size"), 186624);
  EXPECT_EQ(Named(t, "rs").FindAttr("loom_bytes"), nullptr);
  EXPECT_EQ(Named(t, "rs").FindAttr("pg_name"), nullptr);
  EXPECT_EQ(AttrOf<std::string>(Named(t, "rs"), "loom_pg_name"), "tp");
  // Kineto traces already give the input (In msg nelems): unchanged.
  RankTrace kineto = b.Build();
  kineto.dialect = ingest::Dialect::kKineto;
  EXPECT_EQ(AttrOf<int64_t>(Named(Build(kineto), "allgather"), "comm_size"), 150144);
}

TEST(ChakraExport, WritesPerRankFilesWithSharedOriginAndReadsThemBack) {
  Builder r0(0);
  r0.Add(EventKind::kForward, "fw", 1000, 10);
  Builder r1(1);
  r1.Add(EventKind::kForward, "fw", 3000, 10);
  r1.Add(EventKind::kComm, "ar", 3010, 10, 1, CollectiveOp::kAllGather).bytes = 8;
  const std::vector<RankTrace> traces = {r0.Build(), r1.Build()};
  const std::string prefix = "/tmp/loom_chakra_" + std::to_string(::getpid()) + "_out";
  ASSERT_TRUE(ExportChakraAll(traces, prefix, {}).ok());
  EXPECT_EQ(ChakraRankPath(prefix, 1), prefix + ".1.et");
  for (int rank : {0, 1}) {
    Result<ChakraTrace> back = ReadChakraTrace(ChakraRankPath(prefix, rank));
    ASSERT_TRUE(back.ok()) << back.status();
    ChakraOptions o;
    o.origin_ns = 1000 * 1000;
    EXPECT_EQ(*back, Build(traces[rank], o));
    const Attr* r = nullptr;
    for (const Attr& a : back->metadata_attrs) {
      if (a.name == "rank") r = &a;
    }
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(std::get<int64_t>(r->value), rank);
    std::remove(ChakraRankPath(prefix, rank).c_str());
  }
  Result<ChakraTrace> back1 = BuildChakraTrace(traces[1], {.origin_ns = 1000 * 1000});
  ASSERT_TRUE(back1.ok());
  EXPECT_EQ(back1->nodes[0].start_time_micros, 2000u);  // rank 1 starts 2 ms after rank 0
  // Duplicate ranks are refused.
  Status dup = ExportChakraAll({traces[0], traces[0]}, prefix, {});
  EXPECT_EQ(dup.code(), StatusCode::kInvalidArgument);
}

TEST(ChakraExport, UnsortedInputNamesRankAndFile) {
  Builder b(3);
  b.Add(EventKind::kForward, "late", 100, 10);
  b.Add(EventKind::kForward, "early", 0, 10);
  RankTrace t = b.Build();
  std::swap(t.events[0], t.events[1]);
  Result<ChakraTrace> r = BuildChakraTrace(t, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("rank 3"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("rank3.json"), std::string::npos) << r.status();
}

}  // namespace
}  // namespace loom::trace::chakra
