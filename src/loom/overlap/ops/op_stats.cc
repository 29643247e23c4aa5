#include "loom/overlap/ops/op_stats.h"

#include <time.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>
#include <vector>

#include "loom/base/clock.h"

namespace loom::overlap {

uint64_t HashMix(uint64_t h, uint64_t v) {
  constexpr uint64_t kPrime = 1099511628211ull;
  if (h == 0) h = 14695981039346656037ull;
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= kPrime;
  }
  return h;
}

uint64_t HashOpConfig(uint64_t h, const OpConfig& config) {
  h = HashMix(h, static_cast<uint64_t>(config.mode));
  h = HashMix(h, static_cast<uint64_t>(config.splits));
  h = HashMix(h, static_cast<uint64_t>(config.tile_rows));
  h = HashMix(h, static_cast<uint64_t>(config.tile_cols));
  return h;
}

uint64_t HashLinkOptions(uint64_t h, const LinkOptions& options) {
  h = HashMix(h, static_cast<uint64_t>(options.mode));
  h = HashMix(h, std::bit_cast<uint64_t>(options.bytes_per_second));
  h = HashMix(h, std::bit_cast<uint64_t>(options.latency_s));
  return h;
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

LinkStats LinkStatsDelta(const LinkStats& before, const LinkStats& after) {
  LinkStats d = after;
  d.messages = after.messages - before.messages;
  d.bytes = after.bytes - before.bytes;
  d.busy_s = after.busy_s - before.busy_s;
  d.thread_cpu_s = after.thread_cpu_s - before.thread_cpu_s;
  return d;
}

Status OpError(const Status& status, std::string_view op, int rank, OverlapMode mode) {
  if (status.ok()) return status;
  return status.WithContext(std::string(op) + " rank " + std::to_string(rank) + " (" +
                            std::string(OverlapModeName(mode)) + ")");
}

Status ValidateOpConfig(const OpConfig& config, std::string_view op) {
  auto bad = [&](std::string_view field, int64_t value) {
    return InvalidArgumentError(std::string(op) + ": OpConfig::" + std::string(field) + " = " +
                                std::to_string(value) + " is invalid");
  };
  if (config.splits < 1) return bad("splits (must be >= 1)", config.splits);
  if (config.tile_rows < 1) return bad("tile_rows (must be >= 1)", config.tile_rows);
  if (config.tile_cols < 0) return bad("tile_cols (must be >= 0)", config.tile_cols);
  if (config.timeout.count() < 0) return bad("timeout (must be >= 0 ms)", config.timeout.count());
  if (config.tile_cost_s < 0)
    return InvalidArgumentError(std::string(op) + ": negative tile_cost_s");
  return OkStatus();
}

Status CheckSimShape(std::string_view op, int shape_world, int elem_bytes, int world) {
  if (shape_world == world && elem_bytes == 4) return OkStatus();
  return InvalidArgumentError(std::string(op) + ": simulator shape has world " +
                              std::to_string(shape_world) + " and elem_bytes " +
                              std::to_string(elem_bytes) + ", but the runtime has " +
                              std::to_string(world) + " ranks and the op is fp32 (4 bytes)");
}

int64_t LinkSubmitter::Record(int64_t bytes, int src_rank, int dst_rank, int chunk,
                              std::vector<ChunkTrace>* trace) {
  const int64_t now = NowNanos();
  const int64_t start = std::max(now, last_done_ns_);
  last_done_ns_ = start + static_cast<int64_t>(proxy_->TransferSeconds(bytes) * 1e9);
  ++messages_;
  if (trace != nullptr) {
    trace->push_back({.src_rank = src_rank,
                      .dst_rank = dst_rank,
                      .chunk = chunk,
                      .bytes = bytes,
                      .submit_ns = now,
                      .earliest_arrival_ns = last_done_ns_});
  }
  return last_done_ns_;
}

int64_t LinkSubmitter::Submit(const CopyDesc& desc, int src_rank, int chunk,
                              std::vector<ChunkTrace>* trace) {
  const int64_t done = Record(desc.bytes, src_rank, desc.dst_rank, chunk, trace);
  proxy_->Submit(desc);
  return done;
}

Result<double> MaxOverRanks(Runtime& rt, double value, std::string_view what) {
  LOOM_ASSIGN_OR_RETURN(double* slot, rt.AllocArray<double>(1));
  *slot = value;
  LOOM_RETURN_IF_ERROR(rt.barrier_all(what));
  double best = value;
  for (int r = 0; r < rt.num_ranks(); ++r) best = std::max(best, *rt.symm_at(slot, r));
  LOOM_RETURN_IF_ERROR(rt.barrier_all(what));
  return best;
}

double MeasureTileSeconds(const TileGemm& gemm, int64_t rows, int64_t cols, int reps) {
  std::vector<float> a(static_cast<size_t>(rows * gemm.k()), 0.5f);
  std::vector<float> c(static_cast<size_t>(rows * cols), 0.0f);
  double best = 1e30;
  for (int i = 0; i < std::max(1, reps); ++i) {
    Stopwatch watch;
    gemm.Run(a.data(), gemm.k(), rows, c.data(), cols, 0, cols);
    best = std::min(best, watch.Seconds());
  }
  // c is indexed with column offset 0 .. cols: Run writes c + i*ldc + j for j in [0, cols).
  return best;
}

LinkModel SimLinkModel(const LinkOptions& options) {
  LinkModel model;
  model.bytes_per_second = options.mode == LinkMode::kUnlimited ? 0 : options.bytes_per_second;
  model.latency_s = options.latency_s;
  return model;
}

Result<int64_t> QuietAndCommEnd(LinkProxy* proxy, int64_t model_done_ns, std::string_view what,
                                std::chrono::milliseconds timeout) {
  const int64_t begin = NowNanos();
  LOOM_RETURN_IF_ERROR(proxy->Quiet(what, timeout));
  const int64_t end = NowNanos();
  if (end - begin > 50'000) return end;
  return std::min(model_done_ns, begin);
}

OpRunStats StartOpStats(OverlapMode mode) {
  OpRunStats stats;
  stats.start_ns = NowNanos();
  stats.mode_run = mode;
  return stats;
}

void FinishOpStats(OpRunStats& stats, double thread_cpu0) {
  stats.wall_s = 1e-9 * static_cast<double>(NowNanos() - stats.start_ns);
  stats.thread_cpu_s = ThreadCpuSeconds() - thread_cpu0;
}

Status BeginOpCall(bool prepared, Runtime& rt, LinkProxy& proxy, SignalId done_sig, uint32_t& epoch,
                   std::string_view what, std::chrono::milliseconds timeout, OpRunStats& stats,
                   LinkStats& link_before) {
  if (!prepared) return FailedPreconditionError("Run before a successful Prepare");
  stats.start_ns = NowNanos();
  link_before = proxy.stats();
  ++epoch;
  // Every peer has finished the previous call: nobody still reads the buffers we overwrite.
  const int64_t t0 = NowNanos();
  Status s = rt.wait(done_sig, rt.num_ranks(), epoch - 1, what, timeout);
  stats.wait_s += 1e-9 * static_cast<double>(NowNanos() - t0);
  return s;
}

Status EndOpCall(Runtime& rt, LinkProxy& proxy, SignalId done_sig, uint32_t epoch,
                 int64_t model_done_ns, std::string_view what, std::chrono::milliseconds timeout,
                 double thread_cpu0, const LinkStats& link_before, OpRunStats& stats) {
  LOOM_ASSIGN_OR_RETURN(int64_t comm_end, QuietAndCommEnd(&proxy, model_done_ns, what, timeout));
  for (int p = 0; p < rt.num_ranks(); ++p) rt.notify(done_sig + rt.rank(), p, epoch);
  const int64_t end = NowNanos();
  stats.comm_s = 1e-9 * static_cast<double>(std::max(comm_end, stats.start_ns) - stats.start_ns);
  stats.wall_s = 1e-9 * static_cast<double>(end - stats.start_ns);
  stats.thread_cpu_s = ThreadCpuSeconds() - thread_cpu0;
  stats.link = LinkStatsDelta(link_before, proxy.stats());
  return OkStatus();
}

Result<SimOptions> AutoSimOptions(Runtime& rt, const LinkProxy& proxy, const TileGemm& gemm,
                                  const OpConfig& config, int64_t tile_rows, int64_t tile_cols,
                                  int64_t k, std::string_view what, double& tile_cost_s) {
  double cost = config.tile_cost_s;
  if (cost <= 0) cost = MeasureTileSeconds(gemm, tile_rows, tile_cols);
  LOOM_ASSIGN_OR_RETURN(cost, MaxOverRanks(rt, cost, what));
  tile_cost_s = cost;
  SimOptions sim;
  sim.cost.seconds_per_mac = cost / static_cast<double>(tile_rows * tile_cols * k);
  sim.link = SimLinkModel(proxy.options());
  sim.rank = rt.rank();
  sim.splits = config.splits;
  sim.tile_n = config.tile_cols;
  sim.record_trace = false;
  return sim;
}

}  // namespace loom::overlap
