#include "loom/overlap/tile/tile_map.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <vector>

namespace loom::overlap {
namespace {

TileMap Make(TileMapOptions o) {
  auto m = TileMap::Create(o);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return *m;
}

bool IsPermutation(std::vector<int64_t> v, int64_t n) {
  if (static_cast<int64_t>(v.size()) != n) return false;
  std::sort(v.begin(), v.end());
  for (int64_t i = 0; i < n; ++i) {
    if (v[i] != i) return false;
  }
  return true;
}

// Checks every query against a brute-force definition over rows.
void CheckAgainstBruteForce(const TileMap& m) {
  SCOPED_TRACE(m.DebugString());
  // Shards tile [0, rows) contiguously.
  EXPECT_EQ(m.shard_begin(0), 0);
  EXPECT_EQ(m.shard_end(m.world() - 1), m.rows());
  for (int r = 0; r + 1 < m.world(); ++r) EXPECT_EQ(m.shard_end(r), m.shard_begin(r + 1));
  // Chunks tile every shard; balanced sizes differ by at most 1.
  for (int r = 0; r < m.world(); ++r) {
    int64_t row = m.shard_begin(r), lo = INT64_MAX, hi = 0;
    for (int s = 0; s < m.splits(); ++s) {
      TileRegion c = m.ChunkRegion(m.channel(r, s));
      EXPECT_EQ(c.row0, row);
      EXPECT_EQ(c.cols, m.cols());
      EXPECT_EQ(m.ChunkOwner(m.channel(r, s)), r);
      row += c.rows;
      lo = std::min(lo, c.rows);
      hi = std::max(hi, c.rows);
    }
    EXPECT_EQ(row, m.shard_end(r));
    EXPECT_LE(hi - lo, 1);
  }
  // Every (row, col) is covered by exactly one tile; tiles are within bounds.
  std::vector<int> cover(static_cast<size_t>(m.rows() * m.cols()), 0);
  for (int64_t t = 0; t < m.num_tiles(); ++t) {
    TileRegion g = m.region(t);
    ASSERT_GE(g.rows, 1);
    ASSERT_GE(g.cols, 1);
    ASSERT_LE(g.rows, m.tile_rows());
    ASSERT_LE(g.cols, m.tile_cols());
    ASSERT_LE(g.row0 + g.rows, m.rows());
    ASSERT_LE(g.col0 + g.cols, m.cols());
    for (int64_t i = g.row0; i < g.row0 + g.rows; ++i) {
      for (int64_t j = g.col0; j < g.col0 + g.cols; ++j) ++cover[i * m.cols() + j];
    }
    // ranks / channels: exactly the owners / non-empty chunks of the tile's rows, plus any
    // empty chunks between them.
    std::set<int64_t> owners, chans;
    for (int64_t i = g.row0; i < g.row0 + g.rows; ++i) {
      for (int r = 0; r < m.world(); ++r) {
        if (i >= m.shard_begin(r) && i < m.shard_end(r)) owners.insert(r);
      }
      for (int64_t c = 0; c < m.num_channels(); ++c) {
        TileRegion cr = m.ChunkRegion(c);
        if (i >= cr.row0 && i < cr.row0 + cr.rows) chans.insert(c);
      }
    }
    IndexRange rr = m.ranks(t), cc = m.channels(t);
    EXPECT_EQ(rr.begin, *owners.begin());
    EXPECT_EQ(rr.end, *owners.rbegin() + 1);
    EXPECT_EQ(cc.begin, *chans.begin());
    EXPECT_EQ(cc.end, *chans.rbegin() + 1);
    for (int64_t c = cc.begin; c < cc.end; ++c) {
      EXPECT_TRUE(chans.count(c) || m.ChunkRegion(c).rows == 0) << "tile " << t << " chan " << c;
    }
  }
  for (size_t k = 0; k < cover.size(); ++k) ASSERT_EQ(cover[k], 1) << k;
  // TilesTouchingChannel matches a count over tiles.
  for (int64_t c = 0; c < m.num_channels(); ++c) {
    int64_t n = 0;
    for (int64_t t = 0; t < m.num_tiles(); ++t) {
      if (m.channels(t).contains(c) && m.ChunkRegion(c).rows > 0) ++n;
    }
    EXPECT_EQ(m.TilesTouchingChannel(c), n) << "channel " << c;
  }
  int64_t segment_total = 0;
  for (int r = 0; r < m.world(); ++r) segment_total += m.TilesInSegment(r);
  EXPECT_EQ(segment_total, m.num_tiles());
}

TEST(TileMap, OddShapesPerShardGrid) {
  // M = 37 rows, W = 3: shard_rows 13, 13, 11; S = 4 → chunks of 3-4 rows; 5-row tiles.
  TileMap m = Make({.rows = 37, .cols = 10, .world = 3, .splits = 4, .tile_rows = 5,
                    .tile_cols = 4});
  EXPECT_EQ(m.shard_rows(0), 13);
  EXPECT_EQ(m.shard_rows(2), 11);  // the last shard is short (no padding)
  EXPECT_EQ(m.max_shard_rows(), 13);
  EXPECT_EQ(m.num_channels(), 12);
  EXPECT_EQ(m.tiles_n(), 3);                                      // 4, 4, 2 (edge)
  EXPECT_EQ(m.tiles_m(), 3 + 3 + 3);                              // 5,5,3 | 5,5,3 | 5,5,1
  EXPECT_EQ(m.region(m.tile_id(2, 2)), (TileRegion{10, 3, 8, 2}));  // edge in both dims
  EXPECT_EQ(m.region(m.tile_id(8, 0)), (TileRegion{36, 1, 0, 4}));
  for (int64_t t = 0; t < m.num_tiles(); ++t) EXPECT_EQ(m.ranks(t).size(), 1);
  EXPECT_EQ(m.channels(m.tile_id(0, 0)), (IndexRange{0, 2}));  // rows 0-4: chunks [0,3) [3,6)
  CheckAgainstBruteForce(m);
}

TEST(TileMap, OddShapesGlobalGridStraddlesShards) {
  TileMap m = Make({.rows = 37, .cols = 3, .world = 3, .splits = 2, .tile_rows = 8,
                    .grid = TileGrid::kGlobal});
  EXPECT_EQ(m.tiles_m(), 5);  // 8,8,8,8,5
  EXPECT_EQ(m.tiles_n(), 1);
  EXPECT_EQ(m.region(1), (TileRegion{8, 8, 0, 3}));
  EXPECT_EQ(m.ranks(1), (IndexRange{0, 2}));  // rows 8..15 span ranks 0 (..12) and 1
  CheckAgainstBruteForce(m);
}

TEST(TileMap, MoreSplitsThanRowsAndExplicitCounts) {
  // Explicit per-rank counts with an empty rank in the middle, S larger than a shard.
  TileMap m = Make({.rows = 9, .cols = 2, .world = 4, .shard_row_counts = {2, 0, 6, 1},
                    .splits = 3, .tile_rows = 4, .grid = TileGrid::kGlobal});
  EXPECT_EQ(m.shard_rows(1), 0);
  EXPECT_EQ(m.OwnerOfRow(2), 2);
  // Tile 0 = rows 0..3: rank 0 (rows 0,1) and rank 2 (rows 2,3), so ranks [0, 3) includes the
  // empty rank 1 and the channel range includes its empty chunks.
  EXPECT_EQ(m.ranks(0), (IndexRange{0, 3}));
  CheckAgainstBruteForce(m);
  TileMap p = Make({.rows = 5, .cols = 1, .world = 4, .splits = 2, .tile_rows = 1});
  EXPECT_EQ(p.shard_rows(2), 1);
  EXPECT_EQ(p.shard_rows(3), 0);  // ceil(5/4) = 2: ranks own 2, 2, 1, 0
  CheckAgainstBruteForce(p);
}

TEST(TileMap, ManyShapesAgreeWithBruteForce) {
  for (int64_t rows : {1, 7, 16, 33}) {
    for (int world : {1, 2, 3, 4}) {
      for (int splits : {1, 2, 5}) {
        for (int64_t tile_rows : {1, 3, 8}) {
          for (TileGrid grid : {TileGrid::kPerShard, TileGrid::kGlobal}) {
            TileMap m = Make({.rows = rows, .cols = 5, .world = world, .splits = splits,
                              .tile_rows = tile_rows, .tile_cols = 2, .grid = grid});
            CheckAgainstBruteForce(m);
          }
        }
      }
    }
  }
}

TEST(TileMap, InvalidShapesNameTheField) {
  struct Case {
    TileMapOptions o;
    const char* field;
  };
  const std::vector<Case> cases = {
      {{.rows = 0, .cols = 1}, "rows"},
      {{.rows = 4, .cols = 0}, "cols"},
      {{.rows = 4, .cols = 1, .world = 0}, "world"},
      {{.rows = 9, .cols = 1, .world = 2, .shard_rows = 4}, "shard_rows"},
      {{.rows = 4, .cols = 1, .world = 2, .shard_row_counts = {1, 2}}, "shard_row_counts"},
      {{.rows = 4, .cols = 1, .world = 2, .shard_row_counts = {4}}, "shard_row_counts"},
      {{.rows = 4, .cols = 1, .world = 2, .shard_row_counts = {5, -1}}, "shard_row_counts"},
      {{.rows = 4, .cols = 1, .splits = 0}, "splits"},
      {{.rows = 4, .cols = 1, .tile_rows = 0}, "tile_rows"},
      {{.rows = 4, .cols = 1, .tile_cols = -1}, "tile_cols"},
  };
  for (const Case& c : cases) {
    auto m = TileMap::Create(c.o);
    ASSERT_FALSE(m.ok()) << c.field;
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(m.status().message().find(c.field), std::string::npos) << m.status().message();
  }
}

TEST(TileMap, AgOrderStartsWithTheLocalShardThenLaterRanks) {
  TileMap m = Make({.rows = 40, .cols = 6, .world = 4, .splits = 2, .tile_rows = 4,
                    .tile_cols = 3});  // 10 rows per shard: tiles 4,4,2 → 3 tile-rows each
  for (int rank = 0; rank < 4; ++rank) {
    std::vector<int64_t> rows_order = m.AgRowTileOrder(rank);
    ASSERT_TRUE(IsPermutation(rows_order, m.tiles_m()));
    // m' = (m + rank·tiles_per_rank) mod tiles_m with tiles_per_rank = 3.
    for (int64_t i = 0; i < m.tiles_m(); ++i) EXPECT_EQ(rows_order[i], (i + 3 * rank) % 12);
    // The first tiles are local; owners then follow rank+1, rank+2, ... (arrival order).
    std::vector<int64_t> order = m.AgTileOrder(rank);
    ASSERT_TRUE(IsPermutation(order, m.num_tiles()));
    EXPECT_EQ(m.ranks(order.front()).begin, rank);
    EXPECT_EQ(m.ranks(order.back()).begin, (rank + 3) % 4);
    for (size_t i = 0; i < order.size(); ++i) {
      EXPECT_EQ(m.ranks(order[i]).begin, (rank + static_cast<int>(i / 6)) % 4) << i;
    }
  }
}

TEST(TileMap, RsOrderStartsAtRankPlusOneOwnSegmentLast) {
  TileMap m = Make({.rows = 23, .cols = 4, .world = 4, .splits = 1, .tile_rows = 4,
                    .tile_cols = 4});  // shards 6,6,6,5
  for (int rank = 0; rank < 4; ++rank) {
    for (SegmentSwizzle sw : {SegmentSwizzle::kRing, SegmentSwizzle::kXor}) {
      auto order = m.RsTileOrder(rank, sw);
      ASSERT_TRUE(order.ok());
      ASSERT_TRUE(IsPermutation(*order, m.num_tiles()));
      const int first = sw == SegmentSwizzle::kRing ? (rank + 1) % 4 : rank ^ 1;
      EXPECT_EQ(m.ranks(order->front()).begin, first);
      EXPECT_EQ(m.ranks(order->back()).begin, rank);
      // Segments are contiguous in the order and visited in SegmentOrder.
      auto segs = TileMap::SegmentOrder(4, rank, sw);
      ASSERT_TRUE(segs.ok());
      std::vector<int> seen;
      for (int64_t t : *order) {
        int owner = static_cast<int>(m.ranks(t).begin);
        if (seen.empty() || seen.back() != owner) seen.push_back(owner);
      }
      EXPECT_EQ(seen, *segs);
    }
  }
}

TEST(TileMap, SegmentOrders) {
  EXPECT_EQ(*TileMap::SegmentOrder(4, 1, SegmentSwizzle::kRing), (std::vector<int>{2, 3, 0, 1}));
  EXPECT_EQ(*TileMap::SegmentOrder(4, 1, SegmentSwizzle::kXor), (std::vector<int>{0, 3, 2, 1}));
  EXPECT_EQ(*TileMap::SegmentOrder(8, 5, SegmentSwizzle::kXor),
            (std::vector<int>{4, 7, 6, 1, 0, 3, 2, 5}));
  EXPECT_EQ(*TileMap::SegmentOrder(1, 0, SegmentSwizzle::kXor), (std::vector<int>{0}));
  // Each XOR step is a perfect matching: at every step, rank a sends to b iff b sends to a.
  for (int step = 0; step < 7; ++step) {
    for (int a = 0; a < 8; ++a) {
      int b = (*TileMap::SegmentOrder(8, a, SegmentSwizzle::kXor))[step];
      EXPECT_EQ((*TileMap::SegmentOrder(8, b, SegmentSwizzle::kXor))[step], a);
    }
  }
  auto bad = TileMap::SegmentOrder(3, 0, SegmentSwizzle::kXor);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("world"), std::string::npos);
  EXPECT_FALSE(TileMap::SegmentOrder(3, 3, SegmentSwizzle::kRing).ok());
  TileMap m = Make({.rows = 9, .cols = 1, .world = 3});
  EXPECT_FALSE(m.RsRowTileOrder(0, SegmentSwizzle::kXor).ok());
  EXPECT_TRUE(m.RsRowTileOrder(0, SegmentSwizzle::kRing).ok());
}

}  // namespace
}  // namespace loom::overlap
