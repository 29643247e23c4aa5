// Loading a traced run for `loom trace replay|whatif|optimize`: finds rank<N>.trace.json in a
// trace directory (or in <run_dir>/trace), reads them (any ingest dialect), matches collectives,
// aligns clocks (difference constraints; the tracer's ping-pong offsets when infeasible) and fits
// the iteration model (loom/trace/dfg/trace_builder.h) under the shared model flags.
//
//   TraceRunArgs a;  AddTraceRunOptions(cmd, &a);   // dir, --steps, --link, --kappa, ...
//   LOOM_ASSIGN_OR_RETURN(LoadedTraceRun l, LoadTraceRun(a));
//   PrintTraceModel(l);  l.model.spec ...
//
// Thread-safety: pure functions (read files, print to stdout).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/trace/dfg/trace_builder.h"
#include "loom/trace/ingest/clock_align.h"
#include "loom/trace/ingest/collective_match.h"
#include "loom/trace/ingest/trace_events.h"

namespace loom::cli {

// The flags every `loom trace` model command shares.
struct TraceRunArgs {
  std::string dir;    // trace directory or run directory
  std::string steps;  // "A-B" window
  std::string topology = "per-sender";
  double kappa = 0;
  double link_gbps = 0;
  std::string split = "1MiB";
  std::string stat = "median";
  std::string link_model = "auto";  // --link-model auto|alpha-beta|token-bucket
};

// Adds `dir` (positional, required), --steps, --link, --kappa, --link-gbps, --stat, --split.
void AddTraceRunOptions(CLI::App* cmd, TraceRunArgs* a);

struct LoadedTraceRun {
  std::vector<std::string> paths;
  std::vector<trace::ingest::RankTrace> traces;  // clock-aligned
  trace::ingest::MatchResult match;
  trace::dfg::TraceModelOptions options;
  trace::ingest::ClockAlignment alignment;
  std::string alignment_note;  // non-empty when the tracer's offset estimates were used
  trace::dfg::TraceModel model;
};

// Errors name the directory (kNotFound without traces) or the bad flag (kInvalidArgument).
Result<LoadedTraceRun> LoadTraceRun(const TraceRunArgs& a);

// "traces: 2 ranks in ...; steps 20-40 (21 used)", clock offsets, model, link fit, κ, notes.
void PrintTraceModel(const LoadedTraceRun& l);

}  // namespace loom::cli
