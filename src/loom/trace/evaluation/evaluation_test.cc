#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "loom/trace/dfg/model_spec.h"
#include "loom/trace/evaluation/accuracy.h"
#include "loom/trace/evaluation/clock_recovery.h"
#include "loom/trace/evaluation/config_grid.h"
#include "loom/trace/evaluation/grid_prediction.h"
#include "loom/trace/evaluation/strategy_ranking.h"
#include "loom/trace/ingest/testing/synthetic.h"
#include "loom/trace/replay/replayer.h"

namespace loom::trace::evaluation {
namespace {

TEST(ConfigGrid, ParsesLinkRates) {
  EXPECT_EQ(*ParseLinkRate("unshaped"), 0.0);
  EXPECT_DOUBLE_EQ(*ParseLinkRate("10mbit"), 10e6);
  EXPECT_DOUBLE_EQ(*ParseLinkRate("1gbit"), 1e9);
  EXPECT_DOUBLE_EQ(*ParseLinkRate("500kbit"), 5e5);
  EXPECT_DOUBLE_EQ(*ParseLinkRate("2.5gbit"), 2.5e9);
  auto bad = ParseLinkRate("10MB");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'10MB'"), std::string::npos);
}

TEST(ConfigGrid, MapsConfigToTrainKeys) {
  auto keys = TrainKeys({"50mbit", 4, false, "int4"});
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ(*keys, (std::vector<std::string>{"dist.bucket_mb=4", "dist.overlap=false",
                                             "compress.grad=int4:g128",
                                             "compress.min_elements=0"}));
  keys = TrainKeys({"unshaped", 0.25, true, "none"});
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ(*keys, (std::vector<std::string>{"dist.bucket_mb=0.25", "dist.overlap=true",
                                             "compress.grad=none"}));
  EXPECT_FALSE(TrainKeys({"unshaped", 0.25, true, "zstd"}).ok());
  EXPECT_FALSE(TrainKeys({"unshaped", 0, true, "none"}).ok());
  EXPECT_EQ(EvalConfig({"10mbit", 0.25, false, "int4"}).Name(), "10mbit/b0.25/seq/int4");
}

TEST(ConfigGrid, GridHasThirtyDistinctConfigsBaseFirst) {
  const std::vector<EvalConfig> full = ReplayGrid(false);
  ASSERT_EQ(full.size(), 30u);
  EXPECT_EQ(full[0], BaseConfig());
  std::set<std::string> names;
  std::set<std::string> rates;
  for (const EvalConfig& c : full) {
    names.insert(c.Name());
    rates.insert(c.rate);
    EXPECT_TRUE(TrainKeys(c).ok()) << c.Name();
  }
  EXPECT_EQ(names.size(), 30u);
  EXPECT_EQ(rates, (std::set<std::string>{"unshaped", "1gbit", "200mbit", "50mbit", "10mbit"}));
  const std::vector<EvalConfig> quick = ReplayGrid(true);
  ASSERT_EQ(quick.size(), 4u);
  EXPECT_EQ(quick[0], BaseConfig());
}

TEST(ConfigGrid, BandwidthScaleFromRatesAndFittedBeta) {
  const EvalConfig base{"200mbit", 0.25, true, "none"};
  BandwidthModel bw;
  EXPECT_DOUBLE_EQ(*BandwidthScale({"50mbit", 4, true, "none"}, base, bw), 0.25);
  EXPECT_DOUBLE_EQ(*BandwidthScale({"1gbit", 4, true, "none"}, base, bw), 5.0);
  EXPECT_DOUBLE_EQ(*BandwidthScale({"unshaped", 4, true, "none"}, base, bw), 50.0);
  bw.unshaped_bits_per_s = 4e9;
  EXPECT_DOUBLE_EQ(*BandwidthScale({"unshaped", 4, true, "none"}, base, bw), 20.0);
  // Unshaped base: its bandwidth is the fitted β (here 100 MB/s = 800 Mbit/s).
  const EvalConfig open{"unshaped", 0.25, true, "none"};
  EXPECT_FALSE(BandwidthScale({"10mbit", 4, true, "none"}, open, bw).ok());
  bw.base_fitted_bytes_per_s = 100e6;
  EXPECT_DOUBLE_EQ(*BandwidthScale({"10mbit", 4, true, "none"}, open, bw),
                   10e6 * kTcpGoodput / 800e6);
  EXPECT_DOUBLE_EQ(*BandwidthScale({"1gbit", 4, true, "none"}, open, bw), 1.0);  // capped
  EXPECT_DOUBLE_EQ(*BandwidthScale(open, open, bw), 1.0);
}

// A shaped base's fitted links above their goodput (tbf burst) scale only up to the target's
// goodput, each link on its own.
TEST(ConfigGrid, EveryLinkIsCappedAtTheTargetsGoodput) {
  const EvalConfig base{"200mbit", 0.25, true, "none"};
  const double goodput_10 = 1.25e6 * 1448.0 / 1514.0;  // 1.1955 MB/s
  BandwidthModel bw;  // unshaped assumed 10 Gbit/s
  EXPECT_NEAR(*BandwidthCap({"10mbit", 4, true, "none"}, base, bw), goodput_10, 1e-6);
  EXPECT_EQ(*BandwidthCap({"200mbit", 4, false, "int4"}, base, bw), 0.0);  // same rate: the fit
  EXPECT_DOUBLE_EQ(*BandwidthCap({"unshaped", 4, true, "none"}, base, bw), 1.25e9);
  EXPECT_EQ(*BandwidthCap({"10mbit", 4, true, "none"}, {"unshaped", 4, true, "none"}, bw), 0.0);
  // A probed veth pair of 0.8 Gbit/s of payload caps the unshaped target there, and a 1 Gbit
  // tbf (119.6 MB/s of goodput) at the veth's 100 MB/s.
  bw.unshaped_bits_per_s = 0.8e9;
  EXPECT_DOUBLE_EQ(*BandwidthCap({"unshaped", 4, true, "none"}, base, bw), 1e8);
  EXPECT_DOUBLE_EQ(*BandwidthCap({"1gbit", 4, true, "none"}, base, bw), 1e8);
  EXPECT_NEAR(*BandwidthCap({"10mbit", 4, true, "none"}, base, bw), goodput_10, 1e-6);
  // Common link 26.1 MB/s (tbf 25 MB/s plus burst), rank 0's egress 33 MB/s, rank 1's 21 MB/s
  // (a fit below the goodput): at 10 Mbit (k = 0.05) the first two are capped at the goodput,
  // rank 1 keeps its plain scaling (1.05 MB/s).
  dfg::ModelSpec spec;
  spec.ns_per_byte = 1e9 / 26.1e6;
  spec.ranks.resize(2);
  spec.ranks[0].egress_ns_per_byte = 1e9 / 33e6;
  spec.ranks[1].egress_ns_per_byte = 1e9 / 21e6;
  auto w = ToWhatIf({"10mbit", 0.25, true, "none"}, base, {});
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_DOUBLE_EQ(w->bandwidth_scale, 0.05);
  ASSERT_TRUE(whatif::ScaleBandwidth(&spec, w->bandwidth_scale).ok());
  ASSERT_TRUE(whatif::CapBandwidth(&spec, w->bandwidth_cap_bytes_per_s).ok());
  EXPECT_NEAR(1e9 / spec.ns_per_byte, goodput_10, 1e-3);
  EXPECT_NEAR(1e9 / spec.ranks[0].egress_ns_per_byte, goodput_10, 1e-3);
  EXPECT_NEAR(1e9 / spec.ranks[1].egress_ns_per_byte, 21e6 * 0.05, 1e-3);
  EXPECT_NE(w->Describe().find("links at most 1.1955"), std::string::npos) << w->Describe();
}

// With the testbed's tbf burst given, other rates get links rebuilt from the testbed's description:
// a 1 Gbit tbf (119.55 MB/s of goodput, 256 KiB burst = 250.7 KB of payload) on a veth probed at
// 300 MB/s; the veth itself for "unshaped"; a plain link when the veth is slower than the tbf.
TEST(ConfigGrid, TestbedLinksFromTheTbfDescription) {
  const EvalConfig base{"200mbit", 0.25, true, "none"};
  BandwidthModel bw;
  bw.unshaped_bits_per_s = 8 * 300e6;
  bw.tbf_burst_bytes = 262144;
  const double goodput = 1448.0 / 1514.0;
  auto gbit = TargetLinkShape({"1gbit", 4, false, "none"}, base, bw);
  ASSERT_TRUE(gbit.ok()) << gbit.status();
  ASSERT_TRUE(gbit->has_value());
  EXPECT_NEAR((*gbit)->rate_bytes_per_s, 125e6 * goodput, 1e-3);
  EXPECT_NEAR((*gbit)->burst_bytes, 262144 * goodput, 1e-9);
  EXPECT_DOUBLE_EQ((*gbit)->line_bytes_per_s, 300e6);
  auto open = TargetLinkShape({"unshaped", 4, false, "none"}, base, bw);
  ASSERT_TRUE(open.ok() && open->has_value());
  EXPECT_DOUBLE_EQ((*open)->rate_bytes_per_s, 300e6);
  EXPECT_EQ((*open)->burst_bytes, 0);
  EXPECT_LT((*open)->alpha_ns, 0);  // no probed latency: the profile's α stays
  // A probed veth latency goes to unshaped targets only (a shaped one keeps the profile's α).
  BandwidthModel probed = bw;
  probed.unshaped_alpha_ns = 40e3;
  EXPECT_DOUBLE_EQ((*TargetLinkShape({"unshaped", 4, false, "none"}, base, probed))->alpha_ns, 40e3);
  EXPECT_LT((*TargetLinkShape({"1gbit", 4, false, "none"}, base, probed))->alpha_ns, 0);
  // The base's own rate keeps its fits; so does every target without a burst.
  EXPECT_FALSE(TargetLinkShape({"200mbit", 4, false, "int4"}, base, bw)->has_value());
  BandwidthModel no_burst = bw;
  no_burst.tbf_burst_bytes = 0;
  EXPECT_FALSE(TargetLinkShape({"1gbit", 4, false, "none"}, base, no_burst)->has_value());
  // A veth of 100 MB/s under a 1 Gbit tbf: the veth is the link.
  bw.unshaped_bits_per_s = 8 * 100e6;
  auto slow = TargetLinkShape({"1gbit", 4, false, "none"}, base, bw);
  ASSERT_TRUE(slow.ok() && slow->has_value());
  EXPECT_DOUBLE_EQ((*slow)->rate_bytes_per_s, 100e6);
  EXPECT_EQ((*slow)->burst_bytes, 0);
  // ToWhatIf carries the shape instead of scale and cap.
  auto w = ToWhatIf({"unshaped", 4, false, "none"}, base, bw);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE(w->link_shape.has_value());
  EXPECT_EQ(w->bandwidth_scale, 1.0);
  EXPECT_EQ(w->bandwidth_cap_bytes_per_s, 0.0);
}

TEST(ConfigGrid, WhatIfSetsOnlyWhatDiffers) {
  const EvalConfig base = BaseConfig();
  auto same = ToWhatIf(base, base, {});
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->bandwidth_scale, 1.0);
  EXPECT_EQ(same->bucket_bytes, 0);
  EXPECT_FALSE(same->overlap.has_value());
  EXPECT_FALSE(same->compression.has_value());
  auto w = ToWhatIf({"10mbit", 4, false, "int4"}, base, {});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_DOUBLE_EQ(w->bandwidth_scale, 0.05);
  EXPECT_EQ(w->bucket_bytes, 4 << 20);
  ASSERT_TRUE(w->overlap.has_value());
  EXPECT_FALSE(*w->overlap);
  ASSERT_TRUE(w->compression.has_value());
  EXPECT_DOUBLE_EQ(w->compression->ratio, 4.25 / 32);
  EXPECT_EQ(ToWhatIf(base, {"200mbit", 0.25, true, "int4"}, {}).status().code(),
            StatusCode::kUnimplemented);
}

TEST(Accuracy, QuantilesAndErrorStats) {
  EXPECT_DOUBLE_EQ(*Quantile({3, 1, 2, 4}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(*Quantile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 0.9), 10.0);
  EXPECT_DOUBLE_EQ(*Quantile({1, 2}, 0.9), 1.9);
  EXPECT_FALSE(Quantile({}, 0.5).ok());
  EXPECT_FALSE(Quantile({1}, 1.5).ok());
  auto e = AbsRelativeErrors({110, 90, 100, 150}, {100, 100, 100, 100});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e, (std::vector<double>{0.1, 0.1, 0.0, 0.5}));
  auto s = SummarizeErrors(*e);
  ASSERT_TRUE(s.ok());
  EXPECT_NEAR(s->mean, 0.175, 1e-12);
  EXPECT_NEAR(s->median, 0.1, 1e-12);
  EXPECT_NEAR(s->p90, 0.38, 1e-12);  // 0.1 + 0.7·(0.5 − 0.1)
  EXPECT_DOUBLE_EQ(s->max, 0.5);
  EXPECT_EQ(s->n, 4u);
  EXPECT_FALSE(AbsRelativeErrors({1, 2}, {1}).ok());
  EXPECT_FALSE(AbsRelativeErrors({1}, {0}).ok());
  EXPECT_DOUBLE_EQ(RelativeError(90, 100), -0.1);
}

TEST(Accuracy, KendallTauKnownCases) {
  EXPECT_DOUBLE_EQ(*KendallTau({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(*KendallTau({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  // One adjacent swap among 4: 5 concordant, 1 discordant of 6 pairs.
  EXPECT_NEAR(*KendallTau({1, 2, 3, 4}, {1, 3, 2, 4}), 4.0 / 6.0, 1e-12);
  // Ties (scipy.stats.kendalltau, tau-b): 5 / sqrt(5 · 6).
  EXPECT_NEAR(*KendallTau({1, 2, 2, 3}, {1, 2, 3, 4}), 5.0 / std::sqrt(30.0), 1e-12);
  EXPECT_FALSE(KendallTau({1, 1, 1}, {1, 2, 3}).ok());
  EXPECT_FALSE(KendallTau({1}, {1}).ok());
  EXPECT_FALSE(KendallTau({1, 2}, {1, 2, 3}).ok());
}

TEST(Accuracy, OptimizerRegret) {
  // Predicted best is #1, measured 1.2 against the best measured 1.0.
  EXPECT_NEAR(*OptimizerRegret({3, 1, 2}, {1.0, 1.2, 1.1}), 0.2, 1e-12);
  EXPECT_DOUBLE_EQ(*OptimizerRegret({1, 2, 3}, {1.0, 1.2, 1.1}), 0.0);
  EXPECT_EQ(*ArgMin({5, 2, 2, 7}), 1u);
  EXPECT_FALSE(OptimizerRegret({}, {}).ok());
}

TEST(Accuracy, ScorePredictorExcludesBaseFromErrors) {
  // Base (#0) is off by 50 % but only the three unseen configurations count for errors.
  auto s = ScorePredictor({150, 110, 180, 300}, {100, 100, 200, 300}, 0);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->errors.n, 3u);
  EXPECT_NEAR(s->errors.max, 0.1, 1e-12);
  EXPECT_NEAR(s->errors.median, 0.1, 1e-12);
  EXPECT_EQ(s->picked, 1u);
  EXPECT_DOUBLE_EQ(s->regret, 0.0);  // #1 measured 100 = the best (tied with #0)
  // Pairs: (0,1) tie in measured; all other 5 concordant -> 5 / sqrt(6 · 5).
  EXPECT_NEAR(s->kendall_tau, 5.0 / std::sqrt(30.0), 1e-12);
  EXPECT_FALSE(ScorePredictor({1, 2}, {1, 2}, 0).ok());
  EXPECT_FALSE(ScorePredictor({1, 2, 3}, {1, 2, 3}, 3).ok());
}

TEST(ClockRecovery, RecoversInjectedSkewsOnOneClock) {
  ingest::testing::RunSpec spec;
  spec.world = 2;
  spec.steps = 20;
  spec.ring_p2p = true;
  const std::vector<ingest::RankTrace> traces = ingest::testing::GenerateRun(spec, {0, 0});
  auto r = MeasureClockRecovery(traces, DefaultClockSkews());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->cases.size(), DefaultClockSkews().size());
  for (const ClockRecoveryCase& c : r->cases) {
    EXPECT_EQ(c.rank, 1);
    EXPECT_EQ(c.error_ns, c.recovered_ns + c.injected_ns);
    EXPECT_GE(c.interval_ns, 0);
    // Constraints are differences of timestamps: the error does not depend on the skew.
    EXPECT_EQ(c.error_ns, r->cases[0].error_ns);
  }
  EXPECT_EQ(r->cases[3].injected_ns, 1'000'000);
  EXPECT_LE(r->max_abs_error_ns, 50'000);
  EXPECT_EQ(r->max_abs_error_ns, std::abs(r->cases[0].error_ns));
  EXPECT_FALSE(MeasureClockRecovery({traces[0]}, {0}).ok());
  EXPECT_FALSE(MeasureClockRecovery(traces, {}).ok());
}

TEST(ClockRecovery, ReportsTrueErrorWhenClocksDisagree) {
  // Rank 1's clock is really 2 ms behind: the "same clock" assumption is violated and the
  // measured error is the 2 ms (minus nothing), which is how a wrong ground truth shows up.
  ingest::testing::RunSpec spec;
  spec.world = 2;
  spec.steps = 20;
  const auto traces = ingest::testing::GenerateRun(spec, {0, 2'000'000});
  auto r = MeasureClockRecovery(traces, {0});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NEAR(static_cast<double>(r->cases[0].error_ns), 2e6, 50e3);
}

TEST(GridPrediction, PredictsEveryConfigAndBaseIsTheReplay) {
  const dfg::ModelSpec spec = dfg::SyntheticSpec(2, {2e6}, {1e6, 1e6, 1e6, 1e6},
                                                 {262144, 262144, 262144, 262144}, 1e6, 262144);
  auto g = dfg::BuildGraph(spec);
  ASSERT_TRUE(g.ok());
  auto base_replay = replay::Replay(*g);
  ASSERT_TRUE(base_replay.ok());
  const std::vector<EvalConfig> grid = ReplayGrid(false);
  auto p = PredictGrid(spec, grid, grid[0], {});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->size(), grid.size());
  EXPECT_DOUBLE_EQ((*p)[0].whatif_ns, base_replay->iteration_ns);
  auto find = [&](const EvalConfig& c) {
    for (const GridPrediction& x : *p) {
      if (x.config == c) return x;
    }
    ADD_FAILURE() << c.Name();
    return GridPrediction{};
  };
  const GridPrediction slow = find({"10mbit", 0.25, true, "none"});
  const GridPrediction slow_int4 = find({"10mbit", 0.25, true, "int4"});
  const GridPrediction slow_seq = find({"10mbit", 0.25, false, "none"});
  EXPECT_GT(slow.whatif_ns, (*p)[0].whatif_ns);
  EXPECT_LT(slow_int4.whatif_ns, slow.whatif_ns);
  EXPECT_GE(slow_seq.whatif_ns, slow.whatif_ns);
  EXPECT_DOUBLE_EQ(slow.bandwidth_scale, 0.05);
  for (const GridPrediction& x : *p) {
    EXPECT_GT(x.whatif_ns, 0) << x.config.Name();
    EXPECT_GE(x.sum_ns, x.overlap_ns) << x.config.Name();
  }
  EXPECT_EQ(WhatIfTimes(*p).size(), grid.size());
  EXPECT_EQ(SumBaselineTimes(*p)[0], (*p)[0].sum_ns);
}

TEST(StrategyRanking, AgreesWithWhatIfOnTheGrid) {
  const dfg::ModelSpec spec = dfg::SyntheticSpec(2, {2e6}, {1e6, 1e6, 1e6, 1e6},
                                                 {262144, 262144, 262144, 262144}, 1e6, 262144);
  const std::vector<EvalConfig> grid = ReplayGrid(false);
  auto strategies = PredictGridStrategies(spec, grid, grid[0], {});
  if (strategies.status().code() == StatusCode::kUnimplemented) GTEST_SKIP() << "no optimize";
  ASSERT_TRUE(strategies.ok()) << strategies.status().ToString();
  auto whatifs = PredictGrid(spec, grid, grid[0], {});
  ASSERT_TRUE(whatifs.ok());
  ASSERT_EQ(strategies->size(), grid.size());
  for (size_t i = 0; i < grid.size(); ++i) {
    EXPECT_NEAR((*strategies)[i], (*whatifs)[i].whatif_ns, 1e-6 * (*whatifs)[i].whatif_ns)
        << grid[i].Name();
  }
}

}  // namespace
}  // namespace loom::trace::evaluation
