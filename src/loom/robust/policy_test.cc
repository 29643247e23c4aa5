#include "loom/robust/policy.h"

#include <gtest/gtest.h>

namespace loom::robust {
namespace {

Heartbeat Hb(const std::string& m, int rank, char state, int64_t step, int64_t seq) {
  Heartbeat hb;
  hb.machine = m;
  hb.rank = rank;
  hb.pid = 100 + rank;
  hb.state = state;
  hb.step = step;
  hb.step_time_s = 0.5;
  hb.last_coll_seq = seq;
  hb.last_coll_op = "allreduce";
  return hb;
}

PolicyOptions Opts() {
  PolicyOptions o;
  o.confirm_s = 3;
  o.alert_confirm_s = 3;
  o.missed_heartbeat_s = 3;
  o.progress_floor_s = 10;
  o.progress_factor = 5;
  o.startup_timeout_s = 60;
  return o;
}

// Both machines report every second with progress; m1's rank stops at t=10.
TEST(PolicyTest, StoppedRankIsNamedAfterTheConfirmationWindow) {
  Policy p(Opts());
  p.StartAttempt({"m0", "m1"}, 0);
  for (int t = 1; t <= 20; ++t) {
    const bool stopped = t >= 10;
    p.OnHeartbeat(Hb("m0", 0, 'S', stopped ? 9 : t, stopped ? 19 : 2 * t), t);
    p.OnHeartbeat(Hb("m1", 1, stopped ? 'T' : 'R', stopped ? 9 : t, stopped ? 18 : 2 * t), t);
    auto inc = p.Evaluate(t);
    if (t < 13) {
      EXPECT_FALSE(inc.has_value()) << "t=" << t;
      continue;
    }
    ASSERT_TRUE(inc.has_value()) << "t=" << t;
    EXPECT_EQ(t, 13);
    EXPECT_EQ(inc->kind, TriggerKind::kStopped);
    ASSERT_EQ(inc->machines.size(), 1u);
    EXPECT_EQ(inc->machines[0], "m1");
    EXPECT_DOUBLE_EQ(inc->onset_s, 10);
    EXPECT_NE(inc->evidence.find("state T"), std::string::npos) << inc->evidence;
    EXPECT_NE(inc->evidence.find("pid 101"), std::string::npos) << inc->evidence;
    break;
  }
  auto notes = p.TakeNotes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("SUSPECT m1"), std::string::npos) << notes[0];
  EXPECT_FALSE(p.Evaluate(30).has_value()) << "reported once per attempt";
}

TEST(PolicyTest, StopShorterThanTheWindowOnlyLeavesANote) {
  Policy p(Opts());
  p.StartAttempt({"m0", "m1"}, 0);
  for (int t = 1; t <= 8; ++t) {
    p.OnHeartbeat(Hb("m0", 0, 'S', t, t), t);
    p.OnHeartbeat(Hb("m1", 1, (t == 4 || t == 5) ? 'T' : 'R', t, t), t);
    EXPECT_FALSE(p.Evaluate(t).has_value()) << "t=" << t;
  }
  auto notes = p.TakeNotes();
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[1].find("CLEARED m1"), std::string::npos);
}

TEST(PolicyTest, NonZeroExitIsImmediate) {
  Policy p(Opts());
  p.StartAttempt({"m0", "m1"}, 0);
  p.OnHeartbeat(Hb("m0", 0, 'R', 1, 1), 1);
  p.OnHeartbeat(Hb("m1", 1, 'R', 1, 1), 1);
  p.OnExit("m0", 137, "was killed by signal 9 (Killed)", 1.5);
  auto inc = p.Evaluate(1.5);
  ASSERT_TRUE(inc.has_value());
  EXPECT_EQ(inc->kind, TriggerKind::kExit);
  EXPECT_EQ(inc->machines, std::vector<std::string>{"m0"});
  EXPECT_NE(inc->evidence.find("signal 9"), std::string::npos);
}

// A killed rank's peer fails on the broken connection, possibly seen first: the signal death is
// named.
TEST(PolicyTest, SignalDeathIsNamedBeforeThePeerThatFailedBecauseOfIt) {
  Policy p(Opts());
  p.StartAttempt({"m0", "m1", "m2"}, 0);
  p.OnExit("m0", 1, "exited with status 1", 1.0);
  p.OnExit("m2", 1, "exited with status 1", 1.1);
  p.OnExit("m1", 137, "was killed by signal 9 (Killed)", 1.2);
  auto inc = p.Evaluate(1.5);
  ASSERT_TRUE(inc.has_value());
  EXPECT_EQ(inc->machines, std::vector<std::string>{"m1"});
  Policy q(Opts());
  q.StartAttempt({"m0", "m1", "m2"}, 0);
  q.OnExit("m0", 1, "exited with status 1", 2.0);
  q.OnExit("m2", 3, "exited with status 3", 1.5);
  EXPECT_FALSE(q.Evaluate(2.5).has_value()) << "error exits wait for a signal death";
  auto first = q.Evaluate(3.0);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->machines, std::vector<std::string>{"m2"}) << "no signal: the earliest";
  EXPECT_DOUBLE_EQ(first->onset_s, 1.5);
}

TEST(PolicyTest, CleanExitOfAllRanksIsSuccessNotAnIncident) {
  Policy p(Opts());
  p.StartAttempt({"m0", "m1"}, 0);
  p.OnExit("m0", 0, "exited with status 0", 1);
  EXPECT_FALSE(p.AllExitedOk());
  p.OnExit("m1", 0, "exited with status 0", 1);
  EXPECT_TRUE(p.AllExitedOk());
  EXPECT_FALSE(p.Evaluate(1).has_value());
}

