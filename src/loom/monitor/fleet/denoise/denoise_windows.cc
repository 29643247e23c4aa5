#include "loom/monitor/fleet/denoise/denoise_windows.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <random>

namespace loom::monitor {
namespace {

// Per second of one machine: true where a fault interval (root or group) covers it.
std::vector<uint8_t> FaultMask(const LabelledJob& job, int machine, WindowKind kind) {
  std::vector<uint8_t> mask(static_cast<size_t>(job.series.seconds), 0);
  for (const FaultLabel& f : job.faults) {
    bool hit = f.machine == machine;
    if (kind == WindowKind::kHealthy) {
      hit = hit || std::find(f.group.begin(), f.group.end(), machine) != f.group.end();
    } else {
      hit = hit && f.must_alarm;
    }
    if (!hit) continue;
    const int64_t lo = std::clamp<int64_t>(f.onset_s, 0, job.series.seconds);
    const int64_t hi = std::clamp<int64_t>(f.end_s, 0, job.series.seconds);
    for (int64_t t = lo; t < hi; ++t) mask[t] = 1;
  }
  return mask;
}

// Per second t: the min and max over all machines of [t - horizon + 1, t] (horizon <= 0: the
// whole job), by a monotonic deque over the per-second fleet extremes.
std::vector<MetricRange> HorizonRanges(const FleetSeries& s, int metric, int64_t horizon) {
  const int64_t T = s.seconds;
  std::vector<MetricRange> per_t(static_cast<size_t>(T));
  for (int i = 0; i < s.machines; ++i) {
    const float* x = s.row(metric, i);
    for (int64_t t = 0; t < T; ++t) {
      if (std::isnan(x[t])) continue;
      MetricRange& r = per_t[t];
      if (std::isnan(r.lo) || x[t] < r.lo) r.lo = x[t];
      if (std::isnan(r.hi) || x[t] > r.hi) r.hi = x[t];
    }
  }
  if (horizon <= 0) {
    const MetricRange all = MetricMinMax(s, metric);
    return std::vector<MetricRange>(per_t.size(), all);
  }
  std::vector<MetricRange> out(per_t.size());
  std::deque<int64_t> lo_q, hi_q;  // candidate indices, values increasing / decreasing
  for (int64_t t = 0; t < T; ++t) {
    if (!std::isnan(per_t[t].lo)) {
      while (!lo_q.empty() && per_t[lo_q.back()].lo >= per_t[t].lo) lo_q.pop_back();
      lo_q.push_back(t);
      while (!hi_q.empty() && per_t[hi_q.back()].hi <= per_t[t].hi) hi_q.pop_back();
      hi_q.push_back(t);
    }
    while (!lo_q.empty() && lo_q.front() <= t - horizon) lo_q.pop_front();
    while (!hi_q.empty() && hi_q.front() <= t - horizon) hi_q.pop_front();
    if (!lo_q.empty()) out[t] = {per_t[lo_q.front()].lo, per_t[hi_q.front()].hi};
  }
  return out;
}

}  // namespace

MetricRange MetricMinMax(const FleetSeries& s, int metric) {
  MetricRange r;
  const float* p = s.row(metric, 0);
  const size_t n = static_cast<size_t>(s.machines) * s.seconds;
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(p[i])) continue;
    if (std::isnan(r.lo) || p[i] < r.lo) r.lo = p[i];
    if (std::isnan(r.hi) || p[i] > r.hi) r.hi = p[i];
  }
  return r;
}

float Normalise(float x, const MetricRange& r) {
  if (std::isnan(x)) return x;
  if (!(r.hi > r.lo)) return 0.5f;
  return std::clamp((x - r.lo) / (r.hi - r.lo), 0.f, 1.f);
}

Result<MetricWindows> CutWindows(const LabelledJob& job, const std::string& metric, WindowKind kind,
                                 const WindowOptions& o) {
  const FleetSeries& s = job.series;
  auto it = std::find(s.metric_names.begin(), s.metric_names.end(), metric);
  if (it == s.metric_names.end()) {
    std::string known;
    for (const std::string& m : s.metric_names) known += (known.empty() ? "" : ",") + m;
    return InvalidArgumentError("metric '" + metric + "' is not in the job (metrics: " + known +
                                ")");
  }
  if (o.window < 2)
    return InvalidArgumentError("window must be >= 2, got " + std::to_string(o.window));
  if (o.stride < 1)
    return InvalidArgumentError("stride must be >= 1, got " + std::to_string(o.stride));
  const int m = static_cast<int>(it - s.metric_names.begin());
  MetricWindows out;
  out.metric = metric;
  out.window = o.window;
  if (o.norm_horizon_s < 0) {
    return InvalidArgumentError("norm_horizon_s must be >= 0, got " +
                                std::to_string(o.norm_horizon_s));
  }
  const std::vector<MetricRange> ranges =
      HorizonRanges(s, m, o.norm_horizon_s > 0 ? std::max<int64_t>(o.window, o.norm_horizon_s) : 0);
  // Window ends (machine, t): windows cover [t - w + 1, t].
  std::vector<std::pair<int, int64_t>> ends;
  for (int machine = 0; machine < s.machines; ++machine) {
    const std::vector<uint8_t> fault = FaultMask(job, machine, kind);
    const float* x = s.row(m, machine);
    int64_t run = 0;  // consecutive usable seconds ending at t
    for (int64_t t = 0; t < s.seconds; ++t) {
      const bool usable =
          !std::isnan(x[t]) && (kind == WindowKind::kHealthy ? !fault[t] : fault[t] != 0);
      run = usable ? run + 1 : 0;
      if (run >= o.window && (t - (o.window - 1)) % o.stride == 0) ends.emplace_back(machine, t);
    }
  }
  if (o.max_windows > 0 && static_cast<int64_t>(ends.size()) > o.max_windows) {
    std::mt19937_64 rng(o.seed);
    for (int64_t i = 0; i < o.max_windows; ++i) {  // partial Fisher-Yates
      std::uniform_int_distribution<int64_t> pick(i, static_cast<int64_t>(ends.size()) - 1);
      std::swap(ends[i], ends[pick(rng)]);
    }
    ends.resize(o.max_windows);
    std::sort(ends.begin(), ends.end());
  }
  out.count = static_cast<int64_t>(ends.size());
  out.values.reserve(ends.size() * o.window);
  for (const auto& [machine, t] : ends) {
    const float* x = s.row(m, machine);
    for (int64_t k = t - o.window + 1; k <= t; ++k) {
      out.values.push_back(Normalise(x[k], ranges[t]));
    }
  }
  return out;
}

}  // namespace loom::monitor
