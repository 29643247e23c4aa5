// Test fixture of the detector tests (detect_test.cc, adaptive_gate_test.cc, level_shift_test.cc;
// not part of the library API): a hand-built fleet (no simulator) whose every sample comes from
// the test's own waveform, noise and perturbation.
// Thread-safety: plain functions.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "loom/monitor/fleet/fleet_series.h"

namespace loom::monitor::fleet_testing {

// A fleet of `machines` x `seconds` samples of `metrics`. `sample(machine, t, values)` sets
// values[m] for every metric m; it is called machine by machine and, within a machine, second
// by second (the order a seeded generator inside it is drawn in).
inline FleetSeries SyntheticFleet(
    std::vector<std::string> metrics, int machines, int64_t seconds,
    const std::function<void(int machine, int64_t t, std::span<float> values)>& sample) {
  FleetSeries s = FleetSeries::Make(std::move(metrics), machines, seconds);
  std::vector<float> values(s.metrics());
  for (int i = 0; i < machines; ++i) {
    for (int64_t t = 0; t < seconds; ++t) {
      sample(i, t, values);
      for (int m = 0; m < s.metrics(); ++m) s.at(m, i, t) = values[m];
    }
  }
  return s;
}

}  // namespace loom::monitor::fleet_testing
