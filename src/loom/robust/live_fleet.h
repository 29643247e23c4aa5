// LiveFleet: the collector side of the driver. It aligns what executors report in heartbeats to
// a 1 s grid per (machine, metric) — CPU rate of the rank, forward+backward time per step,
// collective bytes per second — with NaN for seconds a machine reported nothing (never zero),
// and exposes the last `horizon_s` seconds as a FleetSeries, the input of every detector in
// monitor/fleet/detect (Minder and the baselines). The driver runs the detector chosen with
// `loom robust --detector SPEC` on it every second and feeds its verdicts to Policy::OnAlert.
//
//   LiveFleet fleet({"m0", "m1", "m2"}, /*horizon_s=*/600);
//   fleet.Add(hb, now_s);
//   monitor::FleetSeries s = fleet.Series(now_s);   // seconds = min(horizon, elapsed)
//
// Thread-safety: not thread-safe (the driver's thread).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "loom/monitor/fleet/fleet_series.h"
#include "loom/robust/heartbeat.h"

namespace loom::robust {

class LiveFleet {
 public:
  LiveFleet(std::vector<std::string> machines, int64_t horizon_s, double start_s);
  // Metric names of the series, in order.
  static const std::vector<std::string>& MetricNames();
  void Add(const Heartbeat& hb, double now_s);
  // The last min(horizon, elapsed) whole seconds; the newest second is the last sample.
  monitor::FleetSeries Series(double now_s) const;
  const std::vector<std::string>& machines() const { return machines_; }

 private:
  struct Cell {
    double sum[3] = {0, 0, 0};
    int n[3] = {0, 0, 0};
  };
  std::vector<std::string> machines_;
  int64_t horizon_s_;
  double start_s_;
  std::map<std::string, std::map<int64_t, Cell>> cells_;  // machine -> second -> sums
  std::map<std::string, std::pair<double, int64_t>> last_bytes_;  // machine -> (time, bytes)
};

}  // namespace loom::robust
