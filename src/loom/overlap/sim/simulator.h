// Discrete-event simulator of the overlapped ops (AG+GEMM, GEMM+RS, MoE layer 0/1) in virtual
// time. It predicts each variant (sequential | decomposed | fused(S)) of one rank of a symmetric
// W-rank job from per-tile compute costs and the link model, picks the mode for kAuto, and
// records an event trace (tile start/end, chunk send/arrive, reduce start/end) for ordering tests
// and Chrome-trace export.
//
// Model (per rank, symmetric, so one rank is simulated and incoming = mirror of outgoing):
//  - compute: `compute_workers` workers take work items in the op's tile order (in-order issue);
//    an item starts when a worker is free and every chunk it waits on has arrived;
//    cost = TileCostModel::Seconds(rows, cols, k).
//  - link: the paced proxy, one serial FIFO per rank; message time = latency_s + bytes / B
//    (LinkProxy's model). A message is sent when the link is free and the items it depends on
//    (GEMM+RS / MoE combine) are done.
//  - reducer (GEMM+RS, MoE layer 1): the owner reduces each arriving chunk on its own serial
//    resource (reduce_seconds_per_byte · bytes); the op ends when the own compute and every
//    reduction are done.
// The link is a model, not hardware (see link/link_proxy.h).
//
// Auto mode: ChooseMode() prefers the simpler variant: decomposed over sequential only if it is
// predicted at least `auto_margin` (default 5%) faster, and fused over the better of the two
// only if it is predicted at least `auto_margin` faster. X = 5% matches the issue's "auto never
// more than 5% slower than the better of sequential/decomposed".
// Thread-safety: pure functions over value types; safe to call concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loom/base/status.h"
#include "loom/overlap/ops/overlap_mode.h"

namespace loom::overlap {

// Per-tile compute cost: t = fixed_s + seconds_per_mac · cols · k · (rows + penalty_rows).
// `penalty_rows` is the decomposition penalty: each call/tile costs as if it had penalty_rows
// extra rows (B-panel reloads, short M loops). Spec §7's OpenBLAS panel probe (1 call 66 GFLOP/s,
// 64-row panels 45, 32-row 33) fits penalty_rows ≈ 30.
struct TileCostModel {
  double fixed_s = 0;                   // per-tile overhead a, seconds; default 0
  double seconds_per_mac = 1.0 / 30e9;  // b, seconds per multiply-add; default 60 GFLOP/s
  double penalty_rows = 0;              // decomposition penalty in equivalent rows; default 0

  double Seconds(int64_t rows, int64_t cols, int64_t k) const;
};

// One measured tile time, for fitting.
struct TileSample {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t k = 0;
  double seconds = 0;
};
// Least-squares fit of fixed_s and seconds_per_mac (penalty_rows kept as given); needs >= 2
// samples with distinct sizes. Errors: kInvalidArgument (too few / degenerate samples).
Result<TileCostModel> FitTileCostModel(const std::vector<TileSample>& samples,
                                       double penalty_rows = 0);

// Serial FIFO link: message time = latency_s + bytes / bytes_per_second; unlimited if
// bytes_per_second <= 0 (then only latency_s counts).
struct LinkModel {
  double bytes_per_second = 1e9;  // default 1 GB/s; <= 0 means unlimited
  double latency_s = 0;           // per-message α; default 0

