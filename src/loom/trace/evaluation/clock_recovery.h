// Clock-offset recovery on synthetic skews: shift the timestamps of real traces by known
// offsets, run ingest's alignment (difference constraints, Bellman-Ford) and compare what it
// recovers with what was injected. The target is 50 µs.
//
//   LOOM_ASSIGN_OR_RETURN(ClockRecovery r, MeasureClockRecovery(profile.raw, {1'000'000, ...}));
//   r.max_abs_error_ns;
//
// Ground truth: the traces' own clocks must agree (true θ = 0 for every rank), as they do for
// ranks on one host — the namespace testbed shares the kernel's CLOCK_MONOTONIC. Skew s gives
// rank r (≠ the reference) local' = local + s·r, so the offset to recover is θ_r = −s·r; the
// error is the recovered θ_r + s·r and includes the solver's choice of the interval midpoint.
//
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/base/status.h"
#include "loom/trace/ingest/trace_events.h"

namespace loom::trace::evaluation {

struct ClockRecoveryCase {
  int32_t rank = 0;
  int64_t injected_ns = 0;   // added to the rank's timestamps
  int64_t recovered_ns = 0;  // θ_r from the alignment (should be −injected_ns)
  int64_t error_ns = 0;      // recovered + injected
  int64_t interval_ns = 0;   // width of θ_r's feasible interval (hi − lo)
};

struct ClockRecovery {
  std::vector<ClockRecoveryCase> cases;
  int64_t max_abs_error_ns = 0;
};

// `traces`: one run's per-rank traces as read (not aligned), at least 2 ranks, with matched
// collectives. kInvalidArgument when fewer than 2 ranks or no skews; alignment errors pass
// through naming the skew.
Result<ClockRecovery> MeasureClockRecovery(const std::vector<ingest::RankTrace>& traces,
                                           const std::vector<int64_t>& skews_ns);

// Default skews: 0, ±37 µs, ±1 ms, ±25 ms, ±1 s.
std::vector<int64_t> DefaultClockSkews();

}  // namespace loom::trace::evaluation
