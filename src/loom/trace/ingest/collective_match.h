// MatchCollectives: pairs up the same collective across the per-rank traces of one run, and each
// SEND with its RECV, so that the DFG can add cross-rank edges and clock alignment can derive
// constraints.
//
//   LOOM_ASSIGN_OR_RETURN(std::vector<RankTrace> traces, ReadTraces(paths));
//   LOOM_ASSIGN_OR_RETURN(MatchResult m, MatchCollectives(&traces, {}));
//
// Collectives (EventKind::kComm) are keyed by (process group, per-group sequence number). The
// sequence number comes from the event's args when present (loom "seq", torch "Seq"); else it is
// inferred as the event's position among that rank's collectives on that group (0, 1, 2, ...),
// which is what NCCL/gloo sequence numbers are. Inferred numbers are written back into
// TraceEvent::seq. A group's participants are the ranks whose traces have collectives on it.
// SEND/RECV are matched by flow id (loom "flow_id" args or Kineto flow events); without a flow id
// by (sender, receiver, name after "SEND."/"RECV.", occurrence).
//
// Errors (kInvalidArgument) name the ranks, the group, the sequence number and both names:
//   - two traces with the same rank, different world_size or run id ("mismatched runs");
//   - the same (group, seq) with different ops or byte counts on two ranks;
//   - a rank without a collective that another rank has at (group, seq);
//   - a SEND without its RECV or vice versa.
//
// Thread-safety: a free function over the caller's traces; no shared state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/trace/ingest/trace_events.h"

namespace loom::trace::ingest {

struct MatchOptions {
  // Profiler windows rarely cut all ranks at the same instant: when true, collectives (and
  // SEND/RECV) that are missing on some ranks only at the *end* of a group's sequence (after the
  // last seq every participant has) are dropped and counted instead of being an error.
  // Default false: any missing collective is an error.
  bool allow_missing_at_end = false;
  // Compare byte counts at the same (group, seq) when both ranks know them. Default true.
  bool check_bytes = true;
};

// One collective as seen by every participating rank.
struct MatchedCollective {
  std::string group;  // process-group name ("default" when the trace names none)
  int64_t seq = 0;
  CollectiveOp op = CollectiveOp::kNone;
  int64_t bytes = kUnknown;
  // Per participant (same order): index into the traces vector and into its events.
  std::vector<int32_t> trace_index;
  std::vector<size_t> event_index;
};

struct MatchedP2P {
  int32_t send_trace = 0;
  size_t send_event = 0;
  int32_t recv_trace = 0;
  size_t recv_event = 0;
  int64_t flow_id = kUnknown;
};

struct MatchResult {
  std::vector<MatchedCollective> collectives;  // sorted by (group, seq)
  std::vector<MatchedP2P> p2p;
  int64_t dropped_at_end = 0;  // with allow_missing_at_end
};

// `traces` must be one run's per-rank traces (any order). Fills TraceEvent::seq where inferred.
Result<MatchResult> MatchCollectives(std::vector<RankTrace>* traces,
                                     const MatchOptions& options = {});

// "'gloo:all_reduce' (all_reduce, 4096 B) group 'default' seq 3 on rank 1" for error messages.
std::string DescribeCollective(const RankTrace& trace, const TraceEvent& event);

}  // namespace loom::trace::ingest
