// The parent side of `loom bench overlap`: merges the ranks' raw JSON (bench_worker.h) into one
// report with every metric per variant and arm, attaches the real peers' results (OpenMPI,
// Gloo; scripts/bench/overlap_peers.sh), derives the JSON `summary`, formats the text tables and
// the R-sweep series for the SVG.
//
//   LOOM_ASSIGN_OR_RETURN(json report, BuildOverlapReport(config, rank_docs));
//   AttachPeers(&report, peer_docs);
//   json summary = BuildOverlapSummary(report, tile_gemm_ratio);
//   std::fputs(FormatOverlapReport(report, summary).c_str(), stdout);
//
// Per trial, each time is the slower rank's (max over ranks). Trials whose /proc/stat steal
// exceeds config.max_steal are dropped from the statistics but kept in the JSON and counted
// (`dropped_trials`); if every trial of an arm would be dropped none is (`steal_filter_off`).
// Per variant: t_x quartiles; per-trial E, exposed comm, speedup vs sequential and decomposed
// (t_seq,i / t_x,i), fraction of ideal max(t_comp, t_comm)/t_x and of the variant's closed-form
// ideal, then their medians; proxy CPU duty = proxy thread CPU / t_x.
//
// Thread-safety: pure functions over JSON values.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "loom/base/status.h"
#include "loom/overlap/bench/bench_config.h"

namespace loom::overlap {

// Merges the ranks' documents (any order; all ranks 0..W−1 once) and computes the metrics.
// kInvalidArgument naming what is missing or inconsistent.
Result<nlohmann::json> BuildOverlapReport(const OverlapBenchConfig& config,
                                          const std::vector<nlohmann::json>& ranks);

// Metrics of one merged arm (exposed for tests): `arm` has "trials" (each with t_comp_s,
// t_comm_s, steal and x.<variant>.{wall_s, proxy_cpu_s, mode_run}) and "resolved_mode".
nlohmann::json AnalyzeArm(const nlohmann::json& arm, BenchOp op, int world, double max_steal,
                          const std::vector<std::string>& variants);

// Link rate in Mbit/s the peers are shaped to for an arm with `bytes_per_second` (rounded, ≥ 1;
// 0 for the unlimited arm = an unshaped veth).
int64_t PeerRateMbps(double bytes_per_second);

// Adds each matching peer result (same op and shape, rate within 2% or both unshaped) to
// arm["peers"][impl]. Returns how many peer documents matched an arm.
int AttachPeers(nlohmann::json* report, const std::vector<nlohmann::json>& peer_docs);

// The `summary` object: ag_gemm_efficiency_R1, ag_gemm_fused_vs_decomposed_R1,
// gemm_rs_fused_vs_decomposed_R1, moe_fused_vs_decomposed_R1, tile_gemm_vs_openblas,
// auto_worst_vs_best_of_seq_dec, fused_worst_vs_best_of_seq_dec, and per-op details. Values for
// an op/ratio that was not run are null. R1 figures use the op's first workload (the issue's
// first shape, MoE uniform routing) and the best fused S at R = 1.
nlohmann::json BuildOverlapSummary(const nlohmann::json& report, double tile_gemm_ratio);

// The tables (one per workload) and the targets, as text.
std::string FormatOverlapReport(const nlohmann::json& report, const nlohmann::json& summary);

// Speedup over sequential vs R per op × mode (decomposed, fused best S, auto): the median over
// the op's workloads of each arm's median per-trial speedup.
struct SweepSeries {
  std::string name;                               // "ag_gemm fused"
  std::vector<std::pair<double, double>> points;  // (R, speedup)
};
std::vector<SweepSeries> SpeedupSweep(const nlohmann::json& report);

}  // namespace loom::overlap
