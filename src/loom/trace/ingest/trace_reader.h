// ReadTrace: streaming readers for per-rank profiler traces, one interface for three dialects.
//
//   LOOM_ASSIGN_OR_RETURN(RankTrace t, ReadTrace("rank0.trace.json", {}));
//   // or, without storing anything (bounded memory for multi-GB files):
//   ReadOptions o;
//   o.on_event = [&](const TraceEvent& e, std::string_view name) { ...; return OkStatus(); };
//   LOOM_ASSIGN_OR_RETURN(RankTrace meta, ReadTrace(path, o));
//
// Dialects (auto-detected from the first non-blank byte and the top-level keys, or forced):
//   kKineto       {"traceEvents": [...], "distributedInfo": {"rank", "world_size"}, ...}:
//                 ProfilerStep#N steps; collectives from ncclKernel_*/ncclDevKernel_* and gloo:*
//                 (COMM), record_param_comms and c10d::* (COMM_ENQUEUE).
//   kLegacyTorch  torch 1.13 without Kineto: a bare array, pid "CPU functions", ts relative to
//                 profiler start, no "cat", empty args. Classified by name: aten::* compute,
//                 "autograd::engine::evaluate_function: *Backward*" BW, "Optimizer.step#*"
//                 UPDATE, "c10d::allreduce_" COMM_ENQUEUE, "gloo:all_reduce" COMM.
//   kLoom         loom's tracer export: a Kineto dict plus a top-level "loom" object with
//                 clock_offset_ns (rank0_ns = ts_ns + clock_offset_ns); args "loom_category",
//                 "seq", "flow_id", "src"/"dst"; SEND.<op>.<seq>~><ring step>_<chunk> names.
// Units: "ts"/"dur" are microseconds in all three (Chrome trace format; floats carry ns
// precision and are converted exactly). "displayTimeUnit" is display only and ignored. A
// "time_unit" key other than "us" is rejected, as is a ts too large to be microseconds (it
// looks like ns): the units would be ambiguous.
//
// Memory: the parser holds one event at a time (SAX, never a DOM). Stored mode keeps one
// 72-byte TraceEvent per kept event plus each distinct name once: O(kept events + distinct
// names). With `on_event` set nothing is stored: O(distinct names + lanes), independent of
// the file size (tested on a 48 MB file in trace_reader_test.cc).
//
// Errors name the file, the rank and the event index / byte offset:
//   kDataLoss        truncated file, malformed JSON
//   kInvalidArgument unknown dialect, event without ts/dur, negative dur, ambiguous units
//
// Thread-safety: ReadTrace is reentrant; call it from several threads for several files.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/base/status.h"
#include "loom/trace/ingest/trace_events.h"

namespace loom::trace::ingest {

struct ReadOptions {
  // Dialect to read; kAuto (default) detects it. A forced dialect that does not fit the file
  // (e.g. kLegacyTorch for a dict) is kInvalidArgument.
  Dialect dialect = Dialect::kAuto;
  // Rank to assign; -1 (default) = from the file (distributedInfo.rank), else from "rank<N>" in
  // the file name, else 0.
  int32_t rank = -1;
  // Keep only events for which this returns true (default: keep all).
  std::function<bool(const TraceEvent&, std::string_view name)> filter;
  // Streaming mode: when set, every (filtered) event is handed here in file order and not stored;
  // RankTrace::events stays empty. Events carry rank, kind, op, bytes, seq, flow id and the step
  // from their args ("step") but not the step inferred from ProfilerStep spans (that needs the
  // sorted trace). A non-OK status stops the read and is returned.
  std::function<Status(const TraceEvent&, std::string_view name)> on_event;
  // Keep kOther events (aten::* etc.). Default true; false keeps only steps, FW/BW/UPDATE and
  // communication, which is what matching and alignment need.
  bool keep_other = true;
};

// Reads one rank's trace. See the header comment for dialects, units, memory and errors.
Result<RankTrace> ReadTrace(const std::string& path, const ReadOptions& options = {});

// Reads several traces (one per rank) and checks that their ranks are distinct; sorted by rank.
Result<std::vector<RankTrace>> ReadTraces(const std::vector<std::string>& paths,
                                          const ReadOptions& options = {});

// Reads every "*.json" file directly in `dir` (not recursive) as one run's per-rank traces, as
// ReadTraces. kNotFound when `dir` has no such file. Compressed traces (.json.gz) are not read.
Result<std::vector<RankTrace>> ReadTraceDir(const std::string& dir,
                                            const ReadOptions& options = {});

// The dialect of `path` from its first bytes: '[' = legacy; '{' = loom if a top-level "loom"
// key appears in the first 64 KiB, else Kineto. kInvalidArgument for anything else.
Result<Dialect> DetectDialect(const std::string& path);

}  // namespace loom::trace::ingest
