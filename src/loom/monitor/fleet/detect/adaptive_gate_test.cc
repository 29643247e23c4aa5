// Tests of the score-adaptive continuity gate (GateOptions::fast_confirm_s, fast_min_channels,
// missing_confirm_s) and of Minder's long-window channels (MinderOptions::long_window_s).
#include <cmath>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "loom/monitor/fleet/detect/continuity_gate.h"
#include "loom/monitor/fleet/detect/detector.h"
#include "loom/monitor/fleet/detect/fleet_test_util.h"
#include "loom/monitor/fleet/detect/minder.h"

namespace loom::monitor {
namespace {

ScoreStep Channels(std::vector<ChannelScore> channels) {
  ScoreStep s;
  s.channels = std::move(channels);
  return s;
}

// Seconds until the gate first alerts when fed `step` every second (-1 = never within limit).
int64_t SecondsToConfirm(const GateOptions& o, const ScoreStep& step, int64_t limit = 200) {
  ContinuityGate gate(o);
  for (int64_t t = 0; t < limit; ++t) {
    if (gate.Step(step, t).alert) return t + 1;
  }
  return -1;
}

TEST(AdaptiveGateTest, HugeScoreConfirmsFastNearThresholdNeedsFullTc) {
  GateOptions o{.threshold = 3.0, .continuity_s = 30, .fast_confirm_s = 5,
                .fast_min_channels = 1};
  EXPECT_EQ(SecondsToConfirm(o, Channels({{"cpu", 4, 300.0}})), 5);   // capped at T_c / 5
  EXPECT_EQ(SecondsToConfirm(o, Channels({{"cpu", 4, 3.0}})), 30);    // at θ: full T_c
  EXPECT_EQ(SecondsToConfirm(o, Channels({{"cpu", 4, 3.05}})), 30);   // near θ: still 30
  EXPECT_EQ(SecondsToConfirm(o, Channels({{"cpu", 4, 6.0}})), 15);    // 2θ: half of T_c
  EXPECT_EQ(SecondsToConfirm(o, Channels({{"cpu", 4, 2.9}})), -1);    // below θ: never
  o.fast_confirm_s = 0;                                               // off: Minder's gate
  EXPECT_EQ(SecondsToConfirm(o, Channels({{"cpu", 4, 300.0}})), 30);
}

TEST(AdaptiveGateTest, FastPathNeedsAgreeingChannelsAndRespectsMinFraction) {
  GateOptions o{.threshold = 3.0, .continuity_s = 30, .fast_confirm_s = 5,
                .fast_min_channels = 2};
  // One channel far above θ, the other naming another machine: no fast path.
  EXPECT_EQ(SecondsToConfirm(o, Channels({{"cpu", 4, 300.0}, {"net", 7, 1.0}})), 30);
  // Both name machine 4: fast.
  EXPECT_EQ(SecondsToConfirm(o, Channels({{"cpu", 4, 300.0}, {"net", 4, 3.5}})), 5);
  // A one-channel detector is not held to two channels.
  EXPECT_EQ(SecondsToConfirm(o, Channels({{"all", 4, 300.0}})), 5);
  // min_fraction 0.8 over T_c = 30: need 24 weight; a huge score confirms after 24 / 4.8 = 5 s.
  o.min_fraction = 0.8;
  EXPECT_EQ(SecondsToConfirm(o, Channels({{"cpu", 4, 300.0}, {"net", 4, 300.0}})), 5);
  EXPECT_EQ(SecondsToConfirm(o, Channels({{"cpu", 4, 3.0}, {"net", 4, 3.0}})), 24);
}

TEST(AdaptiveGateTest, WeightsLeaveTheWindowAndABrokenRunStartsOver) {
  GateOptions o{.threshold = 3.0, .continuity_s = 10, .min_fraction = 0.5,
                .fast_confirm_s = 1, .fast_min_channels = 1};
  ContinuityGate gate(o);
  // need = 5: one second at 4.9 x θ (weight 4.9) is not enough; the hit leaves the 10-s
  // window before a second big hit arrives 10 s later, so no alert.
  EXPECT_FALSE(gate.Step(Channels({{"cpu", 2, 14.7}}), 0).alert);
  for (int64_t t = 1; t < 10; ++t) EXPECT_FALSE(gate.Step(Channels({{"cpu", -1}}), t).alert);
  EXPECT_FALSE(gate.Step(Channels({{"cpu", 2, 14.7}}), 10).alert);
  EXPECT_TRUE(gate.Step(Channels({{"cpu", 2, 3.0}}), 11).alert);  // 4.9 + 1 >= 5
}

TEST(AdaptiveGateTest, MissingCandidateConfirmsAfterMissingConfirmSeconds) {
  ChannelScore gone{"heartbeat", 9, INFINITY, true};
  GateOptions o{.threshold = 3.0, .continuity_s = 30, .missing_confirm_s = 1};
  EXPECT_EQ(SecondsToConfirm(o, Channels({gone})), 1);
  o.missing_confirm_s = 3;
  EXPECT_EQ(SecondsToConfirm(o, Channels({gone})), 3);
  o.missing_confirm_s = 0;
  EXPECT_EQ(SecondsToConfirm(o, Channels({gone})), 30);
  // The fast path does not apply to missing candidates (their score is not a distance).
  o.fast_confirm_s = 5;
  o.fast_min_channels = 1;
  EXPECT_EQ(SecondsToConfirm(o, Channels({gone})), 30);
}

TEST(AdaptiveGateTest, FactoryReadsTheGateFieldsAndRejectsNegatives) {
  auto d = MakeScoredDetector({{"type", "minder"}, {"fast_confirm_s", 5},
                               {"fast_min_channels", 3}, {"missing_confirm_s", 2}});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ((*d)->gate_options().fast_confirm_s, 5);
  EXPECT_EQ((*d)->gate_options().fast_min_channels, 3);
  EXPECT_EQ((*d)->gate_options().missing_confirm_s, 2);
  auto bad = MakeScoredDetector({{"type", "minder"}, {"fast_confirm_s", -1}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("fast_confirm_s"), std::string::npos);
  EXPECT_FALSE(MakeScoredDetector({{"type", "minder"}, {"long_window_s", -5}}).ok());
}

// 16 machines, one metric with a 9-s step waveform (compute 70%: 0.8, communication: 0.2, like
// the simulator's GPU power) and noise of σ = 0.05; machine 5 sits `offset` above the others
// while computing (a small, persistent shift like a mild fail-slow).
FleetSeries ShiftedFleet(float offset, int64_t seconds = 400) {
  std::mt19937 rng(11);
  std::normal_distribution<float> noise(0.0f, 0.05f);
  return fleet_testing::SyntheticFleet(
      {"gpu_power"}, 16, seconds, [&](int i, int64_t t, std::span<float> v) {
        const bool computing = (t % 9) < 6;
        v[0] = (computing ? 0.8f + (i == 5 ? offset : 0.0f) : 0.2f) + noise(rng);
      });
}

TEST(LongWindowTest, ChannelNamesASmallPersistentShiftThatOneHzWindowsMiss) {
  MinderOptions mo;
  mo.window = 8;
  mo.long_window_s = 120;
  MinderDetector d(mo, GateOptions{}, BuiltinDenoisers());
  const FleetSeries shifted = ShiftedFleet(0.05f);
  Result<ScoreStep> step = d.Score(shifted, 399);
  ASSERT_TRUE(step.ok()) << step.status().ToString();
  ASSERT_EQ(step->channels.size(), 2u);
  EXPECT_EQ(step->channels[0].metric, "gpu_power");
  EXPECT_EQ(step->channels[1].metric, "gpu_power@120s");
  EXPECT_EQ(step->channels[1].machine, 5);
  const double long_z = step->channels[1].score;
  EXPECT_GT(long_z, 6.0);
  // The 8-s window's score of machine 5 is far smaller (the shift is below the 1 Hz noise).
  EXPECT_LT(step->machine_scores[5], long_z / 2) << step->machine_scores[5];
  // Healthy fleet: the long channel's top score stays small.
  Result<ScoreStep> healthy = d.Score(ShiftedFleet(0.0f), 399);
  ASSERT_TRUE(healthy.ok());
  EXPECT_LT(healthy->channels[1].score, 4.0);
  // long_weight scales the channel's scores (its candidates need z >= θ / long_weight).
  mo.long_weight = 0.5;
  MinderDetector half(mo, GateOptions{}, BuiltinDenoisers());
  Result<ScoreStep> halved = half.Score(shifted, 399);
  ASSERT_TRUE(halved.ok());
  EXPECT_EQ(halved->channels[1].machine, 5);
  EXPECT_NEAR(halved->channels[1].score, 0.5 * long_z, 1e-4 * long_z);
  EXPECT_EQ(halved->channels[0].score, step->channels[0].score);  // 1-Hz channel unchanged
  // Before L seconds of history the channel exists but has no candidate.
  Result<ScoreStep> early = d.Score(shifted, 100);
  ASSERT_TRUE(early.ok());
  ASSERT_EQ(early->channels.size(), 2u);
  EXPECT_EQ(early->channels[1].machine, -1);
}

}  // namespace
}  // namespace loom::monitor
