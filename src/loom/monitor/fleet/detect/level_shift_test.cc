// Level-shift channels (level_shift.h): a small duty-cycle change on one machine scores high
// against its own past, constant per-machine gains, short spikes and a finished fault do not.
#include "loom/monitor/fleet/detect/level_shift.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "loom/monitor/fleet/detect/detector.h"
#include "loom/monitor/fleet/detect/fleet_test_util.h"
#include "loom/monitor/fleet/detect/minder.h"

namespace loom::monitor {
namespace {

constexpr int kMachines = 32;
constexpr int64_t kSeconds = 3600;

// One metric: a 9 s step whose first `duty` x 9 s are busy (level 1) and the rest idle (0),
// averaged over each second, times a per-machine gain, plus uniform noise in ±0.05.
struct Fleet {
  std::vector<double> gain = std::vector<double>(kMachines, 1.0);
  int slow_machine = -1;              // computes `stretch` x longer over [slow_from, slow_to)
  double stretch = 1.1;
  int64_t slow_from = 0, slow_to = 0;
  int spike_machine = -1;             // + spike_amp over [spike_from, spike_from + spike_len)
  int64_t spike_from = 0, spike_len = 0;
  double spike_amp = 0.6;
  int64_t seconds = kSeconds;

  FleetSeries Make() const {
    uint64_t rng = 12345;
    auto uniform = [&rng] {
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      return static_cast<double>(rng >> 11) / 9007199254740992.0;
    };
    return fleet_testing::SyntheticFleet(
        {"gpu"}, kMachines, seconds, [&](int i, int64_t t, std::span<float> values) {
          double duty = 0.7;
          if (i == slow_machine && t >= slow_from && t < slow_to) duty *= stretch;
          const double busy_end = 9.0 * duty, p = static_cast<double>(t % 9);
          const double busy = std::clamp(busy_end - p, 0.0, 1.0);
          double v = gain[i] * busy + 0.1 * (uniform() - 0.5);
          if (i == spike_machine && t >= spike_from && t < spike_from + spike_len) v += spike_amp;
          values[0] = static_cast<float>(v);
        });
  }
};

// Machine `machine` computes `stretch` x longer over [from, to).
Fleet SlowMachine(int machine, int64_t from, int64_t to, double stretch = 1.1) {
  return Fleet{.slow_machine = machine, .stretch = stretch, .slow_from = from, .slow_to = to};
}

LevelShiftOptions Options() {
  LevelShiftOptions o;
  o.window_s = 99;
  o.block_s = 9;
  o.ref_s = 1800;
  return o;
}

double MaxAbsExcept(const std::vector<float>& z, int skip) {
  double m = 0;
  for (int i = 0; i < static_cast<int>(z.size()); ++i) {
    if (i != skip && std::isfinite(z[i])) m = std::max(m, std::fabs(static_cast<double>(z[i])));
  }
  return m;
}

TEST(LevelShiftTest, TenPercentLongerComputeScoresHighAfterHalfAWindow) {
  const FleetSeries s = SlowMachine(5, 2000, kSeconds).Make();
  LevelShiftChannels ch(Options());
  const std::vector<float> before = ch.ShiftZ(s, 0, 1999);
  EXPECT_LT(std::fabs(before[5]), 3.0);
  // 99 s after onset the whole window is slow: duty 0.77 vs 0.7 is +0.07 per sample.
  const std::vector<float> after = ch.ShiftZ(s, 0, 2099);
  EXPECT_GT(after[5], 8.0);
  EXPECT_LT(MaxAbsExcept(after, 5), 4.0);
  // 30 s after onset, fewer than half of the window's blocks are slow: not yet.
  EXPECT_LT(std::fabs(ch.ShiftZ(s, 0, 2030)[5]), 4.0);
}

TEST(LevelShiftTest, ConstantGainIsNotAShift) {
  Fleet f;
  f.gain[3] = 1.1;  // 10% hotter throughout: a plain level comparison would single it out
  const FleetSeries s = f.Make();
  LevelShiftChannels ch(Options());
  for (int64_t t : {1000, 2500, 3599}) {
    const std::vector<float> z = ch.ShiftZ(s, 0, t);
    EXPECT_LT(std::fabs(z[3]), 3.0) << "t=" << t;
    EXPECT_LT(MaxAbsExcept(z, -1), 5.0) << "t=" << t;  // healthy noise of 32 machines
  }
}

TEST(LevelShiftTest, SpikesShorterThanHalfTheWindowCannotMoveTheMedian) {
  Fleet f;
  f.spike_machine = 7;
  f.spike_from = 2000;
  f.spike_len = 29;  // a transient just under T_c = 30 s, amplitude 0.6 (8.6 x the fault's shift)
  const FleetSeries s = f.Make();
  LevelShiftChannels ch(Options());
  double worst = 0;
  for (int64_t t = 1990; t < 2200; ++t) worst = std::max(worst, std::fabs(double(ch.ShiftZ(s, 0, t)[7])));
  // The same spike moves a 99 s mean by 0.6 x 29 / 99 = 0.18, ~50 x the median's noise.
  EXPECT_LT(worst, 5.0);
}

TEST(LevelShiftTest, AFinishedFaultShorterThanHalfTheReferenceLeavesNoShift) {
  const FleetSeries s = SlowMachine(2, 2000, 2600, 1.3).Make();  // 600 s < ref_s / 2
  LevelShiftChannels ch(Options());
  EXPECT_GT(ch.ShiftZ(s, 0, 2500)[2], 30.0);
  // Once the window is past the fault, the machine is back among its healthy peers: the
  // reference median moves by ~0.7 x the block noise (a third of the reference is faulty),
  // not by the fault's shift (z > 30 while it lasted).
  double worst = 0, worst_healthy = 0;
  for (int64_t t = 2700; t < kSeconds; t += 7) {
    const std::vector<float> z = ch.ShiftZ(s, 0, t);
    worst = std::max(worst, std::fabs(static_cast<double>(z[2])));
    worst_healthy = std::max(worst_healthy, MaxAbsExcept(z, 2));
  }
  EXPECT_LT(worst, 7.0);
  EXPECT_LT(worst, 2.0 * worst_healthy);
}

// Round 4's held-out false alarms: a fault of ~ref_s / 2 (900 s, the evaluation's longest)
// fills half of the reference, and the recovered machine looks shifted. A reference frozen
// while the machine deviates (freeze_z), or one >= 4 x the fault (3600 s), does not.
struct Recovery {
  double during = 0;  // the machine's z 880 s into the fault
  double after = 0;   // its largest |z| once the window is past the fault
  double healthy = 0;  // largest |z| of the other machines meanwhile
};
Recovery AfterALongFault(const LevelShiftOptions& o) {
  Fleet f = SlowMachine(2, 3000, 3900, 1.3);
  f.seconds = 6600;
  const FleetSeries s = f.Make();
  LevelShiftChannels ch(o);
  Recovery r;
  for (int64_t t = 0; t < f.seconds; ++t) {  // streaming: every second, in order
    const std::vector<float> z = ch.ShiftZ(s, 0, t);
    if (t == 3880) r.during = z[2];
    if (t < 4000) continue;
    r.after = std::max(r.after, std::fabs(static_cast<double>(z[2])));
    r.healthy = std::max(r.healthy, MaxAbsExcept(z, 2));
  }
  return r;
}

TEST(LevelShiftTest, AFaultOfHalfTheReferenceNeedsAFrozenOrLongerReference) {
  LevelShiftOptions plain = Options(), frozen = Options(), long_ref = Options();
  frozen.freeze_z = 5;
  long_ref.ref_s = 3600;
  const Recovery p = AfterALongFault(plain), f = AfterALongFault(frozen),
                 l = AfterALongFault(long_ref);
  // Measured: plain 62 after (healthy max 4.8), frozen 5.2 (4.9), 3600-s reference 5.3 (5.9).
  EXPECT_GT(p.after, 30.0);  // the recovered machine looks shifted (round 4's false alarms)
  EXPECT_LT(f.after, 2.0 * f.healthy);
  EXPECT_LT(f.after, 8.0);
  EXPECT_LT(l.after, 2.0 * l.healthy);
  EXPECT_LT(l.after, 8.0);
  // Frozen, the fault stays as visible at its end as at its start; the plain reference has
  // absorbed part of it by then.
  EXPECT_GT(f.during, 30.0);
  EXPECT_GT(f.during, p.during);
}

// Asks `jumping` for `ahead`, then 1500, then `t` (its scores at `t` go to `*at_t`): they must
// equal, to the float, those of a fresh channel with `jumping`'s options streamed second by
// second over [1000, t].
void ExpectSameAsStreamedInOrder(const FleetSeries& s, const LevelShiftOptions& o,
                                 LevelShiftChannels& jumping, int64_t ahead, int64_t t,
                                 std::vector<float>* at_t) {
  LevelShiftChannels in_order(o);
  std::vector<float> a;
  for (int64_t u = 1000; u <= t; ++u) a = in_order.ShiftZ(s, 0, u);
  (void)jumping.ShiftZ(s, 0, ahead);
  (void)jumping.ShiftZ(s, 0, 1500);
  *at_t = jumping.ShiftZ(s, 0, t);
  ASSERT_EQ(a.size(), at_t->size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_FLOAT_EQ(a[i], (*at_t)[i]);
}

TEST(LevelShiftTest, FrozenReferencesDoNotDependOnCallOrder) {
  const FleetSeries s = SlowMachine(5, 2000, 2900).Make();
  LevelShiftOptions o = Options();
  o.freeze_z = 5;
  LevelShiftChannels jumping(o);
  std::vector<float> b;
  ExpectSameAsStreamedInOrder(s, o, jumping, 3500, 3105, &b);
}

TEST(LevelShiftTest, ScoresDependOnlyOnTheLastCompleteBlockNotOnCallOrder) {
  const FleetSeries s = SlowMachine(5, 2000, kSeconds).Make();
  LevelShiftChannels jumping(Options());
  std::vector<float> b;
  ASSERT_NO_FATAL_FAILURE(ExpectSameAsStreamedInOrder(s, Options(), jumping, 3000, 2105, &b));
  // t = 2105 .. 2113 share the last complete block (233 = [2097, 2106)).
  EXPECT_FLOAT_EQ(jumping.ShiftZ(s, 0, 2113)[5], b[5]);
}

TEST(LevelShiftTest, MissingMachineHasNoScoreAndTooLittleHistoryGivesNone) {
  Fleet f;
  FleetSeries s = f.Make();
  for (int64_t t = 1500; t < kSeconds; ++t) s.at(0, 4, t) = NAN;
  LevelShiftChannels ch(Options());
  const std::vector<float> z = ch.ShiftZ(s, 0, 2000);
  EXPECT_TRUE(std::isnan(z[4]));
  EXPECT_TRUE(std::isfinite(z[3]));
  // min_ref_s = 270 s of reference before a 99 s window: nothing before t = 368 (or up to
  // 7 blocks later: the reference ends on a staggered block).
  const std::vector<float> early = ch.ShiftZ(s, 0, 300);
  EXPECT_TRUE(std::all_of(early.begin(), early.end(), [](float v) { return std::isnan(v); }));
  ScoreStep step;
  ch.Add(s, 300, {0}, &step);
  ASSERT_EQ(step.channels.size(), 1u);
  EXPECT_EQ(step.channels[0].metric, "gpu~99s");
  EXPECT_EQ(step.channels[0].machine, -1);
}

TEST(LevelShiftTest, MinderAddsOneNamedChannelPerMetricAndWeighsIt) {
  const FleetSeries s = SlowMachine(5, 2000, kSeconds).Make();
  auto spec = [](double weight) {
    return nlohmann::json{{"type", "minder"}, {"window", 18}, {"shift_window_s", 99},
                          {"shift_weight", weight}};
  };
  auto one = MakeScoredDetector(spec(1.0));
  auto half = MakeScoredDetector(spec(0.5));
  ASSERT_TRUE(one.ok() && half.ok());
  auto a = (*one)->Score(s, 2099);
  auto b = (*half)->Score(s, 2099);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->channels.size(), 2u);
  EXPECT_EQ(a->channels[1].metric, "gpu~99s");
  EXPECT_EQ(a->channels[1].machine, 5);
  EXPECT_NEAR(b->channels[1].score, 0.5 * a->channels[1].score, 1e-4 * a->channels[1].score);
  // Bad fields name themselves.
  auto bad = MakeScoredDetector({{"type", "minder"}, {"shift_window_s", 99}, {"shift_block_s", 120}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("shift_block_s"), std::string::npos);
  auto bad_freeze = MakeScoredDetector({{"type", "minder"}, {"shift_freeze_z", -1}});
  ASSERT_FALSE(bad_freeze.ok());
  EXPECT_NE(bad_freeze.status().message().find("shift_freeze_z"), std::string::npos);
}

}  // namespace
}  // namespace loom::monitor
