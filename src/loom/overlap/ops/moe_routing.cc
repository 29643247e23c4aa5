#include "loom/overlap/ops/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "loom/base/check.h"
#include "loom/base/clock.h"
#include "loom/base/philox.h"

namespace loom::overlap {
namespace {

uint64_t Mix(uint64_t h, uint64_t v) {
  // FNV-1a over the 8 bytes of v.
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= 1099511628211ull;
  }
  return h;
}

// Samples top_k distinct experts from `weights` (without replacement, renormalising).
void SampleDistinct(std::vector<double> weights, int32_t top_k, PhiloxStream* rng, int32_t* out) {
  for (int32_t s = 0; s < top_k; ++s) {
    double total = 0;
    for (double w : weights) total += w;
    double u = static_cast<double>(rng->NextUniform()) * total;
    int32_t pick = -1;
    for (size_t e = 0; e < weights.size(); ++e) {
      if (weights[e] <= 0) continue;
      pick = static_cast<int32_t>(e);  // last positive expert absorbs rounding
      if (u < weights[e]) break;
      u -= weights[e];
    }
    LOOM_CHECK(pick >= 0) << "no expert left to sample";
    out[s] = pick;
    weights[static_cast<size_t>(pick)] = 0;
  }
}

}  // namespace

Status ValidateMoeShape(const MoeOpShape& s) {
  if (s.world < 1)
    return InvalidArgumentError("moe: world must be ≥ 1, got " + std::to_string(s.world));
  if (s.num_experts < 1 || s.num_experts % s.world != 0) {
    return InvalidArgumentError("moe: num_experts " + std::to_string(s.num_experts) +
                                " must be a positive multiple of world " + std::to_string(s.world));
  }
  if (s.top_k < 1 || s.top_k > s.num_experts) {
    return InvalidArgumentError("moe: top_k " + std::to_string(s.top_k) + " must be in [1, " +
                                std::to_string(s.num_experts) + "] (num_experts)");
  }
  if (s.tokens_per_rank < 0 || s.hidden < 1 || s.ffn < 1) {
    return InvalidArgumentError("moe: need tokens_per_rank ≥ 0, hidden ≥ 1, ffn ≥ 1; got " +
                                std::to_string(s.tokens_per_rank) + ", " +
                                std::to_string(s.hidden) + ", " + std::to_string(s.ffn));
  }
  return OkStatus();
}

uint64_t HashMoeShape(const MoeOpShape& s) {
  uint64_t h = 1469598103934665603ull;
  for (int64_t v : {int64_t{s.world}, int64_t{s.num_experts}, int64_t{s.top_k}, s.tokens_per_rank,
                    s.hidden, s.ffn}) {
    h = Mix(h, static_cast<uint64_t>(v));
  }
  return h;
}

std::string_view RoutingKindName(RoutingKind kind) {
  return kind == RoutingKind::kZipf ? "zipf" : "uniform";
}

Result<RoutingKind> ParseRoutingKind(std::string_view name) {
  if (name == "uniform") return RoutingKind::kUniform;
  if (name == "zipf") return RoutingKind::kZipf;
  return InvalidArgumentError("moe: unknown routing kind '" + std::string(name) +
                              "' (expected uniform or zipf)");
}

