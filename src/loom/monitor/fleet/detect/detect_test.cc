// Tests of the detectors on hand-built fleets (no simulator): outlier found and named, fleet-wide
// regime changes ignored, continuity gate timing, missing data, distance fast path, BOCD.
#include <cmath>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "loom/monitor/fleet/detect/baselines.h"
#include "loom/monitor/fleet/detect/detector.h"
#include "loom/monitor/fleet/detect/fleet_test_util.h"
#include "loom/monitor/fleet/detect/minder.h"
#include "loom/monitor/fleet/detect/peer_scores.h"

namespace loom::monitor {
namespace {

constexpr int kMachines = 16;
constexpr int64_t kSeconds = 600;

// Three metrics sharing a periodic job signal, small independent noise per machine.
FleetSeries HealthyFleet(uint32_t seed, int machines = kMachines, int64_t seconds = kSeconds) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.02f);
  return fleet_testing::SyntheticFleet({"cpu", "net", "step_time"}, machines, seconds,
                                       [&](int, int64_t t, std::span<float> v) {
                                         const float phase = std::sin(2 * M_PI * t / 9.0);
                                         v[0] = 0.6f + 0.3f * phase + noise(rng);
                                         v[1] = 0.5f - 0.3f * phase + noise(rng);
                                         v[2] = 9.0f * (1.0f + 0.5f * noise(rng));
                                       });
}

struct Alert {
  int64_t t;
  int machine;
  std::string metric;
  bool missing;
};

std::vector<Alert> RunStreaming(Detector& d, const FleetSeries& s) {
  std::vector<Alert> out;
  for (int64_t t = 0; t < s.seconds; ++t) {
    Result<Verdict> v = d.Evaluate(s, t);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    if (!v.ok()) break;
    if (v->alert) out.push_back({t, v->machine, v->metric, v->missing});
  }
  return out;
}

std::unique_ptr<Detector> Make(const nlohmann::json& spec) {
  auto d = MakeDetector(spec);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return std::move(*d);
}

struct Case {
  nlohmann::json spec;
  int metric;                // metric index where the fault is injected
  std::string named_metric;  // what the alert must name
};

class OutlierTest : public ::testing::TestWithParam<Case> {};

TEST_P(OutlierTest, FindsInjectedMachineAndNamesMetric) {
  const Case& c = GetParam();
  FleetSeries s = HealthyFleet(7);
  constexpr int kBad = 5;
  for (int64_t t = 300; t < kSeconds; ++t) {
    if (c.metric == 2) {
      s.at(2, kBad, t) *= 1.6f;  // fail-slow: own step time 60% longer
    } else {
      s.at(c.metric, kBad, t) = 0.05f;  // stall: level drop, periodic pattern gone
    }
  }
  auto d = Make(c.spec);
  const std::vector<Alert> alerts = RunStreaming(*d, s);
  ASSERT_FALSE(alerts.empty()) << d->name();
  for (const Alert& a : alerts) {
    EXPECT_EQ(a.machine, kBad) << d->name() << " at t=" << a.t;
    EXPECT_EQ(a.metric, c.named_metric) << d->name();
    EXPECT_GE(a.t, 300) << d->name();
  }
  EXPECT_LE(alerts.front().t, 300 + 30 + 60) << d->name();
}

INSTANTIATE_TEST_SUITE_P(
    Detectors, OutlierTest,
    ::testing::Values(
        Case{{{"type", "minder"}, {"continuity_s", 30}}, 1, "net"},
        Case{{{"type", "minder"}, {"denoiser", "identity"}, {"continuity_s", 30}}, 0, "cpu"},
        Case{{{"type", "minder"}, {"distance", "l2sq"}, {"continuity_s", 30}}, 0, "cpu"},
        Case{{{"type", "minder"}, {"integrated", true}, {"continuity_s", 30}}, 1, "all"},
        Case{{{"type", "mahalanobis"}, {"threshold", 3.7}, {"continuity_s", 30}}, 1, "all"},
        Case{{{"type", "peer_z"}, {"threshold", 6.0}, {"continuity_s", 30}}, 1, "net"},
        Case{{{"type", "iforest"}, {"threshold", 0.62}, {"continuity_s", 30}}, 0, "all"},
        Case{{{"type", "nvrx"}, {"continuity_s", 30}}, 2, "step_time"},
        Case{{{"type", "bocd"}, {"threshold", 5.0}, {"continuity_s", 30}}, 2, "step_time"}));

