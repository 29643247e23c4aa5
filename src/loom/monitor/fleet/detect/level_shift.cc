#include "loom/monitor/fleet/detect/level_shift.h"

#include <algorithm>
#include <cmath>

#include "loom/monitor/fleet/detect/peer_scores.h"

namespace loom::monitor {
namespace {

// Median of the finite values of v (reorders v); NaN when fewer than `min_count`.
float MedianOf(std::vector<float>& v, size_t min_count) {
  v.erase(std::remove_if(v.begin(), v.end(), [](float x) { return !std::isfinite(x); }), v.end());
  if (v.empty() || v.size() < min_count) return NAN;
  const size_t h = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + h, v.end());
  if (v.size() % 2) return v[h];
  const float hi = v[h];
  return 0.5f * (hi + *std::max_element(v.begin(), v.begin() + h));
}

}  // namespace

std::string LevelShiftChannelName(const std::string& metric, int64_t window_s) {
  return metric + "~" + std::to_string(window_s) + "s";
}

void LevelShiftChannels::Sync(const FleetSeries& s) {
  if (data_ == s.values.data() && seconds_ == s.seconds && machines_ == s.machines &&
      names_ == s.metric_names) {
    return;
  }
  data_ = s.values.data();
  seconds_ = s.seconds;
  machines_ = s.machines;
  names_ = s.metric_names;
  const size_t rows = static_cast<size_t>(s.metrics()) * s.machines;
  const size_t nb = static_cast<size_t>(s.seconds / std::max<int64_t>(1, options_.block_s)) + 1;
  blocks_.assign(rows, std::vector<float>(nb, NAN));
  done_.assign(rows, std::vector<uint8_t>(nb, 0));
  fleet_median_.assign(s.metrics(), std::vector<float>(nb, NAN));
  fleet_done_.assign(s.metrics(), std::vector<uint8_t>(nb, 0));
  z_block_.assign(s.metrics(), -2);
  ref_end_.assign(s.metrics(), -1);
  ref_.assign(s.metrics(), {});
  frozen_since_.assign(s.metrics(), {});
  excluded_.assign(s.metrics(), {});
  ref_range_.assign(s.metrics(), NAN);
  z_cache_.assign(s.metrics(), {});
}

float LevelShiftChannels::BlockMean(const FleetSeries& s, int metric, int machine, int64_t b) {
  const size_t r = static_cast<size_t>(metric) * s.machines + machine;
  if (done_[r][b]) return blocks_[r][b];
  const int64_t B = options_.block_s;
  const float* x = s.row(metric, machine) + b * B;
  double sum = 0;
  int64_t n = 0;
  for (int64_t k = 0; k < B; ++k) {
    if (std::isfinite(x[k])) {
      sum += x[k];
      ++n;
    }
  }
  done_[r][b] = 1;
  blocks_[r][b] = 2 * n >= B ? static_cast<float>(sum / static_cast<double>(n)) : NAN;
  return blocks_[r][b];
}

float LevelShiftChannels::Residual(const FleetSeries& s, int metric, int machine, int64_t b) {
  const size_t k = static_cast<size_t>(metric);
  if (!fleet_done_[k][b]) {
    buf2_.clear();
    for (int i = 0; i < s.machines; ++i) buf2_.push_back(BlockMean(s, metric, i, b));
    fleet_done_[k][b] = 1;
    fleet_median_[k][b] = MedianOf(buf2_, static_cast<size_t>((s.machines + 1) / 2));
  }
  return BlockMean(s, metric, machine, b) - fleet_median_[k][b];
}

std::vector<float> LevelShiftChannels::ShiftZ(const FleetSeries& s, int metric, int64_t t) {
  const int n = s.machines;
  std::vector<float> z(n, NAN);
  const int64_t B = options_.block_s;
  if (options_.window_s <= 0 || B < 1 || n < 3 || t < 0 || t >= s.seconds) return z;
  Sync(s);
  const int64_t last = (t + 1) / B - 1;  // last complete block
  if (z_block_[metric] == last) return z_cache_[metric];  // scores change once per block
  z_block_[metric] = last;
  z_cache_[metric] = z;
  const int64_t nw = std::max<int64_t>(1, options_.window_s / B);
  const int64_t w0 = last - nw + 1;
  // The reference ends at the latest block a <= w0 with a = metric (mod kRefStagger): each
  // metric's reference is recomputed once every kRefStagger blocks, one metric per block, which
  // bounds the cost of a call (N = 1024: 8 metrics x 1024 machines x 200 blocks would be
  // ~0.1 s every block).
  const int64_t a = w0 - (((w0 - metric) % kRefStagger) + kRefStagger) % kRefStagger;
  if (a < MinRefBlocks()) return z;
  if (ref_end_[metric] != a) UpdateReference(s, metric, a);
  WindowZ(s, metric, w0, last, ref_[metric], ref_range_[metric], &z);
  z_cache_[metric] = z;
  return z;
}

int64_t LevelShiftChannels::MinRefBlocks() const {
  return std::max<int64_t>(1, options_.min_ref_s / options_.block_s);
}