Result<Routing> GenerateRouting(const MoeOpShape& shape, int rank, const RoutingOptions& options) {
  LOOM_RETURN_IF_ERROR(ValidateMoeShape(shape));
  const int32_t num_experts = shape.num_experts;
  if (options.excluded_expert >= num_experts ||
      (options.excluded_expert >= 0 && shape.top_k > num_experts - 1)) {
    return InvalidArgumentError("moe routing: excluded_expert " +
                                std::to_string(options.excluded_expert) +
                                " out of range or leaves fewer than top_k experts");
  }
  std::vector<double> weights(static_cast<size_t>(num_experts), 1.0);
  if (options.kind == RoutingKind::kZipf) {
    for (int32_t e = 0; e < num_experts; ++e) weights[e] = 1.0 / std::pow(e + 1.0, options.zipf_s);
  }
  if (options.excluded_expert >= 0) weights[options.excluded_expert] = 0;

  Routing r;
  r.tokens = shape.tokens_per_rank;
  r.top_k = shape.top_k;
  r.expert.resize(static_cast<size_t>(r.tokens * r.top_k));
  r.gate.resize(r.expert.size());
  PhiloxStream rng(options.seed, static_cast<uint64_t>(rank));
  std::vector<double> logits(static_cast<size_t>(r.top_k));
  for (int64_t t = 0; t < r.tokens; ++t) {
    SampleDistinct(weights, r.top_k, &rng, &r.expert[t * r.top_k]);
    double sum = 0;
    for (auto& l : logits) {
      l = std::exp(static_cast<double>(rng.NextNormal()));
      sum += l;
    }
    for (int32_t s = 0; s < r.top_k; ++s)
      r.gate[t * r.top_k + s] = static_cast<float>(logits[s] / sum);
  }
  return r;
}

Status ValidateRouting(const MoeOpShape& shape, const Routing& r) {
  if (r.top_k != shape.top_k || r.top_k > shape.num_experts || r.top_k < 1) {
    return InvalidArgumentError("moe routing: top_k " + std::to_string(r.top_k) +
                                " differs from the shape's " + std::to_string(shape.top_k) +
                                " or exceeds num_experts " + std::to_string(shape.num_experts));
  }
  if (r.tokens != shape.tokens_per_rank ||
      r.expert.size() != static_cast<size_t>(r.tokens * r.top_k) ||
      r.gate.size() != r.expert.size()) {
    return InvalidArgumentError("moe routing: " + std::to_string(r.tokens) + " tokens with " +
                                std::to_string(r.expert.size()) + " expert ids and " +
                                std::to_string(r.gate.size()) + " gates; shape wants " +
                                std::to_string(shape.tokens_per_rank) + " tokens × top_k " +
                                std::to_string(shape.top_k));
  }
  for (int64_t t = 0; t < r.tokens; ++t) {
    for (int32_t s = 0; s < r.top_k; ++s) {
      const int32_t e = r.expert[t * r.top_k + s];
      const std::string where = "token " + std::to_string(t) + " slot " + std::to_string(s);
      if (e < 0 || e >= shape.num_experts) {
        return InvalidArgumentError("moe routing: " + where + ": expert id " + std::to_string(e) +
                                    " out of range [0, " + std::to_string(shape.num_experts) + ")");
      }
      for (int32_t s2 = 0; s2 < s; ++s2) {
        if (r.expert[t * r.top_k + s2] == e) {
          return InvalidArgumentError("moe routing: " + where + ": expert " + std::to_string(e) +
                                      " repeated (slot " + std::to_string(s2) + ")");
        }
      }
      if (!std::isfinite(r.gate[t * r.top_k + s])) {
        return InvalidArgumentError("moe routing: " + where + ": gate is not finite");
      }
    }
  }
  return OkStatus();
}

std::vector<int64_t> CountPerExpert(const MoeOpShape& shape, const Routing& routing) {
  std::vector<int64_t> counts(static_cast<size_t>(shape.num_experts), 0);
  for (int32_t e : routing.expert) ++counts[static_cast<size_t>(e)];
  return counts;
}

SendChunk BuildSendChunk(const MoeOpShape& shape, int src, const Routing& routing, int dest) {
  const int32_t epr = shape.experts_per_rank();
  SendChunk chunk;
  chunk.expert_rows.assign(static_cast<size_t>(epr), 0);
  for (int32_t le = 0; le < epr; ++le) {
    const int32_t e = dest * epr + le;
    for (int64_t t = 0; t < routing.tokens; ++t) {
      for (int32_t s = 0; s < routing.top_k; ++s) {
        if (routing.expert[t * routing.top_k + s] != e) continue;
        chunk.rows.push_back({src, static_cast<int32_t>(t), s});
        ++chunk.expert_rows[le];
      }
    }
  }
  return chunk;
}

int64_t RecvLayout::RowsFrom(int src) const {
  int64_t n = 0;
  for (int le = 0; le < experts_per_rank; ++le) n += counts[src * experts_per_rank + le];
  return n;
}

