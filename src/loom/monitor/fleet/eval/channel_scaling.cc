#include "loom/monitor/fleet/eval/channel_scaling.h"

#include <algorithm>
#include <cmath>

namespace loom::monitor {

std::vector<ScoreTrace> ScaleChannels(const std::vector<ScoreTrace>& traces,
                                      const std::vector<double>& factor) {
  std::vector<ScoreTrace> out = traces;
  constexpr size_t r = ChannelScore::kRunnersUp;
  for (ScoreTrace& tr : out) {
    const size_t c = tr.channels.size();
    const bool runners = tr.runner_score.size() == tr.score.size() * r;
    for (size_t j = 0; j < c && j < factor.size(); ++j) {
      if (factor[j] == 1.0) continue;
      for (int64_t t = 0; t < tr.seconds; ++t) {
        const size_t cell = static_cast<size_t>(t) * c + j;
        float& v = tr.score[cell];
        if (std::isfinite(v)) v = static_cast<float>(v * factor[j]);
        for (size_t k = 0; runners && k < r; ++k) {
          float& u = tr.runner_score[cell * r + k];
          if (std::isfinite(u)) u = static_cast<float>(u * factor[j]);
        }
      }
    }
  }
  return out;
}

std::vector<double> ChannelNormFactors(const std::vector<LabelledJob>& jobs,
                                       const std::vector<ScoreTrace>& traces, double q) {
  if (traces.empty()) return {};
  const size_t nc = traces[0].channels.size();
  std::vector<std::vector<float>> healthy(nc);
  for (size_t k = 0; k < jobs.size() && k < traces.size(); ++k) {
    const ScoreTrace& tr = traces[k];
    std::vector<uint8_t> busy(tr.seconds, 0);
    for (const FaultLabel& f : jobs[k].faults) {
      const int64_t end = std::min(tr.seconds, f.end_s + 60);
      for (int64_t t = std::max<int64_t>(0, f.onset_s); t < end; ++t) busy[t] = 1;
    }
    for (int64_t t = 0; t < tr.seconds; ++t) {
      if (busy[t]) continue;
      for (size_t c = 0; c < nc; ++c) {
        const size_t cell = static_cast<size_t>(t) * nc + c;
        if (!tr.missing[cell] && std::isfinite(tr.score[cell])) {
          healthy[c].push_back(tr.score[cell]);
        }
      }
    }
  }
  std::vector<double> factor(nc, 1.0);
  for (size_t c = 0; c < nc; ++c) {
    std::vector<float>& v = healthy[c];
    if (v.empty()) continue;
    const size_t at = std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1)));
    std::nth_element(v.begin(), v.begin() + at, v.end());
    if (v[at] > 1e-6) factor[c] = 1.0 / v[at];
  }
  return factor;
}

}  // namespace loom::monitor