std::vector<float> LevelShiftChannels::FreshReference(const FleetSeries& s, int metric,
                                                      int64_t a, float* range) {
  const int n = s.machines;
  const int64_t nr = std::max<int64_t>(1, options_.ref_s / options_.block_s);
  const int64_t r0 = std::max<int64_t>(0, a - nr);
  std::vector<float> ref(n, NAN);
  float lo = INFINITY, hi = -INFINITY;
  const std::vector<std::vector<BlockSpan>>* skip =
      excluded_[metric].size() == static_cast<size_t>(n) ? &excluded_[metric] : nullptr;
  for (int i = 0; i < n; ++i) {
    buf_.clear();
    int64_t left_out = 0;
    for (int64_t b = r0; b < a; ++b) {
      if (skip && !(*skip)[i].empty() &&
          std::any_of((*skip)[i].begin(), (*skip)[i].end(),
                      [b](const BlockSpan& x) { return b >= x.first && b < x.second; })) {
        ++left_out;
        continue;
      }
      buf_.push_back(Residual(s, metric, i, b));
      const float v = BlockMean(s, metric, i, b);  // the metric's range over the reference
      if (std::isfinite(v)) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
    const int64_t kept = a - r0 - left_out;
    ref[i] = kept >= MinRefBlocks() ? MedianOf(buf_, static_cast<size_t>(3 * kept / 4)) : NAN;
  }
  *range = hi >= lo ? hi - lo : NAN;
  return ref;
}

void LevelShiftChannels::UpdateReference(const FleetSeries& s, int metric, int64_t a) {
  if (options_.freeze_z <= 0) {
    ref_[metric] = FreshReference(s, metric, a, &ref_range_[metric]);
    ref_end_[metric] = a;
    return;
  }
  // A frozen reference depends on every earlier refresh: walk the metric's refresh points in
  // order, from the last one computed (or the first one) up to a, so the result does not
  // depend on the order of calls.
  const int n = s.machines;
  int64_t b = ref_end_[metric] + kRefStagger;
  if (ref_end_[metric] < 0 || ref_end_[metric] > a) {
    const int64_t m0 = MinRefBlocks();
    b = m0 + (((metric - m0) % kRefStagger) + kRefStagger) % kRefStagger;
    ref_[metric].clear();
    frozen_since_[metric].assign(n, -1);
    excluded_[metric].assign(n, {});
  }
  const int64_t nw = std::max<int64_t>(1, options_.window_s / options_.block_s);
  const int64_t max_blocks =
      std::max<int64_t>(1, (options_.freeze_max_s > 0 ? options_.freeze_max_s : options_.ref_s) /
                               options_.block_s);
  const int64_t nr = std::max<int64_t>(1, options_.ref_s / options_.block_s);
  std::vector<float> zprev;
  for (; b <= a; b += kRefStagger) {
    std::vector<float>& ref = ref_[metric];
    std::vector<int64_t>& since = frozen_since_[metric];
    std::vector<std::vector<BlockSpan>>& skip = excluded_[metric];
    std::vector<uint8_t> renew(n, 1);
    if (!ref.empty() && b - nw >= 0) {
      // The machine's level just before b against its current reference.
      zprev.assign(n, NAN);
      WindowZ(s, metric, b - nw, b - 1, ref, ref_range_[metric], &zprev);
      for (int i = 0; i < n; ++i) {
        const bool deviates = std::isfinite(zprev[i]) && std::isfinite(ref[i]) &&
                              std::fabs(zprev[i]) >= options_.freeze_z;
        if (deviates && (since[i] < 0 || b - since[i] < max_blocks)) {
          if (since[i] < 0) since[i] = b;  // keep ref[i]
          renew[i] = 0;
        } else if (since[i] >= 0) {
          // Back to normal: the deviating blocks (from the window that first deviated) stay
          // out of this machine's reference until they age out of it. After freeze_max_s the
          // new level is accepted instead.
          if (!deviates) skip[i].push_back({since[i] - nw, b});
          since[i] = -1;
        }
        std::erase_if(skip[i], [&](const BlockSpan& x) { return x.second <= b - nr; });
      }
    }
    float range = NAN;
    std::vector<float> fresh = FreshReference(s, metric, b, &range);
    if (ref.empty()) {
      ref = std::move(fresh);
    } else {
      for (int i = 0; i < n; ++i) {
        if (renew[i]) ref[i] = fresh[i];
      }
    }
    ref_range_[metric] = range;
    ref_end_[metric] = b;
  }
}

void LevelShiftChannels::WindowZ(const FleetSeries& s, int metric, int64_t w0, int64_t last,
                                 const std::vector<float>& ref, float ref_range,
                                 std::vector<float>* z) {
  const int n = s.machines;
  const int64_t nw = last - w0 + 1;
  delta_.assign(n, NAN);
  present_.assign(n, 0);
  float lo = INFINITY, hi = -INFINITY;
  for (int i = 0; i < n; ++i) {
    buf_.clear();
    for (int64_t b = w0; b <= last; ++b) {
      buf_.push_back(Residual(s, metric, i, b));
      const float v = BlockMean(s, metric, i, b);
      if (std::isfinite(v)) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
    // Every window block must be there: a machine with gaps would compare another time span.
    const float now = MedianOf(buf_, static_cast<size_t>(nw));
    if (!std::isfinite(now) || !std::isfinite(ref[i])) continue;
    delta_[i] = now - ref[i];
    present_[i] = 1;
  }
  const double range = std::max(static_cast<double>(hi >= lo ? hi - lo : 0),
                                std::isfinite(ref_range) ? ref_range : 0.0);
  const double floor = std::max(options_.scale_floor * range, 1e-9);
  RobustZ(delta_, present_, floor, *z);
}

void LevelShiftChannels::Add(const FleetSeries& s, int64_t t, const std::vector<int>& metrics,
                             ScoreStep* step) {
  if (options_.window_s <= 0) return;
  for (int m : metrics) {
    ChannelScore ch{LevelShiftChannelName(s.metric_names[m], options_.window_s)};
    z_ = ShiftZ(s, m, t);
    bool any = false;
    for (float& v : z_) {
      v = static_cast<float>(options_.weight) * std::fabs(v);
      any |= std::isfinite(v);
    }
    if (any) SetTopCandidate(z_, &ch);
    step->channels.push_back(std::move(ch));
  }
}

}  // namespace loom::monitor