int64_t RecvLayout::ChunkOffset(int src, int le) const {
  int64_t n = 0;
  for (int l = 0; l < le; ++l) n += counts[src * experts_per_rank + l];
  return n;
}

RecvLayout BuildRecvLayout(const MoeOpShape& shape, int rank, std::span<const Routing> routings,
                           int64_t tile_rows) {
  LOOM_CHECK(tile_rows >= 1) << "tile_rows " << tile_rows;
  LOOM_CHECK(static_cast<int>(routings.size()) == shape.world) << routings.size();
  RecvLayout l;
  l.rank = rank;
  l.world = shape.world;
  l.experts_per_rank = shape.experts_per_rank();
  l.tile_rows = tile_rows;
  const int W = l.world, epr = l.experts_per_rank;
  std::vector<SendChunk> chunks;
  for (int src = 0; src < W; ++src)
    chunks.push_back(BuildSendChunk(shape, src, routings[src], rank));
  l.counts.resize(static_cast<size_t>(W) * epr);
  for (int src = 0; src < W; ++src) {
    for (int le = 0; le < epr; ++le) l.counts[src * epr + le] = chunks[src].expert_rows[le];
  }
  l.group_row0.resize(epr);
  l.group_rows.resize(epr);
  l.seg_row0.resize(static_cast<size_t>(epr) * W);
  int64_t row = 0;
  for (int le = 0; le < epr; ++le) {
    l.group_row0[le] = row;
    for (int j = 0; j < W; ++j) {
      const int src = l.SourceOfSegment(j);
      l.seg_row0[le * W + j] = row;
      const int64_t off = l.ChunkOffset(src, le);
      const int64_t n = l.counts[src * epr + le];
      for (int64_t i = 0; i < n; ++i) l.rows.push_back(chunks[src].rows[off + i]);
      row += n;
    }
    l.group_rows[le] = row - l.group_row0[le];
    const int64_t padded = (l.group_rows[le] + tile_rows - 1) / tile_rows * tile_rows;
    for (int64_t i = l.group_rows[le]; i < padded; ++i) l.rows.push_back(RowRef{});
    row = l.group_row0[le] + padded;
  }
  l.total_rows = row;
  // Tiles per group; segment range from the rows they span; stage = last segment.
  for (int le = 0; le < epr; ++le) {
    for (int64_t r0 = 0; r0 < l.group_rows[le]; r0 += tile_rows) {
      MoeTile t;
      t.local_expert = le;
      t.row0 = l.group_row0[le] + r0;
      t.rows = std::min(tile_rows, l.group_rows[le] - r0);
      t.seg_beg = W;
      t.seg_end = -1;
      for (int j = 0; j < W; ++j) {
        const int64_t s0 = l.seg_row0[le * W + j], s1 = s0 + l.SegmentRows(le, j);
        if (s1 > t.row0 && s0 < t.row0 + t.rows) {
          t.seg_beg = std::min(t.seg_beg, j);
          t.seg_end = std::max(t.seg_end, j);
        }
      }
      t.stage = t.seg_end;
      l.tiles.push_back(t);
    }
  }
  std::stable_sort(l.tiles.begin(), l.tiles.end(),
                   [](const MoeTile& a, const MoeTile& b) { return a.stage < b.stage; });
  return l;
}

std::vector<int64_t> CountAll(const MoeOpShape& shape, std::span<const Routing> routings) {
  std::vector<int64_t> all;
  for (const Routing& r : routings) {
    std::vector<int64_t> c = CountPerExpert(shape, r);
    all.insert(all.end(), c.begin(), c.end());
  }
  return all;
}

std::vector<int64_t> SegmentRow0s(const MoeOpShape& shape, std::span<const int64_t> counts_all,
                                  int dest, int64_t tile_rows) {
  const int W = shape.world, epr = shape.experts_per_rank(), E = shape.num_experts;
  std::vector<int64_t> out(static_cast<size_t>(epr) * W);
  int64_t row = 0;
  for (int le = 0; le < epr; ++le) {
    const int64_t group0 = row;
    for (int j = 0; j < W; ++j) {
      out[le * W + j] = row;
      row += counts_all[static_cast<size_t>((dest + j) % W) * E + dest * epr + le];
    }
    row = group0 + (row - group0 + tile_rows - 1) / tile_rows * tile_rows;
  }
  return out;
}

