// Concurrency exclusion in the streaming replay (ReplayStreaming's exclude_flagged_s), the
// runner-up columns of score traces, and the miss diagnosis (miss_diagnosis.h).
#include <cmath>
#include <limits>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "loom/monitor/fleet/eval/fleet_eval.h"
#include "loom/monitor/fleet/eval/miss_diagnosis.h"
#include "loom/monitor/fleet/eval/score_trace.h"

namespace loom::monitor {
namespace {

constexpr size_t kR = ChannelScore::kRunnersUp;

// A trace of `seconds` x `channels` with no candidates anywhere.
ScoreTrace EmptyTrace(std::vector<std::string> channels, int64_t seconds) {
  ScoreTrace tr;
  tr.channels = std::move(channels);
  tr.seconds = seconds;
  const size_t cells = tr.channels.size() * static_cast<size_t>(seconds);
  tr.machine.assign(cells, -1);
  tr.score.assign(cells, -INFINITY);
  tr.missing.assign(cells, 0);
  tr.runner_machine.assign(cells * kR, -1);
  tr.runner_score.assign(cells * kR, -INFINITY);
  return tr;
}

void SetTop(ScoreTrace* tr, int64_t from, int64_t to, int channel, int machine, float score,
            bool missing = false) {
  for (int64_t t = from; t < to; ++t) {
    const size_t cell = static_cast<size_t>(t) * tr->channels.size() + channel;
    tr->machine[cell] = machine;
    tr->score[cell] = score;
    tr->missing[cell] = missing;
  }
}

void SetRunner(ScoreTrace* tr, int64_t from, int64_t to, int channel, size_t rank, int machine,
               float score) {
  for (int64_t t = from; t < to; ++t) {
    const size_t cell = static_cast<size_t>(t) * tr->channels.size() + channel;
    tr->runner_machine[cell * kR + rank] = machine;
    tr->runner_score[cell * kR + rank] = score;
  }
}

GateOptions Gate() {
  GateOptions g;
  g.threshold = 5;
  g.continuity_s = 10;
  g.min_fraction = 1.0;
  return g;
}

std::vector<std::pair<int64_t, int>> Events(const std::vector<AlarmEvent>& a) {
  std::vector<std::pair<int64_t, int>> out;
  for (const AlarmEvent& e : a) out.push_back({e.t, e.machine});
  return out;
}

using Ev = std::vector<std::pair<int64_t, int>>;

TEST(ExclusionReplayTest, FlaggedMachineStepsAsideForTheRunnerUp) {
  ScoreTrace tr = EmptyTrace({"a"}, 200);
  SetTop(&tr, 0, 200, 0, /*machine=*/0, 20);
  SetRunner(&tr, 0, 200, 0, 0, /*machine=*/1, 8);
  // Minder: only the argmax is a candidate, so machine 1 is never confirmed.
  EXPECT_EQ(Events(ReplayStreaming(tr, Gate(), {}, 60, 0)), (Ev{{9, 0}}));
  // Exclusion: machine 0 alerts at 9 (10 hits), machine 1 holds from 10 and alerts at 19.
  EXPECT_EQ(Events(ReplayStreaming(tr, Gate(), {}, 60, 300)), (Ev{{9, 0}, {19, 1}}));
  // Exclusion expires: machine 0 is back at 110 (excluded through 109) and, 10 hits later,
  // alerts at 119; machine 1 (excluded through 119 after its alert at 19) then stands in again
  // from 120 and alerts at 129. Alerts more than 60 s apart are separate events.
  EXPECT_EQ(Events(ReplayStreaming(tr, Gate(), {}, 60, 100)),
            (Ev{{9, 0}, {19, 1}, {119, 0}, {129, 1}}));
}

TEST(ExclusionReplayTest, RunnerUpBelowThresholdOrMissingRunnersGiveNoCandidate) {
  ScoreTrace tr = EmptyTrace({"a"}, 100);
  SetTop(&tr, 0, 100, 0, 0, 20);
  SetRunner(&tr, 0, 100, 0, 0, 1, 4.9f);  // below the threshold 5
  EXPECT_EQ(Events(ReplayStreaming(tr, Gate(), {}, 60, 300)), (Ev{{9, 0}}));
  ScoreTrace old = tr;  // a trace recorded without runner-up columns
  old.runner_machine.clear();
  old.runner_score.clear();
  EXPECT_EQ(Events(ReplayStreaming(old, Gate(), {}, 60, 300)), (Ev{{9, 0}}));
}

TEST(ExclusionReplayTest, MissingMachineStepsAsideForTheScoredTop) {
  ScoreTrace tr = EmptyTrace({"a", "b"}, 100);
  SetTop(&tr, 0, 100, 0, /*machine=*/2, INFINITY, /*missing=*/true);
  SetRunner(&tr, 0, 100, 0, 0, /*machine=*/0, 9);
  SetTop(&tr, 0, 100, 1, 2, INFINITY, true);
  EXPECT_EQ(Events(ReplayStreaming(tr, Gate(), {}, 60, 0)), (Ev{{9, 2}}));
  EXPECT_EQ(Events(ReplayStreaming(tr, Gate(), {}, 60, 900)), (Ev{{9, 2}, {19, 0}}));
}

TEST(ExclusionReplayTest, HeartbeatChannelKeepsTheBaseRunners) {
  ScoreTrace base = EmptyTrace({"a"}, 5);
  SetTop(&base, 0, 5, 0, 0, 20);
  SetRunner(&base, 0, 5, 0, 0, 3, 7);
  ScoreTrace hb = EmptyTrace({"heartbeat"}, 5);
  SetTop(&hb, 2, 5, 0, 4, 3);
  Result<ScoreTrace> fused = PrependHeartbeatChannel(hb, base, 2);
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  ASSERT_EQ(fused->runner_machine.size(), 2 * 5 * kR);
  for (int64_t t = 0; t < 5; ++t) {
    EXPECT_EQ(fused->runner_machine[(t * 2 + 0) * kR], -1);  // heartbeat channel: none
    EXPECT_EQ(fused->runner_machine[(t * 2 + 1) * kR], 3);
    EXPECT_FLOAT_EQ(fused->runner_score[(t * 2 + 1) * kR], 7);
    EXPECT_EQ(fused->machine[t * 2], t >= 2 ? 4 : -1);
  }
}

TEST(AnyChannelReplayTest, AFaultMovingBetweenChannelsIsHeldAtMachineLevel) {
  // Machine 4 is channel a's candidate for 6 s, then channel b's for 6 s: no channel holds it
  // 10 s, but the machine is named 12 s in a row.
  ScoreTrace tr = EmptyTrace({"a", "b"}, 40);
  SetTop(&tr, 0, 6, 0, 4, 9);
  SetTop(&tr, 6, 12, 1, 4, 9);
  SetTop(&tr, 12, 40, 0, 7, 3);  // below the threshold: never counts
  EXPECT_TRUE(ReplayStreaming(tr, Gate(), {}, 60, 0, false).empty());
  EXPECT_EQ(Events(ReplayStreaming(tr, Gate(), {}, 60, 0, true)), (Ev{{9, 4}}));
  // Alert named after the channel naming it that second.
  EXPECT_EQ(ReplayStreaming(tr, Gate(), {}, 60, 0, true)[0].metric, "b");
  // Two channels naming the machine in the same second count once; 8 s < 10 s: no alert.
  ScoreTrace both = EmptyTrace({"a", "b"}, 40);
  SetTop(&both, 0, 8, 0, 2, 9);
  SetTop(&both, 0, 8, 1, 2, 9);
  EXPECT_TRUE(ReplayStreaming(both, Gate(), {}, 60, 0, true).empty());
  // min_fraction 0.8 over a 10-s span: 8 seconds of the last 10 suffice, with gaps.
  GateOptions relaxed = Gate();
  relaxed.min_fraction = 0.8;
  ScoreTrace gappy = EmptyTrace({"a", "b"}, 40);
  for (int64_t t : {0, 1, 2, 4, 5, 6, 8, 9}) SetTop(&gappy, t, t + 1, t % 2, 5, 9);
  EXPECT_EQ(Events(ReplayStreaming(gappy, relaxed, {}, 60, 0, true)), (Ev{{9, 5}}));
}

TEST(MissDiagnosisTest, ClassifiesMaskedWeakAndFlicker) {
  ScoreTrace tr = EmptyTrace({"a", "b"}, 400);
  SetTop(&tr, 0, 200, 0, 0, 20);          // fault A on machine 0: detected
  SetRunner(&tr, 0, 200, 0, 0, 1, 8);     // fault B on machine 1: above θ, always second
  SetRunner(&tr, 50, 150, 0, 1, 3, 4);    // fault C on machine 3: below θ
  for (int64_t t = 300; t < 400; ++t) {   // fault D on machine 5: top every other second
    SetTop(&tr, t, t + 1, 1, t % 2 == 0 ? 5 : 6, 9);
  }
  std::vector<FaultLabel> faults = {{0, "stall", 0, 200, {}},
                                    {1, "link_drop", 0, 200, {}},
                                    {3, "fail_slow", 50, 150, {}},
                                    {5, "pfc_storm", 300, 400, {}}};
  const JobScore js = ScoreAlarms(faults, 8, 400, ReplayStreaming(tr, Gate(), {}, 60, 0), {});
  ASSERT_EQ(js.faults.size(), 4u);
  EXPECT_TRUE(js.faults[0].detected);
  const std::vector<MissDiagnosis> m = DiagnoseMisses(faults, tr, {}, 5.0, 10, js);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].type, "link_drop");
  EXPECT_EQ(m[0].cause, "masked");
  EXPECT_EQ(m[0].top_s, 0);
  EXPECT_EQ(m[0].masked_s, 200);
  EXPECT_FLOAT_EQ(m[0].best_score_p50, 8);
  EXPECT_TRUE(m[0].overlapped);
  EXPECT_EQ(m[1].type, "fail_slow");
  EXPECT_EQ(m[1].cause, "weak");
  EXPECT_EQ(m[1].window_s, 100);
  EXPECT_FLOAT_EQ(m[1].best_score_p50, 4);
  EXPECT_EQ(m[2].cause, "flicker");
  EXPECT_EQ(m[2].top_s, 50);
  EXPECT_FALSE(m[2].overlapped);
  const nlohmann::json s = SummariseMisses(m, 5.0);
  EXPECT_EQ(s["missed"], 3);
  EXPECT_EQ(s["by_type"]["link_drop"]["masked"], 1);
  EXPECT_EQ(s["by_type"]["fail_slow"]["weak"], 1);
  EXPECT_EQ(s["by_type"]["pfc_storm"]["flicker"], 1);
  // With exclusion, machine 1 is confirmed after machine 0: fault B is no longer missed.
  const JobScore ex = ScoreAlarms(faults, 8, 400, ReplayStreaming(tr, Gate(), {}, 60, 900), {});
  EXPECT_TRUE(ex.faults[1].detected);
  EXPECT_EQ(ex.faults[1].ttd_s, 19);
}

