// Scoring rules and gate replays on tiny hand-made examples with known answers.
#include "loom/monitor/fleet/eval/scoring.h"

#include <cmath>

#include <gtest/gtest.h>

#include "loom/monitor/fleet/eval/score_trace.h"

namespace loom::monitor {
namespace {

FaultLabel Fault(int machine, const char* type, int64_t onset, int64_t end,
                 std::vector<int> group = {}, bool must_alarm = true) {
  FaultLabel f;
  f.machine = machine;
  f.type = type;
  f.onset_s = onset;
  f.end_s = end;
  f.group = std::move(group);
  f.must_alarm = must_alarm;
  return f;
}

TEST(ScoringTest, TruePositivesFalseAlarmsMissesAndTtd) {
  const std::vector<FaultLabel> faults = {Fault(1, "stall", 100, 3000, {0}),
                                          Fault(2, "fail_slow", 5000, 6000),
                                          Fault(3, "transient", 8000, 8010, {}, false)};
  const std::vector<AlarmEvent> alarms = {
      {50, 1, "cpu", 5},     // before the onset: false alarm
      {130, 1, "cpu", 5},    // detects fault 0, TTD 30
      {400, 0, "cpu", 5},    // group member, fault already detected: neither
      {2000, 1, "cpu", 5},   // still-faulty machine after the 15-min window: neither
      {8005, 3, "cpu", 5},   // transient: false alarm
      {9000, 2, "cpu", 5}};  // after fault 1 ended (+ grace): false alarm; fault 1 missed
  // 4 machines x 6 h = 1 machine-day.
  const JobScore js = ScoreAlarms(faults, 4, 86400 / 4, alarms, ScoringOptions{});
  ASSERT_EQ(js.faults.size(), 2u);  // the transient is not a fault to find
  EXPECT_TRUE(js.faults[0].detected);
  EXPECT_EQ(js.faults[0].ttd_s, 30);
  EXPECT_FALSE(js.faults[0].by_group_member);
  EXPECT_FALSE(js.faults[1].detected);
  ASSERT_EQ(js.false_alarms.size(), 3u);
  EXPECT_EQ(js.false_alarms[0].t, 50);
  EXPECT_EQ(js.false_alarms[1].t, 8005);
  EXPECT_EQ(js.false_alarms[2].t, 9000);
  Totals tot;
  tot.Add(js);
  EXPECT_EQ(tot.tp(), 1);
  EXPECT_DOUBLE_EQ(tot.precision(), 0.25);
  EXPECT_DOUBLE_EQ(tot.recall(), 0.5);
  EXPECT_NEAR(tot.f1(), 1.0 / 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(tot.machine_days, 1.0);
  EXPECT_DOUBLE_EQ(tot.false_alarms_per_machine_day(), 3.0);
  EXPECT_DOUBLE_EQ(tot.TtdPercentile(50), 30.0);
  EXPECT_TRUE(std::isnan(tot.TtdPercentile(50, "fail_slow")));
  EXPECT_DOUBLE_EQ(tot.RecallByType().at("stall"), 1.0);
  EXPECT_DOUBLE_EQ(tot.RecallByType().at("fail_slow"), 0.0);
}

TEST(ScoringTest, KeepFaultsRestrictsFaultsAndKeepsFalseAlarms) {
  // Fault 1 (unobservable) was found by the alarm at 5100; restricted to faults 0 and 2 that
  // alarm is neither TP nor FP: P = 1 / (1 + 1), R = 1 / 2.
  const std::vector<FaultLabel> faults = {Fault(1, "stall", 100, 3000),
                                          Fault(2, "fail_slow", 5000, 6000),
                                          Fault(3, "link_drop", 7000, 7400)};
  const std::vector<AlarmEvent> alarms = {{130, 1, "cpu", 5}, {5100, 2, "gpu", 5},
                                          {9000, 0, "cpu", 5}};
  const JobScore js = ScoreAlarms(faults, 4, 86400 / 4, alarms, ScoringOptions{});
  Totals all, seen;
  all.Add(js);
  seen.Add(KeepFaults(js, {1, 0, 1}));
  EXPECT_EQ(all.tp(), 2);
  EXPECT_EQ(seen.tp(), 1);
  ASSERT_EQ(seen.faults.size(), 2u);
  EXPECT_EQ(seen.faults[1].type, "link_drop");
  EXPECT_EQ(seen.false_alarms, 1);
  EXPECT_DOUBLE_EQ(seen.machine_days, 1.0);
  EXPECT_DOUBLE_EQ(seen.precision(), 0.5);
  EXPECT_DOUBLE_EQ(seen.recall(), 0.5);
  EXPECT_DOUBLE_EQ(all.precision(), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(all.recall(), 2.0 / 3.0);
}

TEST(ScoringTest, GroupMemberCountsOnceAndLateAlarmMisses) {
  const std::vector<FaultLabel> faults = {Fault(8, "stall", 1000, 5000, {9, 10}),
                                          Fault(4, "link_drop", 1000, 5000)};
  const std::vector<AlarmEvent> alarms = {{1020, 9, "net", 4}, {1030, 8, "net", 4},
                                          {1901, 4, "net", 4}};  // 901 s after onset: too late
  const JobScore js = ScoreAlarms(faults, 16, 3600, alarms, ScoringOptions{});
  EXPECT_TRUE(js.faults[0].detected);
  EXPECT_TRUE(js.faults[0].by_group_member);
  EXPECT_EQ(js.faults[0].ttd_s, 20);
  EXPECT_FALSE(js.faults[1].detected);
  EXPECT_TRUE(js.false_alarms.empty());  // the late alarm names a still-faulty machine
}

TEST(ScoringTest, BootstrapIntervalsBracketTheEstimate) {
  Totals tot;
  for (int i = 0; i < 100; ++i) tot.faults.push_back({"stall", i < 90, false, 10});
  tot.false_alarms = 10;
  tot.machine_days = 50;
  const PrfWithCi r = BootstrapPrf(tot, 500, 3);
  EXPECT_DOUBLE_EQ(r.recall, 0.9);
  EXPECT_DOUBLE_EQ(r.precision, 0.9);
  EXPECT_LT(r.recall_ci.lo, 0.9);
  EXPECT_GT(r.recall_ci.hi, 0.9);
  EXPECT_GT(r.recall_ci.lo, 0.8);
  EXPECT_LT(r.f1_ci.hi, 0.97);
}

TEST(ScoringTest, MergeAlertsPerMachine) {
  std::vector<AlarmEvent> per_second;
  for (int64_t t = 10; t <= 20; ++t) per_second.push_back({t, 1, "cpu", 5});
  per_second.insert(per_second.begin() + 5, {15, 2, "cpu", 5});
  per_second.push_back({100, 1, "cpu", 5});
  const std::vector<AlarmEvent> ev = MergeAlerts(per_second, 60);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].t, 10);
  EXPECT_EQ(ev[1].machine, 2);
  EXPECT_EQ(ev[2].t, 100);
}

// One channel; machine 5 is the candidate (score 5) during [1000, 1300).
ScoreTrace Trace() {
  ScoreTrace tr;
  tr.channels = {"cpu"};
  tr.seconds = 2000;
  tr.machine.assign(2000, -1);
  tr.score.assign(2000, 0.5f);
  tr.missing.assign(2000, 0);
  for (int t = 1000; t < 1300; ++t) {
    tr.machine[t] = 5;
    tr.score[t] = 5;
  }
  return tr;
}

TEST(ReplayTest, StreamingAlertsOnceAtTc) {
  const std::vector<AlarmEvent> a = ReplayStreaming(Trace(), {3.0, 30}, {});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].t, 1029);
  EXPECT_EQ(a[0].machine, 5);
  EXPECT_EQ(a[0].metric, "cpu");
  EXPECT_TRUE(ReplayStreaming(Trace(), {6.0, 30}, {}).empty());  // above every score
}

TEST(ReplayTest, BatchCallsEveryEightMinutesOverFifteen) {
  // Calls at 899, 1379, 1859: the 300 s run is inside the last two windows (merged: one alarm).
  const std::vector<AlarmEvent> a = ReplayBatch(Trace(), {3.0, 240}, {}, 480, 900);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].t, 1379);
  EXPECT_EQ(a[0].machine, 5);
  EXPECT_TRUE(ReplayBatch(Trace(), {3.0, 301}, {}, 480, 900).empty());  // run shorter than T_c
}

}  // namespace
}  // namespace loom::monitor
