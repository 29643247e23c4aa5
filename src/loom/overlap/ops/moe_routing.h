// MoE routing for the expert-parallel ops (moe_layer0, moe_layer1): deterministic routing
// generators, per-expert counts, the receive-side row layout with its tile/stage order, the
// routing exchange between ranks, and a plain single-process reference of both layers.
//
// Expert parallelism: EP = W ranks, E experts, rank r owns experts [r·E/W, (r+1)·E/W) (its
// "local experts" 0..E/W-1). Every rank holds T tokens; token t picks top_k distinct experts
// with gate weights (summing to 1).
//
// Receive layout of rank r (Triton-distributed's AG-MoE layout, Comet's layer-0 rescheduling):
// rows are sorted by (local expert, source rank) with the source ranks rotated so that r's own
// rows come first (segment j of an expert group holds the rows of source (r + j) mod W, in
// ascending (token, slot) order); each expert group is padded to a multiple of tile_rows, so no
// tile spans two experts. Tile i records its segment range [seg_beg, seg_end] and its stage
//   stage = (src_end - r) mod W = seg_end,
// i.e. the arrival step of the last source its rows need; tiles are ordered by (stage, expert,
// row): local-only tiles first, then those completed by rank r+1's chunk, and so on.
// The sender orders the rows it sends to rank d by (d's local expert, token, slot) so that
// each (expert, source) segment is contiguous on both sides.
//
// Thread-safety: functions are pure; RoutingExchange belongs to one rank and is used by one
// thread at a time (its Exchange is collective).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "loom/base/status.h"
#include "loom/overlap/runtime/runtime.h"

namespace loom::overlap {

struct MoeOpShape {
  int32_t world = 1;            // W = expert-parallel ranks
  int32_t num_experts = 8;      // E, a multiple of W
  int32_t top_k = 2;            // experts per token, 1 ≤ top_k ≤ E
  int64_t tokens_per_rank = 0;  // T, tokens held (and combined) by every rank
  int64_t hidden = 0;           // model dimension (layer-0 K, layer-1 N)
  int64_t ffn = 0;              // expert hidden dimension (layer-0 N, layer-1 K)

  int32_t experts_per_rank() const { return num_experts / world; }
  int32_t OwnerOf(int32_t expert) const { return expert / experts_per_rank(); }
};

// kInvalidArgument naming the bad field (E not a multiple of W, top_k > E, sizes ≤ 0, ...).
Status ValidateMoeShape(const MoeOpShape& shape);
// Stable hash of the shape (ops mix it into their config hash).
uint64_t HashMoeShape(const MoeOpShape& shape);

enum class RoutingKind {
  kUniform,  // every expert equally likely
  kZipf,     // P(expert e) ∝ 1 / (e + 1)^zipf_s (expert 0 hottest, on rank 0)
};
std::string_view RoutingKindName(RoutingKind kind);
Result<RoutingKind> ParseRoutingKind(std::string_view name);  // "uniform", "zipf"

struct RoutingOptions {
  RoutingKind kind = RoutingKind::kUniform;  // default uniform
  double zipf_s = 1.2;                       // Zipf exponent; default 1.2
  uint64_t seed = 1;                         // Philox key; stream = rank; default 1
  int32_t excluded_expert = -1;              // an expert that gets no token; default -1 (none)
};

// One rank's routing: token t's slot s goes to expert[t·top_k + s] with gate[t·top_k + s].
struct Routing {
  int64_t tokens = 0;
  int32_t top_k = 0;
  std::vector<int32_t> expert;
  std::vector<float> gate;
};

// Deterministic (seed, rank) routing; top_k distinct experts per token, gates = softmax of
// normals (positive, summing to 1). kInvalidArgument on a bad shape or excluded expert.
Result<Routing> GenerateRouting(const MoeOpShape& shape, int rank, const RoutingOptions& options);
// kInvalidArgument naming token and slot for: a size mismatch, an expert id out of [0, E),
// a repeated expert within a token, top_k > E, a non-finite gate.
Status ValidateRouting(const MoeOpShape& shape, const Routing& routing);

// Rows (token, slot pairs) of `routing` per expert, size E.
std::vector<int64_t> CountPerExpert(const MoeOpShape& shape, const Routing& routing);

// One dispatched row: slot `slot` of token `token` of rank `src` (src = -1: padding).
struct RowRef {
  int32_t src = -1;
  int32_t token = 0;
  int32_t slot = 0;
};

// The rows rank `routing`'s owner sends to rank `dest`, in send order (dest's local expert,
// token, slot); `expert_rows[le]` = rows for dest's local expert le.
struct SendChunk {
  std::vector<RowRef> rows;
  std::vector<int64_t> expert_rows;
};
SendChunk BuildSendChunk(const MoeOpShape& shape, int src, const Routing& routing, int dest);

// A compute tile of the receive layout: `rows` valid rows from `row0` (≤ tile_rows; the rest
// of the tile is padding), all of local expert `local_expert`, spanning segments
// [seg_beg, seg_end] (segment j = source rank (rank + j) mod W).
struct MoeTile {
  int32_t local_expert = 0;
  int64_t row0 = 0;
  int64_t rows = 0;
  int32_t seg_beg = 0;
  int32_t seg_end = 0;
  int32_t stage = 0;
};

struct RecvLayout {
  int32_t rank = 0;
  int32_t world = 1;
  int32_t experts_per_rank = 1;
  int64_t tile_rows = 1;
  // counts[src · experts_per_rank + le]: rows from source rank src for local expert le.
  std::vector<int64_t> counts;
  std::vector<int64_t> group_row0;  // [le]: first row of the expert group
  std::vector<int64_t> group_rows;  // [le]: valid rows of the group
  std::vector<int64_t> seg_row0;    // [le · world + j]: first row of segment j
  int64_t total_rows = 0;           // including padding
  std::vector<RowRef> rows;         // [total_rows]
  std::vector<MoeTile> tiles;       // in stage order

