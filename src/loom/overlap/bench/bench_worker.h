// The rank side of `loom bench overlap`: one process per rank runs every workload of the config
// against a modelled link at each target ratio R (and the unlimited negative control) and writes
// its raw per-trial measurements as JSON; the parent merges the ranks (bench_report.h).
//
//   LOOM_RETURN_IF_ERROR(RunOverlapBenchRank(config, {.job = "ovb-123", .rank = r,
//                                                     .out_path = "/tmp/x/rank0.json"}));
//
// Per workload: (1) calibration with an unlimited link: t_comp = median of
// config.calibration_reps RunComputeOnly calls of the fused op (S = the middle split), the link
// bytes of one RunCommOnly; both maxed over ranks so every rank derives the same bandwidth
// B(R) = link_bytes / (R · t_comp) (closed_form.h's LinkBandwidthForRatio). (2) Per arm (each R,
// then unlimited): a LinkProxy at B (kCopy; kUnlimited for the control), one prepared op per
// variant (sequential, decomposed, fused S..., auto), then warmup + trials rounds; each round runs
// every variant once in a fixed interleaved order (A B C D, A B C D, ...), each call preceded by
// a barrier so all ranks start together, then that round's own t_comp (RunComputeOnly of the
// fused reference op) and t_comm (its RunCommOnly). /proc/stat steal and the load average are
// sampled around each round. MoE runs layer 0 then layer 1 (their times added). With
// config.hold_ratio_each_round a t_comp estimate before every round (a probe, or the previous
// round's compute times) re-sizes B for that round (the arm's proxy and ops are rebuilt); each
// trial records its B (`bytes_per_second`) and the estimate (`hold_t_comp_s`, `hold_source`).
//
// Thread-safety: call once per process (pins the process to CPU rank % ncpu).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "loom/base/status.h"
#include "loom/overlap/bench/bench_config.h"

namespace loom::overlap {

struct BenchRankOptions {
  std::string job;  // unique job id (names the shared-memory segment)
  int rank = 0;
  std::string out_path;  // where this rank's JSON goes
  bool pin_cpu = true;   // sched_setaffinity to CPU rank % ncpu; default true
  bool progress = true;  // rank 0 prints one line per arm to stderr; default true
};

// Runs every workload; writes {"rank", "world", "cpu", "workloads": [...]} to out_path.
Status RunOverlapBenchRank(const OverlapBenchConfig& config, const BenchRankOptions& options);

// System-wide CPU time counters from /proc/stat (the "cpu" line), in clock ticks.
struct CpuTicks {
  double total = 0;
  double steal = 0;
};
CpuTicks ReadCpuTicks();
// Steal fraction between two samples (0 when no ticks elapsed).
double StealFraction(const CpuTicks& before, const CpuTicks& after);

}  // namespace loom::overlap
