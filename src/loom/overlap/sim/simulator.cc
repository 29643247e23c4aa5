#include "loom/overlap/sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "loom/base/check.h"
#include "loom/overlap/sim/event_engine.h"
#include "loom/overlap/sim/sim_util.h"

namespace loom::overlap {

using internal::PoolKind;
using internal::SimItem;
using internal::SimMessage;
using internal::SimProgram;

double TileCostModel::Seconds(int64_t rows, int64_t cols, int64_t k) const {
  if (rows <= 0 || cols <= 0 || k <= 0) return 0;
  return fixed_s + seconds_per_mac * static_cast<double>(cols) * static_cast<double>(k) *
                       (static_cast<double>(rows) + penalty_rows);
}

Result<TileCostModel> FitTileCostModel(const std::vector<TileSample>& samples,
                                       double penalty_rows) {
  if (samples.size() < 2) {
    return InvalidArgumentError("FitTileCostModel needs >= 2 samples, got " +
                                std::to_string(samples.size()));
  }
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double n = static_cast<double>(samples.size());
  for (const TileSample& s : samples) {
    const double x = static_cast<double>(s.cols) * static_cast<double>(s.k) *
                     (static_cast<double>(s.rows) + penalty_rows);
    sx += x;
    sy += s.seconds;
    sxx += x * x;
    sxy += x * s.seconds;
  }
  const double den = n * sxx - sx * sx;
  if (!(std::fabs(den) > 1e-12 * std::max(1.0, n * sxx))) {
    return InvalidArgumentError("FitTileCostModel: samples all have the same size");
  }
  TileCostModel m;
  m.penalty_rows = penalty_rows;
  m.seconds_per_mac = (n * sxy - sx * sy) / den;
  m.fixed_s = std::max(0.0, (sy - m.seconds_per_mac * sx) / n);
  if (!(m.seconds_per_mac > 0)) {
    return InvalidArgumentError("FitTileCostModel: fitted seconds_per_mac <= 0");
  }
  return m;
}

double LinkModel::MessageSeconds(int64_t bytes) const {
  if (bytes_per_second <= 0) return latency_s;
  return latency_s + static_cast<double>(bytes) / bytes_per_second;
}

std::string_view SimEventKindName(SimEventKind kind) {
  switch (kind) {
    case SimEventKind::kTileStart:
      return "tile_start";
    case SimEventKind::kTileEnd:
      return "tile_end";
    case SimEventKind::kChunkSend:
      return "chunk_send";
    case SimEventKind::kChunkArrive:
      return "chunk_arrive";
    case SimEventKind::kReduceStart:
      return "reduce_start";
    case SimEventKind::kReduceEnd:
      return "reduce_end";
  }
  return "unknown";
}

const VariantPrediction& Prediction::Get(OverlapMode mode) const {
  switch (mode) {
    case OverlapMode::kSequential:
      return sequential;
    case OverlapMode::kDecomposed:
      return decomposed;
    case OverlapMode::kFused:
      return fused;
    case OverlapMode::kAuto:
      return Get(chosen);
  }
  return sequential;
}

OverlapMode ChooseMode(double sequential_s, double decomposed_s, double fused_s, double margin) {
  OverlapMode best = OverlapMode::kSequential;
  double best_s = sequential_s;
  if (decomposed_s < best_s * (1.0 - margin)) {
    best = OverlapMode::kDecomposed;
    best_s = decomposed_s;
  }
  if (fused_s < best_s * (1.0 - margin)) best = OverlapMode::kFused;
  return best;
}

namespace internal {

std::vector<int64_t> SplitEven(int64_t total, int64_t parts) {
  std::vector<int64_t> out;
  if (total <= 0) return out;
  parts = std::clamp<int64_t>(parts, 1, total);
  const int64_t base = total / parts, rem = total % parts;
  for (int64_t i = 0; i < parts; ++i) out.push_back(base + (i < rem ? 1 : 0));
  return out;
}

std::vector<int64_t> ColumnTiles(int64_t n, int64_t tile_n) {
  std::vector<int64_t> out;
  if (tile_n <= 0 || tile_n >= n) return {n};
  for (int64_t c = 0; c < n; c += tile_n) out.push_back(std::min(tile_n, n - c));
  return out;
}

std::vector<int> PeerOrder(int world, int rank, bool xor_swizzle) {
  std::vector<int> out;
  const bool pow2 = world > 0 && (world & (world - 1)) == 0;
  for (int i = 1; i < world; ++i) {
    out.push_back(xor_swizzle && pow2 ? (rank ^ i) : (rank + i) % world);
  }
  return out;
}

Status CheckCommon(int world, const SimOptions& o, OverlapMode mode) {
  if (world < 1)
    return InvalidArgumentError("sim: world must be >= 1, got " + std::to_string(world));
  if (o.rank < 0 || o.rank >= world) {
    return InvalidArgumentError("sim: rank " + std::to_string(o.rank) + " outside world " +
                                std::to_string(world));
  }
  if (o.splits < 1) return InvalidArgumentError("sim: splits must be >= 1");
  if (o.compute_workers < 1) return InvalidArgumentError("sim: compute_workers must be >= 1");
  if (mode == OverlapMode::kAuto) {
    return InvalidArgumentError("sim: Simulate* takes a concrete mode, not kAuto");
  }
  return OkStatus();
}

VariantPrediction ToPrediction(OverlapMode mode, int splits, SimResult&& r) {
  VariantPrediction v;
  v.mode = mode;
  v.splits = splits;
  v.seconds = r.makespan_s;
  v.compute_s = r.compute_busy_s;
  v.link_s = r.link_busy_s;
  v.trace = std::move(r.trace);
  return v;
}

// Adds a reducer pool item per message (owner reduces each arriving chunk). Returns nothing;
// the reductions only extend the makespan.
void AddReductions(SimProgram* p, int reduce_pool, double seconds_per_byte) {
  if (seconds_per_byte <= 0) return;
  for (size_t m = 0; m < p->messages.size(); ++m) {
    SimItem it;
    it.pool = reduce_pool;
    it.cost_s = seconds_per_byte * static_cast<double>(p->messages[m].bytes);
    it.wait_msgs = {static_cast<int>(m)};
    it.peer = p->messages[m].peer;
    it.bytes = p->messages[m].bytes;
    p->items.push_back(std::move(it));
  }
}

}  // namespace internal

using internal::ColumnTiles;
using internal::PeerOrder;
using internal::SplitEven;

Result<VariantPrediction> SimulateAgGemm(const AgGemmShape& s, OverlapMode mode,
                                         const SimOptions& o) {
  LOOM_RETURN_IF_ERROR(internal::CheckCommon(s.world, o, mode));
  if (s.m_shard < 1 || s.k < 1 || s.n_local < 1 || s.elem_bytes < 1) {
    return InvalidArgumentError("SimulateAgGemm: m_shard, k, n_local, elem_bytes must be >= 1");
  }
  const int splits = mode == OverlapMode::kFused ? o.splits : 1;
  const std::vector<int> peers = PeerOrder(s.world, o.rank, /*xor_swizzle=*/false);
  const std::vector<int64_t> parts = SplitEven(s.m_shard, splits);
  SimProgram p;
  p.pools.push_back({PoolKind::kCompute, o.compute_workers});
  // Link: pulls peer shards in tile order (rank+1 first), S chunks per shard.
  std::vector<std::vector<int>> chunk_msg(peers.size());
  for (size_t pi = 0; pi < peers.size(); ++pi) {
    for (int64_t rows : parts) {
      chunk_msg[pi].push_back(static_cast<int>(p.messages.size()));
      p.messages.push_back({rows * s.k * s.elem_bytes, {}, peers[pi]});
    }
  }
  if (mode == OverlapMode::kSequential) {
    SimItem it;
    it.cost_s = o.cost.Seconds(s.world * s.m_shard, s.n_local, s.k);
    for (size_t m = 0; m < p.messages.size(); ++m) it.wait_msgs.push_back(static_cast<int>(m));
    it.peer = -1;
    p.items.push_back(std::move(it));
  } else {
    const std::vector<int64_t> cols = mode == OverlapMode::kFused ? ColumnTiles(s.n_local, o.tile_n)
                                                                  : std::vector<int64_t>{s.n_local};
    // Own shard first, then peers in arrival order.
    for (int64_t pi = -1; pi < static_cast<int64_t>(peers.size()); ++pi) {
      for (size_t c = 0; c < parts.size(); ++c) {
        for (int64_t w : cols) {
          SimItem it;
          it.cost_s = o.cost.Seconds(parts[c], w, s.k);
          it.peer = pi < 0 ? o.rank : peers[pi];
          if (pi >= 0) it.wait_msgs = {chunk_msg[pi][c]};
          p.items.push_back(std::move(it));
        }
      }
    }
  }
  LOOM_ASSIGN_OR_RETURN(auto r, internal::RunProgram(p, o.link, o.record_trace));
  return internal::ToPrediction(mode, splits, std::move(r));
}

Result<VariantPrediction> SimulateGemmRs(const GemmRsShape& s, OverlapMode mode,
                                         const SimOptions& o) {
  LOOM_RETURN_IF_ERROR(internal::CheckCommon(s.world, o, mode));
  if (s.m_shard < 1 || s.k_local < 1 || s.n < 1 || s.elem_bytes < 1) {
    return InvalidArgumentError("SimulateGemmRs: m_shard, k_local, n, elem_bytes must be >= 1");
  }
  const int splits = mode == OverlapMode::kFused ? o.splits : 1;
  // Segments from rank+1 (XOR-swizzled for power-of-two W), own segment last.
  std::vector<int> order = PeerOrder(s.world, o.rank, /*xor_swizzle=*/true);
  order.push_back(o.rank);
  SimProgram p;
  p.pools.push_back({PoolKind::kCompute, o.compute_workers});
  p.pools.push_back({PoolKind::kReduce, 1});
  if (mode == OverlapMode::kSequential) {
    SimItem it;
    it.cost_s = o.cost.Seconds(s.world * s.m_shard, s.n, s.k_local);
    p.items.push_back(std::move(it));
    for (size_t i = 0; i + 1 < order.size(); ++i) {
      p.messages.push_back({s.m_shard * s.n * s.elem_bytes, {0}, order[i]});
    }
  } else {
    const std::vector<int64_t> parts = SplitEven(s.m_shard, splits);
    const std::vector<int64_t> cols =
        mode == OverlapMode::kFused ? ColumnTiles(s.n, o.tile_n) : std::vector<int64_t>{s.n};
    for (int dest : order) {
      for (int64_t rows : parts) {
        for (int64_t w : cols) {
          const int item = static_cast<int>(p.items.size());
          SimItem it;
          it.cost_s = o.cost.Seconds(rows, w, s.k_local);
          it.peer = dest;
          p.items.push_back(std::move(it));
          // Decomposed: one chunk per segment (after its single call); fused: tile-pushed.
          if (dest != o.rank) p.messages.push_back({rows * w * s.elem_bytes, {item}, dest});
        }
      }
    }
  }
  internal::AddReductions(&p, 1, o.reduce_seconds_per_byte);
  LOOM_ASSIGN_OR_RETURN(auto r, internal::RunProgram(p, o.link, o.record_trace));
  return internal::ToPrediction(mode, splits, std::move(r));
}

Result<Prediction> internal::PredictAll(
    const std::function<Result<VariantPrediction>(OverlapMode, const SimOptions&)>& simulate,
    const SimOptions& options) {
  Prediction out;
  LOOM_ASSIGN_OR_RETURN(out.sequential, simulate(OverlapMode::kSequential, options));
  LOOM_ASSIGN_OR_RETURN(out.decomposed, simulate(OverlapMode::kDecomposed, options));
  if (options.fused_split_candidates.empty()) {
    LOOM_ASSIGN_OR_RETURN(out.fused, simulate(OverlapMode::kFused, options));
  } else {
    bool have = false;
    for (int splits : options.fused_split_candidates) {
      SimOptions o = options;
      o.splits = splits;
      LOOM_ASSIGN_OR_RETURN(VariantPrediction v, simulate(OverlapMode::kFused, o));
      if (!have || v.seconds < out.fused.seconds) out.fused = std::move(v);
      have = true;
    }
  }
  out.chosen = ChooseMode(out.sequential.seconds, out.decomposed.seconds, out.fused.seconds,
                          options.auto_margin);
  out.chosen_seconds = out.Get(out.chosen).seconds;
  return out;
}

Result<Prediction> PredictAgGemm(const AgGemmShape& shape, const SimOptions& options) {
  return internal::PredictAll(
      [&](OverlapMode m, const SimOptions& o) { return SimulateAgGemm(shape, m, o); }, options);
}

Result<Prediction> PredictGemmRs(const GemmRsShape& shape, const SimOptions& options) {
  return internal::PredictAll(
      [&](OverlapMode m, const SimOptions& o) { return SimulateGemmRs(shape, m, o); }, options);
}

}  // namespace loom::overlap
