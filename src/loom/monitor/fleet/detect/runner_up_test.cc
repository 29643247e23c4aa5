// SetTopCandidate / MarkMissingCandidate fill the runners-up (ChannelScore::runner_up) that the
// evaluation's concurrency exclusion replays from.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "loom/monitor/fleet/detect/continuity_gate.h"
#include "loom/monitor/fleet/detect/peer_scores.h"

namespace loom::monitor {
namespace {

TEST(RunnerUpTest, TopFourInOrderTiesKeepTheLowerIdNaNSkipped) {
  const std::vector<float> z = {1.0f, 7.0f, NAN, 3.0f, 7.0f, 9.0f, 2.0f};
  ChannelScore ch{"m"};
  SetTopCandidate(z, &ch);
  EXPECT_EQ(ch.machine, 5);
  EXPECT_DOUBLE_EQ(ch.score, 9.0);
  EXPECT_EQ(ch.runner_up[0], 1);  // 7 (tie with machine 4: lower id first)
  EXPECT_EQ(ch.runner_up[1], 4);
  EXPECT_EQ(ch.runner_up[2], 3);
  EXPECT_FLOAT_EQ(ch.runner_up_score[0], 7.0f);
  EXPECT_FLOAT_EQ(ch.runner_up_score[2], 3.0f);
}

TEST(RunnerUpTest, FewerMachinesLeaveEmptySlots) {
  const std::vector<float> z = {NAN, 2.0f, -1.0f};
  ChannelScore ch{"m"};
  SetTopCandidate(z, &ch);
  EXPECT_EQ(ch.machine, 1);
  EXPECT_EQ(ch.runner_up[0], 2);
  EXPECT_FLOAT_EQ(ch.runner_up_score[0], -1.0f);
  EXPECT_EQ(ch.runner_up[1], -1);
  EXPECT_TRUE(std::isinf(ch.runner_up_score[1]));
  ChannelScore none{"m"};
  SetTopCandidate(std::vector<float>{NAN, NAN}, &none);
  EXPECT_EQ(none.machine, -1);
  EXPECT_EQ(none.runner_up[0], -1);
}

TEST(RunnerUpTest, MissingCandidateDisplacesTheScoredTopToFirstRunnerUp) {
  const std::vector<float> z = {NAN, 5.0f, 4.0f, 3.0f, 2.0f};
  const std::vector<uint8_t> present = {0, 1, 1, 1, 1};
  ChannelScore ch{"m"};
  SetTopCandidate(z, &ch);
  MarkMissingCandidate(present, &ch);
  EXPECT_EQ(ch.machine, 0);
  EXPECT_TRUE(ch.missing);
  EXPECT_EQ(ch.runner_up[0], 1);
  EXPECT_FLOAT_EQ(ch.runner_up_score[0], 5.0f);
  EXPECT_EQ(ch.runner_up[1], 2);
  EXPECT_EQ(ch.runner_up[2], 3);  // machine 4 falls off the end
}

}  // namespace
}  // namespace loom::monitor
