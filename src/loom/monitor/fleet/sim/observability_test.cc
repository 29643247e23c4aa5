#include "loom/monitor/fleet/sim/observability.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace loom::monitor {
namespace {

// 16 machines x 5000 s, no random faults or regimes: the plan is written by hand.
SimConfig TinyConfig() {
  SimConfig c;
  c.machines = 16;
  c.seconds = 5000;
  c.faults_per_machine_day = 0;
  c.regime_changes_per_hour = 0;
  c.spikes_per_machine_hour = 0;
  return c;
}

SimRegime Pause(const char* kind, int64_t a, int64_t b) {
  SimRegime r;
  r.kind = kind;
  r.onset_s = a;
  r.end_s = b;
  return r;
}

// stall m0 [1000, 1300) halts the job; fail_slow m9 [1100, 1400) runs 100 of 300 s;
// eval pause [2000, 2150) under link_drop m2 [2000, 2200): 50 of 200 s;
// checkpoint pause [3000, 3450) under fail_slow m11 [3000, 5000): window [3000, 3900), 450 of
// 900 s = exactly 0.5; pfc_storm m12 [1050, 1250) under the stall: 0 running, observable anyway.
SimPlan TinyPlan(const SimConfig& c) {
  SimPlan p;
  p.faults = {MakeFault(c, "stall", 0, 1000, 1300), MakeFault(c, "pfc_storm", 12, 1050, 1250),
              MakeFault(c, "fail_slow", 9, 1100, 1400), MakeFault(c, "link_drop", 2, 2000, 2200),
              MakeFault(c, "fail_slow", 11, 3000, 5000)};
  p.regimes = {Pause("eval_pause", 2000, 2150), Pause("checkpoint_pause", 3000, 3450)};
  return p;
}

TEST(ObservabilityTest, RunningFractionOfTheDetectionWindow) {
  const SimConfig c = TinyConfig();
  const SimPlan p = TinyPlan(c);
  const std::vector<double> run = RunningFractions(c, p, /*detect_window_s=*/900);
  ASSERT_EQ(run.size(), 5u);
  EXPECT_DOUBLE_EQ(run[0], 1.0);  // its own stall does not count
  EXPECT_DOUBLE_EQ(run[1], 0.0);
  EXPECT_DOUBLE_EQ(run[2], 100.0 / 300.0);
  EXPECT_DOUBLE_EQ(run[3], 50.0 / 200.0);
  EXPECT_DOUBLE_EQ(run[4], 0.5);
  EXPECT_EQ(ObservableFaults(p, run), (std::vector<uint8_t>{1, 1, 0, 0, 1}));
  // A shorter detection window moves the last one under the pause: [3000, 3300) is all paused.
  EXPECT_DOUBLE_EQ(RunningFractions(c, p, 300)[4], 0.0);
}

TEST(ObservabilityTest, TwoStallsHaltEachOther) {
  const SimConfig c = TinyConfig();
  SimPlan p;
  p.faults = {MakeFault(c, "stall", 0, 1000, 1200), MakeFault(c, "stall", 8, 1100, 1300)};
  const std::vector<double> run = RunningFractions(c, p, 900);
  EXPECT_DOUBLE_EQ(run[0], 0.5);  // [1100, 1200) halted by machine 8
  EXPECT_DOUBLE_EQ(run[1], 0.5);  // [1100, 1200) halted by machine 0
  EXPECT_EQ(ObservableFaults(p, run), (std::vector<uint8_t>{1, 1}));  // stalls always are
}

TEST(ObservabilityTest, UnobservableFaultsChangeNothingInTheRenderedSeries) {
  // The rule matches the renderer: while the job is halted or paused, the fail_slow root of
  // [1100, 1400) renders exactly as without the fault; once the job runs again it differs.
  const SimConfig c = TinyConfig();
  const SimPlan with = TinyPlan(c);
  SimPlan without = with;
  without.faults.erase(without.faults.begin() + 2);
  const LabelledJob a = RenderJob(c, 7, with), b = RenderJob(c, 7, without);
  const int tensor = 4;
  double halted_diff = 0, running_diff = 0;
  for (int64_t t = 1100; t < 1300; ++t) {
    halted_diff += std::fabs(a.series.at(tensor, 9, t) - b.series.at(tensor, 9, t));
  }
  for (int64_t t = 1300; t < 1400; ++t) {
    running_diff += std::fabs(a.series.at(tensor, 9, t) - b.series.at(tensor, 9, t));
  }
  EXPECT_EQ(halted_diff, 0.0);
  EXPECT_GT(running_diff, 0.0);
}

TEST(ObservabilityTest, DropUnobservableKeepsStallsTransientsAndTheRest) {
  const SimConfig c = TinyConfig();
  SimPlan p = TinyPlan(c);
  SimFault transient = MakeFault(c, "transient", 5, 2010, 2020);  // under the eval pause
  p.faults.push_back(transient);
  EXPECT_EQ(DropUnobservableFaults(c, 900, &p), 2);
  ASSERT_EQ(p.faults.size(), 4u);
  EXPECT_EQ(p.faults[0].label.type, "stall");
  EXPECT_EQ(p.faults[1].label.type, "pfc_storm");
  EXPECT_EQ(p.faults[2].label.machine, 11);
  EXPECT_FALSE(p.faults[3].label.must_alarm);
  // What stays has the same running fractions, and all of it is observable now.
  const std::vector<double> run = RunningFractions(c, p, 900);
  EXPECT_DOUBLE_EQ(run[2], 0.5);
  EXPECT_EQ(ObservableFaults(p, run), (std::vector<uint8_t>{1, 1, 1, 1}));
}

}  // namespace
}  // namespace loom::monitor
