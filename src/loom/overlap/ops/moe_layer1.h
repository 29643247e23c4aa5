// MoeLayer1: MoE layer 1 under expert parallelism = grouped GEMM + top-k combine back to the
// token owners, in modes sequential | decomposed | fused | auto (Comet's layer 1: the shared
// tensor is split along N = hidden, compute workers and communication workers).
//
// Per rank: h, the rows layer 0 produced (moe_layer0.h: receive layout of moe_routing.h,
// rows × ffn; this op rebuilds the same layout from the routing, so OpConfig::tile_rows must be
// layer 0's); W2 of its local experts ([le][ffn][hidden]); its own Routing. Output y (T × hidden):
//   y[t] = Σ_s gate(t, s) · h_row(t, s) · W2[expert(t, s)]   over the token's top_k slots.
//
//   MoeLayer1 op(rt, &proxy, shape, {.op = {.mode = OverlapMode::kFused, .splits = 8}});
//   LOOM_RETURN_IF_ERROR(op.Prepare(w2_local));                       // collective
//   LOOM_ASSIGN_OR_RETURN(OpRunStats st, op.Run(h, routing, y));       // collective
//
// Schedule (fused, Comet): the hidden columns are cut into SPLITS = OpConfig::splits chunks.
// `compute_workers` threads compute y_rows[:, split] = h · W2[e][:, split] split by split (the
// tiles of a split dealt round-robin) and arrive on the split's counter (the tile layer's
// CounterNotify: the last arrival of a call signals the split). `comm_workers` threads take splits
// round-robin: wait for the split's counter, do the top-k weighted reduce of this rank's
// contributions per token (Σ over the token's slots routed here) and push the partial sums of owner
// d's tokens to d (its slot for this source, split-major) through the LinkProxy, signal src·C +
// split. The owner, after its own work, waits for every source's chunks and sums the W partials.
// Own tokens' partials are written locally. Sequential: all GEMMs, then combine + send, one chunk
// per peer (C = 1), in the calling thread. Decomposed: `decomposed_chunks` column chunks, each
// computed then combined and sent in the calling thread (the link overlaps the next chunk's GEMM).
// Auto: the simulator (PredictMoeLayer1, which also picks splits and comm workers: Comet's adaptive
// assignment) at Prepare from the measured tile cost and expected uniform counts.
//
// Adaptive assignment from a profile of this host: ProfileSplits() times a column chunk of the
// grouped GEMM and of the combine on the last call's layout; ChooseAssignment() feeds those into
// the simulator and returns the best (splits, comm workers) for a core budget. On a 2-core host
// this is degenerate (1 compute + 1 comm thread); options make the counts explicit.
//
// Errors as in moe_layer0.h, prefixed "moe_layer1 rank r (mode)". After an error the op must be
// destroyed.
// Thread-safety: one op per rank, used by one thread at a time (it runs its own worker threads
// inside Run); Prepare, Run and RunCommOnly are collective; RunComputeOnly is local.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "loom/base/status.h"
#include "loom/base/thread_pool.h"
#include "loom/overlap/gemm/tile_gemm.h"
#include "loom/overlap/link/link_proxy.h"
#include "loom/overlap/ops/moe_routing.h"
#include "loom/overlap/ops/op_stats.h"
#include "loom/overlap/runtime/runtime.h"
#include "loom/overlap/tile/tile_primitives.h"

namespace loom::overlap {

struct MoeLayer1OpOptions {
  // mode; splits = SPLITS column chunks (fused); tile_rows = layer 0's (layout); tile_cols
  // ignored (a split is the column tile).
  OpConfig op;
  int32_t compute_workers = 1;    // fused: GEMM threads; default 1
  int32_t comm_workers = 1;       // fused: combine + push threads; default 1
  int32_t decomposed_chunks = 2;  // decomposed: column chunks; default 2
  TileGemmOptions gemm;           // micro-kernel choice; default auto
};

// Measured on this host by ProfileSplits (seconds for the whole op's rows, one thread).
struct MoeLayer1Profile {
  double seconds_per_mac = 0;          // grouped GEMM
  double reduce_seconds_per_byte = 0;  // top-k weighted reduce, per input byte of y rows
};

class MoeLayer1 {
 public:
  // `runtime` and `proxy` (started by the caller) must outlive the op.
  MoeLayer1(Runtime* runtime, LinkProxy* proxy, MoeOpShape shape, MoeLayer1OpOptions options);
  ~MoeLayer1();
  MoeLayer1(const MoeLayer1&) = delete;
  MoeLayer1& operator=(const MoeLayer1&) = delete;

  // Collective: checks the config on every rank, allocates the partial-sum receive buffer and
  // signals, packs W2 ([E/W][ffn][hidden], contiguous), starts the worker threads (fused).
  Status Prepare(const float* w2_local);

