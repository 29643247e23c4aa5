// The replay as a Kineto-style JSON trace (Chrome trace format, opens in Perfetto): one complete
// ("ph":"X") event per DFG node with its replayed start and duration, pid = rank, tid = device
// (0 compute, 1 comm), args {kind, bytes, bucket, ring_step, critical}, plus flow events
// ("ph":"s"/"f") joining each SEND to the RECV it feeds. Times in µs from the iteration start.
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "loom/base/status.h"
#include "loom/trace/dfg/dfg.h"
#include "loom/trace/replay/replayer.h"

namespace loom::trace::replay {

std::string SyntheticTraceJson(const dfg::Graph& graph, const ReplayResult& result);
Status WriteSyntheticTrace(const dfg::Graph& graph, const ReplayResult& result,
                           const std::string& path);

}  // namespace loom::trace::replay
