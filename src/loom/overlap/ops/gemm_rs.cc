#include "loom/overlap/ops/gemm_rs.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "loom/base/clock.h"

namespace loom::overlap {
namespace {

constexpr std::string_view kOp = "gemm_rs";
// Owner's reduction cost fed to the simulator for kAuto (fp32 adds at ~4 GB/s of input).
constexpr double kReduceSecondsPerByte = 1.0 / 4e9;

double Seconds(int64_t from_ns, int64_t to_ns) {
  return 1e-9 * static_cast<double>(to_ns - from_ns);
}

bool IsPowerOfTwo(int w) { return w > 0 && (w & (w - 1)) == 0; }

}  // namespace

GemmRs::GemmRs(Runtime* runtime, LinkProxy* proxy, GemmRsOpShape shape, GemmRsOptions options)
    : rt_(runtime), proxy_(proxy), shape_(shape), options_(std::move(options)) {
  world_ = rt_->num_ranks();
  rank_ = rt_->rank();
}

GemmRs::GemmRs(Runtime* runtime, LinkProxy* proxy, const GemmRsShape& shape, GemmRsOptions options)
    : GemmRs(
          runtime, proxy,
          GemmRsOpShape{.m = shape.world * shape.m_shard, .k_local = shape.k_local, .n = shape.n},
          std::move(options)) {
  shape_error_ = CheckSimShape(kOp, shape.world, shape.elem_bytes, world_);
}

GemmRs::~GemmRs() = default;

uint64_t GemmRs::ConfigHash() const {
  uint64_t h = HashMix(0, 0x6e5);  // op tag
  h = HashMix(h, static_cast<uint64_t>(world_));
  h = HashMix(h, static_cast<uint64_t>(shape_.m));
  h = HashMix(h, static_cast<uint64_t>(shape_.k_local));
  h = HashMix(h, static_cast<uint64_t>(shape_.n));
  h = HashOpConfig(h, options_.op);
  return HashLinkOptions(h, proxy_->options());
}

int64_t GemmRs::SegmentBegin(int rank) const {
  return std::min(shape_.m, static_cast<int64_t>(rank) * seg_rows_);
}

int64_t GemmRs::SegmentRows(int rank) const {
  return std::min(shape_.m, static_cast<int64_t>(rank + 1) * seg_rows_) - SegmentBegin(rank);
}

std::vector<int> GemmRs::SegmentOrder() const {
  auto order = TileMap::SegmentOrder(world_, rank_, swizzle_);
  return order.ok() ? *order : std::vector<int>{};
}

Status GemmRs::Prepare(const float* b) {
  const OverlapMode mode = options_.op.mode;
  auto ctx = [&](const Status& s) { return OpError(s, kOp, rank_, mode); };
  if (prepared_) return ctx(FailedPreconditionError("Prepare called twice"));
  LOOM_RETURN_IF_ERROR(ctx(shape_error_));
  LOOM_RETURN_IF_ERROR(ctx(ValidateOpConfig(options_.op, kOp)));
  if (shape_.m < 1 || shape_.k_local < 1 || shape_.n < 1) {
    return ctx(InvalidArgumentError("shape m=" + std::to_string(shape_.m) +
                                    " k_local=" + std::to_string(shape_.k_local) +
                                    " n=" + std::to_string(shape_.n) + " must all be >= 1"));
  }
  LOOM_RETURN_IF_ERROR(ctx(
      rt_->CheckSameConfig(ConfigHash(), "gemm_rs Prepare (shape, mode, splits, tiles, link)")));
  auto packed = TileGemm::Pack(b, shape_.k_local, shape_.n, shape_.n, options_.gemm);
  if (!packed.ok()) return ctx(packed.status());
  gemm_ = std::move(*packed);
  seg_rows_ = (shape_.m + world_ - 1) / world_;
  swizzle_ = world_ > 2 && IsPowerOfTwo(world_) ? SegmentSwizzle::kXor : SegmentSwizzle::kRing;
  TileMapOptions mo;
  mo.rows = shape_.m;
  mo.cols = shape_.n;
  mo.world = world_;
  mo.shard_rows = seg_rows_;
  mo.splits = options_.op.splits;
  mo.tile_rows = options_.op.tile_rows;
  mo.tile_cols = options_.op.tile_cols;
  auto map = TileMap::Create(mo);
  if (!map.ok()) return ctx(map.status());
  map_ = std::make_unique<TileMap>(std::move(*map));
  mo.splits = 1;
  auto whole = TileMap::Create(mo);
  if (!whole.ok()) return ctx(whole.status());
  whole_map_ = std::make_unique<TileMap>(std::move(*whole));

  const int64_t slot = seg_rows_ * shape_.n;
  const int32_t channels = static_cast<int32_t>(map_->num_channels());
  auto partial = rt_->AllocArray<float>(world_ * slot);
  if (!partial.ok()) return ctx(partial.status());
  partial_ = *partial;
  auto recv = rt_->AllocArray<float>(world_ * slot);
  if (!recv.ok()) return ctx(recv.status());
  recv_ = *recv;
  auto counters = AllocTileCounters(*rt_, channels);
  if (!counters.ok()) return ctx(counters.status());
  counters_ = *counters;
  for (auto [sig, n] : {std::pair{&counter_sig_, channels},
                        {&chunk_sig_, world_ * channels},
                        {&whole_sig_, world_ * world_},
                        {&done_sig_, world_}}) {
    auto first = rt_->AllocSignals(n);
    if (!first.ok()) return ctx(first.status());
    *sig = *first;
  }
  resolved_ = mode;
  if (mode == OverlapMode::kAuto) LOOM_RETURN_IF_ERROR(ctx(ResolveAuto()));
  prepared_ = true;
  return OkStatus();
}

Status GemmRs::ResolveAuto() {
  const int64_t tile_cols = map_->tile_cols();
  const int64_t tile_rows = std::min(options_.op.tile_rows, seg_rows_);
  LOOM_ASSIGN_OR_RETURN(
      SimOptions sim,
      AutoSimOptions(*rt_, *proxy_, gemm_, options_.op, tile_rows, tile_cols, shape_.k_local,
                     "gemm_rs auto: tile cost exchange", tile_cost_s_));
  sim.reduce_seconds_per_byte = kReduceSecondsPerByte;
  LOOM_ASSIGN_OR_RETURN(Prediction p, PredictGemmRs({.world = world_,
                                                     .m_shard = seg_rows_,
                                                     .k_local = shape_.k_local,
                                                     .n = shape_.n,
                                                     .elem_bytes = 4},
                                                    sim));
  resolved_ = p.chosen;
  return OkStatus();
}

Status GemmRs::BeginCall(OpRunStats& stats) {
  return BeginOpCall(prepared_, *rt_, *proxy_, done_sig_, epoch_,
                     "gemm_rs: peers finished the previous call", options_.op.timeout, stats,
                     link_before_);
}

void GemmRs::SendChunk(int64_t channel, LinkSubmitter& link, OpRunStats& stats) {
  const int seg = map_->ChunkOwner(channel);
  const int64_t row_bytes = shape_.n * static_cast<int64_t>(sizeof(float));
  const RowBuffer src{partial_, 0, row_bytes};
  const RowBuffer dst{recv_ + rank_ * seg_rows_ * shape_.n, seg * seg_rows_, row_bytes};
  link.Record(map_->ChunkRegion(channel).rows * row_bytes, rank_, seg,
              static_cast<int>(channel % map_->splits()),
              options_.op.record_trace ? &stats.chunks : nullptr);
  TilePush(*proxy_, *map_, channel, src, dst, seg,
           chunk_sig_ + rank_ * static_cast<SignalId>(map_->num_channels()), epoch_);
}

void GemmRs::SendSegment(int seg, bool fused, LinkSubmitter& link, OpRunStats& stats) {
  if (fused) {
    const IndexRange channels = map_->ShardChannels(seg);
    for (int64_t ch = channels.begin; ch < channels.end; ++ch) SendChunk(ch, link, stats);
    return;
  }
  const int64_t row_bytes = shape_.n * static_cast<int64_t>(sizeof(float));
  const RowBuffer src{partial_, 0, row_bytes};
  const RowBuffer dst{recv_ + rank_ * seg_rows_ * shape_.n, seg * seg_rows_, row_bytes};
  link.Record(whole_map_->shard_rows(seg) * row_bytes, rank_, seg, 0,
              options_.op.record_trace ? &stats.chunks : nullptr);
  TilePush(*proxy_, *whole_map_, seg, src, dst, seg, whole_sig_ + rank_ * world_, epoch_);
}

Status GemmRs::ComputeAndSend(OverlapMode mode, const float* a, bool send, LinkSubmitter& link,
                              OpRunStats& stats) {
  const int64_t n = shape_.n;
  // One GEMM call over rows [row0, row0 + rows) × columns [col0, col0 + cols) into partial_.
  auto gemm = [&](int64_t row0, int64_t rows, int64_t col0, int64_t cols, int seg, int64_t tile) {
    const int64_t t0 = NowNanos();
    gemm_.Run(a + row0 * shape_.k_local, shape_.k_local, rows, partial_ + row0 * n, n, col0,
              col0 + cols);
    const int64_t t1 = NowNanos();
    stats.compute_s += Seconds(t0, t1);
    if (options_.op.record_trace) {
      stats.tiles.push_back({.tile = static_cast<int32_t>(tile),
                             .row0 = row0,
                             .rows = rows,
                             .col0 = col0,
                             .cols = cols,
                             .src_rank = seg,
                             .wait_end_ns = t0,
                             .start_ns = t0,
                             .end_ns = t1});
    }
  };
  LOOM_ASSIGN_OR_RETURN(std::vector<int> order, TileMap::SegmentOrder(world_, rank_, swizzle_));
  if (mode == OverlapMode::kSequential) {
    gemm(0, shape_.m, 0, n, rank_, 0);
    if (send) {
      for (int seg : order) {
        if (seg != rank_) SendSegment(seg, /*fused=*/false, link, stats);
      }
    }
    return OkStatus();
  }
  if (mode == OverlapMode::kDecomposed) {
    int64_t index = 0;
    for (int seg : order) {
      const int64_t rows = whole_map_->shard_rows(seg);
      if (rows > 0) gemm(whole_map_->shard_begin(seg), rows, 0, n, seg, index++);
      if (send && seg != rank_) SendSegment(seg, /*fused=*/false, link, stats);
    }
    return OkStatus();
  }
  // Fused: tiles in segment order; the last tile touching a chunk (counter-based many-to-one
  // notify) pushes the chunk to its owner. Chunks no tile touches (empty) go out at once.
  if (send) {
    for (int64_t ch = 0; ch < map_->num_channels(); ++ch) {
      if (map_->ChunkOwner(ch) != rank_ && map_->TilesTouchingChannel(ch) == 0) {
        SendChunk(ch, link, stats);
      }
    }
  }
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> tiles, map_->RsTileOrder(rank_, swizzle_));
  int64_t index = 0;
  for (int64_t tile : tiles) {
    const TileRegion r = map_->region(tile);
    const int seg = map_->OwnerOfRow(r.row0);
    gemm(r.row0, r.rows, r.col0, r.cols, seg, index++);
    if (!send || seg == rank_) continue;
    const IndexRange channels = map_->channels(tile);
    for (int64_t ch = channels.begin; ch < channels.end; ++ch) {
      const int64_t expected = map_->TilesTouchingChannel(ch);
      if (expected == 0) continue;
      if (CounterNotify(*rt_, counters_, static_cast<int32_t>(ch), rank_,
                        static_cast<uint32_t>(expected), counter_sig_) != 0) {
        SendChunk(ch, link, stats);
      }
    }
  }
  return OkStatus();
}

