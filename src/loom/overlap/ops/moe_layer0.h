// MoeLayer0: MoE layer 0 under expert parallelism = token dispatch + grouped GEMM, in modes
// sequential | decomposed | fused | auto (Comet's layer-0 rescheduling / Triton-distributed's
// AG-MoE stage order, built on the runtime's signals and the link proxy).
//
// Per rank: x (T × hidden, this rank's tokens), its Routing (top_k experts per token), W1 of its
// E/W local experts ([le][hidden][ffn], row-major). Output h: the received rows in the receive
// layout of moe_routing.h (sorted by (local expert, source rank), own rows first, each expert
// group padded to tile_rows), h[row] = x[src][token] · W1[expert], rows × ffn. Padding rows
// (RowRef::src == -1) and rows past layout().total_rows are not written.
//
//   MoeLayer0 op(rt, &proxy, shape, {.op = {.mode = OverlapMode::kFused, .splits = 4}});
//   LOOM_RETURN_IF_ERROR(op.Prepare(w1_local));                       // collective
//   std::vector<float> h(op.max_rows() * shape.ffn);
//   LOOM_ASSIGN_OR_RETURN(OpRunStats st, op.Run(x, routing, h.data()));  // collective
//   const RecvLayout& layout = op.layout();                              // rows of h
//
// Communication: (1) the routing exchange (counts, expert ids, gates and the config hash, by
// Runtime::put_signal; doubles as the start-of-call rendezvous, so no rank overwrites a buffer a
// peer still reads); (2) every rank gathers the rows it sends to rank d (d = rank−1, rank−2, …,
// so receiver r gets source r+1 first) and its LinkProxy pushes them straight into d's receive
// buffer at their sorted positions, in S chunks per (source, dest) (S = OpConfig::splits in
// fused mode, 1 otherwise), each chunk followed by its signal src·S + s (value = call epoch) on
// d. Own rows are copied locally (no link). kPoison: receive rows are NaN until arrival.
//
// Modes:
//   sequential  wait for every chunk, then every tile (grouped GEMM, expert by expert).
//   decomposed  per source rank in arrival order (own first): wait its chunk, GEMM its segment
//               of every expert group.
//   fused       tiles in stage order; each tile waits only for the chunks of the sources its
//               rows span, and only the splits covering its rows.
//   auto        the simulator picks one at Prepare from the measured tile cost, the link and
//               the expected (uniform) counts; the same on every rank.
// Every mode computes each row with the same kernel, so the modes agree to fp32 rounding.
//
// Errors: Prepare: kInvalidArgument for a bad shape/config or one that differs across ranks
// (CheckSameConfig), kFailedPrecondition for a kDelayOnly link (needs the data copied); Run:
// kInvalidArgument for a bad routing (any rank's, named) or a rank configured differently;
// kDeadlineExceeded with the runtime's signal dump when a chunk never arrives. Messages start
// "moe_layer0 rank r (mode)". After an error the op must be destroyed.
//
// Thread-safety: one op per rank, used by one thread at a time; Prepare, Run and RunCommOnly are
// collective; RunComputeOnly is local. Heap and signals stay allocated until Runtime::Reset.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/base/status.h"
#include "loom/overlap/gemm/tile_gemm.h"
#include "loom/overlap/link/link_proxy.h"
#include "loom/overlap/ops/moe_routing.h"
#include "loom/overlap/ops/op_stats.h"
#include "loom/overlap/runtime/runtime.h"

namespace loom::overlap {

struct MoeLayer0Options {
  // mode; splits = chunks per (source, dest) in fused mode; tile_rows = tile height and padding
  // unit of the layout (layer 1 must use the same); tile_cols ignored (tiles span all of ffn).
  OpConfig op;
  TileGemmOptions gemm;  // micro-kernel choice; default auto
};

class MoeLayer0 {
 public:
  // `runtime` and `proxy` (started by the caller) must outlive the op.
  MoeLayer0(Runtime* runtime, LinkProxy* proxy, MoeOpShape shape, MoeLayer0Options options);
  MoeLayer0(const MoeLayer0&) = delete;
  MoeLayer0& operator=(const MoeLayer0&) = delete;

  // Collective: checks the config on every rank, allocates the receive buffer and signals, packs
  // W1 ([E/W][hidden][ffn], contiguous) per local expert; kAuto resolves the mode.
  Status Prepare(const float* w1_local);

  // Collective: dispatch + grouped GEMM. `x` is T × hidden; `h` holds max_rows() × ffn.
  Result<OpRunStats> Run(const float* x, const Routing& routing, float* h);
  // Local: the GEMMs of the resolved mode over the receive buffer of the last call (every wait
  // satisfied at once): t_comp. Needs a previous Run or RunCommOnly.
  Result<OpRunStats> RunComputeOnly(float* h);
  // Collective: routing exchange + dispatch alone (pushes, waits for every chunk, Quiet): t_comm.
  Result<OpRunStats> RunCommOnly(const float* x, const Routing& routing);

  // Receive layout of the last call (rows of h).
  const RecvLayout& layout() const { return layout_; }
  int64_t max_rows() const { return MaxRecvRows(shape_, options_.op.tile_rows); }
  OverlapMode resolved_mode() const { return resolved_; }
  const MoeOpShape& shape() const { return shape_; }
  uint64_t ConfigHash() const;

 private:
  friend class MoePair;  // runs layer 0's steps interleaved with layer 1's (moe_pair.h)

  int Splits() const { return resolved_ == OverlapMode::kFused ? options_.op.splits : 1; }
  Status Dispatch(const float* x, const Routing& routing, OpRunStats& stats);
  Status WaitSource(int src, int s_beg, int s_end, OpRunStats& stats);
  Status WaitTile(const MoeTile& tile, OpRunStats& stats, TileTrace* trace);
  // Whether every chunk `tile` needs has arrived (a poll: no wait, no bookkeeping).
  bool TileArrived(const MoeTile& tile) const;
  // fn(src, s_beg, s_end) for every remote source of `tile`'s rows: the chunks covering them.
  template <typename Fn>
  void ForEachTileChunks(const MoeTile& tile, Fn&& fn) const;
  Status Compute(OverlapMode mode, bool wait, float* h, OpRunStats& stats);
  void GemmRows(int le, int64_t row0, int64_t rows, float* h) const;
  Status ResolveAuto();
  Status Finish(OpRunStats& stats, double cpu0);
  Status Fail(const Status& status) const;

  Runtime* rt_;
  LinkProxy* proxy_;
  MoeOpShape shape_;
  MoeLayer0Options options_;
  OverlapMode resolved_ = OverlapMode::kSequential;
  bool prepared_ = false;
  bool have_layout_ = false;
  std::vector<TileGemm> gemm_;  // per local expert: hidden × ffn
  RoutingExchange exchange_;
  float* recv_ = nullptr;   // symmetric: max_rows × hidden
  SignalId data_sig_ = -1;  // W·splits: chunk s from source src = src·splits + s
  uint32_t epoch_ = 0;
  RecvLayout layout_;
  std::vector<Routing> routings_;            // every rank's routing of the last call
  std::vector<std::vector<float>> staging_;  // per dest: gathered rows being sent
  std::vector<uint8_t> seen_;                // per channel: already waited this call
  LinkStats link_before_;
};

}  // namespace loom::overlap