  double MessageSeconds(int64_t bytes) const;
};

struct SimOptions {
  TileCostModel cost;
  LinkModel link;
  int rank = 0;    // which rank's schedule to trace (symmetric model)
  int splits = 8;  // S: fused splits per shard / segment / source; default 8
  // Predict*: if non-empty, the fused prediction is the best S among these (VariantPrediction::
  // splits says which); Simulate* ignore it. Default empty (use `splits`).
  std::vector<int> fused_split_candidates;
  int64_t tile_n = 0;                  // fused tile width in columns; 0 = whole N; default 0
  int compute_workers = 1;             // workers executing GEMM items; default 1
  double reduce_seconds_per_byte = 0;  // owner reduction cost per received byte; default 0
  double auto_margin = 0.05;           // kAuto: a more complex mode must be ≥ 5% faster
  bool record_trace = true;            // fill VariantPrediction::trace; default true
};

// --- Op shapes (per rank) ---------------------------------------------------------------------
struct AgGemmShape {  // C[W·m_shard, n_local] = allgather(A_shard[m_shard, k]) · B[k, n_local]
  int world = 2;
  int64_t m_shard = 0;
  int64_t k = 0;
  int64_t n_local = 0;
  int elem_bytes = 4;
};
struct GemmRsShape {  // out[m_shard, n] = reduce_scatter(A[W·m_shard, k_local] · B[k_local, n])
  int world = 2;
  int64_t m_shard = 0;
  int64_t k_local = 0;
  int64_t n = 0;
  int elem_bytes = 4;
};
// MoE layer 0: token dispatch + grouped GEMM [rows, hidden] x [hidden, ffn] per local expert.
// rows_from_source[s][e] = rows that source rank s sends to this rank's local expert e
// (rank r's own rows are rows_from_source[r]). Layer 1 uses the same routing in reverse.
struct MoeShape {
  int world = 2;
  std::vector<std::vector<int64_t>> rows_from_source;  // [world][local_experts]
  int64_t hidden = 0;
  int64_t ffn = 0;
  int topk = 2;
  int elem_bytes = 4;
  int64_t tile_m = 64;  // fused tile rows (layer 0); default 64
};

// --- Trace -------------------------------------------------------------------------------------
enum class SimEventKind {
  kTileStart,
  kTileEnd,
  kChunkSend,
  kChunkArrive,
  kReduceStart,
  kReduceEnd
};
std::string_view SimEventKindName(SimEventKind kind);

struct SimEvent {
  SimEventKind kind = SimEventKind::kTileStart;
  double time_s = 0;  // virtual time
  int item = -1;      // tile/work-item index (tile events) or chunk index (chunk/reduce events)
  int pool = -1;      // worker pool of tile/reduce events (0 = GEMM workers)
  int worker = -1;    // worker within the pool (tile/reduce events)
  int peer = -1;      // source rank (AG/MoE0 arrivals, tiles' data) or destination rank (RS)
  int64_t bytes = 0;  // chunk events
  std::vector<int> waits_on;  // tile start: the chunk indices it waited for
};

struct SimTrace {
  std::vector<SimEvent> events;  // sorted by time_s (stable: start before end at equal time)
};

// Chrome trace JSON text (chrome://tracing / Perfetto): tiles as complete events on the worker
// tracks, chunks as complete events on a "link" track (send → arrive), reductions on "reducer".
std::string SimTraceToChromeJson(const SimTrace& trace, std::string_view process_name);

// --- Predictions -------------------------------------------------------------------------------
struct VariantPrediction {
  OverlapMode mode = OverlapMode::kSequential;
  int splits = 1;        // S used (1 for sequential/decomposed)
  double seconds = 0;    // predicted op time
  double compute_s = 0;  // sum of compute item costs (busy time of the workers / workers)
  double link_s = 0;     // link busy time
  SimTrace trace;
};

struct Prediction {
  VariantPrediction sequential;
  VariantPrediction decomposed;
  VariantPrediction fused;
  OverlapMode chosen = OverlapMode::kSequential;  // never kAuto
  double chosen_seconds = 0;
  // MoE layer 1 only: the Comet split chosen (N chunks, comm workers out of the core count).
  int moe_splits = 0;
  int moe_comm_workers = 0;

  const VariantPrediction& Get(OverlapMode mode) const;  // kAuto -> the chosen one
};

// kAuto decision from predicted times (see the header comment for the margin rule).
OverlapMode ChooseMode(double sequential_s, double decomposed_s, double fused_s, double margin);

// Single variants (mode must not be kAuto). Errors: kInvalidArgument naming the bad field.
Result<VariantPrediction> SimulateAgGemm(const AgGemmShape& shape, OverlapMode mode,
                                         const SimOptions& options);
Result<VariantPrediction> SimulateGemmRs(const GemmRsShape& shape, OverlapMode mode,
                                         const SimOptions& options);
Result<VariantPrediction> SimulateMoeLayer0(const MoeShape& shape, OverlapMode mode,
                                            const SimOptions& options);

// MoE layer 1: grouped GEMM [rows, ffn] x [ffn, hidden] + top-k combine back to token owners, N
// (= hidden) split into `moe_splits` chunks; `comm_workers` of the `cores` reduce and send while
// the rest compute (fused); sequential/decomposed use all cores for compute.
struct MoeLayer1Options {
  int cores = 2;              // workers available to the op; default 2
  int splits = 8;             // N chunks (fused); default 8
  int comm_workers = 1;       // fused: workers doing combine + send; default 1
  int decomposed_chunks = 2;  // decomposed: N chunks, compute then combine each; default 2
  double reduce_seconds_per_byte = 1.0 / 4e9;  // top-k weighted reduce, per input byte, 1 worker
};
Result<VariantPrediction> SimulateMoeLayer1(const MoeShape& shape, OverlapMode mode,
                                            const MoeLayer1Options& layer1,
                                            const SimOptions& options);
// Comet's adaptive assignment from the model: tries splits in {1,2,4,...,max_splits} (each
// keeping >= 1 column per chunk) and comm_workers in [1, cores-1] and returns the fastest.
Result<MoeLayer1Options> ChooseMoeLayer1Split(const MoeShape& shape, MoeLayer1Options base,
                                              const SimOptions& options, int max_splits = 16);

// All three variants + the kAuto choice.
Result<Prediction> PredictAgGemm(const AgGemmShape& shape, const SimOptions& options);
Result<Prediction> PredictGemmRs(const GemmRsShape& shape, const SimOptions& options);
Result<Prediction> PredictMoeLayer0(const MoeShape& shape, const SimOptions& options);
// Picks the layer-1 split with ChooseMoeLayer1Split first (fills moe_splits/moe_comm_workers).
Result<Prediction> PredictMoeLayer1(const MoeShape& shape, const MoeLayer1Options& layer1,
                                    const SimOptions& options);

}  // namespace loom::overlap
