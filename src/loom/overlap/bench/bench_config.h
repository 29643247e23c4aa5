// Configuration of `loom bench overlap` (issue 7's benchmark protocol, spec §9): which ops and
// shapes (workloads), which link ratios R, which variants (sequential, decomposed, fused with S
// splits, auto), how many interleaved trials. Shared by the parent process (report) and the rank
// workers (trial runner); serialisable to/from JSON so both see the same values.
//
//   OverlapBenchConfig c;                 // the full protocol
//   c.quick = true;                       // smaller shapes, fewer trials (smoke test, < 2 min)
//   for (const BenchWorkload& w : MakeWorkloads(c)) ...
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/overlap/ops/moe_routing.h"
#include "loom/overlap/ops/overlap_mode.h"

namespace loom::overlap {

enum class BenchOp { kAgGemm, kGemmRs, kMoe };
std::string BenchOpName(BenchOp op);  // "ag_gemm", "gemm_rs", "moe"
Result<BenchOp> ParseBenchOp(const std::string& name);

// One shape of one op. AG+GEMM / GEMM+RS use (m_shard, k, n_local) as in the issue (GEMM+RS:
// M = W·m_shard, K_local = k, N = n_local); MoE uses the moe_* fields (layer 0 + layer 1 in a
// row).
struct BenchWorkload {
  BenchOp op = BenchOp::kAgGemm;
  int64_t m_shard = 0;
  int64_t k = 0;
  int64_t n_local = 0;
  int32_t experts = 8;
  int32_t top_k = 2;
  int64_t hidden = 0;
  int64_t ffn = 0;
  int64_t tokens = 0;  // per rank
  RoutingKind routing = RoutingKind::kUniform;

  // "ag_gemm 512x2048x512", "moe uniform 8e top2 h1024 f2048 t4096".
  std::string Name() const;
  nlohmann::json ToJson() const;
};

// One variant an arm runs in every trial.
struct BenchVariant {
  OverlapMode mode = OverlapMode::kSequential;
  int32_t splits = 1;  // S for kFused (and the op's splits for kAuto)
  // MoE kFused: the cross-layer schedule of MoePair (true, "fused_s<S>") or each layer fused on
  // its own, one after the other (false, "layers_s<S>"); ignored by the other ops.
  bool cross_layer = true;
  std::string Name() const;  // "sequential", "decomposed", "fused_s4", "layers_s4", "auto"
};

struct OverlapBenchConfig {
  std::vector<BenchOp> ops = {BenchOp::kAgGemm, BenchOp::kGemmRs, BenchOp::kMoe};
  std::vector<double> ratios = {0.25, 0.5, 1, 2};  // target R = t_comm / t_comp; plus unlimited
  std::vector<int32_t> splits = {1, 2, 4, 8, 16};  // fused S values
  int32_t trials = 11;                             // timed interleaved trials per arm; default 11
  int32_t warmup = 2;                              // untimed trials first; default 2
  int32_t world = 2;                               // ranks (processes); default 2
  bool quick = false;       // smaller shapes (see MakeWorkloads); default false
  bool tiny = false;        // test-only shapes, seconds per run (see MakeWorkloads); default false
  double max_steal = 0.25;  // trials whose /proc/stat steal fraction exceeds this are dropped
                            // (counted and printed); default 0.25
  int32_t calibration_reps = 5;  // RunComputeOnly calls whose median calibrates t_comp; default 5
  // Re-measure t_comp before every paced arm and size that arm's B from it, so R follows the
  // GEMM speed of the moment on a shared machine (t_comp drifted 2-3x between the workload's
  // one calibration and later arms). false: one calibration per workload. Default true.
  bool calibrate_each_arm = true;
  // Hold R during an arm: before every round (warm-ups included) t_comp is re-estimated and the
  // arm's link and ops are rebuilt at B = link_bytes / (R · t_est). The rounds stay interleaved
  // (A B C D, estimate, A B C D, ...). Default false (one B per arm).
  bool hold_ratio_each_round = false;
  // t_est: 0 = no probe: the previous round's compute times (its t_comp probe and every
  // variant's compute_s, median per rank, max over ranks; the first round uses the arm's
  // calibration); N > 0 = the median of N compute-only calls of the fused reference (max over
  // ranks) just before the round. Default 0: a compute-only probe runs both ranks' GEMMs
  // back to back and measured up to 2x slower than the GEMMs inside the variants, so it held R
  // at 1.05-1.58 where the previous round held it at 0.91-1.14 (README, 2026-12-01).
  int32_t hold_ratio_probe_reps = 0;
  int64_t moe_tokens = 0;  // MoE tokens per rank; 0 = the workload default (4096); default 0
  int64_t tile_rows = 64;  // OpConfig::tile_rows of every op; default 64

  nlohmann::json ToJson() const;
  static Result<OverlapBenchConfig> FromJson(const nlohmann::json& j);
};

// kInvalidArgument naming the bad field (no ops, ratio ≤ 0, split < 1, trials < 1, world < 2...).
Status ValidateConfig(const OverlapBenchConfig& config);

// The workloads of `config`: per op in config.ops, the shapes (AG+GEMM and GEMM+RS at
// (512, 2048, 512), (1024, 4096, 256), (256, 2048, 1024); MoE 8 experts, top-2, hidden 1024,
// ffn 2048, 4096 tokens per rank, uniform and Zipf(1.2)), or with `quick` one small shape each
// ((256, 1024, 256); MoE hidden 512, ffn 1024, 1024 tokens), or with `tiny` (tests) (64, 256,
// 128) and MoE hidden 128, ffn 256, 128 tokens.
std::vector<BenchWorkload> MakeWorkloads(const OverlapBenchConfig& config);
// sequential, decomposed, fused_s<S> for every S in config.splits, for MoE layers_s<S> at the
// middle split (the per-layer fused schedule beside the cross-layer one), auto (S = the middle
// split).
std::vector<BenchVariant> MakeVariants(const OverlapBenchConfig& config, BenchOp op);

// Symmetric-heap bytes one rank needs to hold every variant of `w` at once (with slack).
int64_t HeapBytesFor(const BenchWorkload& w, const OverlapBenchConfig& config);

}  // namespace loom::overlap
