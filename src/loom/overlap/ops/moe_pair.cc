#include "loom/overlap/ops/moe_pair.h"

#include <algorithm>
#include <vector>

#include "loom/base/check.h"
#include "loom/base/clock.h"

namespace loom::overlap {
namespace {

constexpr std::string_view kOp = "moe_pair";

double Since(int64_t t0_ns) { return (NowNanos() - t0_ns) * 1e-9; }

MoeLayer0Options Layer0Options(const MoePairOptions& o) { return {.op = o.op, .gemm = o.gemm}; }

MoeLayer1OpOptions Layer1Options(const MoePairOptions& o) {
  MoeLayer1OpOptions l1;
  l1.op = o.op;
  l1.decomposed_chunks = o.decomposed_chunks;
  l1.gemm = o.gemm;
  return l1;
}

}  // namespace

OpRunStats AddOpStats(OpRunStats a, const OpRunStats& b) {
  a.wall_s += b.wall_s;
  a.compute_s += b.compute_s;
  a.wait_s += b.wait_s;
  a.comm_s += b.comm_s;
  a.thread_cpu_s += b.thread_cpu_s;
  a.link.messages += b.link.messages;
  a.link.bytes += b.link.bytes;
  a.link.busy_s += b.link.busy_s;
  a.link.thread_cpu_s += b.link.thread_cpu_s;
  a.link.max_late_s = std::max(a.link.max_late_s, b.link.max_late_s);
  a.tiles.insert(a.tiles.end(), b.tiles.begin(), b.tiles.end());
  a.chunks.insert(a.chunks.end(), b.chunks.begin(), b.chunks.end());
  return a;
}

MoePair::MoePair(Runtime* runtime, LinkProxy* proxy, MoeOpShape shape, MoePairOptions options)
    : rt_(runtime),
      proxy_(proxy),
      shape_(shape),
      options_(options),
      l0_(runtime, proxy, shape, Layer0Options(options)),
      l1_(runtime, proxy, shape, Layer1Options(options)) {}

bool MoePair::cross_layer() const {
  if (!options_.cross_layer) return false;
  if (options_.op.mode == OverlapMode::kFused) return true;
  // Auto: where the simulator picked fused for layer 0 (after Prepare). Layer 1's own choice
  // does not apply: it models layer 1 alone with a compute and a communication worker, while
  // the cross-layer schedule runs it on the calling thread, pipelined in S splits.
  return options_.op.mode == OverlapMode::kAuto && l0_.prepared_ && l1_.prepared_ &&
         l0_.resolved_mode() == OverlapMode::kFused;
}

std::string MoePair::resolved() const {
  if (cross_layer()) return "fused/cross_layer";
  return std::string(OverlapModeName(l0_.resolved_mode())) + "/" +
         std::string(OverlapModeName(l1_.resolved_mode()));
}

Status MoePair::Fail(const Status& status) const {
  return OpError(status, kOp, rt_->rank(), cross_layer() ? OverlapMode::kFused : options_.op.mode);
}

Status MoePair::Prepare(const float* w1_local, const float* w2_local) {
  LOOM_RETURN_IF_ERROR(l0_.Prepare(w1_local));
  LOOM_RETURN_IF_ERROR(l1_.Prepare(w2_local));
  // The layers check their own configs; the schedule (cross-layer or not) is the pair's.
  const uint64_t hash = HashMix(HashMix(l0_.ConfigHash(), l1_.ConfigHash()), cross_layer());
  return Fail(rt_->CheckSameConfig(hash, "moe_pair (cross_layer)"));
}

Result<OpRunStats> MoePair::Run(const float* x, const Routing& routing, float* h, float* y) {
  if (cross_layer()) return RunCrossLayer(x, routing, h, y);
  parts_ = {};
  LOOM_ASSIGN_OR_RETURN(parts_.layer[0], l0_.Run(x, routing, h));
  LOOM_ASSIGN_OR_RETURN(parts_.layer[1], l1_.Run(h, routing, y));
  return AddOpStats(parts_.layer[0], parts_.layer[1]);
}

Result<OpRunStats> MoePair::RunComputeOnly(float* h, float* y) {
  parts_ = {};
  LOOM_ASSIGN_OR_RETURN(parts_.layer[0], l0_.RunComputeOnly(h));
  LOOM_ASSIGN_OR_RETURN(parts_.layer[1], l1_.RunComputeOnly(h, y));
  return AddOpStats(parts_.layer[0], parts_.layer[1]);
}

Result<OpRunStats> MoePair::RunCommOnly(const float* x, const Routing& routing) {
  parts_ = {};
  LOOM_ASSIGN_OR_RETURN(parts_.layer[0], l0_.RunCommOnly(x, routing));
  LOOM_ASSIGN_OR_RETURN(parts_.layer[1], l1_.RunCommOnly(routing));
  return AddOpStats(parts_.layer[0], parts_.layer[1]);
}

Result<OpRunStats> MoePair::RunCrossLayer(const float* x, const Routing& routing, float* h,
                                          float* y) {
  if (!l0_.prepared_ || !l1_.prepared_) return Fail(FailedPreconditionError("Run before Prepare"));
  const int me = rt_->rank(), W = shape_.world, S = options_.op.splits;
  const int64_t H = shape_.hidden;
  OpRunStats stats = StartOpStats(OverlapMode::kFused);
  const double cpu0 = ThreadCpuSeconds();
  const LinkStats link_before = proxy_->stats();
  parts_ = {};
  parts_.cross_layer = true;
  OpRunStats& p0 = parts_.layer[0];
  OpRunStats& p1 = parts_.layer[1];
  p0 = StartOpStats(OverlapMode::kFused);
  p0.start_ns = stats.start_ns;  // the parts' walls add up to the call's

  // 1. Dispatch; layer 1 takes the routings layer 0 exchanged (one rendezvous per call).
  LOOM_RETURN_IF_ERROR(Fail(l0_.Dispatch(x, routing, p0)));
  l1_.BeginCallWith(l0_.routings_);
  const std::vector<MoeTile>& tiles = l0_.layout_.tiles;  // == l1_.layout_.tiles
  LOOM_CHECK(l1_.layout_.tiles.size() == tiles.size());
  std::vector<size_t> own, remote;  // layer-1 tiles of own-only rows / holding remote rows
  for (size_t i = 0; i < tiles.size(); ++i) (tiles[i].seg_end == 0 ? own : remote).push_back(i);

  // 2. Layer 0 in stage order; own-only layer-1 tiles fill the waits for chunks.
  std::vector<uint8_t> l0_done(tiles.size(), 0);
  size_t next_own = 0;
  auto layer1_all_columns = [&](size_t i) {
    const int64_t t0 = NowNanos();
    l1_.GemmTile(i, h, 0, H, MoeLayer1::APack::kPerCall);
    p1.compute_s += Since(t0);
    return t0;
  };
  for (size_t i = 0; i < tiles.size(); ++i) {
    const MoeTile& tile = tiles[i];
    while (next_own < own.size() && l0_done[own[next_own]] && !l0_.TileArrived(tile)) {
      const int64_t t0 = layer1_all_columns(own[next_own++]);
      if (parts_.first_fill_ns == 0) parts_.first_fill_ns = t0;
      parts_.fill_s += Since(t0);
      ++parts_.fill_tiles;
    }
    LOOM_RETURN_IF_ERROR(Fail(l0_.WaitTile(tile, p0, nullptr)));
    const int64_t t0 = NowNanos();
    l0_.GemmRows(tile.local_expert, tile.row0, tile.rows, h);
    p0.compute_s += Since(t0);
    l0_done[i] = 1;
  }
  p1.start_ns = NowNanos();
  p0.wall_s = (p1.start_ns - p0.start_ns) * 1e-9;

  // 3. Layer 1 of the remote rows split by split, each split reduced and pushed at once.
  for (int s = 0; s < S; ++s) {
    const int64_t t0 = NowNanos();
    const int64_t c0 = SplitBegin(H, S, s), c1 = SplitBegin(H, S, s + 1);
    for (size_t i : remote) l1_.GemmTile(i, h, c0, c1, MoeLayer1::PackFor(s, S));
    for (int k = 1; k < W; ++k) l1_.CombineDest((me + k) % W, s, S, /*send=*/true, &stats);
    p1.compute_s += Since(t0);
  }
  // 4. The rest of the own-only tiles, then the own tokens' reduce (no link).
  while (next_own < own.size()) layer1_all_columns(own[next_own++]);
  int64_t t0 = NowNanos();
  for (int s = 0; s < S; ++s) l1_.CombineDest(me, s, S, /*send=*/false, nullptr);
  p1.compute_s += Since(t0);
  // 5. The owners' partial sums.
  LOOM_RETURN_IF_ERROR(Fail(l1_.WaitPartials(OverlapMode::kFused, p1)));
  t0 = NowNanos();
  l1_.SumPartials(S, /*include_remote=*/true, y);
  p1.compute_s += Since(t0);
  const int64_t q0 = NowNanos();
  LOOM_RETURN_IF_ERROR(Fail(proxy_->Quiet("moe_pair dispatch + combine", options_.op.timeout)));
  const int64_t end_ns = NowNanos();
  p1.wall_s = (end_ns - p1.start_ns) * 1e-9;

  stats.compute_s = p0.compute_s + p1.compute_s;
  stats.wait_s = p0.wait_s + p1.wait_s;
  stats.link = LinkStatsDelta(link_before, proxy_->stats());
  stats.chunks.insert(stats.chunks.begin(), p0.chunks.begin(), p0.chunks.end());
  stats.wall_s = (end_ns - stats.start_ns) * 1e-9;
  // Quiet blocked: the link finished now; else estimate from the link's busy time.
  stats.comm_s = end_ns - q0 > 50'000 ? stats.wall_s : stats.link.busy_s;
  stats.thread_cpu_s = ThreadCpuSeconds() - cpu0;
  return stats;
}

}  // namespace loom::overlap
