// ScoreTrace: a ScoredDetector's per-second channel candidates over a whole job, recorded once
// so the cheap continuity gate can be replayed for many thresholds (calibration), continuity
// windows and schedules (streaming every second; batch every 8 min over the last 15 min).
//
//   LOOM_ASSIGN_OR_RETURN(ScoreTrace tr, RecordTrace(*detector, job.series));
//   std::vector<AlarmEvent> a = ReplayStreaming(tr, {.threshold = 4, .continuity_s = 30}, {});
//   std::vector<AlarmEvent> b = ReplayBatch(tr, {4, 240}, {}, /*every_s=*/480, /*lookback_s=*/900);
//
// Thread-safety: value type; replays are pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/monitor/fleet/detect/detector.h"
#include "loom/monitor/fleet/eval/scoring.h"

namespace loom::monitor {

struct ScoreTrace {
  std::vector<std::string> channels;
  int64_t seconds = 0;
  // [t][channel]
  std::vector<int32_t> machine;
  std::vector<float> score;
  std::vector<uint8_t> missing;
  // [t][channel][ChannelScore::kRunnersUp]: the next machines after `machine` (-1 = none) and
  // their scores, for replays that leave already-flagged machines out.
  std::vector<int32_t> runner_machine;
  std::vector<float> runner_score;
  double score_seconds = 0;  // wall time spent in Score()
};

// Calls detector.Score(s, t) for every t (in order, after Reset()).
Result<ScoreTrace> RecordTrace(ScoredDetector& detector, const FleetSeries& s);

// A trace whose channel 0 is `name`, built from channel 0 of `heartbeat` (a HeartbeatDetector
// trace: score = seconds without any data), and whose other channels are `base`'s: a machine
// silent for at least timeout_s seconds is channel 0's candidate with missing = true (score
// +inf); otherwise channel 0 has no candidate. Both traces must cover the same seconds.
Result<ScoreTrace> PrependHeartbeatChannel(const ScoreTrace& heartbeat, const ScoreTrace& base,
                                           double timeout_s, const std::string& name = "heartbeat");

// `order`: channel indices in the priority order to walk (empty = recorded order).
// Concurrency exclusion (exclude_flagged_s > 0): once the gate alerts on a machine at t, that
// machine is left out of every channel's candidates over (t, t + exclude_flagged_s] (as if it
// had been evicted) and each channel's next recorded runner-up stands in for it, so a second
// fault that the flagged machine outscores can still be confirmed. 0 = Minder (argmax only).
// Machine-level continuity (any_channel): a second counts for machine m when any channel's
// candidate (score >= threshold, or missing) is m, and the gate alerts on m once it has
// ceil(min_fraction x T_c) such seconds within the last T_c (named after the first channel in
// `order` naming m that second). Minder's per-channel rule (false) needs one channel to hold
// them; a fault whose strongest metric changes over time then resets its run.
// fast_confirm_s / missing_confirm_s / min_channels do not apply to it.
std::vector<AlarmEvent> ReplayStreaming(const ScoreTrace& trace, const GateOptions& gate,
                                        const std::vector<int>& order, int64_t merge_gap_s = 60,
                                        int64_t exclude_flagged_s = 0, bool any_channel = false);
// One call every `every_s` seconds (first at lookback_s - 1): a fresh gate over the last
// lookback_s seconds; every machine it alerts on becomes an alarm stamped with the call time.
std::vector<AlarmEvent> ReplayBatch(const ScoreTrace& trace, const GateOptions& gate,
                                    const std::vector<int>& order, int64_t every_s,
                                    int64_t lookback_s);

}  // namespace loom::monitor
