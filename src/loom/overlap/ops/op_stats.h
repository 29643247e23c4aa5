// Shared plumbing of the overlapped ops (AG+GEMM, GEMM+RS, MoE layers): the options every op
// takes (OpConfig), what one call reports (OpRunStats, with an optional per-tile trace), and small
// helpers (config hashing, thread CPU time, error context).
//
//   AgGemmOptions opts{.op = {.mode = OverlapMode::kFused, .splits = 4, .tile_rows = 64}};
//   LOOM_ASSIGN_OR_RETURN(OpRunStats st, op.Run(a, c));
//   printf("%s: wall %.3f ms, waited %.3f ms\n", OverlapModeName(st.mode_run).data(),
//          st.wall_s * 1e3, st.wait_s * 1e3);
//
// Times are seconds measured on CLOCK_MONOTONIC (loom::NowNanos), which is the same clock in every
// process of the host, so traces of different ranks can be compared directly.
//
// Thread-safety: value types; the helpers are thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loom/base/status.h"
#include "loom/overlap/gemm/tile_gemm.h"
#include "loom/overlap/link/link_proxy.h"
#include "loom/overlap/ops/overlap_mode.h"
#include "loom/overlap/runtime/runtime.h"
#include "loom/overlap/sim/simulator.h"

namespace loom::overlap {

// Options common to every overlapped op. The link (bandwidth, mode) is not here: it belongs to
// the LinkProxy the op is given. Every rank must pass the same values (checked at Prepare).
struct OpConfig {
  OverlapMode mode = OverlapMode::kFused;  // default fused
  int32_t splits = 4;      // S: communication chunks per shard/segment (fused mode); default 4
  int64_t tile_rows = 64;  // compute tile height (rows of C); default 64
  int64_t tile_cols = 0;   // compute tile width (columns of C); 0 = all columns; default 0
  // Deadline of every wait of one call; 0 = the runtime's RuntimeOptions::timeout; default 0.
  std::chrono::milliseconds timeout{0};
  bool record_trace = false;  // fill OpRunStats::tiles / chunks; default false
  // kAuto: measured seconds per compute tile fed to the simulator; 0 = measure at Prepare
  // (max over ranks, so every rank picks the same mode); default 0.
  double tile_cost_s = 0;
};

// One compute tile of a call (OpConfig::record_trace).
struct TileTrace {
  int32_t tile = 0;  // index in the op's tile list (see the op's header)
  int64_t row0 = 0;  // first row of C (op-specific row space, see the op's header)
  int64_t rows = 0;
  int64_t col0 = 0;
  int64_t cols = 0;
  int32_t src_rank = 0;     // AG+GEMM: the shard's owner; GEMM+RS: the segment's owner
  int32_t chunk_beg = 0;    // chunk channels [chunk_beg, chunk_end] of src_rank the tile waited for
  int32_t chunk_end = -1;   // (-1: none, local data)
  int64_t wait_end_ns = 0;  // NowNanos() when its waits returned
  int64_t start_ns = 0;     // NowNanos() when the GEMM of the tile started
  int64_t end_ns = 0;
};

// One communication chunk this rank sent (OpConfig::record_trace).
struct ChunkTrace {
  int32_t src_rank = 0;
  int32_t dst_rank = 0;
  int32_t chunk = 0;  // chunk index within the shard/segment
  int64_t bytes = 0;
  int64_t submit_ns = 0;  // NowNanos() at LinkProxy::Submit
  // Lower bound of the chunk's arrival from the link model: submit time of the first message of
  // the call + cumulative modelled transfer time (the proxy cannot complete it earlier).
  int64_t earliest_arrival_ns = 0;
};

struct OpRunStats {
  double wall_s = 0;     // the whole call
  double compute_s = 0;  // compute thread inside GEMM tiles (and reductions for GEMM+RS)
  double wait_s = 0;     // compute thread waiting for signals
  // Time from call start until the last byte of this rank's communication completed: the moment
  // LinkProxy::Quiet returned if it had to block, else the link model's completion time of the
  // last outgoing message (an estimate, assumes the proxy was idle at call start).
  double comm_s = 0;
  double thread_cpu_s = 0;                          // CPU time of the calling (compute) thread
  OverlapMode mode_run = OverlapMode::kSequential;  // the mode actually run (kAuto resolved)
  LinkStats link;                  // the proxy's statistics accumulated during this call
  std::vector<TileTrace> tiles;    // OpConfig::record_trace only
  std::vector<ChunkTrace> chunks;  // OpConfig::record_trace only
  int64_t start_ns = 0;            // NowNanos() at call start
};

// --- helpers shared by the ops ---

// FNV-1a style mixing of `v` into `h` (for CheckSameConfig hashes).
uint64_t HashMix(uint64_t h, uint64_t v);
// Hash of the OpConfig fields every rank must agree on (not record_trace / tile_cost_s).
uint64_t HashOpConfig(uint64_t h, const OpConfig& config);
// Hash of the link options that must agree (mode, bandwidth, latency).
uint64_t HashLinkOptions(uint64_t h, const LinkOptions& options);
// CPU seconds of the calling thread (CLOCK_THREAD_CPUTIME_ID).
double ThreadCpuSeconds();
// stats_after − stats_before field by field (means/max taken from `after`).
LinkStats LinkStatsDelta(const LinkStats& before, const LinkStats& after);
// Status with "<op> rank <r> (<mode>): " prefixed; OK stays OK.
Status OpError(const Status& status, std::string_view op, int rank, OverlapMode mode);
// Submits descriptors to a LinkProxy and tracks the link model's earliest completion of each:
// done_i = max(submit_i, done_{i-1}) + LinkProxy::TransferSeconds(bytes_i). The proxy cannot
// complete a message earlier (its own clock starts at or after our Submit), so done_i is a lower
// bound of the arrival, used by ordering tests and as the comm_s estimate. One per call; used by
// one thread.
class LinkSubmitter {
 public:
  explicit LinkSubmitter(LinkProxy* proxy) : proxy_(proxy) {}
  // Submits; returns the earliest arrival (NowNanos scale). With `trace`, appends a ChunkTrace.
  int64_t Submit(const CopyDesc& desc, int src_rank, int chunk, std::vector<ChunkTrace>* trace);
  // Only the model and the trace, for a descriptor the caller submits itself right after (e.g.
  // through the tile primitives TilePush / RankCopy).
  int64_t Record(int64_t bytes, int src_rank, int dst_rank, int chunk,
                 std::vector<ChunkTrace>* trace);
  int64_t last_done_ns() const { return last_done_ns_; }
  int64_t messages() const { return messages_; }

