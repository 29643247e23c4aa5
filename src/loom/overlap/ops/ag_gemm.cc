#include "loom/overlap/ops/ag_gemm.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "loom/base/clock.h"
#include "loom/overlap/tile/tile_primitives.h"

namespace loom::overlap {
namespace {

constexpr std::string_view kOp = "ag_gemm";

double Seconds(int64_t from_ns, int64_t to_ns) {
  return 1e-9 * static_cast<double>(to_ns - from_ns);
}

}  // namespace

AgGemm::AgGemm(Runtime* runtime, LinkProxy* proxy, AgGemmOpShape shape, AgGemmOptions options)
    : rt_(runtime), proxy_(proxy), shape_(shape), options_(std::move(options)) {
  world_ = rt_->num_ranks();
  rank_ = rt_->rank();
}

AgGemm::AgGemm(Runtime* runtime, LinkProxy* proxy, const AgGemmShape& shape, AgGemmOptions options)
    : AgGemm(runtime, proxy,
             AgGemmOpShape{.m_shard = shape.m_shard, .k = shape.k, .n_local = shape.n_local},
             std::move(options)) {
  shape_error_ = CheckSimShape(kOp, shape.world, shape.elem_bytes, world_);
}

AgGemm::~AgGemm() = default;

uint64_t AgGemm::ConfigHash() const {
  uint64_t h = HashMix(0, 0xa66e);  // op tag
  h = HashMix(h, static_cast<uint64_t>(world_));
  h = HashMix(h, static_cast<uint64_t>(shape_.m_shard));
  h = HashMix(h, static_cast<uint64_t>(shape_.k));
  h = HashMix(h, static_cast<uint64_t>(shape_.n_local));
  h = HashOpConfig(h, options_.op);
  return HashLinkOptions(h, proxy_->options());
}

Status AgGemm::Prepare(const float* b) {
  const OverlapMode mode = options_.op.mode;
  if (prepared_) return OpError(FailedPreconditionError("Prepare called twice"), kOp, rank_, mode);
  LOOM_RETURN_IF_ERROR(OpError(shape_error_, kOp, rank_, mode));
  LOOM_RETURN_IF_ERROR(OpError(ValidateOpConfig(options_.op, kOp), kOp, rank_, mode));
  if (shape_.m_shard < 1 || shape_.k < 1 || shape_.n_local < 1) {
    return OpError(InvalidArgumentError("shape m_shard=" + std::to_string(shape_.m_shard) +
                                        " k=" + std::to_string(shape_.k) + " n_local=" +
                                        std::to_string(shape_.n_local) + " must all be >= 1"),
                   kOp, rank_, mode);
  }
  // First exchange: every rank must run the same shape, options and link.
  LOOM_RETURN_IF_ERROR(OpError(
      rt_->CheckSameConfig(ConfigHash(), "ag_gemm Prepare (shape, mode, splits, tiles, link)"), kOp,
      rank_, mode));
  LOOM_ASSIGN_OR_RETURN(gemm_,
                        TileGemm::Pack(b, shape_.k, shape_.n_local, shape_.n_local, options_.gemm));
  TileMapOptions mo;
  mo.rows = world_ * shape_.m_shard;
  mo.cols = shape_.n_local;
  mo.world = world_;
  mo.shard_rows = shape_.m_shard;
  mo.splits = options_.op.splits;
  mo.tile_rows = options_.op.tile_rows;
  mo.tile_cols = options_.op.tile_cols;
  LOOM_ASSIGN_OR_RETURN(TileMap map, TileMap::Create(mo));
  map_ = std::make_unique<TileMap>(std::move(map));
  auto ctx = [&](Status s) { return OpError(s, kOp, rank_, mode); };
  auto gather = rt_->AllocArray<float>(world_ * shape_.m_shard * shape_.k);
  if (!gather.ok()) return ctx(gather.status());
  gather_ = *gather;
  auto chunk = rt_->AllocSignals(static_cast<int32_t>(map_->num_channels()));
  if (!chunk.ok()) return ctx(chunk.status());
  chunk_sig_ = *chunk;
  auto ranks = rt_->AllocSignals(world_);
  if (!ranks.ok()) return ctx(ranks.status());
  rank_sig_ = *ranks;
  auto done = rt_->AllocSignals(world_);
  if (!done.ok()) return ctx(done.status());
  done_sig_ = *done;
  resolved_ = mode;
  if (mode == OverlapMode::kAuto) LOOM_RETURN_IF_ERROR(ctx(ResolveAuto()));
  prepared_ = true;
  return OkStatus();
}

Status AgGemm::ResolveAuto() {
  const int64_t tile_cols = map_->tile_cols();
  const int64_t tile_rows = std::min(options_.op.tile_rows, shape_.m_shard);
  LOOM_ASSIGN_OR_RETURN(SimOptions sim,
                        AutoSimOptions(*rt_, *proxy_, gemm_, options_.op, tile_rows, tile_cols,
                                       shape_.k, "ag_gemm auto: tile cost exchange", tile_cost_s_));
  LOOM_ASSIGN_OR_RETURN(Prediction p, PredictAgGemm({.world = world_,
                                                     .m_shard = shape_.m_shard,
                                                     .k = shape_.k,
                                                     .n_local = shape_.n_local,
                                                     .elem_bytes = 4},
                                                    sim));
  resolved_ = p.chosen;
  return OkStatus();
}

Status AgGemm::BeginCall(OpRunStats& stats) {
  return BeginOpCall(prepared_, *rt_, *proxy_, done_sig_, epoch_,
                     "ag_gemm: peers finished the previous call", options_.op.timeout, stats,
                     link_before_);
}

void AgGemm::SubmitShard(OverlapMode mode, LinkSubmitter& link, OpRunStats& stats) {
  const RowBuffer buf{gather_, 0, shape_.k * static_cast<int64_t>(sizeof(float))};
  std::vector<ChunkTrace>* trace = options_.op.record_trace ? &stats.chunks : nullptr;
  // Producer p sends to p−1, p−2, …: receiver r then gets r+1's shard first (its tile order).
  for (int step = 1; step < world_; ++step) {
    const int dst = (rank_ - step + world_) % world_;
    if (mode == OverlapMode::kFused) {
      const IndexRange channels = map_->ShardChannels(rank_);
      for (int64_t ch = channels.begin; ch < channels.end; ++ch) {
        link.Record(map_->ChunkRegion(ch).rows * buf.row_bytes, rank_, dst,
                    static_cast<int>(ch - channels.begin), trace);
        TilePush(*proxy_, *map_, ch, buf, buf, dst, chunk_sig_, epoch_);
      }
    } else {
      link.Record(map_->shard_rows(rank_) * buf.row_bytes, rank_, dst, 0, trace);
      RankCopy(*proxy_, *map_, rank_, buf, buf, dst, rank_sig_, epoch_);
    }
  }
}

Status AgGemm::WaitShard(OverlapMode mode, int src, OpRunStats& stats) {
  const int64_t t0 = NowNanos();
  Status s = mode == OverlapMode::kFused
                 ? ConsumerChannelsWait(*rt_, chunk_sig_, map_->ShardChannels(src), epoch_,
                                        "ag_gemm: all chunks of a shard", options_.op.timeout)
                 : PeerTileWait(*rt_, rank_sig_, {src, src + 1}, epoch_, "ag_gemm: whole shard",
                                options_.op.timeout);
  stats.wait_s += Seconds(t0, NowNanos());
  return s;
}

const float* AgGemm::RowsOf(int src, int64_t global_row, const float* a_shard) const {
  if (src == rank_) return a_shard + (global_row - map_->shard_begin(src)) * shape_.k;
  const float* base = gather_;
  if (proxy_->options().mode == LinkMode::kDelayOnly) base = rt_->symm_at(gather_, src);
  return base + global_row * shape_.k;
}

Status AgGemm::ComputeRows(const float* a_rows, int64_t row0, int64_t rows, int64_t col0,
                           int64_t cols, int src, IndexRange channels, float* c, OpRunStats& stats,
                           int64_t tile) {
  TileTrace t;
  if (options_.op.record_trace) {
    t = {.tile = static_cast<int32_t>(tile),
         .row0 = row0,
         .rows = rows,
         .col0 = col0,
         .cols = cols,
         .src_rank = src,
         .chunk_beg = static_cast<int32_t>(channels.empty() ? 0 : channels.begin % map_->splits()),
         .chunk_end =
             static_cast<int32_t>(channels.empty() ? -1 : (channels.end - 1) % map_->splits()),
         .wait_end_ns = NowNanos()};
  }
  const int64_t t0 = NowNanos();
  gemm_.Run(a_rows, shape_.k, rows, c + row0 * shape_.n_local, shape_.n_local, col0, col0 + cols);
  const int64_t t1 = NowNanos();
  stats.compute_s += Seconds(t0, t1);
  if (options_.op.record_trace) {
    t.start_ns = t0;
    t.end_ns = t1;
    stats.tiles.push_back(t);
  }
  return OkStatus();
}

Status AgGemm::Compute(OverlapMode mode, const float* a_shard, float* c, bool wait,
                       OpRunStats& stats) {
  const int64_t n = shape_.n_local;
  if (mode == OverlapMode::kFused) {
    int64_t index = 0;
    for (int64_t tile : map_->AgTileOrder(rank_)) {
      const TileRegion r = map_->region(tile);
      const int src = static_cast<int>(map_->ranks(tile).begin);
      IndexRange channels{0, 0};
      if (src != rank_) {
        channels = map_->channels(tile);
        if (wait) {
          const int64_t t0 = NowNanos();
          Status s =
              ConsumerTileWait(*rt_, *map_, chunk_sig_, tile, epoch_,
                               "ag_gemm fused: chunks of a compute tile", options_.op.timeout);
          stats.wait_s += Seconds(t0, NowNanos());
          LOOM_RETURN_IF_ERROR(s);
        }
      }
      // Compute only (no waits): every shard's rows are read from a_shard, never from buffers
      // the peers' proxies may be writing (same shape, same FLOPs; remote rows of C are junk).
      const float* rows =
          wait ? RowsOf(src, r.row0, a_shard)
               : RowsOf(rank_, map_->shard_begin(rank_) + r.row0 - map_->shard_begin(src), a_shard);
      LOOM_RETURN_IF_ERROR(
          ComputeRows(rows, r.row0, r.rows, r.col0, r.cols, src, channels, c, stats, index++));
    }
    return OkStatus();
  }
  // sequential: the whole all-gather first; decomposed: shard by shard as each arrives. Both
  // run one GEMM call per shard (own shard first, then rank+1, ...).
  if (mode == OverlapMode::kSequential && wait) {
    for (int step = 1; step < world_; ++step) {
      LOOM_RETURN_IF_ERROR(WaitShard(mode, (rank_ + step) % world_, stats));
    }
  }
  for (int step = 0; step < world_; ++step) {
    const int src = (rank_ + step) % world_;
    if (mode == OverlapMode::kDecomposed && wait && src != rank_) {
      LOOM_RETURN_IF_ERROR(WaitShard(mode, src, stats));
    }
    const int64_t row0 = map_->shard_begin(src);
    const IndexRange channels = src == rank_ ? IndexRange{0, 0} : map_->ShardChannels(src);
    const float* rows = wait ? RowsOf(src, row0, a_shard) : a_shard;  // see the fused case
    LOOM_RETURN_IF_ERROR(
        ComputeRows(rows, row0, map_->shard_rows(src), 0, n, src, channels, c, stats, step));
  }
  return OkStatus();
}

Status AgGemm::EndCall(OpRunStats& stats, double thread_cpu0, int64_t model_done_ns) {
  return EndOpCall(*rt_, *proxy_, done_sig_, epoch_, model_done_ns,
                   "ag_gemm: outgoing shard pushes", options_.op.timeout, thread_cpu0, link_before_,
                   stats);
}

Result<OpRunStats> AgGemm::Run(const float* a_shard, float* c) {
  const double cpu0 = ThreadCpuSeconds();
  OpRunStats stats = StartOpStats(resolved_);  // start_ns is set again by BeginCall
  auto ctx = [&](const Status& s) { return OpError(s, kOp, rank_, resolved_); };
  LOOM_RETURN_IF_ERROR(ctx(BeginCall(stats)));
  // This rank's shard goes into its slot of the gather buffer (the push source; in kDelayOnly
  // the peers read it there).
  std::memcpy(gather_ + map_->shard_begin(rank_) * shape_.k, a_shard,
              static_cast<size_t>(shape_.m_shard * shape_.k) * sizeof(float));
  LinkSubmitter link(proxy_);
  SubmitShard(resolved_, link, stats);
  LOOM_RETURN_IF_ERROR(ctx(Compute(resolved_, a_shard, c, /*wait=*/true, stats)));
  LOOM_RETURN_IF_ERROR(ctx(EndCall(stats, cpu0, link.last_done_ns())));
  return stats;
}

Result<OpRunStats> AgGemm::RunComputeOnly(const float* a_shard, float* c) {
  const double cpu0 = ThreadCpuSeconds();
  if (!prepared_) {
    return OpError(FailedPreconditionError("RunComputeOnly before a successful Prepare"), kOp,
                   rank_, resolved_);
  }
  OpRunStats stats = StartOpStats(resolved_);
  link_before_ = proxy_->stats();
  LOOM_RETURN_IF_ERROR(
      OpError(Compute(resolved_, a_shard, c, /*wait=*/false, stats), kOp, rank_, resolved_));
  FinishOpStats(stats, cpu0);
  stats.link = LinkStatsDelta(link_before_, proxy_->stats());
  return stats;
}

Result<OpRunStats> AgGemm::RunCommOnly() {
  const double cpu0 = ThreadCpuSeconds();
  OpRunStats stats = StartOpStats(resolved_);  // start_ns is set again by BeginCall
  auto ctx = [&](const Status& s) { return OpError(s, kOp, rank_, resolved_); };
  LOOM_RETURN_IF_ERROR(ctx(BeginCall(stats)));
  LinkSubmitter link(proxy_);
  SubmitShard(resolved_, link, stats);
  for (int step = 1; step < world_; ++step) {
    LOOM_RETURN_IF_ERROR(ctx(WaitShard(resolved_, (rank_ + step) % world_, stats)));
  }
  LOOM_RETURN_IF_ERROR(ctx(EndCall(stats, cpu0, link.last_done_ns())));
  return stats;
}

}  // namespace loom::overlap