TEST(PolicyTest, MissedHeartbeatsNameTheSilentMachine) {
  Policy p(Opts());
  p.StartAttempt({"m0", "m1"}, 0);
  for (int t = 1; t <= 6; ++t) {
    p.OnHeartbeat(Hb("m0", 0, 'R', t, t), t);
    if (t <= 2) p.OnHeartbeat(Hb("m1", 1, 'R', t, t), t);
    auto inc = p.Evaluate(t);
    if (t < 5) {
      EXPECT_FALSE(inc.has_value()) << t;
    } else {
      ASSERT_TRUE(inc.has_value());
      EXPECT_EQ(inc->kind, TriggerKind::kMissedHeartbeat);
      EXPECT_EQ(inc->machines, std::vector<std::string>{"m1"});
      EXPECT_DOUBLE_EQ(inc->onset_s, 2);
      break;
    }
  }
}

// A deadlock without a stopped process: everyone stops progressing; m2 lags one collective.
TEST(PolicyTest, NoProgressNamesTheRankThatLagsInCollectiveSequence) {
  Policy p(Opts());
  p.StartAttempt({"m0", "m1", "m2"}, 0);
  for (int t = 1; t <= 5; ++t) {
    for (int r = 0; r < 3; ++r) p.OnHeartbeat(Hb("m" + std::to_string(r), r, 'R', t, 3 * t), t);
  }
  // Step times were 0.5 s: the limit is the floor, 10 s after the last progress at t=5.
  for (int t = 6; t <= 16; ++t) {
    p.OnHeartbeat(Hb("m0", 0, 'S', 5, 16), t);
    p.OnHeartbeat(Hb("m1", 1, 'S', 5, 16), t);
    p.OnHeartbeat(Hb("m2", 2, 'R', 5, 15), t);
    auto inc = p.Evaluate(t);
    if (t < 15) {
      EXPECT_FALSE(inc.has_value()) << t;
      continue;
    }
    ASSERT_TRUE(inc.has_value());
    EXPECT_EQ(inc->kind, TriggerKind::kNoProgress);
    EXPECT_EQ(inc->machines, std::vector<std::string>{"m2"});
    EXPECT_NE(inc->evidence.find("m2=15(allreduce)"), std::string::npos) << inc->evidence;
    break;
  }
}

TEST(PolicyTest, NoProgressWithoutALaggardNamesNobody) {
  Policy p(Opts());
  p.StartAttempt({"m0", "m1"}, 0);
  p.OnHeartbeat(Hb("m0", 0, 'R', 1, 4), 1);
  p.OnHeartbeat(Hb("m1", 1, 'R', 1, 4), 1);
  for (int t = 2; t <= 11; ++t) {
    p.OnHeartbeat(Hb("m0", 0, 'S', 1, 4), t);
    p.OnHeartbeat(Hb("m1", 1, 'S', 1, 4), t);
  }
  auto inc = p.Evaluate(11);
  ASSERT_TRUE(inc.has_value());
  EXPECT_TRUE(inc->machines.empty());
  EXPECT_NE(inc->evidence.find("no single rank lags"), std::string::npos);
}

TEST(PolicyTest, StartupTimeoutAppliesBeforeTheFirstStep) {
  Policy p(Opts());
  p.StartAttempt({"m0"}, 0);
  for (int t = 1; t <= 59; ++t) {
    p.OnHeartbeat(Hb("m0", 0, 'R', -1, -1), t);
    EXPECT_FALSE(p.Evaluate(t).has_value()) << t;
  }
  p.OnHeartbeat(Hb("m0", 0, 'R', -1, -1), 60);
  EXPECT_TRUE(p.Evaluate(60).has_value());
}

TEST(PolicyTest, DetectorAlertNeedsConfirmationAndCanClear) {
  Policy p(Opts());
  p.StartAttempt({"m0", "m1"}, 0);
  for (int t = 1; t <= 10; ++t) {
    p.OnHeartbeat(Hb("m0", 0, 'R', t, t), t);
    p.OnHeartbeat(Hb("m1", 1, 'R', t, t), t);
    if (t == 2) p.OnAlert("m1", "cpu_busy", t);
    if (t == 4) p.OnAlert("m1", "", t);
    if (t == 6) p.OnAlert("m0", "net_tx", t);
    auto inc = p.Evaluate(t);
    if (t < 9) {
      EXPECT_FALSE(inc.has_value()) << t;
    } else {
      ASSERT_TRUE(inc.has_value());
      EXPECT_EQ(inc->kind, TriggerKind::kDetectorAlert);
      EXPECT_EQ(inc->machines, std::vector<std::string>{"m0"});
      EXPECT_NE(inc->evidence.find("net_tx"), std::string::npos);
      break;
    }
  }
}

TEST(HeartbeatTest, RoundTripAndStrictErrors) {
  Heartbeat hb = Hb("m3", 3, 'T', 41, 90);
  hb.log_hits = {"RuntimeError: boom"};
  hb.coll_bytes = 1 << 30;
  auto back = ParseHeartbeat(EncodeHeartbeat(hb));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->machine, "m3");
  EXPECT_EQ(back->state, 'T');
  EXPECT_EQ(back->step, 41);
  EXPECT_EQ(back->last_coll_seq, 90);
  EXPECT_EQ(back->coll_bytes, int64_t{1} << 30);
  EXPECT_EQ(back->log_hits, hb.log_hits);
  EXPECT_FALSE(ParseHeartbeat("{\"machine\": \"m1\"}").ok());
  auto bad = ParseHeartbeat("not json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("not a JSON object"), std::string::npos);
}

}  // namespace
}  // namespace loom::robust