 private:
  LinkProxy* proxy_;
  int64_t last_done_ns_ = 0;
  int64_t messages_ = 0;
};

// Quiets the proxy and returns the end of this rank's outgoing communication (NowNanos scale):
// the moment Quiet returned if it had to block (> 50 µs), else the model's completion estimate
// `model_done_ns` clamped to the moment Quiet was called. Errors carry `what`.
Result<int64_t> QuietAndCommEnd(LinkProxy* proxy, int64_t model_done_ns, std::string_view what,
                                std::chrono::milliseconds timeout);

// Collective: the maximum of `value` over all ranks (through a small symmetric allocation and
// two barriers), so that every rank feeds the simulator the same numbers and picks one mode.
Result<double> MaxOverRanks(Runtime& rt, double value, std::string_view what);
// Seconds of one `rows` × `cols` tile of `gemm` (min of `reps` runs on zero inputs).
double MeasureTileSeconds(const TileGemm& gemm, int64_t rows, int64_t cols, int reps = 3);
// The simulator's link model for a proxy's options (kUnlimited → unlimited).
LinkModel SimLinkModel(const LinkOptions& options);

// --- the per-call skeleton shared by the ops ---

// Stats of a call that starts now: start_ns = NowNanos(), mode_run = `mode`.
OpRunStats StartOpStats(OverlapMode mode);
// Sets stats.wall_s (from stats.start_ns to now) and stats.thread_cpu_s (CPU time of the calling
// thread since `thread_cpu0`, a ThreadCpuSeconds() value).
void FinishOpStats(OpRunStats& stats, double thread_cpu0);

// Start of a call of an op whose calls are separated by `done_sig` (W signals, signal p set to
// the call's epoch by rank p at its end, see EndOpCall): kFailedPrecondition "Run before a
// successful Prepare" unless `prepared`; else sets stats.start_ns and `link_before` (the proxy's
// statistics now), increments `epoch` and waits (`what`, `timeout`) until every peer finished
// the previous call, adding the wait to stats.wait_s.
Status BeginOpCall(bool prepared, Runtime& rt, LinkProxy& proxy, SignalId done_sig, uint32_t& epoch,
                   std::string_view what, std::chrono::milliseconds timeout, OpRunStats& stats,
                   LinkStats& link_before);
// End of such a call: quiets the proxy (QuietAndCommEnd with `model_done_ns`, `what`), sets
// done_sig + rank to `epoch` on every rank, then fills comm_s, wall_s, thread_cpu_s (since
// `thread_cpu0`) and link (the proxy's statistics since `link_before`).
Status EndOpCall(Runtime& rt, LinkProxy& proxy, SignalId done_sig, uint32_t epoch,
                 int64_t model_done_ns, std::string_view what, std::chrono::milliseconds timeout,
                 double thread_cpu0, const LinkStats& link_before, OpRunStats& stats);

// kAuto of a GEMM op: the seconds of one `tile_rows` × `tile_cols` tile (config.tile_cost_s, or
// measured on `gemm` when 0), maxed over ranks (collective, errors carry `what`) and stored in
// `tile_cost_s`; returns the SimOptions every GEMM op feeds the simulator: seconds_per_mac of
// that tile with inner dimension `k`, the proxy's link model, this rank, config's splits and
// tile_cols, no trace.
Result<SimOptions> AutoSimOptions(Runtime& rt, const LinkProxy& proxy, const TileGemm& gemm,
                                  const OpConfig& config, int64_t tile_rows, int64_t tile_cols,
                                  int64_t k, std::string_view what, double& tile_cost_s);

// kInvalidArgument unless a simulator shape (`shape_world` ranks, `elem_bytes` per element) fits
// an fp32 op `op` on a runtime of `world` ranks; OK otherwise.
Status CheckSimShape(std::string_view op, int shape_world, int elem_bytes, int world);

// kInvalidArgument unless the config is usable (splits ≥ 1, tile_rows ≥ 1, tile_cols ≥ 0, ...).
Status ValidateOpConfig(const OpConfig& config, std::string_view op);

}  // namespace loom::overlap
