// TileMap implementation: boundaries are precomputed as sorted start arrays (world + 1 shards,
// world·S + 1 chunks, tiles_m + 1 tile rows) and looked up by binary search.
#include "loom/overlap/tile/tile_map.h"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "loom/base/check.h"

namespace loom::overlap {
namespace {

Status FieldError(std::string_view field, int64_t value, std::string_view why) {
  return InvalidArgumentError("TileMap: " + std::string(field) + " = " + std::to_string(value) +
                              ": " + std::string(why));
}

// Index i of the segment [starts[i], starts[i+1]) holding `x`, choosing the last segment whose
// start ≤ x (so empty segments are skipped). starts must be sorted, starts[0] ≤ x < back().
int64_t SegmentOf(const std::vector<int64_t>& starts, int64_t x) {
  auto it = std::upper_bound(starts.begin(), starts.end(), x);
  return static_cast<int64_t>(it - starts.begin()) - 1;
}

bool IsPowerOfTwo(int x) { return x > 0 && (x & (x - 1)) == 0; }

}  // namespace

Result<TileMap> TileMap::Create(const TileMapOptions& o) {
  if (o.rows < 1) return FieldError("rows", o.rows, "must be ≥ 1");
  if (o.cols < 1) return FieldError("cols", o.cols, "must be ≥ 1");
  if (o.world < 1) return FieldError("world", o.world, "must be ≥ 1");
  if (o.splits < 1) return FieldError("splits", o.splits, "must be ≥ 1");
  if (o.tile_rows < 1) return FieldError("tile_rows", o.tile_rows, "must be ≥ 1");
  if (o.tile_cols < 0) return FieldError("tile_cols", o.tile_cols, "must be ≥ 0 (0: cols)");

  TileMap m;
  m.options_ = o;
  m.shard_starts_.assign(o.world + 1, 0);
  if (!o.shard_row_counts.empty()) {
    if (static_cast<int64_t>(o.shard_row_counts.size()) != o.world) {
      return FieldError("shard_row_counts", static_cast<int64_t>(o.shard_row_counts.size()),
                        "size must equal world (" + std::to_string(o.world) + ")");
    }
    for (int r = 0; r < o.world; ++r) {
      if (o.shard_row_counts[r] < 0) {
        return FieldError("shard_row_counts", o.shard_row_counts[r],
                          "rank " + std::to_string(r) + "'s count must be ≥ 0");
      }
      m.shard_starts_[r + 1] = m.shard_starts_[r] + o.shard_row_counts[r];
    }
    if (m.shard_starts_[o.world] != o.rows) {
      return FieldError("shard_row_counts", m.shard_starts_[o.world],
                        "sum must equal rows (" + std::to_string(o.rows) + ")");
    }
    m.options_.shard_rows = 0;
  } else {
    const int64_t s = o.shard_rows == 0 ? (o.rows + o.world - 1) / o.world : o.shard_rows;
    if (s < 1 || s * o.world < o.rows) {
      return FieldError("shard_rows", o.shard_rows,
                        "shard_rows·world must cover rows (" + std::to_string(o.rows) +
                            ") with world " + std::to_string(o.world));
    }
    m.options_.shard_rows = s;
    for (int r = 0; r <= o.world; ++r) m.shard_starts_[r] = std::min<int64_t>(r * s, o.rows);
  }
  for (int r = 0; r < o.world; ++r) {
    m.max_shard_rows_ = std::max(m.max_shard_rows_, m.shard_rows(r));
  }

  // Chunks: balanced split of every shard into S parts.
  const int S = o.splits;
  m.chunk_starts_.assign(static_cast<size_t>(o.world) * S + 1, 0);
  for (int r = 0; r < o.world; ++r) {
    const int64_t b = m.shard_starts_[r];
    const int64_t n = m.shard_starts_[r + 1] - b;
    for (int s = 0; s < S; ++s) m.chunk_starts_[static_cast<size_t>(r) * S + s] = b + s * n / S;
  }
  m.chunk_starts_.back() = o.rows;

  // Compute tiles.
  m.tile_cols_ = o.tile_cols == 0 ? o.cols : o.tile_cols;
  m.tiles_n_ = (o.cols + m.tile_cols_ - 1) / m.tile_cols_;
  m.tile_row_starts_.clear();
  if (o.grid == TileGrid::kGlobal) {
    for (int64_t row = 0; row < o.rows; row += o.tile_rows) m.tile_row_starts_.push_back(row);
  } else {
    for (int r = 0; r < o.world; ++r) {
      for (int64_t row = m.shard_starts_[r]; row < m.shard_starts_[r + 1]; row += o.tile_rows) {
        m.tile_row_starts_.push_back(row);
      }
    }
  }
  m.tile_row_starts_.push_back(o.rows);
  return m;
}

int64_t TileMap::shard_begin(int rank) const {
  LOOM_CHECK(rank >= 0 && rank < world()) << "TileMap: rank " << rank << " outside world "
                                          << world();
  return shard_starts_[rank];
}

int64_t TileMap::shard_end(int rank) const {
  LOOM_CHECK(rank >= 0 && rank < world()) << "TileMap: rank " << rank << " outside world "
                                          << world();
  return shard_starts_[rank + 1];
}

int TileMap::OwnerOfRow(int64_t row) const {
  LOOM_CHECK(row >= 0 && row < rows()) << "TileMap: row " << row << " outside [0, " << rows()
                                       << ")";
  return static_cast<int>(SegmentOf(shard_starts_, row));
}

TileRegion TileMap::ChunkRegion(int64_t channel) const {
  LOOM_CHECK(channel >= 0 && channel < num_channels())
      << "TileMap: channel " << channel << " outside [0, " << num_channels() << ")";
  const int64_t b = chunk_starts_[channel];
  return {b, chunk_starts_[channel + 1] - b, 0, cols()};
}

int64_t TileMap::ChannelOfRow(int64_t row) const {
  LOOM_CHECK(row >= 0 && row < rows()) << "TileMap: row " << row << " outside [0, " << rows()
                                       << ")";
  return SegmentOf(chunk_starts_, row);
}

IndexRange TileMap::RowTileRows(int64_t tm) const {
  LOOM_CHECK(tm >= 0 && tm < tiles_m()) << "TileMap: tile row " << tm << " outside [0, "
                                        << tiles_m() << ")";
  return {tile_row_starts_[tm], tile_row_starts_[tm + 1]};
}

int64_t TileMap::RowTileOfRow(int64_t row) const {
  LOOM_CHECK(row >= 0 && row < rows()) << "TileMap: row " << row << " outside [0, " << rows()
                                       << ")";
  return SegmentOf(tile_row_starts_, row);
}

TileRegion TileMap::region(int64_t tile) const {
  LOOM_CHECK(tile >= 0 && tile < num_tiles()) << "TileMap: tile " << tile << " outside [0, "
                                              << num_tiles() << ")";
  const IndexRange r = RowTileRows(tile_m(tile));
  const int64_t col0 = tile_n(tile) * tile_cols_;
  return {r.begin, r.size(), col0, std::min(tile_cols_, cols() - col0)};
}

IndexRange TileMap::ranks(int64_t tile) const {
  const TileRegion g = region(tile);
  return {OwnerOfRow(g.row0), OwnerOfRow(g.row0 + g.rows - 1) + 1};
}

IndexRange TileMap::channels(int64_t tile) const {
  const TileRegion g = region(tile);
  // From the non-empty chunk holding the first row to the one holding the last row; empty
  // chunks in between (shards with fewer rows than splits) are included, hence the contract
  // that producers notify every channel.
  return {ChannelOfRow(g.row0), ChannelOfRow(g.row0 + g.rows - 1) + 1};
}

IndexRange TileMap::ShardRowTiles(int rank) const {
  const int64_t b = shard_begin(rank);
  const int64_t e = shard_end(rank);
  if (b == e) {
    // Empty shard: an empty range positioned at the next tile row.
    const int64_t at = b < rows() ? RowTileOfRow(b) : tiles_m();
    return {at, at};
  }
  return {RowTileOfRow(b), RowTileOfRow(e - 1) + 1};
}

IndexRange TileMap::ChannelRowTiles(int64_t channel) const {
  const TileRegion c = ChunkRegion(channel);
  if (c.rows == 0) {
    const int64_t at = c.row0 < rows() ? RowTileOfRow(c.row0) : tiles_m();
    return {at, at};
  }
  return {RowTileOfRow(c.row0), RowTileOfRow(c.row0 + c.rows - 1) + 1};
}

int64_t TileMap::TilesTouchingChannel(int64_t channel) const {
  return ChannelRowTiles(channel).size() * tiles_n_;
}

int64_t TileMap::TilesInSegment(int rank) const {
  const int64_t b = shard_begin(rank);
  const int64_t e = shard_end(rank);
  int64_t count = 0;
  for (int64_t tm = 0; tm < tiles_m(); ++tm) {
    const int64_t row0 = tile_row_starts_[tm];
    if (row0 >= b && row0 < e) ++count;
  }
  return count * tiles_n_;
}

std::vector<int64_t> TileMap::AgRowTileOrder(int rank) const {
  const int64_t b = shard_begin(rank);
  const int64_t start = b < rows() ? RowTileOfRow(b) : 0;
  const int64_t tm_count = tiles_m();
  std::vector<int64_t> order(static_cast<size_t>(tm_count));
  for (int64_t i = 0; i < tm_count; ++i) order[i] = (start + i) % tm_count;
  return order;
}

std::vector<int64_t> TileMap::AgTileOrder(int rank) const {
  std::vector<int64_t> order;
  order.reserve(static_cast<size_t>(num_tiles()));
  for (int64_t tm : AgRowTileOrder(rank)) {
    for (int64_t tn = 0; tn < tiles_n_; ++tn) order.push_back(tile_id(tm, tn));
  }
  return order;
}

Result<std::vector<int>> TileMap::SegmentOrder(int world, int rank, SegmentSwizzle swizzle) {
  if (world < 1) return FieldError("world", world, "must be ≥ 1");
  if (rank < 0 || rank >= world) {
    return InvalidArgumentError("TileMap::SegmentOrder: rank " + std::to_string(rank) +
                                " outside world " + std::to_string(world));
  }
  if (swizzle == SegmentSwizzle::kXor && !IsPowerOfTwo(world)) {
    return FieldError("world", world, "XOR-swizzled segment order needs a power of two");
  }
  std::vector<int> order;
  order.reserve(static_cast<size_t>(world));
  for (int step = 1; step < world; ++step) {
    order.push_back(swizzle == SegmentSwizzle::kXor ? (step ^ rank) : (rank + step) % world);
  }
  order.push_back(rank);
  return order;
}

Result<std::vector<int64_t>> TileMap::RsRowTileOrder(int rank, SegmentSwizzle swizzle) const {
  LOOM_ASSIGN_OR_RETURN(std::vector<int> segments, SegmentOrder(world(), rank, swizzle));
  // Segment of a tile-row = owner of its first row.
  std::vector<std::vector<int64_t>> by_segment(static_cast<size_t>(world()));
  for (int64_t tm = 0; tm < tiles_m(); ++tm) {
    by_segment[OwnerOfRow(tile_row_starts_[tm])].push_back(tm);
  }
  std::vector<int64_t> order;
  order.reserve(static_cast<size_t>(tiles_m()));
  for (int seg : segments) {
    order.insert(order.end(), by_segment[seg].begin(), by_segment[seg].end());
  }
  return order;
}

Result<std::vector<int64_t>> TileMap::RsTileOrder(int rank, SegmentSwizzle swizzle) const {
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> rows_order, RsRowTileOrder(rank, swizzle));
  std::vector<int64_t> order;
  order.reserve(static_cast<size_t>(num_tiles()));
  for (int64_t tm : rows_order) {
    for (int64_t tn = 0; tn < tiles_n_; ++tn) order.push_back(tile_id(tm, tn));
  }
  return order;
}

std::string TileMap::DebugString() const {
  std::ostringstream os;
  os << "rows=" << rows() << " cols=" << cols() << " world=" << world() << " shards=[";
  for (int r = 0; r < world(); ++r) os << (r ? "," : "") << shard_rows(r);
  os << "] splits=" << splits() << " tile=" << tile_rows() << "x" << tile_cols_
     << " grid=" << (options_.grid == TileGrid::kGlobal ? "global" : "per_shard");
  return os.str();
}

}  // namespace loom::overlap
