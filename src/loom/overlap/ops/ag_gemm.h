// AgGemm: AllGather + GEMM over W ranks, C = all_gather(A) · B, in modes
// sequential | decomposed | fused | auto (FLUX's AG+GEMM built on TileLink's tile layer).
//
// Per rank: A shard (m_shard × K, this rank's rows), B (K × N_local, this rank's weights, e.g. a
// column-parallel linear layer), C ((W·m_shard) × N_local, rows of rank s at s·m_shard).
//
//   AgGemm op(rt, &proxy, AgGemmOpShape{.m_shard = 512, .k = 2048, .n_local = 512},
//             {.op = {.mode = OverlapMode::kFused, .splits = 4}});
//   LOOM_RETURN_IF_ERROR(op.Prepare(b));                 // collective
//   LOOM_ASSIGN_OR_RETURN(OpRunStats st, op.Run(a_shard, c));  // collective
//
// Communication (the modelled copy engine): Run copies the shard into this rank's slot of a
// symmetric gather buffer (row g of the gathered A at g·K) and its LinkProxy pushes it to every
// peer: fused as S chunks (rows split evenly; TilePush, one channel signal per chunk),
// sequential/decomposed as one message per shard (RankCopy, one rank signal), each signal set to
// the call's epoch on the receiver. Producer p sends to p−1, p−2, … so that receiver r gets
// shard r+1 first, then r+2, … — the order its tiles consume them. kPoison receive buffers hold
// NaN until arrival; in kDelayOnly the consumer reads the rows from the producer's heap
// (symm_at) after the signal.
//
// Modes:
//   sequential  wait for every remote shard, then one GEMM call per shard (own first).
//   decomposed  own shard's GEMM call, then shard (rank+step) mod W as one call once it arrived
//               (PyTorch async-TP).
//   fused       tile list = shards in order rank, rank+1, … (FLUX swizzle, TileMap::AgTileOrder),
//               each shard cut into ceil(m_shard / tile_rows) row tiles (the last one an edge
//               tile) × column tiles of tile_cols; each remote tile waits only for the chunk
//               channels its rows span (ConsumerTileWait) — tiles and chunks differ in size.
//   auto        the simulator picks one of the three from the measured tile cost (max over
//               ranks) and the proxy's link options; OpRunStats::mode_run says which.
// The modes agree to fp32 rounding (the same tile GEMM; only the row blocking differs).
//
// Epochs: each Run / RunCommOnly bumps the op's epoch, so signals are never reset. A call starts
// by waiting until every peer finished the previous call (a "done" signal), so no rank overwrites
// a buffer a peer still reads.
//
// Errors: Prepare returns kInvalidArgument naming the first rank whose shape/options/link differ
// from rank 0's; a chunk that never arrives gives kDeadlineExceeded after OpConfig::timeout with
// the runtime's signal dump (and a dead peer named), prefixed "ag_gemm rank r (mode)". After an
// error the op must be destroyed (its epoch is no longer in step with its peers).
//
// Thread-safety: one AgGemm per rank, used by one thread at a time; Prepare, Run and
// RunCommOnly are collective (every rank calls them in the same sequence); RunComputeOnly is
// local. The runtime's heap and signals allocated by Prepare stay allocated until Runtime::Reset.
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

namespace loom::overlap {

// The op's shape. (sim/simulator.h owns the name AgGemmShape, the simulator's shape with world
// and element size; the op also accepts that one, taking the world from the runtime.)
struct AgGemmOpShape {
  int64_t m_shard = 0;  // rows of A per rank
  int64_t k = 0;
  int64_t n_local = 0;  // columns of B and C on this rank
};

struct AgGemmOptions {
  OpConfig op;
  TileGemmOptions gemm;  // micro-kernel choice; default auto
};

class AgGemm {
 public:
  // `runtime` and `proxy` (started by the caller) must outlive the op.
  AgGemm(Runtime* runtime, LinkProxy* proxy, AgGemmOpShape shape, AgGemmOptions options);
  // The simulator's shape: world must equal the runtime's (checked at Prepare), elem_bytes 4.
  AgGemm(Runtime* runtime, LinkProxy* proxy, const AgGemmShape& shape, AgGemmOptions options);
  ~AgGemm();
  AgGemm(const AgGemm&) = delete;
  AgGemm& operator=(const AgGemm&) = delete;

  // Collective: checks the config on every rank, allocates the symmetric gather buffer and
  // signals, packs B (K × N_local, row-major, contiguous) once; kAuto also measures the tile cost
  // and asks the simulator for the mode (the same on every rank).
  Status Prepare(const float* b);

  // Collective: C = all_gather(A) · B. `a_shard` is m_shard × K, `c` is (W·m_shard) × N_local,
  // both row-major and contiguous.
  Result<OpRunStats> Run(const float* a_shard, float* c);
  // Local: the compute of the resolved mode without waiting (as if every signal were already
  // set): t_comp. Every shard's rows are read from `a_shard` (the gather buffer may be written
  // by a peer's next call), so only this rank's rows of `c` are meaningful. No epoch bump.
  Result<OpRunStats> RunComputeOnly(const float* a_shard, float* c);
  // Collective: the all-gather alone (pushes, waits for every incoming chunk, Quiet): t_comm.
  Result<OpRunStats> RunCommOnly();

  // The mode Run uses (kAuto resolved at Prepare).
  OverlapMode resolved_mode() const { return resolved_; }
  const AgGemmOpShape& shape() const { return shape_; }
  const AgGemmOptions& options() const { return options_; }
  // Measured (or configured) seconds per compute tile used by kAuto; 0 before Prepare.
  double tile_cost_s() const { return tile_cost_s_; }
  // Hash of shape, options and link options that Prepare compares across ranks.
  uint64_t ConfigHash() const;

 private:
  Status BeginCall(OpRunStats& stats);
  void SubmitShard(OverlapMode mode, LinkSubmitter& link, OpRunStats& stats);
  Status Compute(OverlapMode mode, const float* a_shard, float* c, bool wait, OpRunStats& stats);
  Status ComputeRows(const float* a_rows, int64_t row0, int64_t rows, int64_t col0, int64_t cols,
                     int src, IndexRange channels, float* c, OpRunStats& stats, int64_t tile);
  Status WaitShard(OverlapMode mode, int src, OpRunStats& stats);
  const float* RowsOf(int src, int64_t global_row, const float* a_shard) const;
  Status EndCall(OpRunStats& stats, double thread_cpu0, int64_t model_done_ns);
  Status ResolveAuto();

  Runtime* rt_;
  LinkProxy* proxy_;
  AgGemmOpShape shape_;
  AgGemmOptions options_;
  Status shape_error_;  // from the simulator-shape constructor (world / elem_bytes mismatch)
  int world_ = 1;
  int rank_ = 0;
  OverlapMode resolved_ = OverlapMode::kSequential;
  bool prepared_ = false;
  TileGemm gemm_;
  std::unique_ptr<TileMap> map_;  // rows W·m_shard, shards of m_shard, S chunks, tiles
  float* gather_ = nullptr;       // symmetric: W slots of m_shard × K (row g at g·K)
  SignalId chunk_sig_ = -1;       // W·S channel signals (fused)
  SignalId rank_sig_ = -1;        // W rank signals (sequential / decomposed: whole shards)
  SignalId done_sig_ = -1;        // W: signal p set by rank p at the end of each call
  uint32_t epoch_ = 0;
  double tile_cost_s_ = 0;
  LinkStats link_before_;
};

}  // namespace loom::overlap
