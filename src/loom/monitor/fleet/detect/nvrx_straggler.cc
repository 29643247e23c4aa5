// NvrxStragglerDetector (see baselines.h): the formula of NVRx's straggler report
// (nvidia-resiliency-ext straggler/reporting.py), re-implemented: each rank's median section
// time over a window; a rank's performance score = fastest median / own median; < 0.75 = straggler.
#include <algorithm>
#include <cmath>

#include "loom/monitor/fleet/detect/baselines.h"

namespace loom::monitor {

Result<ScoreStep> NvrxStragglerDetector::Score(const FleetSeries& s, int64_t t) {
  if (t < 0 || t >= s.seconds) return InvalidArgumentError("nvrx: t outside the series");
  LOOM_ASSIGN_OR_RETURN(const int m, FindMetric(s, metric_, "nvrx"));
  const int n = s.machines;
  ScoreStep step;
  step.machine_scores.assign(n, NAN);
  ChannelScore ch{metric_};
  const int64_t t0 = std::max<int64_t>(0, t - window_s_ + 1);
  std::vector<float> med(n, NAN), buf;
  std::vector<uint8_t> present(n, 0);
  float fastest = INFINITY;
  for (int i = 0; i < n; ++i) {
    buf.clear();
    const float* row = s.row(m, i);
    for (int64_t u = t0; u <= t; ++u) {
      if (!std::isnan(row[u])) buf.push_back(row[u]);
    }
    if (2 * buf.size() < static_cast<size_t>(t - t0 + 1) || buf.empty()) continue;
    std::nth_element(buf.begin(), buf.begin() + buf.size() / 2, buf.end());
    med[i] = buf[buf.size() / 2];
    present[i] = 1;
    if (med[i] > 0) fastest = std::min(fastest, med[i]);
  }
  if (std::isfinite(fastest) && n >= 2) {
    for (int i = 0; i < n; ++i) {
      if (present[i] && med[i] > 0) step.machine_scores[i] = med[i] / fastest;
    }
    SetTopCandidate(step.machine_scores, &ch);
  }
  MarkMissingCandidate(present, &ch);
  step.channels.push_back(ch);
  return step;
}

}  // namespace loom::monitor