const float* GemmRs::PartialFrom(int src, int64_t global_row, bool wait) const {
  if (src == rank_) return partial_ + global_row * shape_.n;
  const int64_t offset = (src * seg_rows_ + global_row - SegmentBegin(rank_)) * shape_.n;
  if (!wait) return stale_.data() + offset;  // compute only: private stand-ins (see header)
  if (proxy_->options().mode == LinkMode::kDelayOnly) {
    return rt_->symm_at(partial_, src) + global_row * shape_.n;
  }
  return recv_ + (src * seg_rows_ + global_row - SegmentBegin(rank_)) * shape_.n;
}

Status GemmRs::Reduce(OverlapMode mode, bool wait, float* out, OpRunStats& stats) {
  const bool fused = mode == OverlapMode::kFused;
  const TileMap& map = fused ? *map_ : *whole_map_;
  const IndexRange channels = map.ShardChannels(rank_);
  const int64_t n = shape_.n;
  const int64_t seg_begin = SegmentBegin(rank_);
  for (int64_t ch = channels.begin; ch < channels.end; ++ch) {
    if (wait) {
      const int64_t t0 = NowNanos();
      for (int src = 0; src < world_; ++src) {
        if (src == rank_) continue;
        const SignalId base = fused ? chunk_sig_ + src * static_cast<SignalId>(map.num_channels())
                                    : whole_sig_ + src * world_;
        Status s = ConsumerChannelsWait(*rt_, base, {ch, ch + 1}, epoch_,
                                        fused ? "gemm_rs fused: partial chunk from a peer"
                                              : "gemm_rs: partial segment from a peer",
                                        options_.op.timeout);
        if (!s.ok()) {
          return s.WithContext("waiting for rank " + std::to_string(src) + "'s chunk " +
                               std::to_string(ch - channels.begin));
        }
      }
      stats.wait_s += Seconds(t0, NowNanos());
    }
    const TileRegion r = map.ChunkRegion(ch);
    const int64_t t0 = NowNanos();
    // Sum in rank order 0..W−1 in every mode (deterministic, mode-independent order).
    for (int64_t g = r.row0; g < r.row0 + r.rows; ++g) {
      float* dst = out + (g - seg_begin) * n;
      const float* p0 = PartialFrom(0, g, wait);
      std::memcpy(dst, p0, static_cast<size_t>(n) * sizeof(float));
      for (int src = 1; src < world_; ++src) {
        const float* p = PartialFrom(src, g, wait);
        for (int64_t j = 0; j < n; ++j) dst[j] += p[j];
      }
    }
    stats.compute_s += Seconds(t0, NowNanos());
  }
  return OkStatus();
}

