// Windows of one metric cut from a LabelledJob, the data the LSTM-VAE denoisers are trained and
// checked on (Minder, spec fault_detection.md §1 steps 1-3): windows of w consecutive seconds of
// one machine, min-max normalised to [0, 1] like the Minder detector does at run time
// (detect/peer_scores.h ExtractFleetWindow): by the min and max over all machines of the last
// `norm_horizon_s` seconds up to the window's end (0: over the whole job), NaN skipped; a
// constant range maps to 0.5.
//  * healthy windows: no sample missing (NaN) and no sample inside a fault interval that lists
//    the machine as root or group member (transients included);
//  * faulty windows: every sample inside a fault interval of the fault's root machine
//    (must_alarm faults only) and none missing.
//
//   WindowOptions o;  o.window = 8;  o.max_windows = 20000;  o.seed = 1;
//   LOOM_ASSIGN_OR_RETURN(MetricWindows h, CutWindows(job, "cpu_busy", WindowKind::kHealthy, o));
//   // h.values: h.count * 8 floats in [0, 1]
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/monitor/fleet/fleet_series.h"

namespace loom::monitor {

// The job-wide range of one metric; lo == hi when constant; NaN when every sample is missing.
struct MetricRange {
  float lo = NAN;
  float hi = NAN;
};
MetricRange MetricMinMax(const FleetSeries& series, int metric);
// (x - lo) / (hi - lo) clamped to [0, 1]; 0.5 when hi == lo; NaN stays NaN.
float Normalise(float x, const MetricRange& range);

enum class WindowKind { kHealthy, kFaulty };

struct WindowOptions {
  int window = 8;                // samples per window (>= 2)
  int stride = 1;                // seconds between consecutive window ends
  int64_t max_windows = 0;       // > 0: a seeded uniform random subset of at most this many
  uint64_t seed = 0;             // for the subset
  int64_t norm_horizon_s = 600;  // normalisation horizon (MinderOptions' default); 0 = the job
};

struct MetricWindows {
  std::string metric;
  int window = 0;
  int64_t count = 0;
  std::vector<float> values;  // count x window, row-major, normalised
};

// Errors: an unknown metric (naming it and the job's metrics), bad options.
Result<MetricWindows> CutWindows(const LabelledJob& job, const std::string& metric, WindowKind kind,
                                 const WindowOptions& options);

}  // namespace loom::monitor
