// FleetSeries: one job's metrics on a 1 s grid (machines x metrics x seconds), the data every
// detector reads, whether it came from the fleet simulator, from recorded real runs or from the
// live collector. Missing samples (an unreachable machine, a gap) are NaN: never zero.
//
//   FleetSeries s = FleetSeries::Make({"cpu_busy", "net_tx"}, /*machines=*/16, /*seconds=*/3600);
//   s.at(/*metric=*/0, /*machine=*/3, /*t=*/120) = 0.93f;
//
// A LabelledJob adds the injected faults (ground truth) and the seed that generated it.
// Thread-safety: value types.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace loom::monitor {

struct FleetSeries {
  std::vector<std::string> metric_names;
  int machines = 0;
  int64_t seconds = 0;
  std::vector<float> values;  // [metric][machine][t], NaN = missing

  static FleetSeries Make(std::vector<std::string> names, int machines, int64_t seconds) {
    FleetSeries s;
    s.metric_names = std::move(names);
    s.machines = machines;
    s.seconds = seconds;
    s.values.assign(s.metric_names.size() * static_cast<size_t>(machines) * seconds, NAN);
    return s;
  }
  int metrics() const { return static_cast<int>(metric_names.size()); }
  float& at(int metric, int machine, int64_t t) {
    return values[(static_cast<size_t>(metric) * machines + machine) * seconds + t];
  }
  float at(int metric, int machine, int64_t t) const {
    return values[(static_cast<size_t>(metric) * machines + machine) * seconds + t];
  }
  // Pointer to the `seconds` samples of one (metric, machine).
  const float* row(int metric, int machine) const {
    return values.data() + (static_cast<size_t>(metric) * machines + machine) * seconds;
  }
};

// One injected fault. `machine` is the root machine; `group` lists machines the fault spread to
// (its 3D-parallel group; empty if none). A fault with `must_alarm == false` is a transient
// shorter than the continuity window: alarming on it is a false alarm.
struct FaultLabel {
  int machine = -1;
  std::string type;  // stall | pfc_storm | link_drop | fail_slow | unreachable | concurrent | transient
  int64_t onset_s = 0;
  int64_t end_s = 0;  // exclusive
  std::vector<int> group;
  bool must_alarm = true;
};

struct LabelledJob {
  FleetSeries series;
  std::vector<FaultLabel> faults;
  std::vector<int64_t> regime_changes_s;  // global events (eval, checkpoint pause) that must not alarm
  uint64_t seed = 0;
};

}  // namespace loom::monitor
