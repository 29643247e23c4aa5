#include "loom/trace/evaluation/clock_recovery.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "loom/trace/ingest/clock_align.h"
#include "loom/trace/ingest/collective_match.h"

namespace loom::trace::evaluation {

std::vector<int64_t> DefaultClockSkews() {
  return {0,          37'000,      -37'000,       1'000'000,     -1'000'000,
          25'000'000, -25'000'000, 1'000'000'000, -1'000'000'000};
}

Result<ClockRecovery> MeasureClockRecovery(const std::vector<ingest::RankTrace>& traces,
                                           const std::vector<int64_t>& skews_ns) {
  if (traces.size() < 2) {
    return InvalidArgumentError("clock recovery needs at least 2 ranks, got " +
                                std::to_string(traces.size()));
  }
  if (skews_ns.empty()) return InvalidArgumentError("clock recovery: no skews given");
  ClockRecovery out;
  for (int64_t skew : skews_ns) {
    std::vector<ingest::RankTrace> t = traces;
    for (ingest::RankTrace& r : t) {
      const int64_t shift = skew * r.rank;
      for (ingest::TraceEvent& e : r.events) e.ts_ns += shift;
      r.clock.has_offset_estimate = false;  // the tracer's estimate knows nothing of the skew
    }
    ingest::MatchOptions mo;
    mo.allow_missing_at_end = true;
    auto match = ingest::MatchCollectives(&t, mo);
    if (!match.ok()) {
      return match.status().WithContext("clock recovery, skew " + std::to_string(skew) + " ns");
    }
    auto align = ingest::SolveClockOffsets(t, *match);
    if (!align.ok()) {
      return align.status().WithContext("clock recovery, skew " + std::to_string(skew) + " ns");
    }
    for (const ingest::RankOffset& r : align->ranks) {
      if (r.rank == 0) continue;  // the reference
      ClockRecoveryCase c;
      c.rank = r.rank;
      c.injected_ns = skew * r.rank;
      c.recovered_ns = r.offset_ns;
      c.error_ns = r.offset_ns + c.injected_ns;
      c.interval_ns = r.bounded ? r.hi_ns - r.lo_ns : -1;
      if (!r.bounded) {
        return FailedPreconditionError("clock recovery: rank " + std::to_string(r.rank) +
                                       "'s offset is not bounded by any matched collective");
      }
      out.max_abs_error_ns = std::max(out.max_abs_error_ns, std::abs(c.error_ns));
      out.cases.push_back(c);
    }
  }
  return out;
}

}  // namespace loom::trace::evaluation
