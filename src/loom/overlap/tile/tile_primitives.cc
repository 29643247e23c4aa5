// Tile-centric primitives: thin wrappers over Runtime and LinkProxy (see tile_primitives.h).
#include "loom/overlap/tile/tile_primitives.h"

#include <atomic>
#include <string>

#include "loom/base/check.h"

namespace loom::overlap {
namespace {

std::string RangeString(IndexRange r) {
  return "[" + std::to_string(r.begin) + ", " + std::to_string(r.end) + ")";
}

// Submits one descriptor moving global rows [row0, row0 + rows) from `src` to `dst`.
void SubmitRows(LinkProxy& proxy, int64_t row0, int64_t rows, const RowBuffer& src,
                const RowBuffer& dst, int dst_rank, SignalId signal, uint32_t value) {
  LOOM_CHECK(src.row_bytes == dst.row_bytes)
      << "tile copy: src row_bytes " << src.row_bytes << " != dst row_bytes " << dst.row_bytes;
  CopyDesc desc;
  desc.bytes = rows * src.row_bytes;
  desc.dst = rows > 0 ? dst.row(row0) : dst.base;
  desc.src = rows > 0 ? src.row(row0) : src.base;
  desc.dst_rank = dst_rank;
  desc.signal = signal;
  desc.value = value;
  desc.op = SignalOp::kSet;
  proxy.Submit(desc);
}

}  // namespace

void ProducerTileNotify(Runtime& rt, SignalId channel_base, IndexRange channels, uint32_t epoch,
                        int rank) {
  const int target = rank < 0 ? rt.rank() : rank;
  for (int64_t c = channels.begin; c < channels.end; ++c) {
    rt.notify(channel_base + static_cast<SignalId>(c), target, epoch, SignalOp::kSet);
  }
}

Status ConsumerChannelsWait(Runtime& rt, SignalId channel_base, IndexRange channels,
                            uint32_t epoch, std::string_view what,
                            std::chrono::milliseconds timeout) {
  if (channels.empty()) return OkStatus();
  return rt
      .wait(channel_base + static_cast<SignalId>(channels.begin),
            static_cast<int32_t>(channels.size()), epoch, what, timeout)
      .WithContext("consumer_tile_wait rank " + std::to_string(rt.rank()) + " channels " +
                   RangeString(channels) + " (signals from " + std::to_string(channel_base) +
                   ") epoch " + std::to_string(epoch));
}

Status ConsumerTileWait(Runtime& rt, const TileMap& map, SignalId channel_base, int64_t tile,
                        uint32_t epoch, std::string_view what,
                        std::chrono::milliseconds timeout) {
  const IndexRange channels = map.channels(tile);
  const TileRegion g = map.region(tile);
  return ConsumerChannelsWait(rt, channel_base, channels, epoch, what, timeout)
      .WithContext("tile " + std::to_string(tile) + " rows [" + std::to_string(g.row0) + ", " +
                   std::to_string(g.row0 + g.rows) + ") cols [" + std::to_string(g.col0) + ", " +
                   std::to_string(g.col0 + g.cols) + ") of " + map.DebugString());
}

void PeerTileNotify(Runtime& rt, SignalId rank_base, int peer, uint32_t epoch) {
  rt.notify(rank_base + rt.rank(), peer, epoch, SignalOp::kSet);
}

Status PeerTileWait(Runtime& rt, SignalId rank_base, IndexRange ranks, uint32_t epoch,
                    std::string_view what, std::chrono::milliseconds timeout) {
  if (ranks.empty()) return OkStatus();
  return rt
      .wait(rank_base + static_cast<SignalId>(ranks.begin), static_cast<int32_t>(ranks.size()),
            epoch, what, timeout)
      .WithContext("peer_tile_wait rank " + std::to_string(rt.rank()) + " on ranks " +
                   RangeString(ranks) + " (signals from " + std::to_string(rank_base) +
                   ") epoch " + std::to_string(epoch));
}

void TilePush(LinkProxy& proxy, const TileMap& map, int64_t channel, const RowBuffer& src,
              const RowBuffer& dst, int dst_rank, SignalId channel_base, uint32_t epoch) {
  const TileRegion c = map.ChunkRegion(channel);
  SubmitRows(proxy, c.row0, c.rows, src, dst, dst_rank,
             channel_base + static_cast<SignalId>(channel), epoch);
}

void ShardPush(LinkProxy& proxy, const TileMap& map, int shard_rank, const RowBuffer& src,
               const RowBuffer& dst, int dst_rank, SignalId channel_base, uint32_t epoch) {
  const IndexRange channels = map.ShardChannels(shard_rank);
  for (int64_t c = channels.begin; c < channels.end; ++c) {
    TilePush(proxy, map, c, src, dst, dst_rank, channel_base, epoch);
  }
}

void TilePull(LinkProxy& proxy, Runtime& rt, const TileMap& map, int64_t channel,
              const RowBuffer& src, int src_rank, const RowBuffer& dst, SignalId channel_base,
              uint32_t epoch) {
  LOOM_CHECK(rt.InHeap(src.base)) << "tile_pull: src is not in rank " << rt.rank()
                                  << "'s symmetric heap";
  RowBuffer remote = src;
  remote.base = rt.symm_at(src.base, src_rank);
  const TileRegion c = map.ChunkRegion(channel);
  SubmitRows(proxy, c.row0, c.rows, remote, dst, rt.rank(),
             channel_base + static_cast<SignalId>(channel), epoch);
}

void RankCopy(LinkProxy& proxy, const TileMap& map, int shard_rank, const RowBuffer& src,
              const RowBuffer& dst, int dst_rank, SignalId rank_base, uint32_t epoch) {
  const IndexRange rows = map.shard(shard_rank);
  SubmitRows(proxy, rows.begin, rows.size(), src, dst, dst_rank, rank_base + shard_rank, epoch);
}

Result<TileCounters> AllocTileCounters(Runtime& rt, int32_t n) {
  if (n < 1) {
    return InvalidArgumentError("AllocTileCounters: n = " + std::to_string(n) +
                                " must be ≥ 1");
  }
  LOOM_ASSIGN_OR_RETURN(void* p, rt.Alloc(int64_t{n} * TileCounters::kStrideWords * 4, 64));
  return TileCounters{static_cast<uint32_t*>(p), n};
}

uint32_t CounterNotify(Runtime& rt, const TileCounters& counters, int32_t c, int rank,
                       uint32_t expected, SignalId signal_base) {
  LOOM_CHECK(expected >= 1) << "CounterNotify: expected must be ≥ 1";
  LOOM_CHECK(c >= 0 && c < counters.n) << "CounterNotify: counter " << c << " outside [0, "
                                       << counters.n << ")";
  uint32_t* word = rt.symm_at(counters.at(c), rank);
  // acq_rel: release publishes this arrival's writes; acquire (for the completing arrival)
  // makes every earlier arrival's writes visible before its notify releases them onwards.
  const uint32_t old = std::atomic_ref<uint32_t>(*word).fetch_add(1, std::memory_order_acq_rel);
  const uint32_t now = old + 1;
  if (now % expected != 0) return 0;
  rt.notify(signal_base + c, rank, 1, SignalOp::kAdd);
  return now / expected;
}

}  // namespace loom::overlap