Status GemmRs::EndCall(OpRunStats& stats, double thread_cpu0, int64_t model_done_ns) {
  return EndOpCall(*rt_, *proxy_, done_sig_, epoch_, model_done_ns, "gemm_rs: outgoing partials",
                   options_.op.timeout, thread_cpu0, link_before_, stats);
}

Result<OpRunStats> GemmRs::Run(const float* a, float* out) {
  const double cpu0 = ThreadCpuSeconds();
  OpRunStats stats = StartOpStats(resolved_);  // start_ns is set again by BeginCall
  auto ctx = [&](const Status& s) { return OpError(s, kOp, rank_, resolved_); };
  LOOM_RETURN_IF_ERROR(ctx(BeginCall(stats)));
  LinkSubmitter link(proxy_);
  LOOM_RETURN_IF_ERROR(ctx(ComputeAndSend(resolved_, a, /*send=*/true, link, stats)));
  LOOM_RETURN_IF_ERROR(ctx(Reduce(resolved_, /*wait=*/true, out, stats)));
  LOOM_RETURN_IF_ERROR(ctx(EndCall(stats, cpu0, link.last_done_ns())));
  return stats;
}

Result<OpRunStats> GemmRs::RunComputeOnly(const float* a, float* out) {
  const double cpu0 = ThreadCpuSeconds();
  auto ctx = [&](const Status& s) { return OpError(s, kOp, rank_, resolved_); };
  if (!prepared_) return ctx(FailedPreconditionError("RunComputeOnly before Prepare"));
  OpRunStats stats = StartOpStats(resolved_);
  link_before_ = proxy_->stats();
  // partial_ may still be read by a peer finishing the last call (kDelayOnly): wait for it.
  LOOM_RETURN_IF_ERROR(
      ctx(rt_->wait(done_sig_, world_, epoch_, "gemm_rs: peers finished the previous call",
                    options_.op.timeout)));
  stale_.resize(static_cast<size_t>(world_ * seg_rows_ * shape_.n));
  LinkSubmitter link(proxy_);
  LOOM_RETURN_IF_ERROR(ctx(ComputeAndSend(resolved_, a, /*send=*/false, link, stats)));
  LOOM_RETURN_IF_ERROR(ctx(Reduce(resolved_, /*wait=*/false, out, stats)));
  FinishOpStats(stats, cpu0);
  stats.link = LinkStatsDelta(link_before_, proxy_->stats());
  return stats;
}

