// The global DFG as neutral JSON, for peer replayers outside loom (dPRO's Python replayer,
// scripts/peers/dpro_replay.py): every node with its rank, kind, device and isolated duration,
// every data edge with its gap, the devices and links, κ per rank and, when given, loom's own
// replay of the same graph (per-node start/end and the predicted iteration) plus the measured
// iteration and the analytical baselines. `loom trace export-dfg <dir> <out.json>` writes it.
//
//   LOOM_ASSIGN_OR_RETURN(dfg::Graph g, dfg::BuildGraph(spec));
//   LOOM_ASSIGN_OR_RETURN(ReplayResult r, Replay(g));
//   DfgJsonInfo info{.source = dir, .measured_iteration_ns = m};
//   LOOM_RETURN_IF_ERROR(WriteDfgJson(g, &r, info, "dfg.json"));
//
// Format (all times in ns, "format": "loom-dfg", "version": 1):
//   devices: [{id, name, kind: "serial"|"unbounded", rank, is_comm, gap_ns}]
//   links:   [{id, name, alpha_ns, ns_per_byte, shared, burst_bytes, line_ns_per_byte}] (burst
//            > 0: a token bucket; duration_ns of its SENDs is then the α-β time at the token rate)
//   nodes:   [{id, name, kind: FW|BW|UPDATE|SYNC|SEND|RECV|COMPRESS|DECOMPRESS|OTHER, rank,
//             device (id, -1 = none), device_name ("" = none), duration_ns (isolated work:
//             dur_ns · ratio + link α + bytes · ns_per_byte), dur_ns, ratio, link (-1 = none),
//             link_ns, bytes, bucket, ring_step, priority, release_ns
//             [, loom_start_ns, loom_end_ns when a replay is given]}]
//   edges:   [{from, to, gap_ns}]   (`to` is ready no earlier than from's end + gap)
//   kappa:   [per rank]
//   loom:    {predicted_iteration_ns, measured_iteration_ns, baseline_sum_ns,
//             baseline_overlap_ns} (a value < 0 or absent = unknown)
// The graph must be finalized (edges and indices checked).
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "loom/base/status.h"
#include "loom/trace/dfg/dfg.h"
#include "loom/trace/replay/replayer.h"

namespace loom::trace::replay {

struct DfgJsonInfo {
  std::string source;                 // where the graph came from (a trace directory)
  double measured_iteration_ns = -1;  // < 0: unknown (not written)
  double baseline_sum_ns = -1;        // compute + comm; < 0: not written
  double baseline_overlap_ns = -1;    // compute + max(0, comm − overlappable); < 0: not written
};

// `replay` may be null (no loom timings written); when given it must be a replay of `graph`.
Result<std::string> DfgJson(const dfg::Graph& graph, const ReplayResult* replay,
                            const DfgJsonInfo& info);
Status WriteDfgJson(const dfg::Graph& graph, const ReplayResult* replay, const DfgJsonInfo& info,
                    const std::string& path);

}  // namespace loom::trace::replay
