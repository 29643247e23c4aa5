// MoE layer 0 (dispatch + grouped GEMM) and layer 1 (grouped GEMM + top-k combine) programs
// for the simulator, and Comet's adaptive split choice from the model.
#include <algorithm>
#include <string>

#include "loom/overlap/sim/event_engine.h"
#include "loom/overlap/sim/sim_util.h"
#include "loom/overlap/sim/simulator.h"

namespace loom::overlap {

using internal::PoolKind;
using internal::SimItem;
using internal::SimProgram;
using internal::SplitEven;

namespace {

Status CheckMoe(const MoeShape& s) {
  if (static_cast<int>(s.rows_from_source.size()) != s.world) {
    return InvalidArgumentError("MoE sim: rows_from_source has " +
                                std::to_string(s.rows_from_source.size()) + " sources, world is " +
                                std::to_string(s.world));
  }
  if (s.world < 1 || s.rows_from_source[0].empty()) {
    return InvalidArgumentError("MoE sim: need >= 1 rank and >= 1 local expert");
  }
  for (int src = 0; src < s.world; ++src) {
    if (s.rows_from_source[src].size() != s.rows_from_source[0].size()) {
      return InvalidArgumentError("MoE sim: source " + std::to_string(src) + " lists " +
                                  std::to_string(s.rows_from_source[src].size()) +
                                  " experts, source 0 lists " +
                                  std::to_string(s.rows_from_source[0].size()));
    }
    for (int64_t r : s.rows_from_source[src]) {
      if (r < 0)
        return InvalidArgumentError("MoE sim: negative row count from source " +
                                    std::to_string(src));
    }
  }
  if (s.hidden < 1 || s.ffn < 1 || s.elem_bytes < 1 || s.tile_m < 1) {
    return InvalidArgumentError("MoE sim: hidden, ffn, elem_bytes, tile_m must be >= 1");
  }
  return OkStatus();
}

int64_t SourceRows(const MoeShape& s, int src) {
  int64_t n = 0;
  for (int64_t r : s.rows_from_source[src]) n += r;
  return n;
}

struct Chunk {
  int msg;
  int64_t lo, hi;  // payload rows of the source
};

// Fused layer-0 tiles: per expert, rows sorted by source rank, cut into tile_m-row tiles; each
// tile waits on the chunks of every remote source it spans; tiles ordered by stage
// (max over spanned sources of (src - rank) mod W; local-only first), then expert.
void AddFusedLayer0Tiles(const MoeShape& s, const SimOptions& o,
                         const std::vector<std::vector<Chunk>>& chunks, SimProgram* p) {
  const int experts = static_cast<int>(s.rows_from_source[0].size());
  struct Tile {
    int stage;
    int peer;
    int64_t rows;
    std::vector<int> waits;
  };
  std::vector<Tile> tiles;
  for (int e = 0; e < experts; ++e) {
    std::vector<int64_t> off(s.world + 1, 0), pre(s.world, 0);
    for (int src = 0; src < s.world; ++src) {
      off[src + 1] = off[src] + s.rows_from_source[src][e];
      for (int f = 0; f < e; ++f) pre[src] += s.rows_from_source[src][f];
    }
    for (int64_t t0 = 0; t0 < off[s.world]; t0 += s.tile_m) {
      const int64_t t1 = std::min(off[s.world], t0 + s.tile_m);
      Tile tile{0, o.rank, t1 - t0, {}};
      for (int src = 0; src < s.world; ++src) {
        const int64_t a = std::max(t0, off[src]), b = std::min(t1, off[src + 1]);
        if (a >= b) continue;
        const int stage = (src - o.rank + s.world) % s.world;
        if (stage > tile.stage) tile.stage = stage, tile.peer = src;
        if (src == o.rank) continue;
        const int64_t lo = pre[src] + a - off[src], hi = pre[src] + b - off[src];
        for (const Chunk& c : chunks[src]) {
          if (c.lo < hi && lo < c.hi) tile.waits.push_back(c.msg);
        }
      }
      tiles.push_back(std::move(tile));
    }
  }
  std::stable_sort(tiles.begin(), tiles.end(),
                   [](const Tile& a, const Tile& b) { return a.stage < b.stage; });
  for (Tile& t : tiles) {
    for (int64_t w : internal::ColumnTiles(s.ffn, o.tile_n)) {
      SimItem it;
      it.cost_s = o.cost.Seconds(t.rows, w, s.hidden);
      it.peer = t.peer;
      it.wait_msgs = t.waits;
      p->items.push_back(std::move(it));
    }
  }
}

}  // namespace

Result<VariantPrediction> SimulateMoeLayer0(const MoeShape& s, OverlapMode mode,
                                            const SimOptions& o) {
  LOOM_RETURN_IF_ERROR(internal::CheckCommon(s.world, o, mode));
  LOOM_RETURN_IF_ERROR(CheckMoe(s));
  const int splits = mode == OverlapMode::kFused ? o.splits : 1;
  const int experts = static_cast<int>(s.rows_from_source[0].size());
  const std::vector<int> peers = internal::PeerOrder(s.world, o.rank, false);
  SimProgram p;
  p.pools.push_back({PoolKind::kCompute, o.compute_workers});
  // Dispatch: each remote source's payload (rows sorted by expert) in `splits` chunks.
  std::vector<std::vector<Chunk>> chunks(s.world);
  for (int src : peers) {
    int64_t lo = 0;
    for (int64_t rows : SplitEven(SourceRows(s, src), splits)) {
      chunks[src].push_back({static_cast<int>(p.messages.size()), lo, lo + rows});
      p.messages.push_back({rows * s.hidden * s.elem_bytes, {}, src});
      lo += rows;
    }
  }
  auto all_of_source = [&](int src) {
    std::vector<int> m;
    for (const Chunk& c : chunks[src]) m.push_back(c.msg);
    return m;
  };
  if (mode == OverlapMode::kSequential) {
    for (int e = 0; e < experts; ++e) {
      int64_t rows = 0;
      for (int src = 0; src < s.world; ++src) rows += s.rows_from_source[src][e];
      if (rows == 0) continue;
      SimItem it;
      it.cost_s = o.cost.Seconds(rows, s.ffn, s.hidden);
      for (size_t m = 0; m < p.messages.size(); ++m) it.wait_msgs.push_back(static_cast<int>(m));
      p.items.push_back(std::move(it));
    }
  } else if (mode == OverlapMode::kDecomposed) {
    std::vector<int> order = {o.rank};
    order.insert(order.end(), peers.begin(), peers.end());
    for (int src : order) {
      for (int e = 0; e < experts; ++e) {
        const int64_t rows = s.rows_from_source[src][e];
        if (rows == 0) continue;
        SimItem it;
        it.cost_s = o.cost.Seconds(rows, s.ffn, s.hidden);
        it.peer = src;
        it.wait_msgs = all_of_source(src);
        p.items.push_back(std::move(it));
      }
    }
  } else {
    AddFusedLayer0Tiles(s, o, chunks, &p);
  }
  LOOM_ASSIGN_OR_RETURN(auto r, internal::RunProgram(p, o.link, o.record_trace));
  return internal::ToPrediction(mode, splits, std::move(r));
}

namespace {

Status CheckLayer1(const MoeLayer1Options& l) {
  if (l.cores < 1) return InvalidArgumentError("MoE layer1 sim: cores must be >= 1");
  if (l.splits < 1 || l.decomposed_chunks < 1) {
    return InvalidArgumentError("MoE layer1 sim: splits and decomposed_chunks must be >= 1");
  }
  if (l.comm_workers < 0 || (l.cores >= 2 && l.comm_workers > l.cores - 1) ||
      (l.cores == 1 && l.comm_workers != 0)) {
    return InvalidArgumentError("MoE layer1 sim: comm_workers " + std::to_string(l.comm_workers) +
                                " invalid for " + std::to_string(l.cores) +
                                " cores (need 1..cores-1, or 0 with 1 core)");
  }
  return OkStatus();
}

// One column chunk of layer 1: GEMM items on `gemm_pool` (row parts over gemm_workers), then
// combine items on `comb_pool` (comb_workers parts), then one message per remote token owner.
void AddLayer1Chunk(const MoeShape& s, const SimOptions& o, const MoeLayer1Options& l, int64_t cols,
                    int gemm_pool, int gemm_workers, int comb_pool, int comb_workers,
                    SimProgram* p) {
  int64_t total_rows = 0;
  for (int src = 0; src < s.world; ++src) total_rows += SourceRows(s, src);
  std::vector<int> gemm_items, comb_items;
  for (int64_t rows : SplitEven(total_rows, gemm_workers)) {
    gemm_items.push_back(static_cast<int>(p->items.size()));
    SimItem it;
    it.pool = gemm_pool;
    it.cost_s = o.cost.Seconds(rows, cols, s.ffn);
    p->items.push_back(std::move(it));
  }
  for (int64_t rows : SplitEven(total_rows, comb_workers)) {
    comb_items.push_back(static_cast<int>(p->items.size()));
    SimItem it;
    it.pool = comb_pool;
    it.cost_s = l.reduce_seconds_per_byte * static_cast<double>(rows * cols * s.elem_bytes);
    it.wait_items = gemm_items;
    p->items.push_back(std::move(it));
  }
  for (int dst : internal::PeerOrder(s.world, o.rank, false)) {
    const int64_t rows = SourceRows(s, dst);
    if (rows > 0) p->messages.push_back({rows * cols * s.elem_bytes, comb_items, dst});
  }
}

}  // namespace

Result<VariantPrediction> SimulateMoeLayer1(const MoeShape& s, OverlapMode mode,
                                            const MoeLayer1Options& l, const SimOptions& o) {
  LOOM_RETURN_IF_ERROR(internal::CheckCommon(s.world, o, mode));
  LOOM_RETURN_IF_ERROR(CheckMoe(s));
  LOOM_RETURN_IF_ERROR(CheckLayer1(l));
  SimProgram p;
  p.pools.push_back({PoolKind::kCompute, l.cores});  // 0: compute (GEMM, and combine if shared)
  int splits = 1;
  if (mode == OverlapMode::kSequential) {
    AddLayer1Chunk(s, o, l, s.hidden, 0, l.cores, 0, l.cores, &p);
  } else if (mode == OverlapMode::kDecomposed) {
    splits = l.decomposed_chunks;
    for (int64_t cols : SplitEven(s.hidden, l.decomposed_chunks)) {
      AddLayer1Chunk(s, o, l, cols, 0, l.cores, 0, l.cores, &p);
    }
  } else {
    splits = l.splits;
    const int comm = l.comm_workers;
    int comb_pool = 0, gemm_workers = l.cores, comb_workers = l.cores;
    if (comm > 0) {
      p.pools[0].workers = gemm_workers = l.cores - comm;
      p.pools.push_back({PoolKind::kReduce, comm});  // 1: Comet's communication workers
      comb_pool = 1;
      comb_workers = comm;
    }
    for (int64_t cols : SplitEven(s.hidden, l.splits)) {
      AddLayer1Chunk(s, o, l, cols, 0, gemm_workers, comb_pool, comb_workers, &p);
    }
  }
  const int owner_pool = static_cast<int>(p.pools.size());
  p.pools.push_back({PoolKind::kReduce, 1});  // the owner's reduction of arriving partials
  internal::AddReductions(&p, owner_pool, o.reduce_seconds_per_byte);
  LOOM_ASSIGN_OR_RETURN(auto r, internal::RunProgram(p, o.link, o.record_trace));
  return internal::ToPrediction(mode, splits, std::move(r));
}

Result<MoeLayer1Options> ChooseMoeLayer1Split(const MoeShape& shape, MoeLayer1Options base,
                                              const SimOptions& options, int max_splits) {
  LOOM_RETURN_IF_ERROR(CheckMoe(shape));
  if (base.cores < 1 || max_splits < 1) {
    return InvalidArgumentError("ChooseMoeLayer1Split: cores and max_splits must be >= 1");
  }
  SimOptions o = options;
  o.record_trace = false;
  MoeLayer1Options best = base;
  double best_s = -1;
  const int comm_lo = base.cores >= 2 ? 1 : 0, comm_hi = base.cores >= 2 ? base.cores - 1 : 0;
  for (int splits = 1; splits <= max_splits && splits <= shape.hidden; splits *= 2) {
    for (int comm = comm_lo; comm <= comm_hi; ++comm) {
      MoeLayer1Options cand = base;
      cand.splits = splits;
      cand.comm_workers = comm;
      LOOM_ASSIGN_OR_RETURN(auto v, SimulateMoeLayer1(shape, OverlapMode::kFused, cand, o));
      if (best_s < 0 || v.seconds < best_s) {
        best_s = v.seconds;
        best = cand;
      }
    }
  }
  return best;
}

Result<Prediction> PredictMoeLayer0(const MoeShape& shape, const SimOptions& options) {
  return internal::PredictAll(
      [&](OverlapMode m, const SimOptions& o) { return SimulateMoeLayer0(shape, m, o); }, options);
}

Result<Prediction> PredictMoeLayer1(const MoeShape& shape, const MoeLayer1Options& layer1,
                                    const SimOptions& options) {
  LOOM_ASSIGN_OR_RETURN(MoeLayer1Options chosen, ChooseMoeLayer1Split(shape, layer1, options));
  SimOptions no_candidates = options;  // layer 1's splits come from MoeLayer1Options
  no_candidates.fused_split_candidates.clear();
  LOOM_ASSIGN_OR_RETURN(Prediction out, internal::PredictAll(
                                            [&](OverlapMode m, const SimOptions& o) {
                                              return SimulateMoeLayer1(shape, m, chosen, o);
                                            },
                                            no_candidates));
  out.moe_splits = chosen.splits;
  out.moe_comm_workers = chosen.comm_workers;
  return out;
}

}  // namespace loom::overlap
