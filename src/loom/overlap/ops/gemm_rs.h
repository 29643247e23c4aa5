// GemmRs: GEMM + ReduceScatter over W ranks (row-parallel linear layer): every rank computes the
// partial product P_r = A_r · B_r for all M rows (K split across ranks), and rank s receives row
// segment s of every partial and sums them: out_s = Σ_r P_r[segment s]. Modes sequential |
// decomposed | fused | auto (FLUX's GEMM+RS built on TileLink's tile layer).
//
//   GemmRs op(rt, &proxy, GemmRsOpShape{.m = 1024, .k_local = 1024, .n = 512},
//             {.op = {.mode = OverlapMode::kFused, .splits = 4}});
//   LOOM_RETURN_IF_ERROR(op.Prepare(b));                  // collective, b: K_local × N
//   LOOM_ASSIGN_OR_RETURN(OpRunStats st, op.Run(a, out));  // a: M × K_local, out: segment × N
//
// Segments: seg_rows = ceil(M / W); rank s owns rows [s·seg_rows, min(M, (s+1)·seg_rows)) —
// SegmentRows(s) of them, possibly fewer (or 0) for the last ranks; internally every segment is
// padded to seg_rows (zero rows), so any M works. Each segment is cut into S chunks (rows split
// evenly) in fused mode, 1 chunk otherwise.
//
// Order (every mode): segments rank+1, rank+2, …, own segment last; for power-of-two W > 2 the
// destinations are XOR-swizzled instead (step j sends to rank XOR j, j = 1..W−1, then own), so
// at each step every rank has exactly one sender (FLUX's OutputRankSwizzler).
//   sequential  one GEMM call over all M rows into the symmetric partial buffer, then every
//               remote segment is pushed whole by the link proxy (the reduce-scatter), then the
//               owner reduces.
//   decomposed  per segment in order: one GEMM call, then the segment is pushed whole
//               (PyTorch async-TP).
//   fused       tiles (tile_rows × tile_cols, restarting at each segment: TileMap kPerShard) in
//               segment order; when the last tile touching a segment chunk finishes (counter-based
//               many-to-one notify, CounterNotify on per-chunk counters), the chunk is pushed to
//               its owner (TilePush) with its per-source channel signal; chunks and tiles differ
//               in size. Chunks no tile touches (segments shorter than S rows) are sent at once.
//   auto        the simulator picks from the measured tile cost (max over ranks) and the link.
// Reduction: after its own segment, the compute thread reduces chunk by chunk, waiting for each
// source's chunk signal; the sum is always taken in rank order 0, 1, …, W−1 (own partial in its
// place), so every mode produces bitwise the same sums of the same partials (the partials agree
// across modes up to the tile GEMM's edge-tile rounding: compare modes within fp32 tolerance).
// kDelayOnly: the owner reads the chunk from the producer's partial buffer (symm_at).
//
// Epochs, errors and thread-safety: as AgGemm (ops/ag_gemm.h): each collective call bumps the
// epoch and first waits until every peer finished the previous call; missing chunks give
// kDeadlineExceeded with the runtime's signal dump, prefixed "gemm_rs rank r (mode)".
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "loom/base/status.h"
#include "loom/overlap/gemm/tile_gemm.h"
#include "loom/overlap/link/link_proxy.h"
#include "loom/overlap/ops/op_stats.h"
#include "loom/overlap/runtime/runtime.h"
#include "loom/overlap/sim/simulator.h"
#include "loom/overlap/tile/tile_map.h"
#include "loom/overlap/tile/tile_primitives.h"

namespace loom::overlap {

// The op's shape. (sim/simulator.h owns GemmRsShape, the simulator's per-rank shape; the op also
// accepts it, with m = world · m_shard.)
struct GemmRsOpShape {
  int64_t m = 0;        // total rows of A and of the partial products
  int64_t k_local = 0;  // this rank's slice of K
  int64_t n = 0;
};

struct GemmRsOptions {
  OpConfig op;
  TileGemmOptions gemm;  // micro-kernel choice; default auto
};

class GemmRs {
 public:
  // `runtime` and `proxy` (started by the caller) must outlive the op.
  GemmRs(Runtime* runtime, LinkProxy* proxy, GemmRsOpShape shape, GemmRsOptions options);
  GemmRs(Runtime* runtime, LinkProxy* proxy, const GemmRsShape& shape, GemmRsOptions options);
  ~GemmRs();
  GemmRs(const GemmRs&) = delete;
  GemmRs& operator=(const GemmRs&) = delete;

