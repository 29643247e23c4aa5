#include "loom/overlap/tile/tile_primitives.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace loom::overlap {
namespace {

using std::chrono::milliseconds;

std::vector<std::unique_ptr<Runtime>> MakeRuntimes(int world) {
  RuntimeOptions o;
  o.heap_bytes = 4ll << 20;
  o.num_signals = 256;
  o.timeout = milliseconds(20000);
  auto rts = CreateThreadRuntimes(world, o);
  EXPECT_TRUE(rts.ok()) << rts.status().ToString();
  return std::move(*rts);
}

// Collective helpers for the tests' thread-mode ranks (called from one thread, same order).
std::vector<float*> AllocAll(std::vector<std::unique_ptr<Runtime>>& rts, int64_t n) {
  std::vector<float*> out;
  for (auto& rt : rts) out.push_back(*rt->AllocArray<float>(n));
  return out;
}
SignalId SignalsAll(std::vector<std::unique_ptr<Runtime>>& rts, int32_t n) {
  SignalId id = -1;
  for (auto& rt : rts) id = *rt->AllocSignals(n);
  return id;
}

float Value(int64_t row, int64_t col) { return static_cast<float>(row * 1000 + col + 1); }

TEST(TilePrimitives, PoisonedAllGatherEveryTileSeesItsRowsAfterWaiting) {
  // Odd shape: M = 11 rows over W = 2 (6 + 5), S = 3 chunks per shard, 4-row global tiles that
  // straddle the shard boundary, K = 3 columns of data.
  constexpr int kWorld = 2;
  constexpr int64_t kCols = 3;
  TileMap map = *TileMap::Create({.rows = 11, .cols = 7, .world = kWorld, .splits = 3,
                                  .tile_rows = 4, .tile_cols = 4, .grid = TileGrid::kGlobal});
  auto rts = MakeRuntimes(kWorld);
  std::vector<float*> gathered = AllocAll(rts, map.rows() * kCols);
  const SignalId chan = SignalsAll(rts, static_cast<int32_t>(map.num_channels()));
  const uint32_t epoch = 1;
  std::vector<std::thread> threads;
  std::vector<int> bad(kWorld, 0);
  for (int me = 0; me < kWorld; ++me) {
    threads.emplace_back([&, me] {
      Runtime& rt = *rts[me];
      // Local shard in private memory; row g holds Value(g, ·).
      std::vector<float> shard(map.shard_rows(me) * kCols);
      for (int64_t g = map.shard_begin(me); g < map.shard_end(me); ++g) {
        for (int64_t j = 0; j < kCols; ++j) {
          shard[(g - map.shard_begin(me)) * kCols + j] = Value(g, j);
        }
      }
      LinkProxy proxy(&rt, {.bytes_per_second = 2e6, .mode = LinkMode::kPoison});
      ASSERT_TRUE(proxy.Start().ok());
      const RowBuffer src{shard.data(), map.shard_begin(me), kCols * 4};
      const RowBuffer dst{gathered[me], 0, kCols * 4};
      // Own shard first (to self), then to the peer; every chunk incl. empty ones signals.
      for (int peer = 0; peer < kWorld; ++peer) {
        ShardPush(proxy, map, me, src, dst, (me + peer) % kWorld, chan, epoch);
      }
      for (int64_t tile : map.AgTileOrder(me)) {
        Status s = ConsumerTileWait(rt, map, chan, tile, epoch, "ag test");
        ASSERT_TRUE(s.ok()) << s.ToString();
        TileRegion g = map.region(tile);
        for (int64_t i = g.row0; i < g.row0 + g.rows; ++i) {
          for (int64_t j = 0; j < kCols; ++j) {
            if (gathered[me][i * kCols + j] != Value(i, j)) ++bad[me];
          }
        }
      }
      ASSERT_TRUE(proxy.Quiet("ag test").ok());
      ASSERT_TRUE(rt.barrier_all("ag test done").ok());  // peers' pushes into me have landed
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad[0], 0);
  EXPECT_EQ(bad[1], 0);
}

TEST(TilePrimitives, TilePullAndRankCopyAndPeerSignals) {
  auto rts = MakeRuntimes(2);
  TileMap map = *TileMap::Create({.rows = 10, .cols = 1, .world = 2, .splits = 2,
                                  .tile_rows = 5});
  std::vector<float*> buf = AllocAll(rts, 10);
  std::vector<float*> out = AllocAll(rts, 10);
  const SignalId chan = SignalsAll(rts, 4);
  const SignalId rank_sig = SignalsAll(rts, 2);
  for (int64_t g = 0; g < 10; ++g) buf[0][g] = Value(g, 0);  // rank 0's heap copy
  // Rank 0 publishes "my data is ready" to rank 1 (peer_tile_notify).
  PeerTileNotify(*rts[0], rank_sig, 1, 5);
  ASSERT_TRUE(PeerTileWait(*rts[1], rank_sig, {0, 1}, 5, "peer").ok());
  // Rank 1 pulls chunk 1 (rows 2..4: balanced split of 5 rows into 2 + 3) of rank 0's buffer
  // over its own proxy.
  LinkProxy proxy1(rts[1].get(), {.bytes_per_second = 1e8, .mode = LinkMode::kPoison});
  ASSERT_TRUE(proxy1.Start().ok());
  const RowBuffer whole0{buf[1], 0, 4};  // rank 1's address naming the symmetric buffer
  const RowBuffer out1{out[1], 0, 4};
  TilePull(proxy1, *rts[1], map, 1, whole0, 0, out1, chan, 2);
  ASSERT_TRUE(ConsumerChannelsWait(*rts[1], chan, {1, 2}, 2, "pull").ok());
  ASSERT_EQ(map.ChunkRegion(1), (TileRegion{2, 3, 0, 1}));
  for (int64_t g = 2; g < 5; ++g) EXPECT_EQ(out[1][g], Value(g, 0)) << g;
  EXPECT_EQ(out[1][1], 0.0f);  // not part of the chunk
  // Rank 0 copies its whole shard (rows 0..4) to rank 1 with one rank signal.
  LinkProxy proxy0(rts[0].get(), {.bytes_per_second = 1e8, .mode = LinkMode::kCopy});
  ASSERT_TRUE(proxy0.Start().ok());
  RankCopy(proxy0, map, 0, {buf[0], 0, 4}, {out[0], 0, 4}, 1, rank_sig, 9);
  ASSERT_TRUE(PeerTileWait(*rts[1], rank_sig, map.ranks(0), 9, "rank copy").ok());
  for (int64_t g = 0; g < 5; ++g) EXPECT_EQ(out[1][g], Value(g, 0)) << g;
  // The signal fires before the proxy books the message: wait for completion, then read stats.
  ASSERT_TRUE(proxy0.Quiet("rank copy").ok());
  EXPECT_EQ(proxy0.stats().messages, 1);
  EXPECT_EQ(proxy0.stats().bytes, 5 * 4);
  // Producer notify on self.
  ProducerTileNotify(*rts[0], chan, {0, 4}, 3);
  for (int c = 0; c < 4; ++c) EXPECT_EQ(rts[0]->signal_value(chan + c, 0), 3u);
}

TEST(TilePrimitives, ConsumerTileWaitTimesOutWithSignalDump) {
  auto rts = MakeRuntimes(2);
  TileMap map = *TileMap::Create({.rows = 8, .cols = 2, .world = 2, .splits = 2, .tile_rows = 8,
                                  .grid = TileGrid::kGlobal});
  const SignalId chan = SignalsAll(rts, static_cast<int32_t>(map.num_channels()));
  ASSERT_EQ(map.channels(0), (IndexRange{0, 4}));
  // Channels 0, 1 and 3 arrive; channel 2 (rank 1's first chunk) never does.
  ProducerTileNotify(*rts[0], chan, {0, 2}, 1, 0);
  ProducerTileNotify(*rts[0], chan, {3, 4}, 1, 0);
  Status s = ConsumerTileWait(*rts[0], map, chan, 0, 1, "missing notify", milliseconds(50));
  ASSERT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  const std::string& m = s.message();
  EXPECT_NE(m.find("tile 0"), std::string::npos) << m;
  EXPECT_NE(m.find("missing notify"), std::string::npos) << m;
  EXPECT_NE(m.find("channels [0, 4)"), std::string::npos) << m;
  EXPECT_NE(m.find("sig " + std::to_string(chan + 2) + " = 0"), std::string::npos) << m;
  EXPECT_NE(m.find("signal dump"), std::string::npos) << m;
  // Peer wait on a rank that never notified.
  Status p = PeerTileWait(*rts[0], chan, {1, 2}, 7, "peer missing", milliseconds(20));
  EXPECT_EQ(p.code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(p.message().find("peer_tile_wait rank 0"), std::string::npos) << p.message();
}

TEST(TilePrimitives, CounterNotifyFiresExactlyOncePerEpochUnderConcurrentArrivals) {
  constexpr int kWorld = 2;
  constexpr int kThreads = 4;        // 2 threads on each rank arrive on rank 1's counters
  constexpr int kPerThread = 3;      // arrivals per thread per epoch per counter
  constexpr int kCounters = 2;
  constexpr uint32_t kEpochs = 40;
  constexpr uint32_t kExpected = kThreads * kPerThread;
  auto rts = MakeRuntimes(kWorld);
  std::vector<TileCounters> counters;
  for (auto& rt : rts) counters.push_back(*AllocTileCounters(*rt, kCounters));
  const SignalId sig = SignalsAll(rts, kCounters);
  // Data each arrival writes into rank 1's heap before arriving (the epilogue's tile store).
  std::vector<float*> data = AllocAll(rts, kThreads * kPerThread * kCounters);
  std::atomic<int> completions{0};
  std::vector<std::vector<uint32_t>> fired(kCounters);
  std::mutex fired_mu;
  std::atomic<int> bad_reads{0};
  std::barrier sync(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Runtime& rt = *rts[t % kWorld];
      const int me = rt.rank();
      float* remote = rt.symm_at(data[me], 1);
      for (uint32_t e = 1; e <= kEpochs; ++e) {
        for (int k = 0; k < kPerThread; ++k) {
          for (int c = 0; c < kCounters; ++c) {
            remote[(c * kThreads + t) * kPerThread + k] = static_cast<float>(e);
            uint32_t got = CounterNotify(rt, counters[me], c, 1, kExpected, sig);
            if (got != 0) {
              completions.fetch_add(1);
              std::lock_guard<std::mutex> lock(fired_mu);
              fired[c].push_back(got);
            }
          }
        }
        if (t == 0) {  // the consumer: rank 1 waits for epoch e on both counters' signals
          Status s = rts[1]->wait(sig, kCounters, e, "counter");
          EXPECT_TRUE(s.ok()) << s.ToString();
          for (int i = 0; i < kThreads * kPerThread * kCounters; ++i) {
            if (data[1][i] != static_cast<float>(e)) bad_reads.fetch_add(1);
          }
          for (int c = 0; c < kCounters; ++c) EXPECT_EQ(rts[1]->signal_value(sig + c, 1), e);
        }
        sync.arrive_and_wait();  // epoch e+1 starts after epoch e's consumer finished
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(completions.load(), static_cast<int>(kEpochs * kCounters));
  for (int c = 0; c < kCounters; ++c) {
    ASSERT_EQ(fired[c].size(), kEpochs);
    std::sort(fired[c].begin(), fired[c].end());
    for (uint32_t e = 1; e <= kEpochs; ++e) EXPECT_EQ(fired[c][e - 1], e);
    EXPECT_EQ(*counters[1].at(c), kEpochs * kExpected);
    EXPECT_EQ(rts[1]->signal_value(sig + c, 1), kEpochs);
  }
  EXPECT_EQ(bad_reads.load(), 0);
  EXPECT_EQ(AllocTileCounters(*rts[0], 0).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace loom::overlap