  // Collective: `h` = layer 0's output for this call's routing (rows × ffn in its layout), `y`
  // T × hidden.
  Result<OpRunStats> Run(const float* h, const Routing& routing, float* y);
  // Local: GEMMs + local combine of the resolved mode on the last call's layout, no sends or
  // waits (t_comp); y receives only this rank's own contributions.
  Result<OpRunStats> RunComputeOnly(const float* h, float* y);
  // Collective: routing exchange + sending the partial sums of the last computed rows + waits
  // (t_comm). Needs a previous Run.
  Result<OpRunStats> RunCommOnly(const Routing& routing);

  // Times one column chunk of the grouped GEMM and of the combine over the last call's layout.
  Result<MoeLayer1Profile> ProfileSplits(const float* h);
  // Comet's adaptive assignment: the best (splits, comm_workers, compute_workers) for `cores`
  // workers from `profile`, the last layout's counts and the proxy's link (simulator).
  Result<MoeLayer1OpOptions> ChooseAssignment(const MoeLayer1Profile& profile, int cores) const;

  const RecvLayout& layout() const { return layout_; }
  OverlapMode resolved_mode() const { return resolved_; }
  const MoeLayer1OpOptions& options() const { return options_; }
  uint64_t ConfigHash() const;

 private:
  friend class MoePair;  // runs layer 1's steps interleaved with layer 0's (moe_pair.h)

  struct Combine;  // per destination: its tokens with their (row, gate) contributions
  int Chunks(OverlapMode mode) const;
  int MaxChunks() const;
  Status BeginCall(const Routing& routing);
  // BeginCall with every rank's routing already exchanged (by layer 0 of the same call).
  void BeginCallWith(std::vector<Routing> all);
  void SetUpCall();  // layout, pack offsets and combine lists from routings_
  // How GemmColumns treats A (the tile's rows of h): pack it per call (one chunk: the whole N),
  // or, with N split into chunks, pack each tile once into packed_h_ at the first chunk and reuse
  // it for the others (re-packing A per 128-column chunk cost ~30 % of the layer's GEMM here).
  enum class APack { kPerCall, kPackOnce, kPrepacked };
  static APack PackFor(int chunk, int chunks);
  void GemmColumns(const float* h, int64_t c0, int64_t c1, int worker, int workers, APack pack);
  void GemmTile(size_t i, const float* h, int64_t c0, int64_t c1, APack pack);  // tile i only
  void CombineChunk(int chunk, int chunks, bool send, OpRunStats* stats);
  void CombineDest(int dest, int chunk, int chunks, bool send, OpRunStats* stats);
  Status RunFused(const float* h, bool send, OpRunStats& stats);
  Status ComputeAndCombine(OverlapMode mode, const float* h, bool send, OpRunStats& stats);
  Status WaitPartials(OverlapMode mode, OpRunStats& stats);
  // y = Σ of the partial sums staged in `chunks` column chunks (own slot; remote ones too).
  void SumPartials(int chunks, bool include_remote, float* y) const;
  Status ResolveAuto();
  Status Fail(const Status& status) const;

  Runtime* rt_;
  LinkProxy* proxy_;
  MoeOpShape shape_;
  MoeLayer1OpOptions options_;
  OverlapMode resolved_ = OverlapMode::kSequential;
  bool prepared_ = false;
  bool have_layout_ = false;
  std::vector<TileGemm> gemm_;  // per local expert: ffn × hidden
  RoutingExchange exchange_;
  float* partial_ = nullptr;  // symmetric: W slots of T × hidden (slot src: from rank src)
  SignalId part_sig_ = -1;    // W·MaxChunks(): chunk c from source src = src·MaxChunks() + c
  SignalId split_sig_ = -1;   // splits: split s computed (completed epochs, CounterNotify)
  TileCounters counters_;     // splits: the compute workers' arrivals
  uint32_t epoch_ = 0;
  uint32_t split_epoch_ = 0;  // fused calls so far (epochs of the split signals)
  RecvLayout layout_;
  std::vector<Routing> routings_;     // every rank's routing of the last call
  std::vector<Combine> combine_;      // [dest]
  std::vector<int64_t> from_tokens_;  // [src]: my tokens with ≥ 1 expert on src
  std::vector<float> y_rows_;         // total_rows × hidden
  // Every tile's rows of h packed for its TileGemm (APack), tile i at packed_offset_[i].
  std::vector<float, internal::AlignedAllocator<float>> packed_h_;
  std::vector<int64_t> packed_offset_;
  std::vector<std::vector<float>> staging_;  // [dest]: T × hidden, split-major partial sums
  std::unique_ptr<ThreadPool> pool_;
  LinkStats link_before_;
};

}  // namespace loom::overlap
