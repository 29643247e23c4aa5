// A profiled run ready for replay: per-rank traces read from a directory, collectives matched
// across ranks, clocks aligned (ingest's difference constraints; the tracer's ping-pong offsets
// when those are infeasible) and the iteration model fitted (dfg::BuildModelFromTraces). The
// same pipeline as `loom trace replay`, as a library call for `loom bench replay`.
//
//   LOOM_ASSIGN_OR_RETURN(ProfiledRun p, LoadProfile("runs/x/trace", {}));
//   LOOM_ASSIGN_OR_RETURN(dfg::Graph g, dfg::BuildGraph(p.model.spec));
//
// Thread-safety: a pure function (reads files).
#pragma once

#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/trace/dfg/trace_builder.h"
#include "loom/trace/ingest/clock_align.h"
#include "loom/trace/ingest/collective_match.h"
#include "loom/trace/ingest/trace_events.h"

namespace loom::trace::evaluation {

struct ProfiledRun {
  std::vector<ingest::RankTrace> raw;     // as read (matched, seq filled; clocks not aligned)
  std::vector<ingest::RankTrace> traces;  // aligned
  ingest::MatchResult match;
  ingest::ClockAlignment alignment;
  std::string alignment_note;  // non-empty when the tracer's estimates were used instead
  dfg::TraceModel model;
};

// Reads every rank<N>.trace.json of `dir` (any ingest dialect; collectives missing only at the
// end of the window are dropped). Errors name the directory.
Result<ProfiledRun> LoadProfile(const std::string& dir, const dfg::TraceModelOptions& options);

}  // namespace loom::trace::evaluation
