#include "loom/monitor/fleet/detect/minder.h"

#include <algorithm>
#include <cmath>

#include "loom/monitor/fleet/detect/denoisers.h"

namespace loom::monitor {

DenoiserFactory BuiltinDenoisers(const std::string& type) {
  return [type](const std::string&) -> Result<std::unique_ptr<Denoiser>> {
    return MakeBuiltinDenoiser(type);
  };
}

MinderDetector::MinderDetector(MinderOptions options, GateOptions gate, DenoiserFactory denoisers)
    : ScoredDetector(gate),
      options_(std::move(options)),
      make_denoiser_(std::move(denoisers)),
      shift_(options_.shift) {}

std::string MinderDetector::name() const {
  std::string n = options_.integrated ? "minder_integrated" : "minder";
  if (options_.corroborate > 0) n += "_corr" + std::to_string(options_.corroborate);
  if (options_.long_window_s > 0) n += "_long" + std::to_string(options_.long_window_s);
  if (options_.shift.window_s > 0) n += "_shift" + std::to_string(options_.shift.window_s);
  return n + "(" + options_.denoiser + ",w=" + std::to_string(options_.window) +
         ",T_c=" + std::to_string(gate_options().continuity_s) + ")";
}

Status MinderDetector::Prepare(const FleetSeries& s) {
  if (prepared_for_ == s.metric_names && !denoisers_.empty()) return Status();
  order_.clear();
  denoisers_.clear();
  std::vector<uint8_t> used(s.metrics(), 0);
  for (const std::string& name : options_.priority) {
    auto it = std::find(s.metric_names.begin(), s.metric_names.end(), name);
    if (it == s.metric_names.end()) {
      return InvalidArgumentError("minder: priority names metric '" + name +
                                  "' which the series does not have");
    }
    const int m = static_cast<int>(it - s.metric_names.begin());
    if (!used[m]) order_.push_back(m);
    used[m] = 1;
  }
  for (int m = 0; m < s.metrics(); ++m) {
    if (!used[m]) order_.push_back(m);
  }
  if (options_.max_metrics > 0 && static_cast<int>(order_.size()) > options_.max_metrics) {
    order_.resize(options_.max_metrics);
  }
  for (int m : order_) {
    LOOM_ASSIGN_OR_RETURN(std::unique_ptr<Denoiser> d, make_denoiser_(s.metric_names[m]));
    denoisers_.push_back(std::move(d));
  }
  prepared_for_ = s.metric_names;
  return Status();
}

Result<ScoreStep> MinderDetector::Score(const FleetSeries& s, int64_t t) {
  if (options_.window < 2) return InvalidArgumentError("minder: window must be >= 2");
  if (t < 0 || t >= s.seconds) {
    return InvalidArgumentError("minder: t=" + std::to_string(t) + " outside the series [0, " +
                                std::to_string(s.seconds) + ")");
  }
  LOOM_RETURN_IF_ERROR(Prepare(s));
  const int n = s.machines, w = options_.window;
  ScoreStep step;
  step.machine_scores.assign(n, NAN);
  const bool single = options_.integrated || options_.corroborate > 0;
  const int channels = single ? 1 : static_cast<int>(order_.size());
  const std::string single_name =
      options_.integrated ? "all" : "top" + std::to_string(options_.corroborate);
  if (t < w - 1 || n < 3) {  // N = 2 is symmetric: no outlier can be named
    for (int c = 0; c < channels; ++c) {
      step.channels.push_back({single ? single_name : s.metric_names[order_[c]]});
    }
    if (!single) {
      AddLongWindowChannels(s, t, &step);
      shift_.Add(s, t, order_, &step);
    }
    return step;
  }
  if (options_.corroborate > 0) all_z_.assign(order_.size() * static_cast<size_t>(n), NAN);
  std::vector<uint8_t> any_missing(options_.corroborate > 0 ? n : 0, 0);
  sums_.resize(n);
  z_.resize(n);
  if (options_.integrated) {
    int d_total = 0;
    for (size_t c = 0; c < order_.size(); ++c) d_total += denoisers_[c]->embedding_size(w);
    emb_.assign(static_cast<size_t>(n) * d_total, 0.0f);
    present_all_.assign(n, 1);
    int offset = 0;
    for (size_t c = 0; c < order_.size(); ++c) {
      ExtractFleetWindow(s, order_[c], t, w, options_.norm_horizon_s, &win_);
      const int d = denoisers_[c]->embedding_size(w);
      for (int i = 0; i < n; ++i) {
        if (!win_.present[i]) {
          present_all_[i] = 0;
          continue;
        }
        denoisers_[c]->Denoise({win_.values.data() + static_cast<size_t>(i) * w, size_t(w)},
                               {emb_.data() + static_cast<size_t>(i) * d_total + offset, size_t(d)});
      }
      offset += d;
    }
    ChannelScore ch{"all"};
    PeerDistanceSums(emb_.data(), n, d_total, present_all_.data(), options_.distance, sums_.data());
    RobustZ(sums_, present_all_, options_.scale_floor * std::sqrt(order_.size()), z_);
    SetTopCandidate(z_, &ch);
    MarkMissingCandidate(present_all_, &ch);
    step.machine_scores = z_;
    step.channels.push_back(ch);
    return step;
  }
  for (size_t c = 0; c < order_.size(); ++c) {
    const int m = order_[c];
    ChannelScore ch{s.metric_names[m]};
    ExtractFleetWindow(s, m, t, w, options_.norm_horizon_s, &win_);
    const int d = denoisers_[c]->embedding_size(w);
    emb_.assign(static_cast<size_t>(n) * d, 0.0f);
    for (int i = 0; i < n; ++i) {
      if (!win_.present[i]) continue;
      denoisers_[c]->Denoise({win_.values.data() + static_cast<size_t>(i) * w, size_t(w)},
                             {emb_.data() + static_cast<size_t>(i) * d, size_t(d)});
    }
    PeerDistanceSums(emb_.data(), n, d, win_.present.data(), options_.distance, sums_.data());
    RobustZ(sums_, win_.present, options_.scale_floor, z_);
    SetTopCandidate(z_, &ch);
    MarkMissingCandidate(win_.present, &ch);
    if (options_.corroborate > 0) {
      std::copy(z_.begin(), z_.end(), all_z_.begin() + c * static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) any_missing[i] |= !win_.present[i];
      continue;
    }
    if (c == 0) step.machine_scores = z_;
    step.channels.push_back(std::move(ch));
  }
  if (options_.corroborate > 0) {
    Corroborate(s, any_missing, &step);
  } else {
    AddLongWindowChannels(s, t, &step);
    shift_.Add(s, t, order_, &step);
  }
  return step;
}

std::string LongWindowChannelName(const std::string& metric, int64_t long_window_s) {
  return metric + "@" + std::to_string(long_window_s) + "s";
}

void MinderDetector::AddLongWindowChannels(const FleetSeries& s, int64_t t, ScoreStep* step) {
  const int64_t len = options_.long_window_s;
  if (len <= 0) return;
  const int n = s.machines;
  const int w = static_cast<int>(len);
  long_level_.resize(n);
  z_.resize(n);
  for (int m : order_) {
    ChannelScore ch{LongWindowChannelName(s.metric_names[m], len)};
    if (t >= len - 1 && n >= 3) {
      ExtractFleetWindow(s, m, t, w, std::max(options_.norm_horizon_s, len), &win_);
      // Per-machine median, not mean: a spike or transient shorter than L/2 cannot move it.
      long_buf_.resize(w);
      for (int i = 0; i < n; ++i) {
        if (!win_.present[i]) {
          long_level_[i] = NAN;
          continue;
        }
        const float* v = win_.values.data() + static_cast<size_t>(i) * w;
        std::copy(v, v + w, long_buf_.begin());
        std::nth_element(long_buf_.begin(), long_buf_.begin() + w / 2, long_buf_.end());
        long_level_[i] = long_buf_[w / 2];
      }
      RobustZ(long_level_, win_.present, options_.long_scale_floor, z_);
      for (float& v : z_) v = static_cast<float>(options_.long_weight) * std::fabs(v);
      SetTopCandidate(z_, &ch);
      MarkMissingCandidate(win_.present, &ch);
    }
    step->channels.push_back(std::move(ch));
  }
}

void MinderDetector::Corroborate(const FleetSeries& s, const std::vector<uint8_t>& any_missing,
                                 ScoreStep* step) {
  const int n = s.machines, c_total = static_cast<int>(order_.size());
  const int k = std::min(options_.corroborate, c_total);
  std::vector<std::pair<float, int>> zs(c_total);
  std::vector<uint8_t> present(n);
  for (int i = 0; i < n; ++i) {
    present[i] = !any_missing[i];
    if (!present[i]) {
      step->machine_scores[i] = NAN;
      continue;
    }
    for (int c = 0; c < c_total; ++c) {
      const float z = all_z_[c * static_cast<size_t>(n) + i];
      zs[c] = {std::isnan(z) ? -INFINITY : z, c};
    }
    std::nth_element(zs.begin(), zs.begin() + (k - 1), zs.end(), std::greater<>());
    step->machine_scores[i] = zs[k - 1].first;
  }
  ChannelScore ch{"top" + std::to_string(options_.corroborate)};
  const int best = ArgMax(step->machine_scores);
  if (best >= 0 && std::isfinite(step->machine_scores[best])) {
    ch.machine = best;
    ch.score = step->machine_scores[best];
    for (int c = 0; c < c_total; ++c) zs[c] = {all_z_[c * static_cast<size_t>(n) + best], c};
    std::partial_sort(zs.begin(), zs.begin() + k, zs.end(), std::greater<>());
    ch.metric.clear();
    for (int j = 0; j < k; ++j) {
      ch.metric += (j ? "+" : "") + s.metric_names[order_[zs[j].second]];
    }
  }
  MarkMissingCandidate(present, &ch);
  if (ch.missing) ch.metric = "all";
  step->channels.push_back(std::move(ch));
}

}  // namespace loom::monitor