int64_t MaxRecvRows(const MoeOpShape& shape, int64_t tile_rows) {
  return int64_t{shape.world} * shape.tokens_per_rank * shape.top_k +
         int64_t{shape.experts_per_rank()} * (tile_rows - 1);
}

int32_t SplitOf(int64_t rows, int32_t splits, int64_t row) {
  LOOM_DCHECK(row >= 0 && row < rows);
  // Largest s with rows·s/splits ≤ row.
  int32_t s = static_cast<int32_t>(((row + 1) * splits - 1) / rows);
  while (s > 0 && SplitBegin(rows, splits, s) > row) --s;
  while (s + 1 < splits && SplitBegin(rows, splits, s + 1) <= row) ++s;
  return s;
}

// ---------------------------------------------------------------------------------------------
// RoutingExchange: slot = {hash u64, tokens i64, top_k i32, pad i32, expert[T·k] i32, gate[T·k]}.

namespace {
constexpr int64_t kSlotHeader = 24;
}

Result<RoutingExchange> RoutingExchange::Create(Runtime* runtime, const MoeOpShape& shape) {
  RoutingExchange x;
  x.runtime_ = runtime;
  x.shape_ = shape;
  const int64_t entries = shape.tokens_per_rank * shape.top_k;
  x.slot_bytes_ = (kSlotHeader + entries * 8 + 63) / 64 * 64;
  LOOM_ASSIGN_OR_RETURN(void* buf, runtime->Alloc(x.slot_bytes_ * shape.world));
  x.buffer_ = static_cast<char*>(buf);
  LOOM_ASSIGN_OR_RETURN(x.signal_, runtime->AllocSignals(shape.world));
  return x;
}

Result<std::vector<Routing>> RoutingExchange::Exchange(const Routing& mine, uint64_t config_hash,
                                                       uint32_t epoch, std::string_view what) {
  LOOM_CHECK(runtime_ != nullptr) << "RoutingExchange used before Create";
  LOOM_RETURN_IF_ERROR(ValidateRouting(shape_, mine).WithContext(what));
  const int me = runtime_->rank(), W = shape_.world;
  const int64_t entries = mine.tokens * mine.top_k;
  char* slot = buffer_ + slot_bytes_ * me;
  std::memcpy(slot, &config_hash, 8);
  std::memcpy(slot + 8, &mine.tokens, 8);
  std::memcpy(slot + 16, &mine.top_k, 4);
  std::memcpy(slot + kSlotHeader, mine.expert.data(), entries * 4);
  std::memcpy(slot + kSlotHeader + entries * 4, mine.gate.data(), entries * 4);
  for (int i = 1; i <= W; ++i) {  // peers from rank+1 on, this rank last
    const int pe = (me + i) % W;
    if (pe == me) {
      runtime_->notify(signal_ + me, me, epoch);
    } else {
      runtime_->put_signal(slot, slot, kSlotHeader + entries * 8, signal_ + me, epoch,
                           SignalOp::kSet, pe);
    }
  }
  LOOM_RETURN_IF_ERROR(runtime_->wait(signal_, W, epoch, what));
  std::vector<Routing> all(static_cast<size_t>(W));
  for (int src = 0; src < W; ++src) {
    const char* s = buffer_ + slot_bytes_ * src;
    uint64_t hash;
    Routing& r = all[src];
    std::memcpy(&hash, s, 8);
    std::memcpy(&r.tokens, s + 8, 8);
    std::memcpy(&r.top_k, s + 16, 4);
    if (hash != config_hash || r.tokens != shape_.tokens_per_rank || r.top_k != shape_.top_k) {
      return InvalidArgumentError(
          std::string(what) + ": rank " + std::to_string(src) +
          " is configured differently from rank " + std::to_string(me) + " (config hash " +
          std::to_string(hash) + " vs " + std::to_string(config_hash) + ", tokens " +
          std::to_string(r.tokens) + ", top_k " + std::to_string(r.top_k) + ")");
    }
    r.expert.resize(static_cast<size_t>(entries));
    r.gate.resize(static_cast<size_t>(entries));
    std::memcpy(r.expert.data(), s + kSlotHeader, entries * 4);
    std::memcpy(r.gate.data(), s + kSlotHeader + entries * 4, entries * 4);
    LOOM_RETURN_IF_ERROR(ValidateRouting(shape_, r).WithContext(
        std::string(what) + ": routing of rank " + std::to_string(src)));
  }
  return all;
}