TEST(RegimeChangeTest, FleetWideShiftDoesNotAlarm) {
  FleetSeries s = HealthyFleet(11);
  // Checkpoint pause: every machine's cpu and net drop and step time doubles, together.
  for (int i = 0; i < kMachines; ++i) {
    for (int64_t t = 300; t < 420; ++t) {
      s.at(0, i, t) = 0.1f + 0.2f * (s.at(0, i, t) - 0.6f);
      s.at(1, i, t) = 0.9f + 0.2f * (s.at(1, i, t) - 0.5f);
      s.at(2, i, t) *= 2.0f;
    }
  }
  for (const nlohmann::json& spec :
       {nlohmann::json{{"type", "minder"}}, {{"type", "mahalanobis"}, {"threshold", 3.7}},
        {{"type", "peer_z"}, {"threshold", 6.0}}, {{"type", "nvrx"}},
        {{"type", "bocd"}, {"threshold", 5.0}}}) {
    auto d = Make(spec);
    const std::vector<Alert> alerts = RunStreaming(*d, s);
    EXPECT_TRUE(alerts.empty()) << d->name() << " alerted on machine " << alerts[0].machine
                                << " at t=" << alerts[0].t;
  }
}

ScoreStep OneChannel(int machine, double score) {
  ScoreStep s;
  s.channels.push_back({"cpu", machine, score, false});
  return s;
}

TEST(ContinuityGateTest, TransientShorterThanTcIsSuppressedAndTcPasses) {
  ContinuityGate gate({.threshold = 3.0, .continuity_s = 30});
  // 29 s above threshold on machine 4: no alert.
  for (int64_t t = 0; t < 29; ++t) EXPECT_FALSE(gate.Step(OneChannel(4, 5.0), t).alert) << t;
  EXPECT_FALSE(gate.Step(OneChannel(4, 1.0), 29).alert);  // below threshold: run broken
  // Exactly 30 s: alerts at the 30th second, not before.
  for (int64_t t = 30; t < 59; ++t) EXPECT_FALSE(gate.Step(OneChannel(4, 5.0), t).alert) << t;
  const GateDecision d = gate.Step(OneChannel(4, 5.0), 59);
  EXPECT_TRUE(d.alert);
  EXPECT_EQ(d.machine, 4);
  EXPECT_EQ(d.channel, 0);
}

TEST(ContinuityGateTest, CandidateChangeOrSkippedSecondBreaksTheRun) {
  ContinuityGate gate({.threshold = 3.0, .continuity_s = 3});
  EXPECT_FALSE(gate.Step(OneChannel(1, 5.0), 0).alert);
  EXPECT_FALSE(gate.Step(OneChannel(1, 5.0), 1).alert);
  EXPECT_FALSE(gate.Step(OneChannel(2, 5.0), 2).alert);  // other machine
  EXPECT_FALSE(gate.Step(OneChannel(2, 5.0), 3).alert);
  EXPECT_FALSE(gate.Step(OneChannel(2, 5.0), 5).alert);  // skipped t = 4
  EXPECT_FALSE(gate.Step(OneChannel(2, 5.0), 6).alert);
  EXPECT_TRUE(gate.Step(OneChannel(2, 5.0), 7).alert);
}

TEST(ContinuityGateTest, MinderTransientVersusPersistentFault) {
  constexpr int64_t kTc = 20;
  for (const int64_t len : {kTc - 8, kTc + 30}) {
    FleetSeries s = HealthyFleet(3);
    for (int64_t t = 300; t < 300 + len; ++t) s.at(0, 9, t) = 0.05f;
    auto d = Make({{"type", "minder"}, {"continuity_s", kTc}});
    const std::vector<Alert> alerts = RunStreaming(*d, s);
    if (len < kTc) {
      EXPECT_TRUE(alerts.empty()) << "transient of " << len << " s alerted";
    } else {
      ASSERT_FALSE(alerts.empty());
      EXPECT_EQ(alerts[0].machine, 9);
    }
  }
}

TEST(ContinuityGateTest, MinFractionToleratesFlickerAndMinChannelsNeedsAgreement) {
  ContinuityGate gate({.threshold = 3.0, .continuity_s = 10, .min_fraction = 0.8});
  // Machine 4 is the candidate 8 of every 10 seconds: alerts once it has 8 in the last 10.
  int64_t first = -1;
  for (int64_t t = 0; t < 30 && first < 0; ++t) {
    const bool flicker = t % 5 == 2;
    if (gate.Step(OneChannel(flicker ? 7 : 4, 5.0), t).alert) first = t;
  }
  EXPECT_EQ(first, 9);  // seconds 0..9 hold machine 4 eight times (2 and 7 flicker)
  ContinuityGate strict({.threshold = 3.0, .continuity_s = 10});
  for (int64_t t = 0; t < 30; ++t) {
    EXPECT_FALSE(strict.Step(OneChannel(t % 5 == 2 ? 7 : 4, 5.0), t).alert);
  }
  ContinuityGate two({.threshold = 3.0, .continuity_s = 1, .min_channels = 2});
  ScoreStep step;
  step.channels = {{"cpu", 4, 5.0, false}, {"net", 6, 5.0, false}};
  EXPECT_FALSE(two.Step(step, 0).alert);  // the channels disagree
  step.channels[1].machine = 4;
  const GateDecision d = two.Step(step, 1);
  EXPECT_TRUE(d.alert);
  EXPECT_EQ(d.machine, 4);
}

