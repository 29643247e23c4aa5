// Why a detector missed faults: for every must-alarm fault that a replay did not detect, how
// the fault's machine (or a member of its group) stood against the gate's threshold in the
// recorded score trace over the detection window [onset, min(end, onset + 15 min)).
//
//   std::vector<MissDiagnosis> m = DiagnoseMisses(job, trace, order, threshold, need, js);
//   json summary = SummariseMisses(all_misses, threshold);   // counts by type and cause
//
// Causes: "weak" = the machine was at or above the threshold (as top candidate or recorded
// runner-up) for fewer than `need` seconds in total, so no gate could confirm it; "masked" =
// above the threshold long enough, but another machine outscored it (it was only a runner-up)
// so often that it was the top candidate for fewer than `need` seconds; "flicker" = top
// candidate above the threshold for >= need seconds in total, but never held them within one
// gate span or never on one channel. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "loom/monitor/fleet/eval/score_trace.h"
#include "loom/monitor/fleet/eval/scoring.h"
#include "loom/monitor/fleet/fleet_series.h"

namespace loom::monitor {

struct MissDiagnosis {
  std::string type;
  int machine = -1;
  int64_t onset_s = 0;
  int64_t window_s = 0;  // seconds examined: min(duration, detection window)
  int64_t top_s = 0;     // seconds a channel's top candidate was the machine (or group), >= θ
  int64_t masked_s = 0;  // seconds it was >= θ only as a runner-up (another machine on top)
  // The machine's best score over all channels per second (top or runner-up; -inf when it
  // was in neither), 50th and 90th percentile over the window.
  double best_score_p50 = 0, best_score_p90 = 0;
  bool overlapped = false;  // another fault (any machine, transients included) active meanwhile
  std::string cause;        // weak | masked | flicker
};

// `js` must be ScoreAlarms' result for `faults` (its faults follow the must-alarm faults in
// order). `order` = channels walked (empty = all); `need` = candidate seconds the gate needs.
std::vector<MissDiagnosis> DiagnoseMisses(const std::vector<FaultLabel>& faults,
                                          const ScoreTrace& trace, const std::vector<int>& order,
                                          double threshold, int64_t need, const JobScore& js,
                                          int64_t detect_window_s = 900);

// A false alarm next to the job's faults: the fault (transients included) whose interval
// [onset, end) lies nearest to the alarm's second (0 = inside it), and whether the alarm names
// its machine or a member of its group. nearest_type is empty when the job has no faults.
struct FalseAlarmContext {
  int64_t t = 0;
  int machine = -1;
  std::string metric;
  double score = 0;
  std::string nearest_type;
  int nearest_machine = -1;
  int64_t nearest_gap_s = -1;     // seconds between the alarm and the fault's interval
  bool same_group = false;        // the alarm names the fault's machine or a group member
};
FalseAlarmContext DescribeFalseAlarm(const std::vector<FaultLabel>& faults, const AlarmEvent& a);

// {"threshold", "missed", "by_type": {type: {"missed", "weak", "masked", "flicker",
//  "overlapped", "best_score_p90_median"}}}.
nlohmann::json SummariseMisses(const std::vector<MissDiagnosis>& misses, double threshold);

}  // namespace loom::monitor
