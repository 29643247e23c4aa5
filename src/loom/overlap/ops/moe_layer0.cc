#include "loom/overlap/ops/moe_layer0.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "loom/base/check.h"
#include "loom/base/clock.h"
#include "loom/overlap/sim/simulator.h"
#include "loom/overlap/tile/tile_primitives.h"

namespace loom::overlap {
namespace {

constexpr std::string_view kOp = "moe_layer0";

double Since(int64_t t0_ns) { return (NowNanos() - t0_ns) * 1e-9; }

}  // namespace

MoeLayer0::MoeLayer0(Runtime* runtime, LinkProxy* proxy, MoeOpShape shape, MoeLayer0Options options)
    : rt_(runtime), proxy_(proxy), shape_(shape), options_(options) {
  LOOM_CHECK(rt_ != nullptr && proxy_ != nullptr);
  resolved_ = options_.op.mode;
}

uint64_t MoeLayer0::ConfigHash() const {
  uint64_t h = HashMix(HashMoeShape(shape_), 0x30);  // "layer 0"
  h = HashOpConfig(h, options_.op);
  return HashLinkOptions(h, proxy_->options());
}

Status MoeLayer0::Fail(const Status& status) const {
  return OpError(status, kOp, rt_->rank(), resolved_);
}

Status MoeLayer0::Prepare(const float* w1_local) {
  LOOM_RETURN_IF_ERROR(Fail(ValidateMoeShape(shape_)));
  LOOM_RETURN_IF_ERROR(Fail(ValidateOpConfig(options_.op, kOp)));
  if (shape_.world != rt_->num_ranks()) {
    return Fail(InvalidArgumentError("shape.world " + std::to_string(shape_.world) +
                                     " != runtime ranks " + std::to_string(rt_->num_ranks())));
  }
  if (proxy_->options().mode == LinkMode::kDelayOnly) {
    return Fail(FailedPreconditionError(
        "the kDelayOnly link is not supported (rows are gathered into private staging)"));
  }
  LOOM_RETURN_IF_ERROR(Fail(rt_->CheckSameConfig(ConfigHash(), kOp)));
  const int32_t epr = shape_.experts_per_rank();
  const int64_t H = shape_.hidden, F = shape_.ffn;
  gemm_.clear();
  for (int32_t le = 0; le < epr; ++le) {
    LOOM_ASSIGN_OR_RETURN(TileGemm g,
                          TileGemm::Pack(w1_local + le * H * F, H, F, F, options_.gemm));
    gemm_.push_back(std::move(g));
  }
  LOOM_ASSIGN_OR_RETURN(exchange_, RoutingExchange::Create(rt_, shape_));
  LOOM_ASSIGN_OR_RETURN(recv_, rt_->AllocArray<float>(max_rows() * H));
  LOOM_ASSIGN_OR_RETURN(data_sig_, rt_->AllocSignals(shape_.world * options_.op.splits));
  staging_.assign(static_cast<size_t>(shape_.world), {});
  prepared_ = true;
  if (options_.op.mode == OverlapMode::kAuto) LOOM_RETURN_IF_ERROR(Fail(ResolveAuto()));
  return OkStatus();
}

Status MoeLayer0::ResolveAuto() {
  double cost = options_.op.tile_cost_s;
  if (cost <= 0) {
    const int64_t rows = std::min<int64_t>(options_.op.tile_rows, max_rows());
    std::vector<float> a(static_cast<size_t>(rows * shape_.hidden), 0.5f);
    std::vector<float> c(static_cast<size_t>(rows * shape_.ffn));
    cost =
        MeasureSeconds([&] { gemm_[0].Run(a.data(), shape_.hidden, rows, c.data(), shape_.ffn); });
  }
  LOOM_ASSIGN_OR_RETURN(cost, AllRanksMax(rt_, cost, "moe_layer0: auto tile cost"));
  const double per_mac =
      cost / (static_cast<double>(options_.op.tile_rows) * shape_.hidden * shape_.ffn);
  // Expected (uniform) counts, identical on every rank, so every rank resolves the same mode.
  MoeShape sim;
  sim.world = shape_.world;
  sim.hidden = shape_.hidden;
  sim.ffn = shape_.ffn;
  sim.topk = shape_.top_k;
  sim.tile_m = options_.op.tile_rows;
  const int64_t per = shape_.tokens_per_rank * shape_.top_k / shape_.num_experts;
  sim.rows_from_source.assign(shape_.world, std::vector<int64_t>(shape_.experts_per_rank(), per));
  SimOptions so;
  so.cost.seconds_per_mac = per_mac;
  so.link.bytes_per_second =
      proxy_->options().mode == LinkMode::kUnlimited ? 0 : proxy_->options().bytes_per_second;
  so.link.latency_s = proxy_->options().latency_s;
  so.splits = options_.op.splits;
  so.record_trace = false;
  LOOM_ASSIGN_OR_RETURN(Prediction p, PredictMoeLayer0(sim, so));
  resolved_ = p.chosen;
  return OkStatus();
}

Status MoeLayer0::Dispatch(const float* x, const Routing& routing, OpRunStats& stats) {
  const int me = rt_->rank(), W = shape_.world, S = Splits();
  const int64_t H = shape_.hidden;
  const uint32_t epoch = ++epoch_;
  const std::string what = "moe_layer0 rank " + std::to_string(me) + ": routing exchange";
  LOOM_ASSIGN_OR_RETURN(routings_, exchange_.Exchange(routing, ConfigHash(), epoch, what));
  layout_ = BuildRecvLayout(shape_, me, routings_, options_.op.tile_rows);
  have_layout_ = true;
  const std::vector<int64_t> counts = CountAll(shape_, routings_);
  const int64_t start_ns = NowNanos();
  double link_s = 0;  // modelled completion of the last outgoing message
  for (int i = 1; i <= W; ++i) {
    const int dest = (me - i + W) % W;  // rank−1, rank−2, …, self last
    const SendChunk chunk = BuildSendChunk(shape_, me, routing, dest);
    const std::vector<int64_t> seg0 = SegmentRow0s(shape_, counts, dest, options_.op.tile_rows);
    const int j = (me - dest + W) % W;  // our segment in dest's layout
    std::vector<float>& st = staging_[dest];
    const int64_t n = static_cast<int64_t>(chunk.rows.size());
    if (dest == me) {  // local rows: straight into place, no link
      int64_t p = 0;
      for (int le = 0; le < shape_.experts_per_rank(); ++le) {
        for (int64_t r = 0; r < chunk.expert_rows[le]; ++r, ++p) {
          std::memcpy(recv_ + (seg0[le * W + j] + r) * H, x + chunk.rows[p].token * H, H * 4);
        }
      }
      continue;
    }
    st.resize(static_cast<size_t>(std::max<int64_t>(n, 1) * H));
    for (int64_t p = 0; p < n; ++p) std::memcpy(&st[p * H], x + chunk.rows[p].token * H, H * 4);
    for (int s = 0; s < S; ++s) {
      const int64_t b0 = SplitBegin(n, S, s), b1 = SplitBegin(n, S, s + 1);
      CopyDesc last{.dst = recv_, .src = st.data(), .bytes = 0, .dst_rank = dest};
      bool have_last = false;
      int64_t off = 0;
      for (int le = 0; le < shape_.experts_per_rank(); ++le) {
        const int64_t lo = std::max(b0, off), hi = std::min(b1, off + chunk.expert_rows[le]);
        if (lo < hi) {
          if (have_last) proxy_->Submit(last);
          last = {.dst = recv_ + (seg0[le * W + j] + lo - off) * H,
                  .src = &st[lo * H],
                  .bytes = (hi - lo) * H * 4,
                  .dst_rank = dest};
          have_last = true;
          link_s += proxy_->TransferSeconds(last.bytes);
        }
        off += chunk.expert_rows[le];
      }
      last.signal = data_sig_ + me * S + s;
      last.value = epoch;
      proxy_->Submit(last);
      if (options_.op.record_trace) {
        stats.chunks.push_back(
            {.src_rank = me,
             .dst_rank = dest,
             .chunk = s,
             .bytes = (b1 - b0) * H * 4,
             .submit_ns = NowNanos(),
             .earliest_arrival_ns = start_ns + static_cast<int64_t>(link_s * 1e9)});
      }
    }
  }
  stats.comm_s = link_s;  // refined by Finish when Quiet blocks
  seen_.assign(static_cast<size_t>(W * S), 0);
  for (int s = 0; s < S; ++s) seen_[me * S + s] = 1;
  return OkStatus();
}

Status MoeLayer0::WaitSource(int src, int s_beg, int s_end, OpRunStats& stats) {
  const int S = Splits();
  while (s_beg <= s_end && seen_[src * S + s_beg]) ++s_beg;
  while (s_end >= s_beg && seen_[src * S + s_end]) --s_end;
  if (s_beg > s_end) return OkStatus();
  const int64_t t0 = NowNanos();
  const std::string what = "moe_layer0 rank " + std::to_string(rt_->rank()) + ": chunks " +
                           std::to_string(s_beg) + ".." + std::to_string(s_end) + " from rank " +
                           std::to_string(src);
  // consumer_tile_wait on the chunk channels src·S + [s_beg, s_end].
  LOOM_RETURN_IF_ERROR(ConsumerChannelsWait(*rt_, data_sig_, {src * S + s_beg, src * S + s_end + 1},
                                            epoch_, what, options_.op.timeout));
  for (int s = s_beg; s <= s_end; ++s) seen_[src * S + s] = 1;
  stats.wait_s += Since(t0);
  return OkStatus();
}

template <typename Fn>
void MoeLayer0::ForEachTileChunks(const MoeTile& tile, Fn&& fn) const {
  const int S = Splits();
  const int le = tile.local_expert, W = shape_.world;
  for (int j = std::max(1, tile.seg_beg); j <= tile.seg_end; ++j) {
    const int src = layout_.SourceOfSegment(j);
    const int64_t s0 = layout_.seg_row0[le * W + j], n_seg = layout_.SegmentRows(le, j);
    const int64_t lo = std::max(tile.row0, s0) - s0;
    const int64_t hi = std::min(tile.row0 + tile.rows, s0 + n_seg) - s0;  // exclusive
    if (lo >= hi) continue;
    const int64_t n = layout_.RowsFrom(src), off = layout_.ChunkOffset(src, le);
    fn(src, SplitOf(n, S, off + lo), SplitOf(n, S, off + hi - 1));
  }
}

Status MoeLayer0::WaitTile(const MoeTile& tile, OpRunStats& stats, TileTrace* trace) {
  Status status;
  ForEachTileChunks(tile, [&](int src, int s_beg, int s_end) {
    if (!status.ok()) return;
    status = WaitSource(src, s_beg, s_end, stats);
    if (trace != nullptr) {
      trace->src_rank = src;
      trace->chunk_beg = s_beg;
      trace->chunk_end = s_end;
    }
  });
  return status;
}

bool MoeLayer0::TileArrived(const MoeTile& tile) const {
  const int S = Splits(), me = rt_->rank();
  bool arrived = true;
  ForEachTileChunks(tile, [&](int src, int s_beg, int s_end) {
    for (int s = s_beg; s <= s_end && arrived; ++s) {
      arrived = seen_[src * S + s] || rt_->signal_value(data_sig_ + src * S + s, me) >= epoch_;
    }
  });
  return arrived;
}

void MoeLayer0::GemmRows(int le, int64_t row0, int64_t rows, float* h) const {
  if (rows <= 0) return;
  gemm_[le].Run(recv_ + row0 * shape_.hidden, shape_.hidden, rows, h + row0 * shape_.ffn,
                shape_.ffn);
}

Status MoeLayer0::Compute(OverlapMode mode, bool wait, float* h, OpRunStats& stats) {
  const int W = shape_.world, S = Splits();
  const int epr = shape_.experts_per_rank();
  auto timed_gemm = [&](int le, int64_t row0, int64_t rows) {
    const int64_t t0 = NowNanos();
    GemmRows(le, row0, rows, h);
    stats.compute_s += Since(t0);
  };
  if (mode == OverlapMode::kSequential) {
    if (wait) {
      for (int j = 1; j < W; ++j)
        LOOM_RETURN_IF_ERROR(WaitSource(layout_.SourceOfSegment(j), 0, S - 1, stats));
    }
    for (int le = 0; le < epr; ++le) {
      for (int64_t r = 0; r < layout_.group_rows[le]; r += options_.op.tile_rows) {
        timed_gemm(le, layout_.group_row0[le] + r,
                   std::min(options_.op.tile_rows, layout_.group_rows[le] - r));
      }
    }
  } else if (mode == OverlapMode::kDecomposed) {
    for (int j = 0; j < W; ++j) {
      if (wait && j > 0)
        LOOM_RETURN_IF_ERROR(WaitSource(layout_.SourceOfSegment(j), 0, S - 1, stats));
      for (int le = 0; le < epr; ++le) {
        const int64_t s0 = layout_.seg_row0[le * W + j], n = layout_.SegmentRows(le, j);
        for (int64_t r = 0; r < n; r += options_.op.tile_rows) {
          timed_gemm(le, s0 + r, std::min(options_.op.tile_rows, n - r));
        }
      }
    }
  } else {
    for (size_t i = 0; i < layout_.tiles.size(); ++i) {
      const MoeTile& tile = layout_.tiles[i];
      TileTrace tr{.tile = static_cast<int32_t>(i),
                   .row0 = tile.row0,
                   .rows = tile.rows,
                   .col0 = 0,
                   .cols = shape_.ffn,
                   .src_rank = rt_->rank()};
      TileTrace* trp = options_.op.record_trace ? &tr : nullptr;
      if (wait) LOOM_RETURN_IF_ERROR(WaitTile(tile, stats, trp));
      tr.wait_end_ns = tr.start_ns = NowNanos();
      timed_gemm(tile.local_expert, tile.row0, tile.rows);
      tr.end_ns = NowNanos();
      if (trp != nullptr) stats.tiles.push_back(tr);
    }
  }
  return OkStatus();
}

Status MoeLayer0::Finish(OpRunStats& stats, double cpu0) {
  const int64_t t0 = NowNanos();
  LOOM_RETURN_IF_ERROR(proxy_->Quiet("moe_layer0 dispatch", options_.op.timeout));
  if (NowNanos() - t0 > 50'000) stats.comm_s = Since(stats.start_ns);
  stats.link = LinkStatsDelta(link_before_, proxy_->stats());
  FinishOpStats(stats, cpu0);
  return OkStatus();
}

Result<OpRunStats> MoeLayer0::Run(const float* x, const Routing& routing, float* h) {
  if (!prepared_) return Fail(FailedPreconditionError("Run before Prepare"));
  OpRunStats stats = StartOpStats(resolved_);
  const double cpu0 = ThreadCpuSeconds();
  link_before_ = proxy_->stats();
  LOOM_RETURN_IF_ERROR(Fail(Dispatch(x, routing, stats)));
  LOOM_RETURN_IF_ERROR(Fail(Compute(resolved_, /*wait=*/true, h, stats)));
  LOOM_RETURN_IF_ERROR(Fail(Finish(stats, cpu0)));
  return stats;
}

Result<OpRunStats> MoeLayer0::RunComputeOnly(float* h) {
  if (!prepared_ || !have_layout_) {
    return Fail(FailedPreconditionError("RunComputeOnly needs a previous Run or RunCommOnly"));
  }
  OpRunStats stats = StartOpStats(resolved_);
  const double cpu0 = ThreadCpuSeconds();
  LOOM_RETURN_IF_ERROR(Fail(Compute(resolved_, /*wait=*/false, h, stats)));
  FinishOpStats(stats, cpu0);
  return stats;
}

Result<OpRunStats> MoeLayer0::RunCommOnly(const float* x, const Routing& routing) {
  if (!prepared_) return Fail(FailedPreconditionError("RunCommOnly before Prepare"));
  OpRunStats stats = StartOpStats(resolved_);
  const double cpu0 = ThreadCpuSeconds();
  link_before_ = proxy_->stats();
  LOOM_RETURN_IF_ERROR(Fail(Dispatch(x, routing, stats)));
  for (int j = 1; j < shape_.world; ++j) {
    LOOM_RETURN_IF_ERROR(Fail(WaitSource(layout_.SourceOfSegment(j), 0, Splits() - 1, stats)));
  }
  LOOM_RETURN_IF_ERROR(Fail(Finish(stats, cpu0)));
  return stats;
}

}  // namespace loom::overlap