  int SourceOfSegment(int j) const { return (rank + j) % world; }
  int SegmentOfSource(int src) const { return (src - rank + world) % world; }
  int64_t SegmentRows(int le, int j) const {
    return counts[static_cast<size_t>(SourceOfSegment(j)) * experts_per_rank + le];
  }
  // Rows rank `src` sends here in total.
  int64_t RowsFrom(int src) const;
  // Offset of local expert le's rows inside the chunk source `src` sends here.
  int64_t ChunkOffset(int src, int le) const;
};

// `routings[src]` is rank src's routing (all W ranks). tile_rows ≥ 1.
RecvLayout BuildRecvLayout(const MoeOpShape& shape, int rank, std::span<const Routing> routings,
                           int64_t tile_rows);
// counts_all[src · E + e] = CountPerExpert(routings[src])[e] for all W sources (size W·E).
std::vector<int64_t> CountAll(const MoeOpShape& shape, std::span<const Routing> routings);
// First row of segment j of local expert le in rank `dest`'s receive layout, [le · W + j], from
// counts_all alone (what a sender needs to place its rows; equals BuildRecvLayout's seg_row0).
std::vector<int64_t> SegmentRow0s(const MoeOpShape& shape, std::span<const int64_t> counts_all,
                                  int dest, int64_t tile_rows);
// Upper bound of RecvLayout::total_rows for any routing: W·T·top_k + E/W·(tile_rows − 1).
int64_t MaxRecvRows(const MoeOpShape& shape, int64_t tile_rows);

// Splits of a chunk of `rows` rows into `splits` contiguous parts: part s is
// [SplitBegin(rows, splits, s), SplitBegin(rows, splits, s + 1)); SplitOf is the inverse.
inline int64_t SplitBegin(int64_t rows, int32_t splits, int32_t s) { return rows * s / splits; }
int32_t SplitOf(int64_t rows, int32_t splits, int64_t row);

// Collective exchange of every rank's routing (the count exchange of the dispatch: counts,
// expert ids and gates), by Runtime::put_signal into a symmetric slot per source rank. Carries
// the op's config hash, so a rank whose op was configured differently is detected here.
class RoutingExchange {
 public:
  RoutingExchange() = default;
  // Collective (allocates a W-slot buffer and W signals).
  static Result<RoutingExchange> Create(Runtime* runtime, const MoeOpShape& shape);

  // Publishes `mine`, waits for every rank's routing of call `epoch` (≥ 1, increasing per call)
  // and returns all W of them. kInvalidArgument naming the rank whose config hash or routing
  // differs/is invalid; kDeadlineExceeded (with the runtime's signal dump) when a rank is missing.
  Result<std::vector<Routing>> Exchange(const Routing& mine, uint64_t config_hash, uint32_t epoch,
                                        std::string_view what);

 private:
  Runtime* runtime_ = nullptr;
  MoeOpShape shape_;
  int64_t slot_bytes_ = 0;
  char* buffer_ = nullptr;  // W slots of slot_bytes_ in the symmetric heap
  SignalId signal_ = -1;    // W signals: slot src is full
};

// Collective: the maximum of every rank's `value` (allocates W doubles and W signals; for the
// kAuto tile cost, so every rank resolves the same mode).
Result<double> AllRanksMax(Runtime* runtime, double value, std::string_view what);
// Median seconds of 3 calls of `fn` (after one warm-up call).
double MeasureSeconds(const std::function<void()>& fn);

// Single-process reference over all ranks (double accumulation), for tests:
//   x[src]: T × hidden tokens of rank src; w1[e]: hidden × ffn; w2[e]: ffn × hidden.
// h[src][(t·top_k + s) · ffn ...] = x[src][t] · w1[expert(t, s)]          (layer 0, per slot)
// y[src][t] = Σ_s gate(t, s) · h[src][t, s] · w2[expert(t, s)]             (layer 1 + combine)
struct MoeReference {
  std::vector<std::vector<float>> h;  // [W][T · top_k · ffn]
  std::vector<std::vector<float>> y;  // [W][T · hidden]
};
MoeReference ComputeMoeReference(const MoeOpShape& shape, std::span<const Routing> routings,
                                 std::span<const std::vector<float>> x,
                                 std::span<const std::vector<float>> w1,
                                 std::span<const std::vector<float>> w2);

}  // namespace loom::overlap
