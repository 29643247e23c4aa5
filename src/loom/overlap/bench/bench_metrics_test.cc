// Tests of the `loom bench overlap` metrics and report: quartiles, overlap efficiency, fraction of
// ideal, variant ideals, the merge over ranks (max per trial), steal filtering, the summary keys,
// peer matching and the config round trip. Values only (no timing).
#include "loom/overlap/bench/bench_metrics.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "loom/overlap/bench/bench_config.h"
#include "loom/overlap/bench/bench_worker.h"
#include "loom/overlap/bench/overlap_report.h"

namespace loom::overlap {
namespace {

using nlohmann::json;

TEST(BenchMetrics, Quartiles) {
  Quartiles q = ComputeQuartiles({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(q.median, 2.5);
  EXPECT_DOUBLE_EQ(q.p25, 1.75);
  EXPECT_DOUBLE_EQ(q.p75, 3.25);
  EXPECT_DOUBLE_EQ(q.iqr, 1.5);
  EXPECT_EQ(q.n, 4u);
  EXPECT_DOUBLE_EQ(ComputeQuartiles({5}).median, 5);
  EXPECT_DOUBLE_EQ(ComputeQuartiles({1, 2, 10}).median, 2);
  EXPECT_TRUE(std::isnan(ComputeQuartiles({}).median));
  EXPECT_DOUBLE_EQ(Quantile({0, 10}, 0.1), 1);
}

TEST(BenchMetrics, Efficiency) {
  EXPECT_DOUBLE_EQ(OverlapEfficiency(1.0, 1.0, 1.0), 1.0);  // fully hidden
  EXPECT_DOUBLE_EQ(OverlapEfficiency(1.0, 1.0, 2.0), 0.0);  // back to back
  EXPECT_NEAR(OverlapEfficiency(1.0, 1.0, 1.1), 0.9, 1e-12);
  EXPECT_DOUBLE_EQ(OverlapEfficiency(2.0, 0.5, 2.25), 0.5);  // min is t_comm
  EXPECT_DOUBLE_EQ(OverlapEfficiency(1.0, 1.0, 2.5), -0.5);  // slower than sequential
  EXPECT_TRUE(std::isnan(OverlapEfficiency(1.0, 0.0, 1.0)));
  EXPECT_DOUBLE_EQ(ExposedComm(1.25, 1.0), 0.25);
}

TEST(BenchMetrics, FractionOfIdeal) {
  EXPECT_DOUBLE_EQ(FractionOfIdeal(1.0, 0.5, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(FractionOfIdeal(1.0, 2.0, 4.0), 0.5);
  EXPECT_TRUE(std::isnan(FractionOfIdeal(1.0, 1.0, 0.0)));
}

TEST(BenchMetrics, VariantIdeals) {
  // Spec §7 at W=2, R=1 (t_c = t_m = 1): sequential 2, decomposed 1.5, fused S=8 1.0625.
  EXPECT_DOUBLE_EQ(VariantIdealSeconds(BenchOp::kAgGemm, OverlapMode::kSequential, 1, 1, 1, 2), 2);
  EXPECT_DOUBLE_EQ(VariantIdealSeconds(BenchOp::kAgGemm, OverlapMode::kDecomposed, 1, 1, 1, 2),
                   1.5);
  EXPECT_DOUBLE_EQ(VariantIdealSeconds(BenchOp::kAgGemm, OverlapMode::kFused, 8, 1, 1, 2), 1.0625);
  EXPECT_DOUBLE_EQ(VariantIdealSeconds(BenchOp::kMoe, OverlapMode::kFused, 8, 1, 1, 2), 1.0625);
  // GEMM+RS decomposed: t_c/W + max(t_c/2, t_m) = 0.5 + 1.
  EXPECT_DOUBLE_EQ(VariantIdealSeconds(BenchOp::kGemmRs, OverlapMode::kDecomposed, 1, 1, 1, 2),
                   1.5);
  EXPECT_TRUE(std::isnan(VariantIdealSeconds(BenchOp::kAgGemm, OverlapMode::kAuto, 1, 1, 1, 2)));
  std::vector<double> r = Ratios({2, 3}, {1, 0});
  EXPECT_DOUBLE_EQ(r[0], 2);
  EXPECT_TRUE(std::isnan(r[1]));
}

TEST(BenchConfig, WorkloadsVariantsAndRoundTrip) {
  OverlapBenchConfig c;
  std::vector<BenchWorkload> w = MakeWorkloads(c);
  ASSERT_EQ(w.size(), 8u);  // 3 AG + 3 RS + MoE uniform/zipf
  EXPECT_EQ(w[0].Name(), "ag_gemm 512x2048x512");
  EXPECT_EQ(w[4].n_local, 256);
  EXPECT_EQ(w[6].routing, RoutingKind::kUniform);
  EXPECT_EQ(w[7].routing, RoutingKind::kZipf);
  EXPECT_EQ(w[7].tokens, 4096);
  std::vector<BenchVariant> v = MakeVariants(c, BenchOp::kAgGemm);
  ASSERT_EQ(v.size(), 8u);
  EXPECT_EQ(v[0].Name(), "sequential");
  EXPECT_EQ(v[2].Name(), "fused_s1");
  EXPECT_EQ(v[7].Name(), "auto");
  EXPECT_EQ(v[7].splits, 4);
  // MoE adds the per-layer fused schedule at the middle split beside the cross-layer ones.
  std::vector<BenchVariant> moe = MakeVariants(c, BenchOp::kMoe);
  ASSERT_EQ(moe.size(), 9u);
  EXPECT_EQ(moe[6].Name(), "fused_s16");
  EXPECT_EQ(moe[7].Name(), "layers_s4");
  EXPECT_FALSE(moe[7].cross_layer);
  EXPECT_EQ(moe[8].Name(), "auto");
  c.quick = true;
  c.ratios = {1};
  EXPECT_TRUE(c.calibrate_each_arm);  // default: re-measure t_comp before every paced arm
  c.calibrate_each_arm = false;
  auto back = OverlapBenchConfig::FromJson(c.ToJson());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->quick);
  EXPECT_FALSE(back->calibrate_each_arm);
  EXPECT_EQ(back->ratios, std::vector<double>{1});
  EXPECT_EQ(MakeWorkloads(*back).size(), 4u);
  c.splits = {0};
  EXPECT_FALSE(ValidateConfig(c).ok());
  EXPECT_GT(HeapBytesFor(w[0], OverlapBenchConfig{}), 8 * 2 * 512 * 2048 * 4);
}

TEST(BenchWorker, StealFraction) {
  EXPECT_DOUBLE_EQ(StealFraction({100, 10}, {200, 30}), 0.2);
  EXPECT_DOUBLE_EQ(StealFraction({100, 10}, {100, 10}), 0.0);
  CpuTicks now = ReadCpuTicks();
  EXPECT_GT(now.total, 0);
}

// A rank document with one AG workload, one arm at R=1 and trials with given times.
json RankDoc(int rank, double scale, double steal_last) {
  json trials = json::array();
  for (int t = 0; t < 3; ++t) {
    json x = {{"sequential", {{"wall_s", 2.0 * scale}, {"proxy_cpu_s", 0.01}}},
              {"decomposed", {{"wall_s", 1.5 * scale}, {"proxy_cpu_s", 0.01}}},
              {"fused_s2", {{"wall_s", 1.2 * scale}, {"proxy_cpu_s", 0.02}}},
              {"fused_s4", {{"wall_s", 1.1 * scale}, {"proxy_cpu_s", 0.11}}},
              {"auto", {{"wall_s", 1.1 * scale}, {"proxy_cpu_s", 0.02}}}};
    trials.push_back({{"t_comp_s", 1.0 * scale},
                      {"t_comm_s", 1.0 * scale},
                      {"steal", t == 2 ? steal_last : 0.0},
                      {"loadavg", 1.0},
                      {"x", x}});
  }
  json arm = {{"label", "R=1"},
              {"ratio", 1.0},
              {"bytes_per_second", 100e6},
              {"resolved_mode",
               {{"sequential", "sequential"},
                {"decomposed", "decomposed"},
                {"fused_s2", "fused"},
                {"fused_s4", "fused"},
                {"auto", "fused"}}},
              {"trials", trials}};
  json unl = arm;
  unl["label"] = "unlimited";
  unl["ratio"] = nullptr;
  unl["bytes_per_second"] = 0.0;
  BenchWorkload w;
  w.m_shard = 512;
  w.k = 2048;
  w.n_local = 512;
  return {{"rank", rank},
          {"workloads",
           json::array({{{"workload", w.ToJson()},
                         {"variants", {"sequential", "decomposed", "fused_s2", "fused_s4", "auto"}},
                         {"arms", json::array({arm, unl})}}})}};
}

TEST(OverlapReport, MergeMetricsSummary) {
  OverlapBenchConfig c;
  c.ops = {BenchOp::kAgGemm};
  c.ratios = {1};
  c.splits = {2, 4};
  c.max_steal = 0.2;
  // Rank 1 is the slower one (its times count); its last trial has 50% steal (dropped).
  auto report = BuildOverlapReport(c, {RankDoc(1, 2.0, 0.5), RankDoc(0, 1.0, 0.0)});
  ASSERT_TRUE(report.ok()) << report.status();
  const json& m = (*report)["workloads"][0]["arms"][0]["metrics"];
  EXPECT_EQ(m["dropped_trials"], 1);
  EXPECT_EQ(m["kept_trials"], 2);
  EXPECT_DOUBLE_EQ(m["t_comp_s"]["median"].get<double>(), 2.0);
  EXPECT_EQ(m["best_fused"], "fused_s4");
  const json& f = m["variants"]["fused_best"];
  EXPECT_NEAR(f["t_x_s"]["median"].get<double>(), 2.2, 1e-12);
  EXPECT_NEAR(f["efficiency"].get<double>(), 0.9, 1e-12);  // (2 + 2 − 2.2) / 2
  EXPECT_NEAR(f["speedup_vs_decomposed"].get<double>(), 1.5 / 1.1, 1e-12);
  EXPECT_NEAR(f["speedup_vs_sequential"].get<double>(), 2.0 / 1.1, 1e-12);
  EXPECT_NEAR(f["fraction_of_ideal"].get<double>(), 2.0 / 2.2, 1e-12);
  EXPECT_NEAR(f["exposed_comm_s"].get<double>(), 0.2, 1e-12);
  // Fused S=4 ideal at t_c = t_m = 2: max(2, 2 + 2/8) = 2.25.
  EXPECT_NEAR(f["fraction_of_variant_ideal"].get<double>(), 2.25 / 2.2, 1e-12);
  EXPECT_NEAR(f["proxy_duty"].get<double>(), 0.11 / 2.2, 1e-12);
  // Sequential against itself.
  EXPECT_NEAR(m["variants"]["sequential"]["speedup_vs_sequential"].get<double>(), 1.0, 1e-12);
  EXPECT_NEAR(m["variants"]["sequential"]["efficiency"].get<double>(), 0.0, 1e-12);

  json summary = BuildOverlapSummary(*report, 0.97);
  for (const char* k :
       {"ag_gemm_efficiency_R1", "ag_gemm_fused_vs_decomposed_R1", "gemm_rs_fused_vs_decomposed_R1",
        "moe_fused_vs_decomposed_R1", "tile_gemm_vs_openblas", "auto_worst_vs_best_of_seq_dec"}) {
    EXPECT_TRUE(summary.contains(k)) << k;
  }
  EXPECT_NEAR(summary["ag_gemm_efficiency_R1"].get<double>(), 0.9, 1e-12);
  EXPECT_NEAR(summary["ag_gemm_fused_vs_decomposed_R1"].get<double>(), 1.5 / 1.1, 1e-12);
  EXPECT_TRUE(summary["gemm_rs_fused_vs_decomposed_R1"].is_null());  // not run
  EXPECT_DOUBLE_EQ(summary["tile_gemm_vs_openblas"].get<double>(), 0.97);
  EXPECT_NEAR(summary["auto_worst_vs_best_of_seq_dec"].get<double>(), 1.1 / 1.5, 1e-12);
  // auto resolved to fused (S = the middle split, 4): fused_s4 / min(seq, dec) = 1.1 / 1.5.
  EXPECT_NEAR(summary["auto_choice_worst_vs_best_of_seq_dec"].get<double>(), 1.1 / 1.5, 1e-12);

  std::string text = FormatOverlapReport(*report, summary);
  EXPECT_NE(text.find("ag_gemm 512x2048x512"), std::string::npos);
  EXPECT_NE(text.find("negative control (memory-speed link)"), std::string::npos);
  EXPECT_NE(text.find("paced proxy"), std::string::npos);
  std::vector<SweepSeries> sweep = SpeedupSweep(*report);
  ASSERT_EQ(sweep.size(), 3u);  // ag_gemm auto / decomposed / fused
  EXPECT_EQ(sweep[2].name, "ag_gemm fused");
  ASSERT_EQ(sweep[2].points.size(), 1u);
  EXPECT_NEAR(sweep[2].points[0].second, 2.0 / 1.1, 1e-12);
}

TEST(OverlapReport, StealFilterNeverDropsEverything) {
  OverlapBenchConfig c;
  c.ops = {BenchOp::kAgGemm};
  c.ratios = {1};
  c.splits = {2, 4};
  c.max_steal = -1;  // every trial is "high steal"
  auto report = BuildOverlapReport(c, {RankDoc(0, 1.0, 0.0), RankDoc(1, 1.0, 0.0)});
  ASSERT_TRUE(report.ok()) << report.status();
  const json& m = (*report)["workloads"][0]["arms"][0]["metrics"];
  EXPECT_EQ(m["kept_trials"], 3);
  EXPECT_TRUE(m["steal_filter_off"].get<bool>());
  // A missing rank is an error naming the count.
  auto bad = BuildOverlapReport(c, {RankDoc(0, 1.0, 0.0)});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("expected 2"), std::string::npos);
}

TEST(OverlapReport, AttachPeers) {
  OverlapBenchConfig c;
  c.ops = {BenchOp::kAgGemm};
  c.ratios = {1};
  c.splits = {2, 4};
  auto report = BuildOverlapReport(c, {RankDoc(0, 1.0, 0.0), RankDoc(1, 1.0, 0.0)});
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(PeerRateMbps(100e6), 800);
  EXPECT_EQ(PeerRateMbps(0), 0);
  json shape = {{"world", 2}, {"m_shard", 512}, {"k", 2048}, {"n_local", 512}};
  json mpi = {{"op", "ag_gemm"},
              {"impl", "mpi"},
              {"shape", shape},
              {"rate_mbps", 800},
              {"t_x_s", {{"median", 3.0}}}};
  json gloo = {{"op", "ag_gemm"},
               {"impl", "gloo"},
               {"shape", shape},
               {"rate_mbps", nullptr},
               {"t_x_s", {{"median", 0.5}}}};
  json other = mpi;
  other["shape"]["k"] = 4096;
  json far = mpi;
  far["rate_mbps"] = 400;
  EXPECT_EQ(AttachPeers(&*report, {mpi, gloo, other, far}), 2);
  const json& arms = (*report)["workloads"][0]["arms"];
  EXPECT_DOUBLE_EQ(arms[0]["peers"]["mpi"]["t_x_s"]["median"].get<double>(), 3.0);
  EXPECT_FALSE(arms[0]["peers"].contains("gloo"));
  EXPECT_DOUBLE_EQ(arms[1]["peers"]["gloo"]["t_x_s"]["median"].get<double>(), 0.5);
}

}  // namespace
}  // namespace loom::overlap

namespace loom::overlap {
namespace {

// Runs `c` as two real rank processes (fork); fills their documents (empty if a rank failed).
void RunTwoRanks(const OverlapBenchConfig& c, const std::string& tag, std::vector<json>* docs) {
  const std::string job = "ovb-" + tag + "-" + std::to_string(::getpid());
  const std::string dir = ::testing::TempDir();
  std::vector<pid_t> pids;
  for (int r = 0; r < 2; ++r) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      Status s = RunOverlapBenchRank(
          c, {.job = job,
              .rank = r,
              .out_path = dir + "/ovb_" + tag + "_rank" + std::to_string(r) + ".json",
              .pin_cpu = false,
              .progress = false});
      if (!s.ok()) std::fprintf(stderr, "rank %d: %s\n", r, s.ToString().c_str());
      std::_Exit(s.ok() ? 0 : 1);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a rank failed";
  }
  for (int r = 0; r < 2; ++r) {
    std::ifstream in(dir + "/ovb_" + tag + "_rank" + std::to_string(r) + ".json");
    docs->push_back(json::parse(in));
  }
}

// Two real rank processes (fork) on tiny shapes: every workload, arm and variant produces finite
// times and the summary keys come out finite.
TEST(BenchWorker, TwoProcessesTinyEndToEnd) {
  OverlapBenchConfig c;
  c.tiny = true;
  c.ratios = {1, 2};
  c.splits = {2};
  c.trials = 2;
  c.warmup = 0;
  c.calibration_reps = 1;
  std::vector<json> docs;
  RunTwoRanks(c, "e2e", &docs);
  ASSERT_EQ(docs.size(), 2u);
  auto report = BuildOverlapReport(c, docs);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ((*report)["workloads"].size(), 4u);
  for (const json& w : (*report)["workloads"]) {
    ASSERT_EQ(w["arms"].size(), 3u);  // R=1, R=2, unlimited
    for (const json& arm : w["arms"]) {
      for (const char* v : {"sequential", "decomposed", "fused_s2", "auto"}) {
        const json& t = arm["metrics"]["variants"][v]["t_x_s"]["median"];
        ASSERT_TRUE(t.is_number()) << w["workload"]["name"] << " " << arm["label"] << " " << v;
        EXPECT_GT(t.get<double>(), 0);
      }
    }
    // R=1 arm: the measured ratio is in the right ballpark (a loose bound: noisy machine).
    EXPECT_GT(w["arms"][0]["bytes_per_second"].get<double>(), 0);
    // Each paced arm sizes B from its own calibration: B · R · t_comp(arm) = the link bytes of
    // one call, the same for both arms (their t_comp calibrations differ).
    double link_bytes[2];
    for (int i = 0; i < 2; ++i) {
      const json& arm = w["arms"][i];
      ASSERT_TRUE(arm["calibration_t_comp_s"].is_number()) << arm["label"];
      EXPECT_GT(arm["calibration_t_comp_s"].get<double>(), 0);
      link_bytes[i] = arm["bytes_per_second"].get<double>() * arm["ratio"].get<double>() *
                      arm["calibration_t_comp_s"].get<double>();
    }
    EXPECT_NEAR(link_bytes[0], link_bytes[1], 1e-6 * link_bytes[0]) << w["workload"]["name"];
  }
  json summary = BuildOverlapSummary(*report, 1.0);
  std::printf("%s\n", FormatOverlapReport(*report, summary).c_str());
  for (const char* k :
       {"ag_gemm_efficiency_R1", "ag_gemm_fused_vs_decomposed_R1", "gemm_rs_fused_vs_decomposed_R1",
        "moe_fused_vs_decomposed_R1", "auto_worst_vs_best_of_seq_dec"}) {
    EXPECT_TRUE(summary[k].is_number()) << k << " = " << summary[k];
  }
}

// --hold-ratio: every round (warm-ups included) re-sizes B from its t_comp estimate, so
// B · R · estimate = the link bytes of one call in every trial, and each trial reports its own R.
// With a probe (reps 1) or from the previous round's compute times (reps 0: trial i's estimate
// is trial i-1's round_compute_s; the warm-up round's feeds the first trial).
class HoldRatioTest : public ::testing::TestWithParam<int> {};

TEST_P(HoldRatioTest, ResizesTheLinkEveryRound) {
  const int reps = GetParam();
  OverlapBenchConfig c;
  c.tiny = true;
  c.ops = {BenchOp::kGemmRs};
  c.ratios = {1};
  c.splits = {2};
  c.trials = 3;
  c.warmup = 1;
  c.calibration_reps = 1;
  c.hold_ratio_each_round = true;
  c.hold_ratio_probe_reps = reps;
  std::vector<json> docs;
  RunTwoRanks(c, "hold" + std::to_string(reps), &docs);
  ASSERT_EQ(docs.size(), 2u);
  auto report = BuildOverlapReport(c, docs);
  ASSERT_TRUE(report.ok()) << report.status();
  const json& w = (*report)["workloads"][0];
  const double link_bytes = w["calibration"]["link_bytes"].get<double>();
  ASSERT_GT(link_bytes, 0);
  const json& arm = w["arms"][0];
  EXPECT_TRUE(arm["hold_ratio_each_round"].get<bool>());
  ASSERT_EQ(arm["trials"].size(), 3u);
  std::vector<double> bps;
  for (size_t i = 0; i < arm["trials"].size(); ++i) {
    const json& t = arm["trials"][i];
    ASSERT_TRUE(t["hold_t_comp_s"].is_number());
    EXPECT_EQ(t["hold_source"], reps > 0 ? "probe" : "previous_round");
    EXPECT_NEAR(t["bytes_per_second"].get<double>() * 1.0 * t["hold_t_comp_s"].get<double>(),
                link_bytes, 1e-9 * link_bytes);
    if (reps == 0 && i > 0) {
      EXPECT_DOUBLE_EQ(t["hold_t_comp_s"].get<double>(),
                       arm["trials"][i - 1]["round_compute_s"].get<double>());
    }
    bps.push_back(t["bytes_per_second"].get<double>());
  }
  EXPECT_DOUBLE_EQ(arm["bytes_per_second"].get<double>(), Quantile(bps, 0.5));
  const json& own = arm["metrics"]["own_ratio"];
  ASSERT_EQ(own["r_trial"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const json& t = arm["trials"][i];
    ASSERT_TRUE(own["r_trial"][i].is_number());
    EXPECT_DOUBLE_EQ(own["r_trial"][i].get<double>(),
                     t["t_comm_s"].get<double>() / own["t_comp_round_s"][i].get<double>());
  }
  EXPECT_EQ(own["pairs"]["fused_s2"]["r_pair"].size(), 3u);
  // The unlimited arm is never re-sized.
  EXPECT_FALSE(w["arms"][1]["hold_ratio_each_round"].get<bool>());
  EXPECT_FALSE(w["arms"][1]["trials"][0].contains("hold_t_comp_s"));
}

INSTANTIATE_TEST_SUITE_P(ProbeOrPreviousRound, HoldRatioTest, ::testing::Values(1, 0));

}  // namespace
}  // namespace loom::overlap