TEST(MinderCorroborationTest, NeedsTwoMetricsAndNamesThem) {
  auto corr = [] { return Make({{"type", "minder"}, {"corroborate", 2}, {"continuity_s", 30}}); };
  // A one-metric excursion (a noise spike) alerts plain Minder but not the corroborated one.
  FleetSeries spike = HealthyFleet(13);
  for (int64_t t = 300; t < 400; ++t) spike.at(0, 6, t) = 0.05f;
  EXPECT_FALSE(RunStreaming(*Make({{"type", "minder"}, {"continuity_s", 30}}), spike).empty());
  EXPECT_TRUE(RunStreaming(*corr(), spike).empty());
  // A stall seen in cpu and net at once is found and both metrics are named.
  FleetSeries stall = HealthyFleet(13);
  for (int64_t t = 300; t < kSeconds; ++t) {
    stall.at(0, 6, t) = 0.05f;
    stall.at(1, 6, t) = 0.95f;
  }
  const std::vector<Alert> alerts = RunStreaming(*corr(), stall);
  ASSERT_FALSE(alerts.empty());
  EXPECT_EQ(alerts[0].machine, 6);
  EXPECT_TRUE(alerts[0].metric == "cpu+net" || alerts[0].metric == "net+cpu") << alerts[0].metric;
  EXPECT_GE(alerts[0].t, 300);
}

TEST(MissingDataTest, UnreachableMachineIsNamedAsMissingNeverScoredZero) {
  FleetSeries s = HealthyFleet(5);
  for (int m = 0; m < s.metrics(); ++m) {
    for (int64_t t = 250; t < kSeconds; ++t) s.at(m, 12, t) = NAN;
    // Machine 3 loses a sample now and then: gaps are filled, it must not be flagged.
    for (int64_t t = 0; t < kSeconds; t += 37) s.at(m, 3, t) = NAN;
  }
  for (const nlohmann::json& spec :
       {nlohmann::json{{"type", "minder"}}, {{"type", "minder"}, {"integrated", true}},
        {{"type", "minder"}, {"corroborate", 2}},
        {{"type", "mahalanobis"}, {"threshold", 3.7}}, {{"type", "iforest"}, {"threshold", 0.62}},
        {{"type", "peer_z"}, {"threshold", 6.0}}, {{"type", "heartbeat"}}}) {
    auto d = Make(spec);
    bool alerted = false;
    for (int64_t t = 0; t < kSeconds; ++t) {
      Result<Verdict> v = d->Evaluate(s, t);
      ASSERT_TRUE(v.ok()) << d->name() << ": " << v.status().ToString();
      if (t >= 260 && !v->scores.empty() && d->name() != "heartbeat") {
        EXPECT_TRUE(std::isnan(v->scores[12])) << d->name() << " scored a missing machine";
      }
      if (!v->alert) continue;
      alerted = true;
      EXPECT_EQ(v->machine, 12) << d->name() << " t=" << t;
      EXPECT_GE(t, 250) << d->name();
      EXPECT_TRUE(v->missing || d->name() == "heartbeat") << d->name();
      EXPECT_NE(v->score, 0.0) << d->name();
    }
    EXPECT_TRUE(alerted) << d->name();
  }
}

TEST(MissingDataTest, AllMissingGivesNoCandidateAndNoError) {
  FleetSeries s = FleetSeries::Make({"cpu", "step_time"}, 8, 100);  // all NaN
  for (const nlohmann::json& spec :
       {nlohmann::json{{"type", "minder"}}, {{"type", "mahalanobis"}}, {{"type", "peer_z"}},
        {{"type", "iforest"}}, {{"type", "nvrx"}}, {{"type", "bocd"}}}) {
    auto d = Make(spec);
    for (int64_t t = 0; t < 100; ++t) {
      Result<Verdict> v = d->Evaluate(s, t);
      ASSERT_TRUE(v.ok()) << d->name();
      EXPECT_FALSE(v->alert) << d->name();
    }
  }
}

