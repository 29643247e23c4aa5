// Tile-centric primitives of TileLink (arXiv 2503.20313), in house spelling, as thin functions
// over Runtime (signals, symmetric heap) and LinkProxy (the modelled copy engine). Ops (AG+GEMM,
// GEMM+RS, MoE) are written against these and a TileMap (tile_map.h).
//
// Name correspondence (TileLink paper name → loom):
//   producer_tile_notify  → ProducerTileNotify  (local: chunk channels on this rank are ready)
//   consumer_tile_wait    → ConsumerTileWait    (wait on channels(tile) of this rank, ≥ epoch)
//   peer_tile_notify      → PeerTileNotify      (rank-indexed signal `base + me` on a peer)
//   peer_tile_wait        → PeerTileWait        (wait on rank-indexed signals base + ranks)
//   tile_push_data        → TilePush            (chunk copy + channel signal via LinkProxy)
//   tile_pull_data        → TilePull            (consumer-side get via this rank's LinkProxy)
//   rank_copy_data        → RankCopy            (whole-shard copy via LinkProxy, one signal)
//   counter-based notify  → CounterNotify       (Triton-distributed GEMM-RS epilogue pattern)
// (The paper's names are recalled, not verified; see the overlap spec §3.)
//
// Signal conventions:
//   * Channel signals: a block of map.num_channels() signals starting at `channel_base`
//     (Runtime::AllocSignals); channel c is `channel_base + c` on the consumer rank.
//   * Rank signals: a block of world signals at `rank_base`; `rank_base + r` on rank d means
//     "rank r's part for d is ready".
//   * Values are epochs: call k of an op waits for ≥ k, so nothing is ever reset (the runtime's
//     contract). CounterNotify is the exception: its channel signal counts completed epochs and
//     must be used only through CounterNotify.
//
// Memory conventions: tensors are row-major with `row_bytes` bytes per row (a full row, no
// column sub-blocks: chunks cover all columns). A RowBuffer names where a range of global rows
// lives in one rank's address space. Destinations of push/pull/rank copy must lie in the
// symmetric heap (LinkProxy copies to symm_at(dst, dst_rank)); sources may be private memory
// for pushes but must be heap memory for pulls (read through symm_at on the peer).
//
// Ordering: the proxy copies, then notifies with release; Runtime::wait acquires, so a consumer
// that returned OK from ConsumerTileWait/PeerTileWait sees the data. In LinkMode::kPoison the
// destination reads NaN until the signal (catches skipped waits). In kDelayOnly nothing is
// copied: the consumer must read the source in the producer's heap (rt.symm_at(p, src_rank)).
//
// Thread-safety: every function may be called concurrently from any thread of the rank that
// owns `rt`/`proxy` (as Runtime and LinkProxy allow). The TileMap is immutable.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "loom/base/status.h"
#include "loom/overlap/link/link_proxy.h"
#include "loom/overlap/runtime/runtime.h"
#include "loom/overlap/tile/tile_map.h"

