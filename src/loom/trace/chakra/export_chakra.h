// Chakra execution-trace export: turns one rank's normalized trace (ingest::RankTrace) into a
// Chakra ET graph and writes `<prefix>.<rank>.et`, the per-rank input of ASTRA-sim and Chakra's
// tools.
//
// Nodes, in execution order (ids 1..N by start time):
//   FW / BW / UPDATE / other compute    -> COMP_NODE  (is_cpu_op = compute_is_cpu_op)
//   host enqueue of a collective        -> COMP_NODE  (is_cpu_op = true), unless nested in compute
//   collective execution                -> COMM_COLL_NODE: comm_type (int64 Chakra enum),
//                                          comm_size (int64 bytes, 0 when unknown), pg_name
//   per-chunk SEND / RECV               -> COMM_SEND_NODE / COMM_RECV_NODE: comm_src, comm_dst,
//                                          comm_tag (int32), comm_size
// Every node also carries tid (int64 lane), loom_kind (string) and loom_step (int64, when known).
// Nesting on a lane (torch ops inside an autograd function, ops inside ProfilerStep#N): the
// outermost span is kept whole unless it contains a differently classified span (a collective,
// a SEND/RECV, a BW inside an unclassified wrapper); then it is split and its own time between
// those children becomes segments "<name>#<k>" of its kind. ProfilerStep spans only group.
// CommGranularity picks collective-level or chunk-level communication (never both for one op).
//
// Dependencies: ctrl_deps = the previous node on the same lane; data_deps = BW -> the
// collective (or first chunk of it) that starts after the last BW ending before it, when no
// UPDATE lies between them; collective/chunk -> the next UPDATE that starts after it ends. With
// lane_order_as_data_deps (default) the same-lane predecessor is also a data dep: ASTRA-sim's
// Chakra feeder schedules by data_deps only (Chakra's PyTorch converter does the same,
// convert_ctrl_dep_to_data_dep). A BW span during which a collective of another lane starts is
// split at that instant (split_backward_at_collectives), so the bucket depends on the backward
// time before it rather than on a previous step. Collectives of one process group are chained in
// their order (collectives_in_group_order). Unclassified spans named "wait*" (loom's
// wait_grad_sync) are blocking waits on communication: exported with duration 0 (measured time in
// attr loom_wait_us) because the collective -> UPDATE deps already model the wait.
// Zero-duration nodes (after µs rounding) that end up with no edge at all are dropped. The
// graph is checked for cycles before writing.
//
// ASTRA-sim conventions (its workload layer at astra-sim c459ab6 / chakra 214f2c5): comm_size is
// the per-rank input of the collective (PyTorch's in_msg_nelems x dtype size: an all-gather's
// shard, a reduce-scatter's whole buffer); loom's own traces record an all-gather's gathered
// output, so for the loom dialect it is divided by the world size (original in loom_bytes).
// pg_name is parsed by ASTRA-sim as an integer communicator-group id (std::stoi, looked up in
// --comm-group-configuration); it is written only for numeric group names, other names go to
// loom_pg_name, and the default group has neither pg_name nor a group file (= all NPUs).
//
// CLI line the `loom` binary can add (src/loom/cli is owned elsewhere):
//   loom trace export-chakra <trace dir> <out-prefix>   # reads every rank, writes prefix.<r>.et
// = ReadTraceDir + ExportChakraAll(traces, prefix, ChakraOptions{}).
//
// Thread-safety: reentrant functions over caller-owned values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/trace/chakra/chakra_trace.h"
#include "loom/trace/ingest/trace_events.h"

namespace loom::trace::chakra {

enum class CommGranularity {
  kCollective,    // one COMM_COLL_NODE per collective; its SEND/RECV chunks are folded into it
  kPointToPoint,  // COMM_SEND/RECV per chunk; a collective whose chunks are traced is dropped
};

struct ChakraOptions {
  // Communication detail (default kCollective: what ASTRA-sim's collective models expect).
  // SEND/RECV events that belong to no traced collective are always exported as SEND/RECV nodes.
  CommGranularity granularity = CommGranularity::kCollective;
  // Time origin in ns on the (aligned) trace clock: start_time_micros = (ts - origin) / 1000.
  // Default ingest::kUnknown: the earliest exported event of this rank. ExportChakraAll passes
  // the earliest over all ranks so that ranks share one origin.
  int64_t origin_ns = ingest::kUnknown;
  // is_cpu_op of compute nodes (default false: FW/BW/UPDATE are the rank's device compute, so
  // they overlap communication in ASTRA-sim as kernels would; enqueue spans are always true).
  bool compute_is_cpu_op = false;
  // Drop zero-duration nodes that have no dependency in or out (default true, as Chakra does).
  bool drop_isolated_zero_duration = true;
  // Also write the same-lane predecessor into data_deps (default true: simulators such as
  // ASTRA-sim order nodes by data_deps only). false keeps data_deps to the BW/comm/UPDATE rules.
  bool lane_order_as_data_deps = true;
  // Make each collective a data dep of the next one of the same process group (default true):
  // a communicator runs its collectives in one order on every rank, and ASTRA-sim pairs the
  // ranks' collectives by issue order, so an order the graph leaves open can differ between
  // ranks there and the simulation stalls without finishing.
  bool collectives_in_group_order = true;
  // Split a BW span where a collective of another lane starts inside it (default true).
  bool split_backward_at_collectives = true;
  // Export unclassified "wait*" spans with duration 0 (default true; see above).
  bool waits_as_sync = true;
};

// Chakra's comm_type for a collective; nullopt for kNone, kSend, kRecv and kOther (exported as
// compute with loom_kind "COMM" when no type fits).
std::optional<CommType> ToChakraCommType(ingest::CollectiveOp op);

// The Chakra graph of one rank (validated: unique ids, known deps, no cycle).
Result<ChakraTrace> BuildChakraTrace(const ingest::RankTrace& trace, const ChakraOptions& options);

// BuildChakraTrace + WriteChakraTrace(path). Errors name the rank and the source file.
Status ExportChakra(const ingest::RankTrace& trace, const std::string& path,
                    const ChakraOptions& options);

// "<prefix>.<rank>.et"
std::string ChakraRankPath(const std::string& prefix, int rank);
// Exports every rank to ChakraRankPath(prefix, rank) with one shared time origin (the earliest
// event over all ranks, unless options.origin_ns is set). Ranks must be distinct.
Status ExportChakraAll(const std::vector<ingest::RankTrace>& traces, const std::string& prefix,
                       const ChakraOptions& options);

}  // namespace loom::trace::chakra
