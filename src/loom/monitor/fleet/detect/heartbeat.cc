// HeartbeatDetector (see baselines.h): what a heartbeat/progress watchdog (torchrun, NVRx-FT)
// sees. Channel "heartbeat": seconds since the machine last reported any metric. Channel
// "progress": seconds its progress metric (step time) has not changed. Scans back at most 1 h.
#include <algorithm>
#include <cmath>

#include "loom/monitor/fleet/detect/baselines.h"

namespace loom::monitor {

Result<ScoreStep> HeartbeatDetector::Score(const FleetSeries& s, int64_t t) {
  if (t < 0 || t >= s.seconds) return InvalidArgumentError("heartbeat: t outside the series");
  LOOM_ASSIGN_OR_RETURN(const int pm, FindMetric(s, metric_, "heartbeat"));
  constexpr int64_t kMaxScan = 3600;
  const int n = s.machines;
  ScoreStep step;
  std::vector<float> silent(n, 0.0f), stuck(n, 0.0f);
  for (int i = 0; i < n; ++i) {
    int64_t u = t;
    for (; u >= 0 && t - u < kMaxScan; --u) {
      bool any = false;
      for (int m = 0; m < s.metrics() && !any; ++m) any = !std::isnan(s.at(m, i, u));
      if (any) break;
    }
    silent[i] = static_cast<float>(t - u);
    const float* row = s.row(pm, i);
    int64_t v = t;
    while (v > 0 && t - v < kMaxScan && !std::isnan(row[v]) && row[v - 1] == row[v]) --v;
    stuck[i] = std::isnan(row[t]) ? 0.0f : static_cast<float>(t - v);
  }
  for (int c = 0; c < 2; ++c) {
    const std::vector<float>& x = c == 0 ? silent : stuck;
    ChannelScore ch{c == 0 ? "heartbeat" : "progress"};
    const int best = ArgMax(x);
    if (best >= 0 && x[best] > 0) {
      ch.machine = best;
      ch.score = x[best];
    }
    step.channels.push_back(ch);
  }
  step.machine_scores = silent;
  return step;
}

}  // namespace loom::monitor
