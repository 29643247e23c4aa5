// PeerZDetector (see baselines.h).
#include <cmath>

#include "loom/monitor/fleet/detect/baselines.h"

namespace loom::monitor {

Result<ScoreStep> PeerZDetector::Score(const FleetSeries& s, int64_t t) {
  if (t < 0 || t >= s.seconds) return InvalidArgumentError("peer_z: t outside the series");
  const int n = s.machines;
  ScoreStep step;
  std::vector<float> x(n), z(n);
  std::vector<uint8_t> present(n);
  for (int m = 0; m < s.metrics(); ++m) {
    ChannelScore ch{s.metric_names[m]};
    float lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; ++i) {
      x[i] = s.at(m, i, t);
      present[i] = !std::isnan(x[i]);
      if (present[i]) {
        lo = std::min(lo, x[i]);
        hi = std::max(hi, x[i]);
      }
    }
    // Scale floor: a tiny fraction of the fleet's spread, so identical machines give z = 0.
    const double floor = 1e-6 * std::max(1.0f, std::max(std::fabs(lo), std::fabs(hi)));
    RobustZ(x, present, floor, z);
    for (float& v : z) v = std::fabs(v);
    if (n >= 3) {
      const int best = ArgMax(z);
      if (best >= 0) {
        ch.machine = best;
        ch.score = z[best];
      }
      MarkMissingCandidate(present, &ch);
    }
    if (m == 0) step.machine_scores = z;
    step.channels.push_back(std::move(ch));
  }
  return step;
}

}  // namespace loom::monitor
