#include "loom/monitor/fleet/denoise/denoise_windows.h"

#include <gtest/gtest.h>

#include <cmath>

namespace loom::monitor {
namespace {

// 3 machines x 100 s; value = machine * 100 + t; machine 0 misses t = 10; a fault on machine 1
// during [40, 60) spreading to machine 2 (its group).
LabelledJob SmallJob(bool must_alarm = true) {
  LabelledJob job;
  job.series = FleetSeries::Make({"cpu_busy", "net_tx"}, 3, 100);
  for (int m = 0; m < 2; ++m) {
    for (int i = 0; i < 3; ++i) {
      for (int t = 0; t < 100; ++t) job.series.at(m, i, t) = static_cast<float>(i * 100 + t);
    }
  }
  job.series.at(0, 0, 10) = NAN;
  FaultLabel f;
  f.machine = 1;
  f.type = "stall";
  f.onset_s = 40;
  f.end_s = 60;
  f.group = {2};
  f.must_alarm = must_alarm;
  job.faults.push_back(f);
  return job;
}

TEST(DenoiseWindows, HealthyWindowsSkipFaultsGroupsAndGaps) {
  WindowOptions whole_job;
  whole_job.norm_horizon_s = 0;
  auto w = CutWindows(SmallJob(), "cpu_busy", WindowKind::kHealthy, whole_job);
  ASSERT_TRUE(w.ok()) << w.status();
  // machine 0: runs [0, 9] and [11, 99] -> 3 + 82; machines 1 and 2: [0, 39], [60, 99] -> 33 + 33.
  EXPECT_EQ(w->count, 85 + 66 + 66);
  ASSERT_EQ(w->values.size(), static_cast<size_t>(w->count) * 8);
  // First window: machine 0, t = 0..7, normalised by 299.
  for (int t = 0; t < 8; ++t) EXPECT_FLOAT_EQ(w->values[t], t / 299.f);
  // Second run of machine 0 starts at t = 11 (windows 3, 4, ...).
  EXPECT_FLOAT_EQ(w->values[3 * 8], 11 / 299.f);
  for (float v : w->values) {
    EXPECT_GE(v, 0.f);
    EXPECT_LE(v, 1.f);
  }
}

TEST(DenoiseWindows, FaultyWindowsAreInsideRootFaults) {
  WindowOptions whole_job;
  whole_job.norm_horizon_s = 0;
  auto w = CutWindows(SmallJob(), "net_tx", WindowKind::kFaulty, whole_job);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->count, 13);  // machine 1, [40, 60), w = 8
  EXPECT_FLOAT_EQ(w->values[0], 140 / 299.f);
  auto transient = CutWindows(SmallJob(false), "net_tx", WindowKind::kFaulty, {});
  ASSERT_TRUE(transient.ok());
  EXPECT_EQ(transient->count, 0);
}

// With a horizon, each window is normalised by the fleet's range over the last horizon seconds:
// here min = machine 0 at t - 9, max = machine 2 at t.
TEST(DenoiseWindows, HorizonNormalisationFollowsTheFleetRange) {
  WindowOptions o;
  o.norm_horizon_s = 10;
  auto w = CutWindows(SmallJob(), "cpu_busy", WindowKind::kHealthy, o);
  ASSERT_TRUE(w.ok()) << w.status();
  // Window 10 of machine 0 ends at t = 24 (second run starts at 11, ends 18, 19, ...).
  const int64_t t = 24;
  const float lo = t - 9, hi = 200 + t;
  for (int k = 0; k < 8; ++k) {
    EXPECT_FLOAT_EQ(w->values[(3 + t - 18) * 8 + k], (t - 7 + k - lo) / (hi - lo)) << k;
  }
  // The window at the start: horizon clipped to [0, 7] -> lo 0, hi 207.
  EXPECT_FLOAT_EQ(w->values[7], 7.f / 207.f);
}

TEST(DenoiseWindows, StrideAndSeededSubset) {
  WindowOptions o;
  o.stride = 4;
  auto strided = CutWindows(SmallJob(), "cpu_busy", WindowKind::kHealthy, o);
  ASSERT_TRUE(strided.ok());
  // Window starts must be multiples of 4: machine 0 starts 0 (run 1) and 12..92 (21);
  // machines 1, 2: 0..32 (9) and 60..92 (9).
  EXPECT_EQ(strided->count, 1 + 21 + 18 + 18);
  o.stride = 1;
  o.max_windows = 50;
  o.seed = 3;
  auto a = CutWindows(SmallJob(), "cpu_busy", WindowKind::kHealthy, o);
  auto b = CutWindows(SmallJob(), "cpu_busy", WindowKind::kHealthy, o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->count, 50);
  EXPECT_EQ(a->values, b->values);
  o.seed = 4;
  auto c = CutWindows(SmallJob(), "cpu_busy", WindowKind::kHealthy, o);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->values, c->values);
}

TEST(DenoiseWindows, Errors) {
  auto unknown = CutWindows(SmallJob(), "gpu_power", WindowKind::kHealthy, {});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("gpu_power"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("cpu_busy,net_tx"), std::string::npos);
  WindowOptions o;
  o.window = 1;
  EXPECT_FALSE(CutWindows(SmallJob(), "cpu_busy", WindowKind::kHealthy, o).ok());
}

TEST(DenoiseWindows, NormaliseKeepsNanAndClamps) {
  MetricRange r{2.f, 4.f};
  EXPECT_TRUE(std::isnan(Normalise(NAN, r)));
  EXPECT_FLOAT_EQ(Normalise(3.f, r), 0.5f);
  EXPECT_FLOAT_EQ(Normalise(9.f, r), 1.f);
  EXPECT_FLOAT_EQ(Normalise(3.f, MetricRange{3.f, 3.f}), 0.5f);
}

}  // namespace
}  // namespace loom::monitor
