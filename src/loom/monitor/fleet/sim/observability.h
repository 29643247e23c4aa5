// Which simulated faults can be seen at all: the simulator schedules faults whose signature
// exists only while the synchronous job runs (fail_slow stretches the compute phase; link_drop
// cuts the traffic of the communication phase) at times when the job is halted by another
// machine's stall or stopped in an eval / checkpoint pause. A production fault set holds only
// faults someone observed, so the evaluation reports P/R/F1 over all must-alarm faults (the
// headline) and over the observable ones (README, round 5).
//
//   std::vector<double> run = RunningFractions(config, plan, /*detect_window_s=*/900);
//   std::vector<uint8_t> seen = ObservableFaults(plan, run);   // plan order, transients too
//
// Rule: a fault's detection window is [onset, min(end, onset + detect_window_s)) cut at the end
// of the job; its running fraction is the share of those seconds in which the job runs (no
// eval / checkpoint pause, no stall of another machine's root, transients included, halting
// the job; the fault's own stall does not count). A fault whose effect needs a running job
// (fail_slow, link_drop) is observable when its running fraction is >= 0.5
// (kObservableRunningFraction); every other effect (stall, pfc_storm, unreachable, concurrent)
// changes the machine's metrics whether the job runs or not, and is always observable.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/monitor/fleet/sim/fleet_simulator.h"

namespace loom::monitor {

inline constexpr double kObservableRunningFraction = 0.5;

// True for effects whose signature exists only while the job runs: fail_slow, link_drop.
bool NeedsRunningJob(const std::string& effect);

// Per fault of `plan` (plan order): the running fraction of its detection window, in [0, 1]
// (0 for an empty window).
std::vector<double> RunningFractions(const SimConfig& config, const SimPlan& plan,
                                     int64_t detect_window_s);

// Per fault of `plan`: 1 if observable under the rule above. `running` = RunningFractions(...).
std::vector<uint8_t> ObservableFaults(const SimPlan& plan, const std::vector<double>& running);

// Removes the must-alarm faults that are not observable (the simulator option "observable
// only"; transients stay). Stalls are never removed, so the running fractions of the faults
// that stay do not change. Returns how many faults were removed.
int DropUnobservableFaults(const SimConfig& config, int64_t detect_window_s, SimPlan* plan);

}  // namespace loom::monitor
