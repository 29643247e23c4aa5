#include "loom/monitor/app/rank_app_state.h"

#include <gtest/gtest.h>

#include <cmath>

namespace loom::monitor {
namespace {

AppMessage StepMsg(int64_t step, double t, int64_t ts) {
  AppMessage m;
  m.kind = AppMessage::Kind::kStep;
  m.step = step;
  m.step_time_s = t;
  m.data_wait_s = 0.25;
  m.ts_ms = ts;
  return m;
}

AppMessage CollMsg(const char* op, int64_t bytes, int64_t seq, double dur, int64_t ts) {
  AppMessage m;
  m.kind = AppMessage::Kind::kCollective;
  m.op = op;
  m.bytes = bytes;
  m.seq = seq;
  m.duration_s = dur;
  m.ts_ms = ts;
  return m;
}

TEST(RankAppStateTest, FreshStateIsMissingNotZero) {
  RankAppState s;
  EXPECT_EQ(s.step, -1);
  EXPECT_TRUE(std::isnan(s.last_step_time_s));
  EXPECT_EQ(s.last_coll_seq, -1);
  EXPECT_TRUE(s.phase.empty());
  EXPECT_EQ(s.last_update_ms, 0);
}

TEST(RankAppStateTest, FoldsStepsCollectivesAndPhases) {
  RankAppState s;
  s.Apply(StepMsg(1, 0.5, 100));
  s.Apply(CollMsg("allreduce", 1000, 0, 0.01, 110));
  s.Apply(CollMsg("broadcast", 24, 1, 0.02, 120));
  s.Apply(StepMsg(2, 0.75, 130));
  AppMessage phase;
  phase.kind = AppMessage::Kind::kPhase;
  phase.phase = "ckpt_save";
  phase.ts_ms = 125;  // older than the last update: last_update_ms keeps the newest
  s.Apply(phase);

  EXPECT_EQ(s.step, 2);
  EXPECT_DOUBLE_EQ(s.last_step_time_s, 0.75);
  EXPECT_DOUBLE_EQ(s.last_data_wait_s, 0.25);
  EXPECT_EQ(s.last_coll_seq, 1);
  EXPECT_EQ(s.last_coll_op, "broadcast");
  EXPECT_EQ(s.coll_bytes_total, 1024);
  EXPECT_EQ(s.coll_count, 2);
  EXPECT_NEAR(s.coll_seconds_total, 0.03, 1e-12);
  EXPECT_DOUBLE_EQ(s.last_coll_duration_s, 0.02);
  EXPECT_EQ(s.phase, "ckpt_save");
  EXPECT_EQ(s.last_update_ms, 130);
  EXPECT_EQ(s.messages, 5);
}

}  // namespace
}  // namespace loom::monitor