namespace loom::overlap {

// Where global rows [first_row, ...) of a row-major tensor live in this rank's address space:
// row g is at base + (g − first_row) · row_bytes. For a gathered buffer first_row = 0; for a
// rank's local shard first_row = map.shard_begin(rank).
struct RowBuffer {
  void* base = nullptr;
  int64_t first_row = 0;
  int64_t row_bytes = 0;
  char* row(int64_t g) const {
    return static_cast<char*>(base) + (g - first_row) * row_bytes;
  }
};

// ---- Signals ----

// producer_tile_notify: release-sets channels [channel_base + channels.begin, + size) on
// `rank` (default: this rank) to `epoch`. Use after writing the chunks' data directly (e.g. a
// comm worker that copied them) when no LinkProxy descriptor carries the signal.
void ProducerTileNotify(Runtime& rt, SignalId channel_base, IndexRange channels, uint32_t epoch,
                        int rank = -1);

// consumer_tile_wait: waits until this rank's channels covering `tile` (map.channels(tile)) are
// all ≥ epoch. On expiry kDeadlineExceeded whose message names the tile, its region, the
// channel range, `what` and carries the runtime's signal dump. `timeout` 0: runtime default.
Status ConsumerTileWait(Runtime& rt, const TileMap& map, SignalId channel_base, int64_t tile,
                        uint32_t epoch, std::string_view what,
                        std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
// The same for an explicit channel range (e.g. a whole shard: map.ShardChannels(r)).
Status ConsumerChannelsWait(Runtime& rt, SignalId channel_base, IndexRange channels,
                            uint32_t epoch, std::string_view what,
                            std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

// peer_tile_notify: release-sets rank signal `rank_base + rt.rank()` on `peer` to `epoch`
// ("my part for you is ready").
void PeerTileNotify(Runtime& rt, SignalId rank_base, int peer, uint32_t epoch);

// peer_tile_wait: waits until this rank's rank signals [rank_base + ranks.begin, + size) are
// all ≥ epoch (e.g. ranks = map.ranks(tile)). kDeadlineExceeded as ConsumerTileWait.
Status PeerTileWait(Runtime& rt, SignalId rank_base, IndexRange ranks, uint32_t epoch,
                    std::string_view what,
                    std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

// ---- Data (through the link proxy) ----

// tile_push_data: enqueues on `proxy` the copy of chunk `channel`'s rows from `src` (this
// rank's memory) to `dst` (heap addresses naming the symmetric buffer) on `dst_rank`, then
// sets channel signal `channel_base + channel` on dst_rank to `epoch`. An empty chunk enqueues
// a zero-byte descriptor (signal only), keeping FIFO order. Never blocks on the link.
void TilePush(LinkProxy& proxy, const TileMap& map, int64_t channel, const RowBuffer& src,
              const RowBuffer& dst, int dst_rank, SignalId channel_base, uint32_t epoch);

// Pushes every chunk of rank `shard_rank`'s shard in channel order (S descriptors).
void ShardPush(LinkProxy& proxy, const TileMap& map, int shard_rank, const RowBuffer& src,
               const RowBuffer& dst, int dst_rank, SignalId channel_base, uint32_t epoch);

// tile_pull_data: consumer-side get. Enqueues on THIS rank's proxy (the incoming link) the copy
// of chunk `channel`'s rows from `src_rank`'s copy of the heap buffer `src` (a heap address of
// this rank naming it) into this rank's heap buffer `dst`, then sets channel_base + channel on
// this rank to `epoch`. The producer must have made the source ready before (e.g. a
// PeerTileWait); the link model paces the pull like a push.
void TilePull(LinkProxy& proxy, Runtime& rt, const TileMap& map, int64_t channel,
              const RowBuffer& src, int src_rank, const RowBuffer& dst, SignalId channel_base,
              uint32_t epoch);

// rank_copy_data: one descriptor copying all of rank `shard_rank`'s shard from `src` to `dst`
// on `dst_rank`, then sets rank signal `rank_base + shard_rank` on dst_rank to `epoch` (the
// decomposed, one-chunk-per-rank mode).
void RankCopy(LinkProxy& proxy, const TileMap& map, int shard_rank, const RowBuffer& src,
              const RowBuffer& dst, int dst_rank, SignalId rank_base, uint32_t epoch);

// ---- Counter-based many-to-one notify ----

// `n` arrival counters in the symmetric heap, one per 64-byte line (no false sharing). Counters
// are monotonic: they count arrivals over all epochs, so they are never reset.
struct TileCounters {
  uint32_t* base = nullptr;  // this rank's heap address of counter 0
  int32_t n = 0;
  static constexpr int64_t kStrideWords = 16;  // 64 bytes
  uint32_t* at(int32_t c) const { return base + c * kStrideWords; }
};
// Collective (like Runtime::Alloc): allocates zeroed counters.
Result<TileCounters> AllocTileCounters(Runtime& rt, int32_t n);

// Arrives on counter `c` of rank `rank` (acq_rel fetch_add of 1 on its heap word; the release
// publishes the caller's earlier writes, e.g. a tile stored into rank's buffer). The arrival
// whose new count is a multiple of `expected` (old == k·expected − 1, i.e. the last arrival of
// epoch k) adds 1 to signal `signal_base + c` on `rank`, so that signal equals the number of
// completed epochs and a consumer waits for ≥ epoch. Returns k for the completing arrival, 0
// otherwise. Contract: exactly `expected` arrivals per epoch (e.g. map.TilesInSegment(c) or
// map.TilesTouchingChannel(c)), and epoch k+1's arrivals start only after epoch k's consumer has
// finished (the usual per-call barrier); LOOM_CHECK(expected ≥ 1).
uint32_t CounterNotify(Runtime& rt, const TileCounters& counters, int32_t c, int rank,
                       uint32_t expected, SignalId signal_base);

}  // namespace loom::overlap
