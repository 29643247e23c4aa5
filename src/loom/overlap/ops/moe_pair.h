// MoePair: one MoE block under expert parallelism — layer 0 (token dispatch + grouped GEMM,
// moe_layer0.h) then layer 1 (grouped GEMM + top-k combine, moe_layer1.h) — run layer by layer
// (each layer in the pair's mode) or, in fused mode, as one schedule across the layer boundary.
//
//   MoePair moe(rt, &proxy, shape, {.op = {.mode = OverlapMode::kFused, .splits = 8}});
//   LOOM_RETURN_IF_ERROR(moe.Prepare(w1_local, w2_local));                  // collective
//   std::vector<float> h(moe.max_rows() * shape.ffn), y(T * shape.hidden);
//   LOOM_ASSIGN_OR_RETURN(OpRunStats st, moe.Run(x, routing, h.data(), y.data()));  // collective
//
// Why across the boundary: run one after the other, layer 0 is bound by its link (every routed
// row is sent) and layer 1 by its GEMM (one partial sum per token comes back), so the link idles
// during layer 1's GEMMs and the cores wait during layer 0's dispatch; at the benchmark's MoE
// shape the ideal of the per-layer schedule is 1.27–1.31× decomposed (overlap/README.md).
// The cross-layer schedule (fused mode with cross_layer; all on the calling thread):
//   1. dispatch: layer 0's routing exchange (the call's rendezvous), layout and chunk pushes;
//   2. layer-0 tiles in stage order (own rows first); whenever the next tile's chunks have not
//      all arrived, a layer-1 tile of own-only rows runs instead (all columns; its output stays
//      on this rank) — the fill;
//   3. layer 1 of every tile holding remote rows, column split by split (its A packed once),
//      each split reduced and pushed to the token owners at once (layer 1's fused pipeline),
//      so the combine traffic starts as soon as the dispatch has been consumed;
//   4. the own-only layer-1 tiles the fill left (they overlap the combine's link time), then
//      the own tokens' reduce;
//   5. wait for every owner's partial sums, sum them into y, Quiet.
// Every row is computed with the same kernels as the layer-by-layer modes, so all modes agree to
// fp32 rounding. Both layers use OpConfig::splits; layer 1 keeps its comm/compute worker pool
// for the layer-by-layer fused mode only.
//
// Errors: the layers' (moe_layer0.h, moe_layer1.h), and from the cross-layer schedule the same
// kinds prefixed "moe_pair rank r (fused)"; Prepare: kInvalidArgument when a rank configured
// cross_layer differently. After an error the op must be destroyed.
// Thread-safety: one op per rank, used by one thread at a time; Prepare, Run and RunCommOnly are
// collective, RunComputeOnly is local.
#pragma once

#include <cstdint>
#include <string>

#include "loom/base/status.h"
#include "loom/overlap/ops/moe_layer0.h"
#include "loom/overlap/ops/moe_layer1.h"

namespace loom::overlap {

struct MoePairOptions {
  OpConfig op;  // mode and splits of both layers, tile_rows (the layout's)
  // kFused: one schedule across the layer boundary; kAuto: the same where the simulator picks
  // fused for layer 0 (measured: at the benchmark's MoE shapes the cross-layer schedule beat
  // every layer-by-layer mode wherever layer 0's pick was fused, while layer 1's pick, made for
  // its worker-thread pipeline, was decomposed; README); default true.
  bool cross_layer = true;
  int32_t decomposed_chunks = 2;  // layer 1's column chunks in decomposed mode; default 2
  TileGemmOptions gemm;           // micro-kernel choice; default auto
};

// Where the last call's time went (Run, RunComputeOnly or RunCommOnly).
struct MoePairParts {
  bool cross_layer = false;
  // Layer by layer: each layer's own stats. Cross-layer: [0] = layer 0's tiles (wall: call
  // start to the last layer-0 tile; its GEMMs; its waits), [1] = the rest of the call (wall;
  // every layer-1 GEMM and reduce, the fill included; the wait for the partial sums).
  OpRunStats layer[2];
  double fill_s = 0;          // cross-layer: layer-1 GEMM seconds run during layer 0's waits
  int64_t fill_tiles = 0;     // cross-layer: layer-1 tiles run then
  int64_t first_fill_ns = 0;  // NowNanos() when the first fill tile started (0: none)
};

class MoePair {
 public:
  // `runtime` and `proxy` (started by the caller) must outlive the op.
  MoePair(Runtime* runtime, LinkProxy* proxy, MoeOpShape shape, MoePairOptions options);
  MoePair(const MoePair&) = delete;
  MoePair& operator=(const MoePair&) = delete;

  // Collective: both layers' Prepare (W1: [E/W][hidden][ffn], W2: [E/W][ffn][hidden]) and a
  // check that every rank runs the same schedule.
  Status Prepare(const float* w1_local, const float* w2_local);
  // Collective: x (T × hidden) → y (T × hidden); h (max_rows() × ffn) receives layer 0's output
  // in its receive layout (layout()).
  Result<OpRunStats> Run(const float* x, const Routing& routing, float* h, float* y);
  // Local: both layers' RunComputeOnly (t_comp); needs a previous Run.
  Result<OpRunStats> RunComputeOnly(float* h, float* y);
  // Collective: both layers' RunCommOnly (t_comm); needs a previous Run.
  Result<OpRunStats> RunCommOnly(const float* x, const Routing& routing);

  int64_t max_rows() const { return l0_.max_rows(); }
  const RecvLayout& layout() const { return l0_.layout(); }
  const MoePairParts& parts() const { return parts_; }
  // True when Run uses the cross-layer schedule (options.cross_layer and fused mode, or auto
  // with layer 0 resolved to fused at Prepare).
  bool cross_layer() const;
  // "fused/cross_layer", or the layers' resolved modes "l0/l1" ("fused/fused"; auto resolved).
  std::string resolved() const;

 private:
  Result<OpRunStats> RunCrossLayer(const float* x, const Routing& routing, float* h, float* y);
  Status Fail(const Status& status) const;

  Runtime* rt_;
  LinkProxy* proxy_;
  MoeOpShape shape_;
  MoePairOptions options_;
  MoeLayer0 l0_;
  MoeLayer1 l1_;
  MoePairParts parts_;
};

// a's times, link counters and traces with b's added (b's maxima kept where larger); a's mode.
OpRunStats AddOpStats(OpRunStats a, const OpRunStats& b);

}  // namespace loom::overlap
