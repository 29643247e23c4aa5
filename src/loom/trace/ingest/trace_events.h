// Normalized in-memory trace events: what every ingest dialect (Kineto JSON, torch 1.13's legacy
// array, loom's own export) is turned into, and what collective matching, clock alignment and the
// DFG builder consume.
//
// One TraceEvent is a compact 72-byte record (names and groups are interned indices): names are
// interned per RankTrace so that a trace of N events costs O(N) small records, never a DOM. Times
// are integer nanoseconds on the rank's own clock (ts_ns) until clock alignment shifts them.
//
// Thread-safety: plain value types; distinct objects may be used from different threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace loom::trace::ingest {

// What an event is for the replayer (dPRO's categories plus comm detail).
enum class EventKind : uint8_t {
  kOther = 0,    // compute or runtime op that is not classified further (aten::*, cpu_op)
  kForward,      // forward compute (FW)
  kBackward,     // backward compute (BW)
  kUpdate,       // optimizer step (UPDATE)
  kStep,         // iteration boundary span (ProfilerStep#N)
  kCommEnqueue,  // host-side launch/enqueue of a collective (c10d::allreduce_, record_param_comms)
  kComm,  // a collective's execution (gloo:all_reduce on the worker, ncclKernel_*, loom comm)
  kSend,  // one point-to-point chunk sent (loom SEND.<op>.<seq>~>step_chunk)
  kRecv,  // one point-to-point chunk received
};
std::string_view EventKindName(EventKind kind);

// Collective operation, normalized from names such as "gloo:all_reduce", "c10d::allreduce_",
// "ncclDevKernel_AllGather_RING_LL" or args "Collective name": "_allgather_base".
enum class CollectiveOp : uint8_t {
  kNone = 0,
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kBarrier,
  kGather,
  kScatter,
  kSend,
  kRecv,
  kOther,
};
std::string_view CollectiveOpName(CollectiveOp op);
// Classifies a free-form name ("gloo:all_reduce", "ncclKernel_ReduceScatter_...",
// "allreduce_coalesced"); kNone when it names no collective.
CollectiveOp ParseCollectiveOp(std::string_view name);

// The three input dialects.
enum class Dialect : uint8_t {
  kAuto = 0,     // ReadOptions only: detect from the first bytes / top-level keys
  kKineto,       // {"traceEvents": [...], "distributedInfo": {...}}, ts in µs since epoch
  kLegacyTorch,  // bare array from torch 1.13 without Kineto, ts in µs since profiler start
  kLoom,         // loom's own export: Kineto dict plus a top-level "loom" object
};
std::string_view DialectName(Dialect dialect);

inline constexpr int64_t kUnknown = -1;

// One normalized event. Fields that a dialect does not carry stay at kUnknown / empty.
struct TraceEvent {
  int64_t ts_ns = 0;           // start, ns, on this rank's clock (aligned after ApplyClockOffsets)
  int64_t dur_ns = 0;          // >= 0
  int64_t bytes = kUnknown;    // payload bytes of a collective / chunk, when known
  int64_t step = kUnknown;     // iteration number (ProfilerStep#N that encloses the event)
  int64_t seq = kUnknown;      // per-process-group sequence number of a collective (from args);
                               // filled by MatchCollectives when inferred from order
  int64_t flow_id = kUnknown;  // id joining a SEND to its RECV (Kineto flow "id")
  int32_t rank = 0;
  int32_t lane = 0;    // thread / stream id (dense per trace; see RankTrace::lane_names)
  int32_t peer = -1;   // peer rank of a SEND/RECV, when known
  uint32_t name = 0;   // index into RankTrace::names
  uint32_t group = 0;  // index into RankTrace::names: process-group name ("" = default)
  EventKind kind = EventKind::kOther;
  CollectiveOp op = CollectiveOp::kNone;

  int64_t end_ns() const { return ts_ns + dur_ns; }
};
static_assert(sizeof(TraceEvent) <= 72, "TraceEvent is the per-event memory cost: keep it small");

// What a trace says about its clock.
struct ClockInfo {
  // Absolute time of ts 0 in ns when the dialect says so (Kineto "baseTimeNanoseconds"); else
  // kUnknown. Legacy torch traces are relative to profiler start: alignment must be inferred.
  int64_t base_time_ns = kUnknown;
  bool timestamps_relative = false;  // true for the legacy dialect
  // loom export: the tracer's own ping-pong estimate of (rank 0 clock - this clock), ns.
  bool has_offset_estimate = false;
  int64_t offset_estimate_ns = 0;
  // Offset applied by ApplyClockOffsets (0 before alignment).
  int64_t applied_offset_ns = 0;
};

// One rank's trace after ingest.
struct RankTrace {
  std::string path;  // file it came from (for error messages)
  Dialect dialect = Dialect::kAuto;
  int32_t rank = 0;
  int32_t world_size = 0;  // 0 when the file does not say (legacy)
  std::string run_id;      // loom export "run_id" or Kineto "traceName"; may be empty
  ClockInfo clock;
  std::vector<TraceEvent> events;       // sorted by (ts_ns, -dur_ns): parents before children
  std::vector<std::string> names;       // interned names; names[0] == ""
  std::vector<std::string> lane_names;  // original tid/pid text per lane index
  int64_t events_seen = 0;              // events in the file (kept + filtered out)

  std::string_view Name(const TraceEvent& e) const { return names[e.name]; }
  std::string_view GroupName(const TraceEvent& e) const { return names[e.group]; }
};

// Interns strings into RankTrace::names (index 0 is "").
class NameTable {
 public:
  explicit NameTable(std::vector<std::string>* names);
  uint32_t Intern(std::string_view s);

 private:
  std::vector<std::string>* names_;
  std::unordered_map<std::string, uint32_t> index_;
};

}  // namespace loom::trace::ingest
