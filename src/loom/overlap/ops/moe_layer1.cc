#include "loom/overlap/ops/moe_layer1.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include "loom/base/check.h"
#include "loom/base/clock.h"
#include "loom/base/mutex.h"
#include "loom/overlap/sim/simulator.h"
#include "loom/overlap/tile/tile_primitives.h"

namespace loom::overlap {
namespace {

constexpr std::string_view kOp = "moe_layer1";

double Since(int64_t t0_ns) { return (NowNanos() - t0_ns) * 1e-9; }

// Completion of the worker tasks of one fused call.
struct TaskGroup {
  Mutex mu;
  CondVar cv;
  int remaining LOOM_GUARDED_BY(mu) = 0;
  Status first_error LOOM_GUARDED_BY(mu);
  std::atomic<int64_t> gemm_ns{0};  // compute workers' GEMM time

  void Done(const Status& s) {
    MutexLock lock(&mu);
    if (!s.ok() && first_error.ok()) first_error = s;
    --remaining;
    cv.NotifyAll();
  }
};

// The simulator's per-rank shape from a layout's counts.
MoeShape SimShape(const MoeOpShape& shape, const std::vector<int64_t>& counts, int64_t tile_rows) {
  MoeShape sim;
  sim.world = shape.world;
  sim.hidden = shape.hidden;
  sim.ffn = shape.ffn;
  sim.topk = shape.top_k;
  sim.tile_m = tile_rows;
  const int epr = shape.experts_per_rank();
  sim.rows_from_source.assign(shape.world, std::vector<int64_t>(epr, 0));
  for (int s = 0; s < shape.world; ++s) {
    for (int le = 0; le < epr; ++le) sim.rows_from_source[s][le] = counts[s * epr + le];
  }
  return sim;
}

LinkModel ToLinkModel(const LinkOptions& o) {
  LinkModel m;
  m.bytes_per_second = o.mode == LinkMode::kUnlimited ? 0 : o.bytes_per_second;
  m.latency_s = o.latency_s;
  return m;
}

}  // namespace

// Tokens of one destination rank that have ≥ 1 slot routed to this rank, ascending, with their
// contributions: rows [begin[q], begin[q+1]) of `row`/`gate`.
struct MoeLayer1::Combine {
  std::vector<int32_t> tokens;
  std::vector<int64_t> begin;
  std::vector<int64_t> row;
  std::vector<float> gate;
};

MoeLayer1::MoeLayer1(Runtime* runtime, LinkProxy* proxy, MoeOpShape shape,
                     MoeLayer1OpOptions options)
    : rt_(runtime), proxy_(proxy), shape_(shape), options_(options) {
  LOOM_CHECK(rt_ != nullptr && proxy_ != nullptr);
  resolved_ = options_.op.mode;
}

MoeLayer1::~MoeLayer1() {
  if (pool_) pool_->Stop();
}

uint64_t MoeLayer1::ConfigHash() const {
  uint64_t h = HashMix(HashMoeShape(shape_), 0x31);  // "layer 1"
  h = HashOpConfig(h, options_.op);
  h = HashMix(h, static_cast<uint64_t>(options_.decomposed_chunks));
  return HashLinkOptions(h, proxy_->options());
}

Status MoeLayer1::Fail(const Status& status) const {
  return OpError(status, kOp, rt_->rank(), resolved_);
}

int MoeLayer1::Chunks(OverlapMode mode) const {
  if (mode == OverlapMode::kFused) return options_.op.splits;
  if (mode == OverlapMode::kDecomposed) return options_.decomposed_chunks;
  return 1;
}

int MoeLayer1::MaxChunks() const {
  return std::max({options_.op.splits, options_.decomposed_chunks, 1});
}

Status MoeLayer1::Prepare(const float* w2_local) {
  LOOM_RETURN_IF_ERROR(Fail(ValidateMoeShape(shape_)));
  LOOM_RETURN_IF_ERROR(Fail(ValidateOpConfig(options_.op, kOp)));
  if (shape_.world != rt_->num_ranks() || options_.compute_workers < 1 ||
      options_.comm_workers < 1 || options_.decomposed_chunks < 1 ||
      options_.op.splits > shape_.hidden || options_.decomposed_chunks > shape_.hidden) {
    return Fail(InvalidArgumentError(
        "need shape.world == runtime ranks (" + std::to_string(shape_.world) + " vs " +
        std::to_string(rt_->num_ranks()) + "), compute_workers, comm_workers, " +
        "decomposed_chunks ≥ 1 and splits, decomposed_chunks ≤ hidden " +
        std::to_string(shape_.hidden)));
  }
  if (proxy_->options().mode == LinkMode::kDelayOnly) {
    return Fail(FailedPreconditionError(
        "the kDelayOnly link is not supported (partial sums are staged privately)"));
  }
  LOOM_RETURN_IF_ERROR(Fail(rt_->CheckSameConfig(ConfigHash(), kOp)));
  const int64_t H = shape_.hidden, F = shape_.ffn, T = shape_.tokens_per_rank;
  gemm_.clear();
  for (int32_t le = 0; le < shape_.experts_per_rank(); ++le) {
    LOOM_ASSIGN_OR_RETURN(TileGemm g,
                          TileGemm::Pack(w2_local + le * F * H, F, H, H, options_.gemm));
    gemm_.push_back(std::move(g));
  }
  LOOM_ASSIGN_OR_RETURN(exchange_, RoutingExchange::Create(rt_, shape_));
  LOOM_ASSIGN_OR_RETURN(partial_,
                        rt_->AllocArray<float>(std::max<int64_t>(1, shape_.world * T * H)));
  LOOM_ASSIGN_OR_RETURN(part_sig_, rt_->AllocSignals(shape_.world * MaxChunks()));
  LOOM_ASSIGN_OR_RETURN(split_sig_, rt_->AllocSignals(options_.op.splits));
  LOOM_ASSIGN_OR_RETURN(counters_, AllocTileCounters(*rt_, options_.op.splits));
  staging_.assign(static_cast<size_t>(shape_.world),
                  std::vector<float>(static_cast<size_t>(T * H)));
  y_rows_.assign(static_cast<size_t>(MaxRecvRows(shape_, options_.op.tile_rows) * H), 0.f);
  prepared_ = true;
  if (options_.op.mode == OverlapMode::kAuto) LOOM_RETURN_IF_ERROR(Fail(ResolveAuto()));
  if (resolved_ == OverlapMode::kFused) {
    pool_ = std::make_unique<ThreadPool>(ThreadPool::Options{
        .num_threads = options_.compute_workers + options_.comm_workers, .name = "moe-l1"});
    pool_->Start();
  }
  return OkStatus();
}

Status MoeLayer1::ResolveAuto() {
  double cost = options_.op.tile_cost_s;
  const int64_t rows = options_.op.tile_rows;
  if (cost <= 0) {
    std::vector<float> a(static_cast<size_t>(rows * shape_.ffn), 0.5f);
    std::vector<float> c(static_cast<size_t>(rows * shape_.hidden));
    cost =
        MeasureSeconds([&] { gemm_[0].Run(a.data(), shape_.ffn, rows, c.data(), shape_.hidden); });
  }
  LOOM_ASSIGN_OR_RETURN(cost, AllRanksMax(rt_, cost, "moe_layer1: auto tile cost"));
  const int64_t per = shape_.tokens_per_rank * shape_.top_k / shape_.num_experts;
  std::vector<int64_t> counts(static_cast<size_t>(shape_.world * shape_.experts_per_rank()), per);
  SimOptions so;
  so.cost.seconds_per_mac = cost / (static_cast<double>(rows) * shape_.hidden * shape_.ffn);
  so.link = ToLinkModel(proxy_->options());
  so.splits = options_.op.splits;
  so.record_trace = false;
  MoeLayer1Options l1;
  l1.cores = options_.compute_workers + options_.comm_workers;
  l1.splits = options_.op.splits;
  l1.comm_workers = options_.comm_workers;
  l1.decomposed_chunks = options_.decomposed_chunks;
  // Keep the configured split (the signals are sized for it); the simulator picks the mode.
  LOOM_ASSIGN_OR_RETURN(VariantPrediction seq, SimulateMoeLayer1(SimShape(shape_, counts, rows),
                                                                 OverlapMode::kSequential, l1, so));
  LOOM_ASSIGN_OR_RETURN(VariantPrediction dec, SimulateMoeLayer1(SimShape(shape_, counts, rows),
                                                                 OverlapMode::kDecomposed, l1, so));
  LOOM_ASSIGN_OR_RETURN(VariantPrediction fused, SimulateMoeLayer1(SimShape(shape_, counts, rows),
                                                                   OverlapMode::kFused, l1, so));
  resolved_ = ChooseMode(seq.seconds, dec.seconds, fused.seconds, so.auto_margin);
  return OkStatus();
}

Status MoeLayer1::BeginCall(const Routing& routing) {
  const int me = rt_->rank();
  const uint32_t epoch = ++epoch_;
  const std::string what = "moe_layer1 rank " + std::to_string(me) + ": routing exchange";
  LOOM_ASSIGN_OR_RETURN(routings_, exchange_.Exchange(routing, ConfigHash(), epoch, what));
  SetUpCall();
  return OkStatus();
}

void MoeLayer1::BeginCallWith(std::vector<Routing> all) {
  ++epoch_;
  routings_ = std::move(all);
  SetUpCall();
}

void MoeLayer1::SetUpCall() {
  const int me = rt_->rank(), W = shape_.world;
  layout_ = BuildRecvLayout(shape_, me, routings_, options_.op.tile_rows);
  have_layout_ = true;
  packed_offset_.resize(layout_.tiles.size());
  int64_t floats = 0;
  for (size_t i = 0; i < layout_.tiles.size(); ++i) {
    packed_offset_[i] = floats;
    const MoeTile& t = layout_.tiles[i];
    floats += (gemm_[t.local_expert].PackedAFloats(t.rows) + 15) / 16 * 16;  // 64-byte aligned
  }
  if (static_cast<int64_t>(packed_h_.size()) < floats) packed_h_.resize(floats);
  // Contributions per destination (the rows' source), grouped by token.
  combine_.assign(static_cast<size_t>(W), {});
  std::vector<std::vector<std::pair<int32_t, int64_t>>> by_src(static_cast<size_t>(W));
  for (int64_t r = 0; r < layout_.total_rows; ++r) {
    const RowRef& ref = layout_.rows[r];
    if (ref.src >= 0) by_src[ref.src].push_back({ref.token * shape_.top_k + ref.slot, r});
  }
  for (int d = 0; d < W; ++d) {
    std::sort(by_src[d].begin(), by_src[d].end());
    Combine& c = combine_[d];
    for (const auto& [entry, row] : by_src[d]) {
      const int32_t token = entry / shape_.top_k;
      if (c.tokens.empty() || c.tokens.back() != token) {
        c.tokens.push_back(token);
        c.begin.push_back(static_cast<int64_t>(c.row.size()));
      }
      c.row.push_back(row);
      c.gate.push_back(routings_[d].gate[entry]);
    }
    c.begin.push_back(static_cast<int64_t>(c.row.size()));
  }
}

MoeLayer1::APack MoeLayer1::PackFor(int chunk, int chunks) {
  if (chunks <= 1) return APack::kPerCall;
  return chunk == 0 ? APack::kPackOnce : APack::kPrepacked;
}

// A worker packs and later reuses the same tiles (tile i goes to worker i mod workers in every
// chunk), so packed_h_ needs no synchronisation beyond the chunk order of one worker.
void MoeLayer1::GemmColumns(const float* h, int64_t c0, int64_t c1, int worker, int workers,
                            APack pack) {
  for (size_t i = worker; i < layout_.tiles.size(); i += workers) GemmTile(i, h, c0, c1, pack);
}

void MoeLayer1::GemmTile(size_t i, const float* h, int64_t c0, int64_t c1, APack pack) {
  const int64_t H = shape_.hidden, F = shape_.ffn;
  const MoeTile& t = layout_.tiles[i];
  const TileGemm& g = gemm_[t.local_expert];
  float* y = y_rows_.data() + t.row0 * H;
  if (pack == APack::kPerCall) {
    g.Run(h + t.row0 * F, F, t.rows, y, H, c0, c1);
    return;
  }
  float* a = packed_h_.data() + packed_offset_[i];
  if (pack == APack::kPackOnce) g.PackA(h + t.row0 * F, F, t.rows, a);
  g.RunPackedA(a, t.rows, y, H, c0, c1);
}

// Top-k weighted reduce of column chunk `chunk` for every destination (self last).
void MoeLayer1::CombineChunk(int chunk, int chunks, bool send, OpRunStats* stats) {
  const int me = rt_->rank(), W = shape_.world;
  for (int i = 1; i <= W; ++i) CombineDest((me + i) % W, chunk, chunks, send, stats);
}

// Destination `d`'s part of CombineChunk: staged split-major ([n_tokens × width] at
// n_tokens · c0) and pushed to the owner when `send` (own tokens: written in place).
void MoeLayer1::CombineDest(int d, int chunk, int chunks, bool send, OpRunStats* stats) {
  const int me = rt_->rank();
  const int64_t H = shape_.hidden, T = shape_.tokens_per_rank;
  const int64_t c0 = SplitBegin(H, chunks, chunk), c1 = SplitBegin(H, chunks, chunk + 1);
  const int64_t width = c1 - c0;
  const Combine& c = combine_[d];
  const int64_t n = static_cast<int64_t>(c.tokens.size());
  float* slot = partial_ + me * T * H + n * c0;  // symmetric: slot `me` on the owner
  float* out = d == me ? slot : staging_[d].data() + n * c0;
  for (int64_t q = 0; q < n; ++q) {
    float* o = out + q * width;
    std::fill(o, o + width, 0.f);
    for (int64_t k = c.begin[q]; k < c.begin[q + 1]; ++k) {
      const float g = c.gate[k];
      const float* y = y_rows_.data() + c.row[k] * H + c0;
      for (int64_t j = 0; j < width; ++j) o[j] += g * y[j];
    }
  }
  if (d == me || !send) return;
  CopyDesc desc{.dst = slot,
                .src = out,
                .bytes = n * width * 4,
                .dst_rank = d,
                .signal = part_sig_ + me * MaxChunks() + chunk,
                .value = epoch_};
  if (stats != nullptr && options_.op.record_trace) {
    stats->chunks.push_back({.src_rank = me,
                             .dst_rank = d,
                             .chunk = chunk,
                             .bytes = desc.bytes,
                             .submit_ns = NowNanos()});
  }
  proxy_->Submit(desc);
}

Status MoeLayer1::RunFused(const float* h, bool send, OpRunStats& stats) {
  const int S = options_.op.splits, me = rt_->rank();
  const int n_comp = options_.compute_workers, n_comm = options_.comm_workers;
  const int64_t H = shape_.hidden;
  const uint32_t target = ++split_epoch_;  // completed epochs of every split counter
  if (proxy_->options().mode == LinkMode::kPoison) {
    // Like the link's poison: a comm worker that skips its split wait reads NaN.
    std::fill(y_rows_.begin(), y_rows_.begin() + layout_.total_rows * H,
              std::numeric_limits<float>::quiet_NaN());
  }
  // Shared with the tasks, so a task finishing Done() never touches a destroyed group.
  auto group = std::make_shared<TaskGroup>();
  {
    MutexLock lock(&group->mu);
    group->remaining = n_comp + n_comm;
  }
  for (int w = 0; w < n_comp; ++w) {
    pool_->Schedule([this, group, h, w, S, H, n_comp, me] {
      for (int sid = 0; sid < S; ++sid) {
        const int64_t t0 = NowNanos();
        GemmColumns(h, SplitBegin(H, S, sid), SplitBegin(H, S, sid + 1), w, n_comp,
                    PackFor(sid, S));
        group->gemm_ns += NowNanos() - t0;
        // Counter-based many-to-one notify: the last of the n_comp arrivals signals the split.
        CounterNotify(*rt_, counters_, sid, me, static_cast<uint32_t>(n_comp), split_sig_);
      }
      group->Done(OkStatus());
    });
  }
  for (int w = 0; w < n_comm; ++w) {
    pool_->Schedule([this, group, w, S, n_comm, me, target, send] {
      Status s;
      for (int sid = w; sid < S && s.ok(); sid += n_comm) {
        s = ConsumerChannelsWait(
            *rt_, split_sig_, {sid, sid + 1}, target,
            "moe_layer1 rank " + std::to_string(me) + ": compute of split " + std::to_string(sid),
            options_.op.timeout);
        if (s.ok()) CombineChunk(sid, S, send, nullptr);
      }
      group->Done(s);
    });
  }
  const auto timeout =
      options_.op.timeout.count() > 0 ? options_.op.timeout : rt_->options().timeout;
  MutexLock lock(&group->mu);
  // Twice the wait timeout: the comm workers' own waits expire first and report the signals.
  if (!group->cv.WaitUntil(&group->mu, DeadlineAfter(2 * timeout + std::chrono::seconds(1)),
                           [&] { return group->remaining == 0; })) {
    // The tasks use this op's buffers; a hang here is a programming error, not a peer's.
    LOOM_CHECK(false) << "moe_layer1: worker tasks did not finish";
  }
  stats.compute_s += group->gemm_ns.load() * 1e-9;
  return group->first_error;
}

Status MoeLayer1::ComputeAndCombine(OverlapMode mode, const float* h, bool send,
                                    OpRunStats& stats) {
  if (mode == OverlapMode::kFused) return RunFused(h, send, stats);
  const int C = Chunks(mode);
  for (int c = 0; c < C; ++c) {
    const int64_t t0 = NowNanos();
    GemmColumns(h, SplitBegin(shape_.hidden, C, c), SplitBegin(shape_.hidden, C, c + 1), 0, 1,
                PackFor(c, C));
    CombineChunk(c, C, send, &stats);
    stats.compute_s += Since(t0);
  }
  return OkStatus();
}

Status MoeLayer1::WaitPartials(OverlapMode mode, OpRunStats& stats) {
  const int me = rt_->rank(), W = shape_.world, C = Chunks(mode);
  const int64_t t0 = NowNanos();
  for (int i = 1; i < W; ++i) {
    const int src = (me + i) % W;
    LOOM_RETURN_IF_ERROR(ConsumerChannelsWait(
        *rt_, part_sig_, {src * MaxChunks(), src * MaxChunks() + C}, epoch_,
        "moe_layer1 rank " + std::to_string(me) + ": partial sums from rank " + std::to_string(src),
        options_.op.timeout));
  }
  stats.wait_s += Since(t0);
  return OkStatus();
}

void MoeLayer1::SumPartials(int chunks, bool include_remote, float* y) const {
  const int me = rt_->rank(), W = shape_.world, C = chunks;
  const int64_t H = shape_.hidden, T = shape_.tokens_per_rank;
  std::fill(y, y + T * H, 0.f);
  for (int src = 0; src < W; ++src) {
    if (src != me && !include_remote) continue;
    // My tokens with ≥ 1 expert on src, ascending: the order src staged them in.
    std::vector<int32_t> tokens;
    const Routing& mine = routings_[me];
    for (int64_t t = 0; t < T; ++t) {
      for (int32_t s = 0; s < shape_.top_k; ++s) {
        if (shape_.OwnerOf(mine.expert[t * shape_.top_k + s]) == src) {
          tokens.push_back(static_cast<int32_t>(t));
          break;
        }
      }
    }
    const int64_t n = static_cast<int64_t>(tokens.size());
    const float* slot = partial_ + src * T * H;
    for (int c = 0; c < C; ++c) {
      const int64_t c0 = SplitBegin(H, C, c), c1 = SplitBegin(H, C, c + 1), w = c1 - c0;
      const float* block = slot + n * c0;
      for (int64_t q = 0; q < n; ++q) {
        float* o = y + tokens[q] * H + c0;
        for (int64_t j = 0; j < w; ++j) o[j] += block[q * w + j];
      }
    }
  }
}

Result<OpRunStats> MoeLayer1::Run(const float* h, const Routing& routing, float* y) {
  if (!prepared_) return Fail(FailedPreconditionError("Run before Prepare"));
  OpRunStats stats = StartOpStats(resolved_);
  const double cpu0 = ThreadCpuSeconds();
  link_before_ = proxy_->stats();
  LOOM_RETURN_IF_ERROR(Fail(BeginCall(routing)));
  LOOM_RETURN_IF_ERROR(Fail(ComputeAndCombine(resolved_, h, /*send=*/true, stats)));
  LOOM_RETURN_IF_ERROR(Fail(WaitPartials(resolved_, stats)));
  const int64_t t0 = NowNanos();
  SumPartials(Chunks(resolved_), /*include_remote=*/true, y);
  stats.compute_s += Since(t0);
  const int64_t q0 = NowNanos();
  LOOM_RETURN_IF_ERROR(Fail(proxy_->Quiet("moe_layer1 combine", options_.op.timeout)));
  stats.link = LinkStatsDelta(link_before_, proxy_->stats());
  stats.wall_s = Since(stats.start_ns);
  // Quiet blocked: the link finished now; else estimate from the link's busy time.
  stats.comm_s = NowNanos() - q0 > 50'000 ? stats.wall_s : stats.link.busy_s;
  stats.thread_cpu_s = ThreadCpuSeconds() - cpu0;
  return stats;
}

Result<OpRunStats> MoeLayer1::RunComputeOnly(const float* h, float* y) {
  if (!prepared_ || !have_layout_) {
    return Fail(FailedPreconditionError("RunComputeOnly needs a previous Run"));
  }
  OpRunStats stats = StartOpStats(resolved_);
  const double cpu0 = ThreadCpuSeconds();
  LOOM_RETURN_IF_ERROR(Fail(ComputeAndCombine(resolved_, h, /*send=*/false, stats)));
  SumPartials(Chunks(resolved_), /*include_remote=*/false, y);
  FinishOpStats(stats, cpu0);
  return stats;
}

Result<OpRunStats> MoeLayer1::RunCommOnly(const Routing& routing) {
  if (!prepared_ || !have_layout_) {
    return Fail(FailedPreconditionError("RunCommOnly needs a previous Run"));
  }
  OpRunStats stats = StartOpStats(resolved_);
  const double cpu0 = ThreadCpuSeconds();
  link_before_ = proxy_->stats();
  LOOM_RETURN_IF_ERROR(Fail(BeginCall(routing)));
  // Push the staged partial sums (whatever the last compute left) chunk by chunk.
  const int me = rt_->rank(), W = shape_.world, C = Chunks(resolved_);
  const int64_t H = shape_.hidden, T = shape_.tokens_per_rank;
  for (int c = 0; c < C; ++c) {
    const int64_t c0 = SplitBegin(H, C, c), c1 = SplitBegin(H, C, c + 1);
    for (int i = 1; i < W; ++i) {
      const int d = (me + i) % W;
      const int64_t n = static_cast<int64_t>(combine_[d].tokens.size());
      proxy_->Submit({.dst = partial_ + me * T * H + n * c0,
                      .src = staging_[d].data() + n * c0,
                      .bytes = n * (c1 - c0) * 4,
                      .dst_rank = d,
                      .signal = part_sig_ + me * MaxChunks() + c,
                      .value = epoch_});
    }
  }
  LOOM_RETURN_IF_ERROR(Fail(WaitPartials(resolved_, stats)));
  LOOM_RETURN_IF_ERROR(Fail(proxy_->Quiet("moe_layer1 combine", options_.op.timeout)));
  stats.comm_s = Since(stats.start_ns);
  stats.link = LinkStatsDelta(link_before_, proxy_->stats());
  FinishOpStats(stats, cpu0);
  return stats;
}

Result<MoeLayer1Profile> MoeLayer1::ProfileSplits(const float* h) {
  if (!prepared_ || !have_layout_) {
    return Fail(FailedPreconditionError("ProfileSplits needs a previous Run"));
  }
  // One column chunk of 1/8 of hidden (at least one column).
  const int chunks = static_cast<int>(std::min<int64_t>(8, shape_.hidden));
  const int64_t c1 = SplitBegin(shape_.hidden, chunks, 1);
  int64_t rows = 0, contribs = 0;
  for (const MoeTile& t : layout_.tiles) rows += t.rows;
  for (const Combine& c : combine_) contribs += static_cast<int64_t>(c.row.size());
  MoeLayer1Profile p;
  // The steady chunk cost: A packed by the first chunk (outside the measurement), then reused.
  GemmColumns(h, 0, c1, 0, 1, APack::kPackOnce);
  const double gemm_s = MeasureSeconds([&] { GemmColumns(h, 0, c1, 0, 1, APack::kPrepacked); });
  const double macs = static_cast<double>(std::max<int64_t>(rows, 1)) * shape_.ffn * c1;
  p.seconds_per_mac = gemm_s / macs;
  const double red_s = MeasureSeconds([&] { CombineChunk(0, chunks, /*send=*/false, nullptr); });
  p.reduce_seconds_per_byte =
      red_s / (static_cast<double>(std::max<int64_t>(contribs, 1)) * c1 * 4);
  return p;
}

Result<MoeLayer1OpOptions> MoeLayer1::ChooseAssignment(const MoeLayer1Profile& profile,
                                                       int cores) const {
  if (!have_layout_) return Fail(FailedPreconditionError("ChooseAssignment needs a previous Run"));
  if (cores < 2) {
    return Fail(InvalidArgumentError("the compute/communication split needs ≥ 2 cores, got " +
                                     std::to_string(cores)));
  }
  SimOptions so;
  so.cost.seconds_per_mac = profile.seconds_per_mac;
  so.link = ToLinkModel(proxy_->options());
  so.rank = rt_->rank();
  so.record_trace = false;
  MoeLayer1Options base;
  base.cores = cores;
  base.reduce_seconds_per_byte = profile.reduce_seconds_per_byte;
  base.decomposed_chunks = options_.decomposed_chunks;
  LOOM_ASSIGN_OR_RETURN(
      base,
      ChooseMoeLayer1Split(SimShape(shape_, layout_.counts, options_.op.tile_rows), base, so));
  MoeLayer1OpOptions out = options_;
  out.op.splits = base.splits;
  out.comm_workers = base.comm_workers;
  out.compute_workers = cores - base.comm_workers;
  return out;
}

}  // namespace loom::overlap
