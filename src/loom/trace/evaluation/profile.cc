#include "loom/trace/evaluation/profile.h"

#include "loom/trace/ingest/trace_reader.h"

namespace loom::trace::evaluation {

Result<ProfiledRun> LoadProfile(const std::string& dir, const dfg::TraceModelOptions& options) {
  ProfiledRun p;
  auto traces = ingest::ReadTraceDir(dir);
  if (!traces.ok()) return traces.status().WithContext("profile " + dir);
  p.raw = std::move(traces).value();
  ingest::MatchOptions mo;
  mo.allow_missing_at_end = true;
  auto match = ingest::MatchCollectives(&p.raw, mo);
  if (!match.ok()) return match.status().WithContext("profile " + dir);
  p.match = std::move(match).value();
  auto align = ingest::SolveClockOffsets(p.raw, p.match);
  if (align.ok()) {
    p.alignment = *align;
  } else {
    p.alignment_note = "clock constraints infeasible (" + align.status().message() +
                       "); using the tracer's offset estimates";
    for (size_t i = 0; i < p.raw.size(); ++i) {
      ingest::RankOffset r;
      r.rank = p.raw[i].rank;
      r.trace_index = static_cast<int32_t>(i);
      r.offset_ns = p.raw[i].clock.has_offset_estimate ? p.raw[i].clock.offset_estimate_ns : 0;
      p.alignment.ranks.push_back(r);
    }
  }
  p.traces = p.raw;
  ingest::ApplyClockOffsets(p.alignment, &p.traces);
  auto model = dfg::BuildModelFromTraces(p.traces, p.match, options);
  if (!model.ok()) return model.status().WithContext("profile " + dir);
  p.model = std::move(model).value();
  return p;
}

}  // namespace loom::trace::evaluation
