#include "loom/robust/live_fleet.h"

#include <cmath>

namespace loom::robust {

LiveFleet::LiveFleet(std::vector<std::string> machines, int64_t horizon_s, double start_s)
    : machines_(std::move(machines)), horizon_s_(horizon_s), start_s_(start_s) {}

const std::vector<std::string>& LiveFleet::MetricNames() {
  static const std::vector<std::string> names = {"cpu_rate", "compute_s", "coll_bytes_rate"};
  return names;
}

void LiveFleet::Add(const Heartbeat& hb, double now_s) {
  auto& cells = cells_[hb.machine];
  const int64_t sec = static_cast<int64_t>(std::floor(now_s - start_s_));
  Cell& c = cells[sec];
  auto put = [&c](int metric, double v) {
    if (!std::isfinite(v) || v < 0) return;  // not reported: stays missing
    c.sum[metric] += v;
    c.n[metric] += 1;
  };
  if (hb.state != '-') put(0, hb.cpu_rate);
  put(1, hb.compute_s);
  auto it = last_bytes_.find(hb.machine);
  if (it != last_bytes_.end() && now_s > it->second.first && hb.coll_bytes >= it->second.second) {
    put(2, static_cast<double>(hb.coll_bytes - it->second.second) / (now_s - it->second.first));
  }
  last_bytes_[hb.machine] = {now_s, hb.coll_bytes};
  while (!cells.empty() && cells.begin()->first < sec - horizon_s_) cells.erase(cells.begin());
}

monitor::FleetSeries LiveFleet::Series(double now_s) const {
  const int64_t newest = static_cast<int64_t>(std::floor(now_s - start_s_)) - 1;  // complete
  const int64_t seconds = std::max<int64_t>(0, std::min(horizon_s_, newest + 1));
  monitor::FleetSeries s = monitor::FleetSeries::Make(MetricNames(),
                                                      static_cast<int>(machines_.size()), seconds);
  for (size_t i = 0; i < machines_.size(); ++i) {
    auto it = cells_.find(machines_[i]);
    if (it == cells_.end()) continue;
    for (int64_t t = 0; t < seconds; ++t) {
      auto c = it->second.find(newest - seconds + 1 + t);
      if (c == it->second.end()) continue;
      for (int m = 0; m < 3; ++m) {
        if (c->second.n[m] > 0) {
          s.at(m, static_cast<int>(i), t) = static_cast<float>(c->second.sum[m] / c->second.n[m]);
        }
      }
    }
  }
  return s;
}

}  // namespace loom::robust
