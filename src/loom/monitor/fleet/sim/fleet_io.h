// On-disk form of a LabelledJob (simulated or recorded), so jobs can be generated once and read
// by the detectors, the trainers and `loom monitor eval`:
//   DIR/meta.json    {"format": "loom.fleet_job.v1", "metric_names": [...], "machines": N,
//                     "seconds": S, "seed": ..., "faults": [{machine, type, onset_s, end_s,
//                     group, must_alarm}], "regime_changes_s": [...]}
//   DIR/series.f32   raw little-endian float32 in FleetSeries layout [metric][machine][t]
//                    (NaN = missing); exactly metrics*machines*seconds*4 bytes.
//
//   LOOM_RETURN_IF_ERROR(SaveJob(job, "/tmp/job7"));
//   LOOM_ASSIGN_OR_RETURN(LabelledJob back, LoadJob("/tmp/job7"));
//
// LoadJob errors name the file and field (missing file, truncated series, count mismatch,
// fault outside the job). Thread-safety: reentrant; concurrent saves to one dir race.
#pragma once

#include <string>

#include "loom/base/status.h"
#include "loom/monitor/fleet/fleet_series.h"

namespace loom::monitor {

Status SaveJob(const LabelledJob& job, const std::string& dir);
Result<LabelledJob> LoadJob(const std::string& dir);

}  // namespace loom::monitor
