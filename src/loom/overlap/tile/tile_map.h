// TileMap: TileLink's tile-centric mapping for a row-partitioned tensor (arXiv 2503.20313 §3 of
// the overlap spec). It answers, for a compute tile id, which tensor region it covers (shape
// map), which ranks own those rows (rank map) and which signal channels (communication chunks)
// must have arrived before it may run (channel map). Communication chunks and compute tiles are
// independent sizes; the map translates between them.
//
// Geometry (all row indices are global, 0 ≤ row < rows()):
//   * Shards: rank r owns the contiguous rows [shard_begin(r), shard_end(r)). With
//     TileMapOptions::shard_rows = s (default ceil(rows / world)) rank r owns
//     [r·s, min((r+1)·s, rows)): the LAST owning rank's shard is SHORT when rows is not a
//     multiple of s, and ranks past the data own zero rows. The map never pads: rows ≥ rows()
//     belong to no chunk and no tile. Callers that want equal-sized shard buffers allocate
//     max_shard_rows() rows per rank (shard_stride()) and use shard_rows(r) for the valid part.
//     Alternatively TileMapOptions::shard_row_counts gives each rank's row count explicitly
//     (zeros allowed), e.g. one map per MoE expert whose rows are sorted by source rank.
//   * Chunks / channels: every shard is split into `splits` (S) chunks of balanced size: chunk s
//     of a shard of n rows is [b + ⌊s·n/S⌋, b + ⌊(s+1)·n/S⌋). Chunk (r, s) is channel
//     c = r·S + s, so num_channels() = world·S and channels are in row order. A chunk is EMPTY
//     when n < S (or n = 0). Contract: a producer notifies EVERY channel of a shard, empty ones
//     included (TilePush of an empty chunk only signals), because a tile spanning two shards
//     waits on the whole channel range between them.
//   * Compute tiles: tile_rows × tile_cols blocks over rows × cols, row-major ids
//     tile = tm·tiles_n() + tn (tm: tile-row index, tn: tile-column index). The last tile column
//     is an edge tile when cols % tile_cols ≠ 0. Tile rows follow TileGrid:
//       kPerShard (default): the tile grid restarts at every shard boundary; each shard ends with
//         an edge tile when its rows are not a multiple of tile_rows; no tile straddles two
//         ranks (ranks(tile) has size 1), as TileLink's padded GEMM+RS requires.
//       kGlobal: tiles of tile_rows from row 0 (the last one an edge tile); a tile may straddle
//         shards, so ranks(tile) and channels(tile) may span several ranks.
//
// Ranges are half-open IndexRange{begin, end}: the TileLink wait "rank_beg..rank_end" inclusive
// is [begin, end − 1] here, so Runtime::wait(base + range.begin, range.size(), ...) waits on it.
//
// Tile orders (each a permutation; see the functions for first/last elements):
//   FLUX/TileLink AG+GEMM: local shard first, then rank+1, rank+2, ... (arrival order);
//     m' = (m + first_tile_row_of(rank)) mod tiles_m.
//   GEMM+RS: start at the segment (shard) of rank+1, own segment last (ring), or XOR-swizzled
//     destinations dest = step XOR rank for power-of-two world (own segment last, step 0).
//
// Thread-safety: a TileMap is immutable after Create(); all methods are const and may be called
// from any thread concurrently. Cheap to copy (a few small vectors).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/base/status.h"

namespace loom::overlap {

// A half-open range of indices [begin, end) (ranks, channels or tile rows).
struct IndexRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  bool empty() const { return end <= begin; }
  bool contains(int64_t i) const { return i >= begin && i < end; }
  bool operator==(const IndexRange&) const = default;
};

// The tensor region of a compute tile or a chunk (chunks always cover all columns).
struct TileRegion {
  int64_t row0 = 0;
  int64_t rows = 0;
  int64_t col0 = 0;
  int64_t cols = 0;
  bool operator==(const TileRegion&) const = default;
};

enum class TileGrid {
  kPerShard,  // tile rows restart at each shard boundary (no tile straddles ranks)
  kGlobal,    // tile rows from row 0 (tiles may straddle shards)
};

// Destination (segment) order for GEMM+RS.
enum class SegmentSwizzle {
  kRing,  // rank+1, rank+2, ..., rank (own last)
  kXor,   // rank^1, rank^2, ..., rank^(W-1), rank (own last); world must be a power of two
};

struct TileMapOptions {
  int64_t rows = 0;   // M: rows of the row-partitioned tensor; required, ≥ 1
  int64_t cols = 0;   // N: columns covered by compute tiles; required, ≥ 1
  int world = 1;      // number of ranks owning shards; default 1
  // Rows per rank (shard stride); 0 (default): ceil(rows / world). Must satisfy
  // shard_rows·world ≥ rows; the last owning rank's shard is short, later ranks own nothing.
  int64_t shard_rows = 0;
  // Optional explicit rows of every rank (size world, each ≥ 0, sum rows); when non-empty it
  // overrides shard_rows. Default empty.
  std::vector<int64_t> shard_row_counts = {};
  int splits = 1;          // S: communication chunks per shard (one channel each); default 1
  int64_t tile_rows = 64;  // compute tile rows; default 64
  int64_t tile_cols = 0;   // compute tile cols; 0 (default): cols (one tile column)
  TileGrid grid = TileGrid::kPerShard;  // default kPerShard
};