Result<OpRunStats> GemmRs::RunCommOnly() {
  const double cpu0 = ThreadCpuSeconds();
  OpRunStats stats = StartOpStats(resolved_);  // start_ns is set again by BeginCall
  auto ctx = [&](const Status& s) { return OpError(s, kOp, rank_, resolved_); };
  LOOM_RETURN_IF_ERROR(ctx(BeginCall(stats)));
  LinkSubmitter link(proxy_);
  const bool fused = resolved_ == OverlapMode::kFused;
  for (int seg : SegmentOrder()) {
    if (seg != rank_) SendSegment(seg, fused, link, stats);
  }
  const TileMap& map = fused ? *map_ : *whole_map_;
  const IndexRange channels = map.ShardChannels(rank_);
  for (int src = 0; src < world_; ++src) {
    if (src == rank_) continue;
    const SignalId base = fused ? chunk_sig_ + src * static_cast<SignalId>(map.num_channels())
                                : whole_sig_ + src * world_;
    const int64_t t0 = NowNanos();
    Status s = ConsumerChannelsWait(*rt_, base, channels, epoch_,
                                    "gemm_rs comm only: partials from a peer", options_.op.timeout);
    stats.wait_s += Seconds(t0, NowNanos());
    LOOM_RETURN_IF_ERROR(ctx(s));
  }
  LOOM_RETURN_IF_ERROR(ctx(EndCall(stats, cpu0, link.last_done_ns())));
  return stats;
}

}  // namespace loom::overlap
