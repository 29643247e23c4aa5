// ScaleChannels / ChannelNormFactors (channel_scaling.h).
#include "loom/monitor/fleet/eval/channel_scaling.h"

#include <cmath>

#include <gtest/gtest.h>

namespace loom::monitor {
namespace {

constexpr size_t kR = ChannelScore::kRunnersUp;

ScoreTrace Trace(int64_t seconds) {
  ScoreTrace tr;
  tr.channels = {"a", "b"};
  tr.seconds = seconds;
  const size_t cells = 2 * static_cast<size_t>(seconds);
  tr.machine.assign(cells, 0);
  tr.score.assign(cells, 0);
  tr.missing.assign(cells, 0);
  tr.runner_machine.assign(cells * kR, 1);
  tr.runner_score.assign(cells * kR, 1);
  return tr;
}

TEST(ChannelScalingTest, ScalesTopAndRunnersOfEachChannelAndKeepsInfinities) {
  ScoreTrace tr = Trace(2);
  tr.score = {2, 3, INFINITY, 5};
  tr.missing[2] = 1;
  const std::vector<ScoreTrace> out = ScaleChannels({tr}, {0.5, 2.0});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FLOAT_EQ(out[0].score[0], 1.0f);
  EXPECT_FLOAT_EQ(out[0].score[1], 6.0f);
  EXPECT_TRUE(std::isinf(out[0].score[2]));
  EXPECT_FLOAT_EQ(out[0].score[3], 10.0f);
  EXPECT_FLOAT_EQ(out[0].runner_score[0], 0.5f);       // channel a, runner 0
  EXPECT_FLOAT_EQ(out[0].runner_score[kR], 2.0f);      // channel b, runner 0
  EXPECT_EQ(out[0].machine, tr.machine);               // no candidate changes
}

TEST(ChannelScalingTest, NormFactorsComeFromFaultFreeSecondsOnly) {
  // Channel a: healthy scores 1..100 (t = 0..99), then a fault at t = 100..199 scoring 1000.
  // Channel b: healthy scores all 4. The seconds of the fault and 60 s after are left out.
  ScoreTrace tr = Trace(300);
  for (int64_t t = 0; t < 300; ++t) {
    const bool fault = t >= 100 && t < 260;
    tr.score[t * 2] = fault ? 1000.0f : static_cast<float>(t < 100 ? t + 1 : 50);
    tr.score[t * 2 + 1] = 4;
  }
  LabelledJob job;
  FaultLabel f;
  f.machine = 3;
  f.type = "stall";
  f.onset_s = 100;
  f.end_s = 200;
  job.faults = {f};
  // Healthy seconds: t < 100 (1..100) and t >= 260 (40 x 50) -> the median (q = 0.5) of 140
  // values: sorted, index 69 -> 50.
  const std::vector<double> factor = ChannelNormFactors({job}, {tr}, 0.5);
  ASSERT_EQ(factor.size(), 2u);
  EXPECT_DOUBLE_EQ(factor[0], 1.0 / 50);
  EXPECT_DOUBLE_EQ(factor[1], 1.0 / 4);
  // The maximum healthy score of channel a is 100 (the fault's 1000 never counts).
  EXPECT_DOUBLE_EQ(ChannelNormFactors({job}, {tr}, 1.0)[0], 1.0 / 100);
}

TEST(ChannelScalingTest, ChannelWithoutHealthyScoresKeepsFactorOne) {
  ScoreTrace tr = Trace(10);
  for (size_t k = 0; k < tr.score.size(); k += 2) tr.score[k] = -INFINITY;  // a: no candidate
  const std::vector<double> factor = ChannelNormFactors({LabelledJob{}}, {tr}, 0.9);
  EXPECT_DOUBLE_EQ(factor[0], 1.0);
  EXPECT_DOUBLE_EQ(factor[1], 1.0);  // b: all 0 -> quantile <= 1e-6 -> 1
}

}  // namespace
}  // namespace loom::monitor