Result<double> AllRanksMax(Runtime* runtime, double value, std::string_view what) {
  const int me = runtime->rank(), W = runtime->num_ranks();
  LOOM_ASSIGN_OR_RETURN(double* slots, runtime->AllocArray<double>(W));
  LOOM_ASSIGN_OR_RETURN(SignalId sig, runtime->AllocSignals(W));
  slots[me] = value;
  for (int pe = 0; pe < W; ++pe) {
    if (pe == me) {
      runtime->notify(sig + me, me, 1);
    } else {
      runtime->put_signal(&slots[me], &slots[me], sizeof(double), sig + me, 1, SignalOp::kSet, pe);
    }
  }
  LOOM_RETURN_IF_ERROR(runtime->wait(sig, W, 1, what));
  double m = value;
  for (int r = 0; r < W; ++r) m = std::max(m, slots[r]);
  return m;
}

double MeasureSeconds(const std::function<void()>& fn) {
  fn();
  double t[3];
  for (double& s : t) {
    const int64_t t0 = NowNanos();
    fn();
    s = (NowNanos() - t0) * 1e-9;
  }
  std::sort(t, t + 3);
  return t[1];
}

// ---------------------------------------------------------------------------------------------

MoeReference ComputeMoeReference(const MoeOpShape& shape, std::span<const Routing> routings,
                                 std::span<const std::vector<float>> x,
                                 std::span<const std::vector<float>> w1,
                                 std::span<const std::vector<float>> w2) {
  const int64_t T = shape.tokens_per_rank, H = shape.hidden, F = shape.ffn;
  const int32_t K = shape.top_k;
  MoeReference ref;
  ref.h.resize(shape.world);
  ref.y.resize(shape.world);
  std::vector<double> acc(static_cast<size_t>(std::max(H, F)));
  for (int src = 0; src < shape.world; ++src) {
    ref.h[src].assign(static_cast<size_t>(T * K * F), 0.f);
    ref.y[src].assign(static_cast<size_t>(T * H), 0.f);
    for (int64_t t = 0; t < T; ++t) {
      std::vector<double> y(static_cast<size_t>(H), 0.0);
      for (int32_t s = 0; s < K; ++s) {
        const int32_t e = routings[src].expert[t * K + s];
        const float* xr = &x[src][t * H];
        std::fill(acc.begin(), acc.begin() + F, 0.0);
        for (int64_t i = 0; i < H; ++i) {
          const float* w = &w1[e][i * F];
          for (int64_t j = 0; j < F; ++j) acc[j] += static_cast<double>(xr[i]) * w[j];
        }
        float* h = &ref.h[src][(t * K + s) * F];
        for (int64_t j = 0; j < F; ++j) h[j] = static_cast<float>(acc[j]);
        std::fill(acc.begin(), acc.begin() + H, 0.0);
        for (int64_t i = 0; i < F; ++i) {
          const float* w = &w2[e][i * H];
          for (int64_t j = 0; j < H; ++j) acc[j] += static_cast<double>(h[i]) * w[j];
        }
        const double g = routings[src].gate[t * K + s];
        for (int64_t j = 0; j < H; ++j) y[j] += g * acc[j];
      }
      for (int64_t j = 0; j < H; ++j) ref.y[src][t * H + j] = static_cast<float>(y[j]);
    }
  }
  return ref;
}

}  // namespace loom::overlap