TEST(PeerDistanceTest, SquaredFastPathEqualsBruteForce) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(0, 1);
  for (const int n : {3, 17, 130}) {
    const int d = 11;
    std::vector<float> emb(static_cast<size_t>(n) * d);
    for (float& v : emb) v = u(rng);
    std::vector<uint8_t> present(n, 1);
    present[1] = 0;
    std::vector<float> fast(n), slow(n), l2(n);
    PeerDistanceSums(emb.data(), n, d, present.data(), Distance::kL2Squared, fast.data());
    SquaredDistanceSumsBruteForce(emb.data(), n, d, present.data(), slow.data());
    PeerDistanceSums(emb.data(), n, d, present.data(), Distance::kL2, l2.data());
    EXPECT_TRUE(std::isnan(fast[1]) && std::isnan(slow[1]) && std::isnan(l2[1]));
    for (int i = 0; i < n; ++i) {
      if (i == 1) continue;
      EXPECT_NEAR(fast[i], slow[i], 1e-4f * slow[i]) << "n=" << n << " i=" << i;
      EXPECT_LE(l2[i] * l2[i], slow[i] * (1 + 1e-5f));  // Jensen: mean(d)^2 <= mean(d^2)
      EXPECT_GT(l2[i], 0.0f);
      double ref = 0;  // plain pairwise L2 (n = 130 takes the Gram-matrix path)
      for (int j = 0; j < n; ++j) {
        if (j == i || !present[j]) continue;
        double sq = 0;
        for (int k = 0; k < d; ++k) sq += std::pow(emb[i * d + k] - emb[j * d + k], 2);
        ref += std::sqrt(sq);
      }
      EXPECT_NEAR(l2[i], ref / (n - 2), 1e-4 * ref / (n - 2)) << "n=" << n << " i=" << i;
    }
  }
}

TEST(RobustZTest, MedianMadAndFloor) {
  const std::vector<float> x = {1, 2, 3, 4, 100};
  const std::vector<uint8_t> present = {1, 1, 1, 1, 1};
  std::vector<float> z(5);
  RobustZ(x, present, 1e-9, z);
  EXPECT_NEAR(z[2], 0.0f, 1e-6);              // median 3
  EXPECT_NEAR(z[4], 97.0f / 1.4826f, 1e-3);   // MAD = 1
  RobustZ(std::vector<float>{5, 5, 5, 5}, std::vector<uint8_t>{1, 1, 1, 1}, 0.5, z);
  EXPECT_EQ(z[0], 0.0f);  // identical machines: z = 0, not NaN or inf
}

TEST(BocdTest, DetectsStepTimeChangePoint) {
  FleetSeries s = HealthyFleet(21);
  for (int64_t t = 400; t < kSeconds; ++t) s.at(2, 2, t) *= 1.3f;
  auto d = Make({{"type", "bocd"}, {"threshold", 5.0}, {"continuity_s", 10}});
  auto* bocd = dynamic_cast<ScoredDetector*>(d.get());
  ASSERT_NE(bocd, nullptr);
  double before = 0, after = 0;
  int64_t first_alert = -1;
  for (int64_t t = 0; t < kSeconds; ++t) {
    Result<Verdict> v = d->Evaluate(s, t);
    ASSERT_TRUE(v.ok());
    if (t == 399) before = v->scores[2];
    if (t == 430) after = v->scores[2];
    if (v->alert && first_alert < 0) {
      first_alert = t;
      EXPECT_EQ(v->machine, 2);
    }
  }
  EXPECT_LT(before, 3.0);
  EXPECT_GT(after, 10.0);
  EXPECT_GE(first_alert, 400);
  EXPECT_LE(first_alert, 400 + 30);
}

TEST(IsolationForestTest, IsolatesTheFarPoint) {
  std::mt19937 rng(4);
  std::normal_distribution<float> g(0, 1);
  const int n = 64, d = 4;
  std::vector<float> x(n * d);
  for (float& v : x) v = g(rng);
  for (int k = 0; k < d; ++k) x[10 * d + k] = 8.0f;
  const std::vector<float> s = IsolationForestScores(x, n, d, 100, 64, 9);
  EXPECT_EQ(ArgMax(s), 10);
  EXPECT_GT(s[10], 0.7f);
}

TEST(FactoryTest, BadSpecsAreExplicitErrors) {
  EXPECT_FALSE(MakeDetector({{"type", "nope"}}).ok());
  EXPECT_FALSE(MakeDetector({{"type", "minder"}, {"window", "eight"}}).ok());
  EXPECT_FALSE(MakeDetector({{"type", "minder"}, {"window", 1}}).ok());
  EXPECT_FALSE(MakeDetector({{"type", "minder"}, {"distance", "cosine"}}).ok());
  EXPECT_FALSE(MakeDetector({{"type", "minder"}, {"denoiser", "lstm_vae"}}).ok());  // no loader
  auto d = MakeDetector({{"type", "nvrx"}, {"metric", "absent"}});
  ASSERT_TRUE(d.ok());
  const Result<Verdict> v = (*d)->Evaluate(HealthyFleet(1), 10);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().ToString().find("absent"), std::string::npos);
  auto m = MakeDetector({{"type", "minder"}, {"priority", {"nope"}}});
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE((*m)->Evaluate(HealthyFleet(1), 10).ok());
}

}  // namespace
}  // namespace loom::monitor