  // Collective: checks the config on every rank, allocates the symmetric partial and receive
  // buffers and signals, packs B (K_local × N, contiguous) once; kAuto picks the mode.
  Status Prepare(const float* b);
  // Collective: `a` is M × K_local; `out` receives SegmentRows(rank) × N (row-major).
  Result<OpRunStats> Run(const float* a, float* out);
  // Local: GEMM + reduction without waiting (as if every signal were set): t_comp. The remote
  // partials are read from a private zeroed stand-in of the receive slots (those may be written
  // by a peer's next call), so `out` holds only this rank's own partial. No epoch bump.
  Result<OpRunStats> RunComputeOnly(const float* a, float* out);
  // Collective: the reduce-scatter's communication alone (t_comm).
  Result<OpRunStats> RunCommOnly();

  int64_t SegmentRowsPadded() const { return seg_rows_; }
  int64_t SegmentBegin(int rank) const;
  int64_t SegmentRows(int rank) const;
  OverlapMode resolved_mode() const { return resolved_; }
  const GemmRsOpShape& shape() const { return shape_; }
  const GemmRsOptions& options() const { return options_; }
  double tile_cost_s() const { return tile_cost_s_; }
  uint64_t ConfigHash() const;
  // The segment order of this rank (own segment last).
  std::vector<int> SegmentOrder() const;

 private:
  Status BeginCall(OpRunStats& stats);
  void SendSegment(int seg, bool fused, LinkSubmitter& link, OpRunStats& stats);
  void SendChunk(int64_t channel, LinkSubmitter& link, OpRunStats& stats);
  Status ComputeAndSend(OverlapMode mode, const float* a, bool send, LinkSubmitter& link,
                        OpRunStats& stats);
  Status Reduce(OverlapMode mode, bool wait, float* out, OpRunStats& stats);
  const float* PartialFrom(int src, int64_t global_row, bool wait) const;
  Status EndCall(OpRunStats& stats, double thread_cpu0, int64_t model_done_ns);
  Status ResolveAuto();

  Runtime* rt_;
  LinkProxy* proxy_;
  GemmRsOpShape shape_;
  GemmRsOptions options_;
  Status shape_error_;
  int world_ = 1;
  int rank_ = 0;
  OverlapMode resolved_ = OverlapMode::kSequential;
  bool prepared_ = false;
  int64_t seg_rows_ = 0;
  TileGemm gemm_;
  std::unique_ptr<TileMap> map_;        // fused: segments of seg_rows, S chunks each, tiles
  std::unique_ptr<TileMap> whole_map_;  // sequential/decomposed: one chunk per segment
  SegmentSwizzle swizzle_ = SegmentSwizzle::kRing;
  float* partial_ = nullptr;   // symmetric: this rank's partial, W·seg_rows × N (row g at g·N)
  float* recv_ = nullptr;      // symmetric: W slots of seg_rows × N (slot src: src's partial)
  std::vector<float> stale_;   // RunComputeOnly's stand-in for the receive slots
  TileCounters counters_;      // fused: per channel of map_, tiles finished (counter notify)
  SignalId counter_sig_ = -1;  // W·S local signals completed by CounterNotify
  SignalId chunk_sig_ = -1;    // W blocks of W·S: block src, channel seg·S + c, on the owner
  SignalId whole_sig_ = -1;    // W blocks of W: block src, channel seg, on the owner
  SignalId done_sig_ = -1;     // W
  uint32_t epoch_ = 0;
  double tile_cost_s_ = 0;
  LinkStats link_before_;
};

}  // namespace loom::overlap