TEST(MissDiagnosisTest, FalseAlarmNamesTheNearestFaultAndItsGroup) {
  FaultLabel a{3, "stall", 100, 200, {2, 3}};
  FaultLabel b{9, "transient", 400, 420, {}};
  const FalseAlarmContext in = DescribeFalseAlarm({a, b}, {150, 2, "cpu_busy", 7.5});
  EXPECT_EQ(in.nearest_type, "stall");
  EXPECT_EQ(in.nearest_gap_s, 0);
  EXPECT_TRUE(in.same_group);
  EXPECT_EQ(in.metric, "cpu_busy");
  const FalseAlarmContext after = DescribeFalseAlarm({a, b}, {330, 5, "net_tx", 9});
  // 131 s after the stall's last second, 70 s before the transient: the transient is nearer.
  EXPECT_EQ(after.nearest_type, "transient");
  EXPECT_EQ(after.nearest_gap_s, 70);
  EXPECT_EQ(after.nearest_machine, 9);
  EXPECT_FALSE(after.same_group);
  EXPECT_EQ(DescribeFalseAlarm({}, {1, 0, "x", 1}).nearest_gap_s, -1);
}

TEST(FleetEvalOptionsTest, MinFaultAndExclusionAreValidated) {
  FleetEvalOptions o = FleetEvalOptions::Quick();
  o.min_fault_s = 40;  // < T_c + w = 48
  Result<nlohmann::json> r = RunFleetEval(o, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("min_fault_s (40) must be >= T_c + w = 48"),
            std::string::npos)
      << r.status().ToString();
  o.min_fault_s = 0;
  o.exclude_flagged_s = -1;
  r = RunFleetEval(o, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("exclude_flagged_s"), std::string::npos);
}

}  // namespace
}  // namespace loom::monitor
