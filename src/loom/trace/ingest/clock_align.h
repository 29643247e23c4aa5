// Cross-rank clock alignment without synchronized clocks: dPRO's difference constraints, solved
// exactly by Bellman-Ford (no LP solver).
//
//   LOOM_ASSIGN_OR_RETURN(MatchResult m, MatchCollectives(&traces));
//   LOOM_ASSIGN_OR_RETURN(ClockAlignment a, SolveClockOffsets(traces, m, {}));
//   ApplyClockOffsets(a, &traces);     // every ts_ns now on the reference rank's clock
//
// Model: rank r's aligned time is local + θ_r, θ_ref = 0. Causality gives, per matched
// collective c and ranks i != j,   θ_j − θ_i ≥ start_i(c) − end_j(c)
// (no rank finishes a collective before every rank has started it), and per SEND→RECV
//                                   θ_recv − θ_send ≥ send_start − recv_end
// (a chunk cannot be fully received before it was sent; AlignOptions::p2p_bound = kSendEnd uses
// dPRO's tighter send_end, valid when a send completes no later than its receive). Each is an
// edge of a constraint graph; shortest paths from/to the reference rank give every θ_r's
// feasible interval [lo, hi], and θ_r is its midpoint (the offset that is worst-case closest to
// the truth). A negative cycle means no offsets satisfy all constraints: some match is wrong. It
// is reported (kInvalidArgument) with the collectives / chunks whose constraints form the cycle.
// Short collectives (a loss allreduce, a barrier) give tight intervals; long ones loose ones.
//
// Cost: O(ranks² · matched collectives) to build, O(ranks³) Bellman-Ford.
// Thread-safety: free functions; no shared state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/trace/ingest/collective_match.h"
#include "loom/trace/ingest/trace_events.h"

namespace loom::trace::ingest {

struct AlignOptions {
  int32_t reference_rank = 0;  // θ of this rank is 0 (default rank 0)
  bool use_p2p = true;         // add SEND→RECV constraints (default true)
  enum class P2PBound : uint8_t { kSendStart, kSendEnd };
  P2PBound p2p_bound = P2PBound::kSendStart;  // default: the always-valid bound
  // Loosens every constraint by this much (tolerates clock jitter / timestamp rounding) so that
  // near-tight measurements do not create spurious negative cycles. Default 0.
  int64_t slack_ns = 0;
};

struct RankOffset {
  int32_t rank = 0;
  int32_t trace_index = 0;
  bool bounded = false;  // both lo and hi finite; else offset_ns is the estimate or 0
  int64_t lo_ns = 0;     // feasible θ_r interval vs the reference rank (when bounded)
  int64_t hi_ns = 0;
  int64_t offset_ns = 0;  // chosen θ_r: aligned = local + offset_ns
  // loom export: the tracer's ping-pong estimate (clock_offset_ns), for comparison.
  bool has_estimate = false;
  int64_t estimate_ns = 0;
  bool estimate_in_interval = false;
};

struct ClockAlignment {
  std::vector<RankOffset> ranks;  // one per trace, in the traces' order
  int64_t constraints = 0;        // constraints generated (before keeping the tightest per pair)
};

Result<ClockAlignment> SolveClockOffsets(const std::vector<RankTrace>& traces,
                                         const MatchResult& match,
                                         const AlignOptions& options = {});

// Shifts every event of traces[i] by ranks[i].offset_ns (minus what was applied before) and
// records it in ClockInfo::applied_offset_ns. Re-sorting is not needed (a constant shift).
void ApplyClockOffsets(const ClockAlignment& alignment, std::vector<RankTrace>* traces);

}  // namespace loom::trace::ingest
