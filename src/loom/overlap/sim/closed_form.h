// Closed-form ideal times of the overlapped ops (spec §7) and the communication/compute ratio
// R = t_comm / t_comp, plus the link bandwidth that gives a target R for a shape and a measured
// GEMM FLOP rate (the benchmark uses it to set R in {0.25, 0.5, 1, 2}).
//
// Notation: t_c = total GEMM time of one rank (all of its tiles, no decomposition penalty),
// t_m = serial link time for all remote shards/segments of one rank, W = world size, S = splits
// per shard. All formulas are the "ideal" column: no per-tile overhead, no interference.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

namespace loom::overlap {

// --- AG+GEMM (local shard first) -------------------------------------------------------------
double AgGemmSequentialIdeal(double t_c, double t_m);             // t_m + t_c
double AgGemmDecomposedIdeal(double t_c, double t_m, int world);  // max(t_c, t_m + t_c/W)
double AgGemmFusedIdeal(double t_c, double t_m, int world,
                        int splits);  // max(t_c, t_m + t_c/(W·S))

// --- GEMM+RS (own segment last) --------------------------------------------------------------
// t_red: owner's reduction of one arriving chunk (the tail that cannot overlap).
double GemmRsSequentialIdeal(double t_c, double t_m, double t_red);  // t_c + t_m + t_red
// t_c/W + max(t_c·(W−1)/W, t_m) + t_red
double GemmRsDecomposedIdeal(double t_c, double t_m, int world, double t_red);
// max(t_c, t_c/(W·S) + t_m) + t_red_tail
double GemmRsFusedIdeal(double t_c, double t_m, int world, int splits, double t_red_tail);

// --- Ratios and link sizing ------------------------------------------------------------------
// R = t_comm / t_comp (t_comp > 0).
double CommComputeRatio(double t_comm, double t_comp);
// Decomposed AG+GEMM is already optimal when R <= (W−1)/W; fusion can only win above it.
double FusionBreakEvenRatio(int world);

// One rank's GEMM FLOPs and link bytes for AG+GEMM: C[W·m_shard, n_local] = A_full · B[k, n_local];
// bytes = (W−1)·m_shard·k·elem_bytes (the remote shards of A).
double AgGemmFlops(int world, int64_t m_shard, int64_t k, int64_t n_local);
double AgGemmLinkBytes(int world, int64_t m_shard, int64_t k, int elem_bytes);
// GEMM+RS: partial C[W·m_shard, n] = A[W·m_shard, k_local] · B[k_local, n]; bytes =
// (W−1)·m_shard·n·elem_bytes (the partial segments sent to their owners).
double GemmRsFlops(int world, int64_t m_shard, int64_t k_local, int64_t n);
double GemmRsLinkBytes(int world, int64_t m_shard, int64_t n, int elem_bytes);

// Link bandwidth (bytes/s) giving t_comm / t_comp = target_r, where t_comp = flops/flops_per_s
// and t_comm = link_bytes / B (latency ignored). Requires all arguments > 0.
// Example (spec §7): W=2, m_shard=512, k=2048, n_local=512, fp32, 60 GFLOP/s, R=1 -> ~117 MB/s.
double LinkBandwidthForRatio(double link_bytes, double flops, double flops_per_s, double target_r);
double AgGemmBandwidthForRatio(int world, int64_t m_shard, int64_t k, int64_t n_local,
                               int elem_bytes, double flops_per_s, double target_r);
double GemmRsBandwidthForRatio(int world, int64_t m_shard, int64_t k_local, int64_t n,
                               int elem_bytes, double flops_per_s, double target_r);

}  // namespace loom::overlap
