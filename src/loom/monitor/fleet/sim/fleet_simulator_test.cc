#include "loom/monitor/fleet/sim/fleet_simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <vector>

namespace loom::monitor {
namespace {

enum { kPfc, kCpu, kDuty, kPower, kTensor, kNvlink, kNet, kStep };

// A short job without random faults or regime changes: tests add their own.
SimConfig QuietConfig() {
  SimConfig c;
  c.machines = 32;
  c.seconds = 1800;
  c.faults_per_machine_day = 0;
  c.regime_changes_per_hour = 0;
  return c;
}

double WindowMean(const FleetSeries& s, int metric, int machine, int64_t a, int64_t b) {
  double sum = 0;
  for (int64_t t = a; t < b; ++t) sum += s.at(metric, machine, t);
  return sum / static_cast<double>(b - a);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Robust z of `machine`'s window mean against the window means of `reference` machines.
double RobustZ(const FleetSeries& s, int metric, int machine, const std::vector<int>& reference,
               int64_t a, int64_t b) {
  std::vector<double> means;
  for (int m : reference) means.push_back(WindowMean(s, metric, m, a, b));
  const double med = Median(means);
  std::vector<double> dev;
  for (double x : means) dev.push_back(std::fabs(x - med));
  const double mad = 1.4826 * Median(dev);
  return (WindowMean(s, metric, machine, a, b) - med) / mad;
}

// Machines outside machine's group of `group_size`.
std::vector<int> OutsideGroup(const SimConfig& c, int machine) {
  std::vector<int> out;
  for (int m = 0; m < c.machines; ++m) {
    if (m / c.group_size != machine / c.group_size) out.push_back(m);
  }
  return out;
}

TEST(FleetSimulatorTest, MetricNamesInOrder) {
  const std::vector<std::string> want = {"pfc_tx",     "cpu_busy",  "gpu_duty", "gpu_power",
                                         "gpu_tensor", "nvlink_bw", "net_tx",   "step_time"};
  EXPECT_EQ(SimMetricNames(), want);
  SimConfig c = QuietConfig();
  c.machines = 4;
  c.seconds = 120;
  const LabelledJob job = SimulateJob(c, 1);
  EXPECT_EQ(job.series.metric_names, want);
  EXPECT_EQ(job.series.machines, 4);
  EXPECT_EQ(job.series.seconds, 120);
  EXPECT_EQ(job.series.values.size(), 8u * 4 * 120);
  EXPECT_EQ(job.seed, 1u);
}

TEST(FleetSimulatorTest, DeterministicInConfigAndSeed) {
  SimConfig c;
  c.machines = 16;
  c.seconds = 3600;
  c.faults_per_machine_day = 4;
  const LabelledJob a = SimulateJob(c, 42), b = SimulateJob(c, 42), d = SimulateJob(c, 43);
  ASSERT_EQ(a.series.values.size(), b.series.values.size());
  EXPECT_EQ(0, std::memcmp(a.series.values.data(), b.series.values.data(),
                           a.series.values.size() * sizeof(float)));
  ASSERT_EQ(a.faults.size(), b.faults.size());
  for (size_t i = 0; i < a.faults.size(); ++i) {
    EXPECT_EQ(a.faults[i].machine, b.faults[i].machine);
    EXPECT_EQ(a.faults[i].onset_s, b.faults[i].onset_s);
    EXPECT_EQ(a.faults[i].type, b.faults[i].type);
  }
  EXPECT_EQ(a.regime_changes_s, b.regime_changes_s);
  EXPECT_NE(0, std::memcmp(a.series.values.data(), d.series.values.data(),
                           a.series.values.size() * sizeof(float)));
}

TEST(FleetSimulatorTest, ValuesAreFiniteAndInRange) {
  SimConfig c;
  c.machines = 16;
  c.seconds = 2 * 3600;
  const LabelledJob job = SimulateJob(c, 5);
  const std::vector<float> upper = {1e9f, 1.f, 100.f, 1e9f, 1.f, 1e9f, 1e9f, 1e9f};
  for (int m = 0; m < 8; ++m) {
    for (int i = 0; i < c.machines; ++i) {
      for (int64_t t = 0; t < c.seconds; ++t) {
        const float v = job.series.at(m, i, t);
        if (std::isnan(v)) continue;  // unreachable faults only (checked elsewhere)
        ASSERT_GE(v, 0.f) << SimMetricNames()[m] << " machine " << i << " t " << t;
        ASSERT_LE(v, upper[m]) << SimMetricNames()[m] << " machine " << i << " t " << t;
      }
    }
  }
}

TEST(FleetSimulatorTest, DefaultRateGivesAFewFaultsPerJob) {
  SimConfig c;  // 64 machines x 4 h
  int total = 0;
  for (uint64_t seed = 0; seed < 40; ++seed)
    total += static_cast<int>(PlanJob(c, seed).faults.size());
  const double mean = total / 40.0;
  EXPECT_GE(mean, 4.0);
  EXPECT_LE(mean, 8.0);
}

TEST(FleetSimulatorTest, TypeMixFollowsTheTraceWeights) {
  SimConfig c;
  c.seconds = 24 * 3600;
  c.faults_per_machine_day = 2;
  std::map<std::string, int> count;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    for (const SimFault& f : PlanJob(c, seed).faults) ++count[f.label.type];
  }
  for (const std::string& type : SimFaultTypes()) EXPECT_GT(count[type], 0) << type;
  // stall (111) is the most common non-transient type, concurrent (15) the rarest.
  for (const char* t : {"fail_slow", "link_drop", "pfc_storm", "unreachable", "concurrent"}) {
    EXPECT_GT(count["stall"], count[t]) << t;
  }
  for (const char* t : {"stall", "fail_slow", "link_drop", "pfc_storm", "unreachable"}) {
    EXPECT_LT(count["concurrent"], count[t]) << t;
  }
}

TEST(FleetSimulatorTest, FaultsInsideTheJobAndNeverOverlapOnAMachine) {
  SimConfig c;
  c.machines = 16;
  c.seconds = 6 * 3600;
  c.faults_per_machine_day = 6;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    const SimPlan plan = PlanJob(c, seed);
    ASSERT_GT(plan.faults.size(), 3u);
    std::vector<std::vector<std::pair<int64_t, int64_t>>> busy(c.machines);
    int64_t last_onset = -1;
    for (const SimFault& f : plan.faults) {
      const FaultLabel& l = f.label;
      EXPECT_GE(l.onset_s, c.warmup_s);
      EXPECT_LT(l.onset_s, l.end_s);
      EXPECT_LE(l.end_s, c.seconds);
      EXPECT_GE(l.onset_s, last_onset);
      last_onset = l.onset_s;
      if (l.type == "transient") {
        EXPECT_FALSE(l.must_alarm);
        EXPECT_LT(l.end_s - l.onset_s, c.continuity_s);
        EXPECT_TRUE(l.group.empty());
      } else {
        EXPECT_TRUE(l.must_alarm);
        EXPECT_GE(l.end_s - l.onset_s, c.min_fault_s);
        EXPECT_LE(l.end_s - l.onset_s, c.max_fault_s);
      }
      std::vector<int> touched = l.group;
      touched.push_back(l.machine);
      for (int m : touched) {
        ASSERT_GE(m, 0);
        ASSERT_LT(m, c.machines);
        for (const auto& [a, b] : busy[m]) {
          EXPECT_FALSE(l.onset_s < b && a < l.end_s) << "seed " << seed << " machine " << m;
        }
        busy[m].emplace_back(l.onset_s, l.end_s);
      }
    }
  }
}

TEST(FleetSimulatorTest, GroupsAndConcurrentMembers) {
  SimConfig c = QuietConfig();
  const SimFault stall = MakeFault(c, "stall", 10, 900, 1500);
  EXPECT_EQ(stall.label.group, (std::vector<int>{8, 9, 11, 12, 13, 14, 15}));
  EXPECT_TRUE(MakeFault(c, "unreachable", 10, 900, 1500).label.group.empty());
  const SimFault conc = MakeFault(c, "concurrent", 5, 900, 1500);
  // Mid-range: 3 machines of rack [4, 8), the root and the first two others.
  EXPECT_EQ(conc.label.group, (std::vector<int>{4, 6}));
  const SimFault tr = MakeFault(c, "transient", 5, 900, 910);
  EXPECT_FALSE(tr.label.must_alarm);
  EXPECT_EQ(tr.effect, "stall");
}

struct Signature {
  const char* type;
  int metric;
  double sign;  // +1: the faulty machine's mean rises, -1: falls
};

TEST(FleetSimulatorTest, FaultyMachineDeviatesDuringTheFaultOnly) {
  const SimConfig c = QuietConfig();
  for (const Signature& s : {Signature{"pfc_storm", kPfc, +1}, Signature{"pfc_storm", kNet, -1},
                             Signature{"link_drop", kNvlink, -1}, Signature{"link_drop", kNet, -1},
                             Signature{"stall", kDuty, -1}, Signature{"stall", kPower, -1},
                             Signature{"stall", kCpu, -1}, Signature{"fail_slow", kTensor, +1}}) {
    SimPlan plan;
    plan.faults.push_back(MakeFault(c, s.type, 5, 900, 1500));
    const LabelledJob job = RenderJob(c, 11, plan);
    const std::vector<int> ref = OutsideGroup(c, 5);
    const double before = RobustZ(job.series, s.metric, 5, ref, 300, 900);
    const double during = RobustZ(job.series, s.metric, 5, ref, 900, 1500);
    const std::string what = std::string(s.type) + " " + SimMetricNames()[s.metric];
    EXPECT_LT(std::fabs(before), 4.0) << what;
    EXPECT_GT(s.sign * during, 8.0) << what;
  }
}

TEST(FleetSimulatorTest, GroupShowsAWeakerDelayedVersion) {
  const SimConfig c = QuietConfig();
  SimPlan plan;
  plan.faults.push_back(MakeFault(c, "pfc_storm", 5, 900, 1500));
  const LabelledJob job = RenderJob(c, 12, plan);
  const std::vector<int> ref = OutsideGroup(c, 5);
  const double root = RobustZ(job.series, kPfc, 5, ref, 900, 1500);
  for (int m : plan.faults[0].label.group) {
    const double z = RobustZ(job.series, kPfc, m, ref, 900, 1500);
    EXPECT_GT(z, 5.0) << "group member " << m;
    EXPECT_LT(z, 0.6 * root) << "group member " << m;
  }
  // Before group_delay_s the members are exactly as without the fault; the root is not.
  const LabelledJob clean = RenderJob(c, 12, SimPlan{});
  const int64_t delayed = 900 + c.group_delay_s;
  for (int m : plan.faults[0].label.group) {
    EXPECT_EQ(
        0, std::memcmp(job.series.row(kPfc, m), clean.series.row(kPfc, m), delayed * sizeof(float)))
        << m;
    EXPECT_GT(job.series.at(kPfc, m, delayed), clean.series.at(kPfc, m, delayed)) << m;
  }
  EXPECT_GT(job.series.at(kPfc, 5, 900), clean.series.at(kPfc, 5, 900) + 10);
}

TEST(FleetSimulatorTest, StuckKernelStallShowsInCpuAndPowerNotInDuty) {
  const SimConfig c = QuietConfig();
  SimPlan plan;
  plan.faults.push_back(MakeFault(c, "stall", 5, 900, 1500));
  plan.faults[0].stall_stuck = true;
  const LabelledJob job = RenderJob(c, 20, plan);
  const std::vector<int> ref = OutsideGroup(c, 5);
  EXPECT_LT(RobustZ(job.series, kCpu, 5, ref, 900, 1500), -8.0);
  EXPECT_LT(RobustZ(job.series, kPower, 5, ref, 900, 1500), -8.0);
  // Duty stays high (a stuck kernel keeps the GPU "busy"): above its waiting peers, not below.
  EXPECT_GT(WindowMean(job.series, kDuty, 5, 900, 1500), 90.0);
  EXPECT_GT(RobustZ(job.series, kDuty, 5, ref, 900, 1500), 0.0);
}

TEST(FleetSimulatorTest, ShortJobsPlaceFaultsAfterAShortenedWarmUp) {
  SimConfig c;
  c.machines = 1024;
  c.seconds = 900;
  c.faults_per_machine_day = 20;
  const SimPlan plan = PlanJob(c, 4);
  ASSERT_GT(plan.faults.size(), 20u);
  for (const SimFault& f : plan.faults) {
    EXPECT_GE(f.label.onset_s, c.seconds / 2);  // warm-up 600 s capped at half the job
    EXPECT_LT(f.label.onset_s, c.seconds - c.min_fault_s);
    EXPECT_LE(f.label.end_s, c.seconds);
  }
}

TEST(FleetSimulatorTest, StallSlowsEveryonesStepTimeAndOthersLookLikeWaiting) {
  const SimConfig c = QuietConfig();
  SimPlan plan;
  plan.faults.push_back(MakeFault(c, "stall", 5, 900, 1200));
  const LabelledJob job = RenderJob(c, 13, plan);
  const std::vector<int> ref = OutsideGroup(c, 5);
  for (int m : ref) {
    const double before = WindowMean(job.series, kStep, m, 600, 900);
    const double during = WindowMean(job.series, kStep, m, 1000, 1200);
    EXPECT_GT(during, 5 * before) << m;
    // Waiting in a collective: tensor activity stops, GPU power drops, but not to idle.
    EXPECT_LT(WindowMean(job.series, kTensor, m, 910, 1200), 0.05) << m;
    EXPECT_GT(WindowMean(job.series, kPower, m, 910, 1200), 100) << m;
    EXPECT_LT(WindowMean(job.series, kPower, m, 910, 1200),
              0.6 * WindowMean(job.series, kPower, m, 600, 900))
        << m;
  }
  EXPECT_LT(WindowMean(job.series, kPower, 5, 910, 1200), 90);
}

TEST(FleetSimulatorTest, FailSlowSlowsTheJobByTheStretchedComputePhase) {
  const SimConfig c = QuietConfig();
  SimPlan plan;
  plan.faults.push_back(MakeFault(c, "fail_slow", 5, 900, 1500));  // stretch 1.5
  const LabelledJob job = RenderJob(c, 14, plan);
  std::vector<double> ratio;
  for (int m = 0; m < c.machines; ++m) {
    ratio.push_back(WindowMean(job.series, kStep, m, 1000, 1500) /
                    WindowMean(job.series, kStep, m, 300, 900));
  }
  const double want = c.compute_fraction * 1.5 + 1 - c.compute_fraction;  // 1.35
  EXPECT_NEAR(Median(ratio), want, 0.06);
}

TEST(FleetSimulatorTest, UnreachableIsNanOnlyOnThatMachineAndInterval) {
  const SimConfig c = QuietConfig();
  SimPlan plan;
  plan.faults.push_back(MakeFault(c, "unreachable", 7, 900, 1000));
  const LabelledJob job = RenderJob(c, 15, plan);
  for (int m = 0; m < 8; ++m) {
    for (int i = 0; i < c.machines; ++i) {
      for (int64_t t = 0; t < c.seconds; ++t) {
        const bool want_nan = i == 7 && t >= 900 && t < 1000;
        ASSERT_EQ(std::isnan(job.series.at(m, i, t)), want_nan) << m << " " << i << " " << t;
      }
    }
  }
}

TEST(FleetSimulatorTest, ConcurrentFaultHitsEveryMember) {
  const SimConfig c = QuietConfig();
  SimPlan plan;
  plan.faults.push_back(MakeFault(c, "concurrent", 20, 900, 1500));
  const LabelledJob job = RenderJob(c, 16, plan);
  std::vector<int> members = plan.faults[0].label.group;
  members.push_back(20);
  std::vector<int> ref;
  for (int m = 0; m < c.machines; ++m) {
    if (std::find(members.begin(), members.end(), m) == members.end()) ref.push_back(m);
  }
  for (int m : members) EXPECT_LT(RobustZ(job.series, kNet, m, ref, 900, 1500), -8.0) << m;
}

TEST(FleetSimulatorTest, AddingAFaultLeavesOtherMachinesUntouched) {
  const SimConfig c = QuietConfig();
  SimPlan plan;
  const LabelledJob a = RenderJob(c, 17, plan);
  plan.faults.push_back(MakeFault(c, "link_drop", 3, 900, 1500));
  const LabelledJob b = RenderJob(c, 17, plan);
  for (int m = 0; m < 8; ++m) {
    EXPECT_EQ(0, std::memcmp(a.series.row(m, 20), b.series.row(m, 20), c.seconds * sizeof(float)));
  }
  EXPECT_NE(0, std::memcmp(a.series.row(kNvlink, 3), b.series.row(kNvlink, 3),
                           c.seconds * sizeof(float)));
}

TEST(FleetSimulatorTest, StepWaveformIsVisibleAtOneHertz) {
  const SimConfig c = QuietConfig();
  const LabelledJob job = RenderJob(c, 18, SimPlan{});
  const float* nv = job.series.row(kNvlink, 0);
  EXPECT_GT(*std::max_element(nv, nv + 300), 100.f);  // communication phase
  EXPECT_LT(*std::min_element(nv, nv + 300), 30.f);   // compute phase
  // Healthy step time is about the configured period.
  EXPECT_NEAR(WindowMean(job.series, kStep, 0, 100, 1800), c.step_period_s, 0.5);
}

TEST(FleetSimulatorTest, RegimeChangesMoveAllMachinesTogether) {
  const SimConfig c = QuietConfig();
  SimPlan plan;
  plan.regimes.push_back({"checkpoint_pause", 600, 700, 1.0});
  plan.regimes.push_back({"eval_pause", 1000, 1200, 1.0});
  plan.regimes.push_back({"speed_change", 1400, 1400, 1.2});
  const LabelledJob job = RenderJob(c, 19, plan);
  EXPECT_EQ(job.regime_changes_s, (std::vector<int64_t>{600, 700, 1000, 1200, 1400}));
  std::vector<int> all;
  for (int m = 0; m < c.machines; ++m) all.push_back(m);
  for (int m = 0; m < c.machines; ++m) {
    // Checkpoint: GPU idle, CPU and network busy, on every machine.
    EXPECT_LT(WindowMean(job.series, kPower, m, 600, 700),
              0.5 * WindowMean(job.series, kPower, m, 300, 600));
    EXPECT_GT(WindowMean(job.series, kCpu, m, 600, 700),
              1.5 * WindowMean(job.series, kCpu, m, 300, 600));
    // Eval: tensor activity lower, network quiet.
    EXPECT_LT(WindowMean(job.series, kNet, m, 1000, 1200),
              0.2 * WindowMean(job.series, kNet, m, 300, 600));
    // No machine stands out from its peers during a pause.
    for (int metric : {kPower, kCpu, kNet, kDuty}) {
      EXPECT_LT(std::fabs(RobustZ(job.series, metric, m, all, 600, 700)), 6.0) << m;
    }
  }
  // Speed change: the step period grows by the factor on every machine.
  std::vector<double> ratio;
  for (int m = 0; m < c.machines; ++m) {
    ratio.push_back(WindowMean(job.series, kStep, m, 1450, 1800) /
                    WindowMean(job.series, kStep, m, 1250, 1400));
  }
  EXPECT_NEAR(*std::min_element(ratio.begin(), ratio.end()), 1.2, 0.08);
  EXPECT_NEAR(*std::max_element(ratio.begin(), ratio.end()), 1.2, 0.08);
}

TEST(FleetSimulatorTest, PlannedRegimesAreOrderedAndPausesDoNotOverlap) {
  SimConfig c;
  c.seconds = 24 * 3600;
  c.regime_changes_per_hour = 2;
  const SimPlan plan = PlanJob(c, 3);
  ASSERT_GT(plan.regimes.size(), 20u);
  int64_t free_from = 0;
  std::map<std::string, int> kinds;
  for (const SimRegime& r : plan.regimes) {
    ++kinds[r.kind];
    EXPECT_GE(r.onset_s, free_from);
    EXPECT_LE(r.end_s, c.seconds);
    free_from = r.end_s;
  }
  EXPECT_GT(kinds["eval_pause"], 0);
  EXPECT_GT(kinds["checkpoint_pause"], 0);
  EXPECT_GT(kinds["speed_change"], 0);
}

// Spec §7.4: unlabelled noise spikes are shorter than the continuity window (<= T_c / 2), so
// anything that lasts T_c is a labelled fault. Spikes are isolated by rendering the same job
// with and without them (the spike stream is separate, so nothing else changes).
TEST(FleetSimulatorTest, SpikesAreShorterThanHalfTheContinuityWindow) {
  SimConfig with = QuietConfig();
  with.seconds = 4 * 3600;
  with.spikes_per_machine_hour = 4;
  SimConfig without = with;
  without.spikes_per_machine_hour = 0;
  const LabelledJob a = SimulateJob(with, 7), b = SimulateJob(without, 7);
  // The simulator's per-metric noise scale (metric range), pfc_tx .. net_tx.
  const double kScale[kStep] = {20, 1, 100, 400, 0.6, 200, 60};
  int runs = 0;
  int64_t longest = 0;
  double biggest = 0;  // in units of noise_sigma x scale
  for (int m = 0; m < kStep; ++m) {
    for (int i = 0; i < with.machines; ++i) {
      int64_t run = 0;
      for (int64_t t = 0; t <= with.seconds; ++t) {
        const double d = t < with.seconds ? a.series.at(m, i, t) - b.series.at(m, i, t) : 0;
        if (d != 0) {
          ++run;
          biggest = std::max(biggest, std::fabs(d) / (with.noise_sigma * kScale[m]));
        } else if (run > 0) {
          ++runs;
          longest = std::max(longest, run);
          run = 0;
        }
      }
    }
  }
  EXPECT_GT(runs, 200);  // 4 per machine-hour x 32 x 4 h = 512 expected (some clamped away)
  EXPECT_GE(longest, 2);
  EXPECT_LE(longest, with.continuity_s / 2);
  // Heavy-tailed amplitude (Pareto from 2, capped at 12): some spikes reach far beyond 6 x.
  EXPECT_GT(biggest, 8);
  EXPECT_LE(biggest, 12.01);
}

TEST(FleetSimulatorTest, ValidateRejectsBadConfig) {
  SimConfig c;
  EXPECT_TRUE(ValidateSimConfig(c).ok());
  c.machines = 1;
  Status s = ValidateSimConfig(c);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("machines"), std::string::npos) << s;
  c = SimConfig{};
  c.min_fault_s = 10;  // shorter than continuity_s: a "real" fault could be a transient
  EXPECT_NE(ValidateSimConfig(c).message().find("min_fault_s"), std::string::npos);
  c = SimConfig{};
  c.faults_per_machine_day = -1;
  EXPECT_FALSE(ValidateSimConfig(c).ok());
}

}  // namespace
}  // namespace loom::monitor
