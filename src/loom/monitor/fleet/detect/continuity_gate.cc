#include "loom/monitor/fleet/detect/continuity_gate.h"

#include <algorithm>
#include <cmath>

namespace loom::monitor {

double CandidateWeight(const GateOptions& options, int need, double score, bool missing,
                       int agree) {
  if (missing) {
    return options.missing_confirm_s > 0
               ? std::max(1.0, static_cast<double>(need) / options.missing_confirm_s)
               : 1.0;
  }
  if (options.fast_confirm_s <= 0 || !(options.threshold > 0) || !std::isfinite(score) ||
      agree < options.fast_min_channels) {
    return 1.0;
  }
  const double cap = std::max(1.0, static_cast<double>(need) / options.fast_confirm_s);
  return std::clamp(score / options.threshold, 1.0, cap);
}

void ContinuityGate::Reset() {
  last_t_ = std::numeric_limits<int64_t>::min();
  history_.clear();
}

GateDecision ContinuityGate::Step(const ScoreStep& step, int64_t t) {
  const size_t n = step.channels.size();
  const bool contiguous = last_t_ != std::numeric_limits<int64_t>::min() && t == last_t_ + 1;
  const int64_t tc = std::max<int64_t>(1, options_.continuity_s);
  const int need = std::max<int>(
      1, static_cast<int>(std::ceil(std::clamp(options_.min_fraction, 0.0, 1.0) * tc - 1e-9)));
  if (history_.size() != n || !contiguous) {
    history_.assign(n, History{});
    for (History& h : history_) {
      h.ring.assign(tc, -1);
      h.weight.assign(tc, 0.0);
    }
  }
  last_t_ = t;
  cand_.assign(n, -1);
  for (size_t c = 0; c < n; ++c) {
    const ChannelScore& ch = step.channels[c];
    if (ch.machine >= 0 && (ch.missing || ch.score >= options_.threshold)) cand_[c] = ch.machine;
  }
  const int min_channels = std::min<int>(options_.min_channels, static_cast<int>(n));
  if (min_channels > 1) {
    for (size_t c = 0; c < n; ++c) {
      if (cand_[c] < 0 || step.channels[c].missing) continue;
      int agree = 0;
      for (size_t k = 0; k < n; ++k) agree += cand_[k] == cand_[c];
      if (agree < min_channels) cand_[c] = -1;
    }
  }
  const bool weighted = options_.fast_confirm_s > 0 || options_.missing_confirm_s > 0;
  agree_.assign(n, 1);
  if (weighted) {
    for (size_t c = 0; c < n; ++c) {
      if (cand_[c] < 0) continue;
      int agree = 0;
      for (size_t k = 0; k < n; ++k) agree += cand_[k] == cand_[c];
      agree_[c] = agree;
    }
  }
  GateDecision d;
  for (size_t c = 0; c < n; ++c) {
    History& h = history_[c];
    const int cand = cand_[c];
    const int old = h.ring[h.head];
    if (h.filled == h.ring.size() && old >= 0) {
      --h.count[old];
      h.weight_sum[old] = h.count[old] == 0 ? 0.0 : h.weight_sum[old] - h.weight[h.head];
    }
    // fast_min_channels is capped at the channel count (a one-channel detector can go fast).
    const int agree = static_cast<int>(n) < options_.fast_min_channels
                          ? options_.fast_min_channels
                          : agree_[c];
    const double wt = cand < 0 ? 0.0
                               : CandidateWeight(options_, need, step.channels[c].score,
                                                 step.channels[c].missing, agree);
    h.ring[h.head] = cand;
    h.weight[h.head] = wt;
    h.head = (h.head + 1) % h.ring.size();
    h.filled = std::min(h.filled + 1, h.ring.size());
    if (cand >= 0) {
      if (static_cast<size_t>(cand) >= h.count.size()) {
        h.count.resize(cand + 1, 0);
        h.weight_sum.resize(cand + 1, 0.0);
      }
      ++h.count[cand];
      h.weight_sum[cand] += wt;
    }
    if (d.candidate < 0 && cand >= 0) d.candidate = cand;
    const bool held = cand >= 0 && (weighted ? h.weight_sum[cand] >= need - 1e-9
                                              : h.count[cand] >= need);
    if (!d.alert && held) {
      d.alert = true;
      d.machine = cand;
      d.channel = static_cast<int>(c);
      d.missing = step.channels[c].missing;
      d.score = step.channels[c].score;
    }
  }
  return d;
}

}  // namespace loom::monitor