class TileMap {
 public:
  // kInvalidArgument naming the offending field (rows, cols, world, shard_rows,
  // shard_row_counts, splits, tile_rows, tile_cols) and its value.
  static Result<TileMap> Create(const TileMapOptions& options);

  const TileMapOptions& options() const { return options_; }
  int64_t rows() const { return options_.rows; }
  int64_t cols() const { return options_.cols; }
  int world() const { return options_.world; }
  int splits() const { return options_.splits; }
  int64_t tile_rows() const { return options_.tile_rows; }
  int64_t tile_cols() const { return tile_cols_; }

  // ---- Shards (rank map) ----
  int64_t shard_begin(int rank) const;  // first row of rank's shard (== shard_end if empty)
  int64_t shard_end(int rank) const;
  int64_t shard_rows(int rank) const { return shard_end(rank) - shard_begin(rank); }
  int64_t max_shard_rows() const { return max_shard_rows_; }  // equal-stride buffer size
  IndexRange shard(int rank) const { return {shard_begin(rank), shard_end(rank)}; }
  int OwnerOfRow(int64_t row) const;  // the rank whose shard holds `row` (0 ≤ row < rows())

  // ---- Chunks (channel map) ----
  int64_t num_channels() const { return static_cast<int64_t>(world()) * splits(); }
  int64_t channel(int rank, int split) const { return int64_t{rank} * splits() + split; }
  TileRegion ChunkRegion(int64_t channel) const;  // all columns; rows may be 0 (empty chunk)
  int ChunkOwner(int64_t channel) const { return static_cast<int>(channel / splits()); }
  int64_t ChannelOfRow(int64_t row) const;  // the non-empty chunk holding `row`
  IndexRange ShardChannels(int rank) const { return {channel(rank, 0), channel(rank + 1, 0)}; }

  // ---- Compute tiles (shape map) ----
  int64_t tiles_m() const { return static_cast<int64_t>(tile_row_starts_.size()) - 1; }
  int64_t tiles_n() const { return tiles_n_; }
  int64_t num_tiles() const { return tiles_m() * tiles_n(); }
  int64_t tile_id(int64_t tm, int64_t tn) const { return tm * tiles_n_ + tn; }
  int64_t tile_m(int64_t tile) const { return tile / tiles_n_; }
  int64_t tile_n(int64_t tile) const { return tile % tiles_n_; }
  TileRegion region(int64_t tile) const;
  IndexRange RowTileRows(int64_t tm) const;  // rows [row0, row0 + rows) of tile-row tm
  int64_t RowTileOfRow(int64_t row) const;

  // Ranks owning the rows of `tile` (TileLink rank map); size 1 under kPerShard.
  IndexRange ranks(int64_t tile) const;
  // Channels (chunks) covering the rows of `tile`, in order; may include empty chunks.
  IndexRange channels(int64_t tile) const;
  // Tile-rows intersecting rank's shard / channel's chunk (empty range for empty ones).
  IndexRange ShardRowTiles(int rank) const;
  IndexRange ChannelRowTiles(int64_t channel) const;
  // Compute tiles whose rows intersect the chunk: the `expected` count of a counter notify per
  // channel (tiles_n() · ChannelRowTiles(channel).size()).
  int64_t TilesTouchingChannel(int64_t channel) const;
  // Compute tiles assigned to rank's segment by the GEMM+RS order (tiles whose FIRST row is in
  // the shard): the `expected` count of a counter notify per segment.
  int64_t TilesInSegment(int rank) const;

  // ---- Orders (permutations) ----
  // AG+GEMM tile-row order for `rank`: starts at the first tile-row of rank's own shard, then
  // ascending with wrap-around (rank+1's shard next, ..., rank−1's last). Under kGlobal it
  // starts at the tile-row holding shard_begin(rank) (row 0 if the shard is empty at the end).
  std::vector<int64_t> AgRowTileOrder(int rank) const;
  // The same expanded to tile ids, tile columns innermost.
  std::vector<int64_t> AgTileOrder(int rank) const;
  // GEMM+RS tile-row order: segments in SegmentOrder(world, rank, swizzle) (own segment last),
  // each segment's tile-rows ascending. A tile-row belongs to the segment of its first row's
  // owner, so every tile-row appears exactly once. kInvalidArgument for kXor with a world that
  // is not a power of two.
  Result<std::vector<int64_t>> RsRowTileOrder(int rank, SegmentSwizzle swizzle) const;
  Result<std::vector<int64_t>> RsTileOrder(int rank, SegmentSwizzle swizzle) const;

  // Segment (destination rank) order for `rank`: kRing → rank+1, ..., rank; kXor →
  // step XOR rank for step = 1..W−1, then rank. kInvalidArgument naming world for kXor when
  // world is not a power of two, or for rank outside [0, world).
  static Result<std::vector<int>> SegmentOrder(int world, int rank, SegmentSwizzle swizzle);

  // "rows=.. cols=.. world=.. shards=[..] splits=.. tile=..x.. grid=.." for error messages.
  std::string DebugString() const;

 private:
  TileMap() = default;

  TileMapOptions options_;
  int64_t tile_cols_ = 0;
  int64_t tiles_n_ = 0;
  int64_t max_shard_rows_ = 0;
  std::vector<int64_t> shard_starts_;     // world + 1 entries
  std::vector<int64_t> chunk_starts_;     // num_channels + 1 entries
  std::vector<int64_t> tile_row_starts_;  // tiles_m + 1 entries
};

}  // namespace loom::overlap
