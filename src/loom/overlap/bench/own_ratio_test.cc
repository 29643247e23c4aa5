// Tests of the own-R analysis of `loom bench overlap` (own_ratio.h): the closed-form
// fused/decomposed ratio at a given R, a round's t_comp, one pair against the closed form at its
// own R, the per-arm analysis with a band, and the pooled summary keys. Values only.
#include "loom/overlap/bench/own_ratio.h"

#include <gtest/gtest.h>

#include <cmath>

#include "loom/overlap/bench/overlap_report.h"

namespace loom::overlap {
namespace {

using nlohmann::json;

TEST(OwnRatio, ClosedFormFusedSpeedup) {
  // W = 2, S = 8: decomposed 1.5, fused 1 + 1/16 at R = 1 (spec §7: 1.41x).
  EXPECT_NEAR(ClosedFormFusedSpeedup(BenchOp::kGemmRs, 8, 1.0, 2), 1.5 / 1.0625, 1e-12);
  EXPECT_NEAR(ClosedFormFusedSpeedup(BenchOp::kAgGemm, 8, 1.0, 2), 1.5 / 1.0625, 1e-12);
  // R = 2: decomposed 0.5 + 2, fused 1/16 + 2.
  EXPECT_NEAR(ClosedFormFusedSpeedup(BenchOp::kGemmRs, 8, 2.0, 2), 2.5 / 2.0625, 1e-12);
  // R = 0.5 = (W-1)/W: decomposed is already ideal.
  EXPECT_DOUBLE_EQ(ClosedFormFusedSpeedup(BenchOp::kGemmRs, 8, 0.5, 2), 1.0);
  // AG+GEMM at R = 0.75, S = 16: max(1, 0.75 + 0.5) / max(1, 0.75 + 1/32).
  EXPECT_DOUBLE_EQ(ClosedFormFusedSpeedup(BenchOp::kAgGemm, 16, 0.75, 2), 1.25);
  EXPECT_TRUE(std::isnan(ClosedFormFusedSpeedup(BenchOp::kGemmRs, 8, 0.0, 2)));
  EXPECT_TRUE(std::isnan(ClosedFormFusedSpeedup(BenchOp::kGemmRs, 8, NAN, 2)));
}

TEST(OwnRatio, RoundComputeSecondsIsTheMedianOfPositiveTimes) {
  EXPECT_DOUBLE_EQ(RoundComputeSeconds({0.02, NAN, 0.04, -1, 0.03, 0}), 0.03);
  EXPECT_DOUBLE_EQ(RoundComputeSeconds({0.02, 0.04}), 0.03);
  EXPECT_TRUE(std::isnan(RoundComputeSeconds({})));
  EXPECT_TRUE(std::isnan(RoundComputeSeconds({0, -2})));
}

TEST(OwnRatio, PairAtItsOwnRatio) {
  // The pair's GEMMs took 30 and 50 ms, so it ran at R = 40 ms / 40 ms = 1 on average whatever
  // the arm's label; measured 60 / 45 against the closed form 1.5 / 1.0625.
  PairAtOwnRatio p = EvaluatePair(BenchOp::kGemmRs, 8, 2, 0.04, 0.03, 0.05, 0.06, 0.045);
  EXPECT_DOUBLE_EQ(p.r, 1.0);
  EXPECT_NEAR(p.measured, 0.06 / 0.045, 1e-12);
  EXPECT_NEAR(p.closed_form, 1.5 / 1.0625, 1e-12);
  EXPECT_NEAR(p.vs_closed_form, (0.06 / 0.045) / (1.5 / 1.0625), 1e-12);
  // Each variant's own R: 4/3 and 4/5.
  EXPECT_NEAR(p.r_dec, 0.04 / 0.03, 1e-12);
  EXPECT_NEAR(p.r_fused, 0.8, 1e-12);
  EXPECT_TRUE(p.InBand(0.79, 1.34));
  EXPECT_FALSE(p.InBand(0.8, 1.25));  // the decomposed run's GEMM was faster: not one R
  // With each variant's own t_c: Dec(30 ms, 40 ms) = 15 + 40 ms, Fused(50 ms, 40 ms) = 50 ms.
  EXPECT_NEAR(p.closed_form_own_tc, 0.055 / 0.05, 1e-12);
  EXPECT_NEAR(p.vs_closed_form_own_tc, (0.06 / 0.045) / 1.1, 1e-12);
  PairAtOwnRatio bad = EvaluatePair(BenchOp::kGemmRs, 8, 2, 0.04, 0.0, 0.05, 0.06, 0.045);
  EXPECT_TRUE(std::isnan(bad.r));
  EXPECT_TRUE(std::isnan(bad.vs_closed_form));
}

// Trials of a GEMM+RS arm labelled R = 1: trial 0 at R = 1 exactly and at its model; trial 1
// with the GEMM twice as slow (R = 0.5); trial 2 with the compute times scattered within the
// round; trial 3 nonsense with high steal (dropped by the report, not in `keep`).
json Trial(double t_comp, double t_comm, double c_seq, double c_dec, double c_fus, double w_dec,
           double w_fus, double steal = 0) {
  return {{"t_comp_s", t_comp},
          {"t_comm_s", t_comm},
          {"steal", steal},
          {"loadavg", 1.0},
          {"x",
           {{"sequential", {{"wall_s", 0.1}, {"compute_s", c_seq}, {"proxy_cpu_s", 0}}},
            {"decomposed", {{"wall_s", w_dec}, {"compute_s", c_dec}, {"proxy_cpu_s", 0}}},
            {"fused_s8", {{"wall_s", w_fus}, {"compute_s", c_fus}, {"proxy_cpu_s", 0}}},
            {"auto", {{"wall_s", w_fus}, {"compute_s", 1.0}, {"proxy_cpu_s", 0}}}}}};
}
json Trials() {
  return json::array({Trial(0.02, 0.02, 0.02, 0.02, 0.02, 0.03, 0.02125),
                      Trial(0.04, 0.02, 0.04, 0.04, 0.04, 0.04, 0.04),
                      Trial(0.01, 0.02, 0.02, 0.018, 0.022, 0.033, 0.025),
                      Trial(9, 0.02, 9, 9, 9, 9, 0.001, /*steal=*/0.9)});
}
const std::vector<std::string> kVariants = {"sequential", "decomposed", "fused_s8", "auto"};

TEST(OwnRatio, AnalyzeArmTrials) {
  const json own = AnalyzeOwnRatio(Trials(), {0, 1, 2}, BenchOp::kGemmRs, 2, kVariants, {});
  ASSERT_EQ(own["r_trial"].size(), 3u);
  EXPECT_DOUBLE_EQ(own["r_trial"][0].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(own["r_trial"][1].get<double>(), 0.5);
  // Round 2: median of {0.01, 0.02, 0.018, 0.022} (auto's compute_s ignored) = 0.019.
  EXPECT_NEAR(own["t_comp_round_s"][2].get<double>(), 0.019, 1e-15);
  EXPECT_NEAR(own["r_trial"][2].get<double>(), 0.02 / 0.019, 1e-12);
  EXPECT_DOUBLE_EQ(own["r_trial_stats"]["median"].get<double>(), 1.0);
  EXPECT_NEAR(own["round_compute_spread"]["p75"].get<double>(), 1.0 + 0.5 * 1.2, 1e-12);
  const json& p = own["pairs"]["fused_s8"];
  ASSERT_FALSE(own["pairs"].contains("auto"));
  EXPECT_DOUBLE_EQ(p["r_pair"][0].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(p["r_pair"][1].get<double>(), 0.5);
  EXPECT_NEAR(p["r_pair"][2].get<double>(), 1.0, 1e-12);  // mean of 18 and 22 ms
  const double cf1 = 1.5 / 1.0625;
  EXPECT_NEAR(p["vs_closed_form"][0].get<double>(), 1.0, 1e-12);
  EXPECT_NEAR(p["vs_closed_form"][1].get<double>(), 1.0, 1e-12);  // R = 0.5: 1 vs 1
  EXPECT_NEAR(p["vs_closed_form"][2].get<double>(), 1.32 / cf1, 1e-12);
  EXPECT_NEAR(p["vs_closed_form_median"].get<double>(), 1.0, 1e-12);
  // Trial 2 with each variant's own t_c: Dec(18, 20) = 9 + 20 ms, Fused_8(22, 20) = 22 ms.
  EXPECT_NEAR(p["closed_form_own_tc"][2].get<double>(), 0.029 / 0.022, 1e-12);
  EXPECT_NEAR(p["vs_closed_form_own_tc"][2].get<double>(), 1.32 / (0.029 / 0.022), 1e-12);
  EXPECT_EQ(p["in_band_flags"], json::array({true, false, true}));
  // In [0.8, 1.25]: trials 0 and 2.
  EXPECT_EQ(p["in_band"]["n"], 2);
  EXPECT_NEAR(p["in_band"]["measured_median"].get<double>(), 0.5 * (cf1 + 1.32), 1e-12);
  EXPECT_NEAR(p["in_band"]["closed_form_median"].get<double>(), cf1, 1e-12);
  EXPECT_NEAR(p["in_band"]["vs_closed_form_median"].get<double>(), 0.5 * (1 + 1.32 / cf1), 1e-12);
  // A band around R = 0.5 keeps only trial 1.
  const json narrow =
      AnalyzeOwnRatio(Trials(), {0, 1, 2}, BenchOp::kGemmRs, 2, kVariants, {0.4, 0.6});
  EXPECT_EQ(narrow["pairs"]["fused_s8"]["in_band"]["n"], 1);
  EXPECT_DOUBLE_EQ(narrow["pairs"]["fused_s8"]["in_band"]["measured_median"].get<double>(), 1.0);
}

TEST(OwnRatio, ReportAndSummaryPoolTheBand) {
  OverlapBenchConfig c;
  c.ops = {BenchOp::kGemmRs};
  c.ratios = {1};
  c.splits = {8};
  c.max_steal = 0.25;  // drops trial 3
  BenchWorkload w;
  w.op = BenchOp::kGemmRs;
  w.m_shard = 512;
  w.k = 2048;
  w.n_local = 512;
  json arm = {{"label", "R=1"},
              {"ratio", 1.0},
              {"bytes_per_second", 1e6},
              {"resolved_mode",
               {{"sequential", "sequential"},
                {"decomposed", "decomposed"},
                {"fused_s8", "fused"},
                {"auto", "fused"}}},
              {"trials", Trials()}};
  json doc = {{"workloads", json::array({{{"workload", w.ToJson()},
                                          {"variants", kVariants},
                                          {"arms", json::array({arm})}}})}};
  json r0 = doc, r1 = doc;
  r0["rank"] = 0;
  r1["rank"] = 1;
  auto report = BuildOverlapReport(c, {r0, r1});
  ASSERT_TRUE(report.ok()) << report.status();
  const json& m = (*report)["workloads"][0]["arms"][0]["metrics"];
  EXPECT_EQ(m["dropped_trials"], 1);
  EXPECT_EQ(m["own_ratio"]["pairs"]["fused_best"]["in_band"]["n"], 2);
  json s = BuildOverlapSummary(*report, 1.0);
  EXPECT_DOUBLE_EQ(s["gemm_rs_own_ratio_R1"].get<double>(), 1.0);
  EXPECT_NEAR(s["gemm_rs_fused_vs_decomposed_R1_vs_closed_form"].get<double>(), 1.0, 1e-12);
  const json& b = s["gemm_rs_fused_vs_decomposed_R1_in_band"];
  EXPECT_EQ(b["n"], 2);
  EXPECT_EQ(b["arms"], 1);
  EXPECT_NEAR(b["fused_vs_decomposed"].get<double>(), 0.5 * (1.5 / 1.0625 + 1.32), 1e-12);
  EXPECT_NEAR(b["closed_form"].get<double>(), 1.5 / 1.0625, 1e-12);
  EXPECT_NEAR(b["vs_closed_form_own_tc"].get<double>(), 0.5 * (1.0 + 1.32 / (0.029 / 0.022)),
              1e-12);
  EXPECT_TRUE(s["ag_gemm_fused_vs_decomposed_R1_in_band"].is_null());  // not run
  const std::string text = FormatOverlapReport(*report, s);
  EXPECT_NE(text.find("R own 1.00"), std::string::npos) << text;
  EXPECT_NE(text.find("2 pairs over 1 arms"), std::string::npos) << text;
}

}  // namespace
}  // namespace loom::overlap
