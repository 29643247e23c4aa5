#include "loom/trace/optimize/fusion_dp.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "loom/trace/optimize/optimizer.h"

namespace loom::trace::optimize {
namespace {

using Clock = std::chrono::steady_clock;

// What the per-bucket replays need from the base spec.
struct ComputeTimeline {
  std::vector<std::vector<double>> sync_ready;  // [rank][i]: earliest Sync of a bucket ending at
                                                // gradient i (exclusive), before bw_to_sync_gap
  std::vector<double> update_floor;             // [rank]: backward end + bw_to_update_gap
};

Status CheckUniformCodec(const dfg::ModelSpec& base) {
  for (const dfg::CodecModel& c : base.bucket_codec) {
    if (c.name != base.bucket_codec[0].name || c.ratio != base.bucket_codec[0].ratio) {
      return FailedPreconditionError(
          "fusion DP: the spec's buckets use different codecs; fusion-only search keeps one codec "
          "for every bucket");
    }
  }
  return OkStatus();
}

// Backward end times per rank from one replay without κ (compute chains do not depend on the
// buckets then).
Result<ComputeTimeline> ReadComputeTimeline(const dfg::ModelSpec& base,
                                            const replay::ReplayOptions& options) {
  replay::ReplayOptions no_kappa = options;
  no_kappa.apply_kappa = false;
  LOOM_ASSIGN_OR_RETURN(dfg::Graph g, dfg::BuildGraph(base));
  LOOM_ASSIGN_OR_RETURN(replay::ReplayResult r, replay::Replay(g, no_kappa));
  const int n = static_cast<int>(base.grads.size());
  ComputeTimeline t;
  for (int rank = 0; rank < base.world_size; ++rank) {
    const std::vector<int> bw = g.NodesOf(dfg::NodeKind::kBackward, rank);
    if (static_cast<int>(bw.size()) < n) {
      return InternalError("fusion DP: rank " + std::to_string(rank) + " has " +
                           std::to_string(bw.size()) + " backward nodes for " + std::to_string(n) +
                           " gradients");
    }
    const double bw_end = r.timing[bw.back()].end_ns;  // the tail when there is one
    std::vector<double> ready(n + 1, 0);
    for (int i = 1; i <= n; ++i) ready[i] = base.overlap ? r.timing[bw[i - 1]].end_ns : bw_end;
    t.sync_ready.push_back(std::move(ready));
    t.update_floor.push_back(bw_end + base.ranks[rank].bw_to_update_gap_ns);
  }
  return t;
}

int BaseBucketOf(const dfg::ModelSpec& base, int lo, int hi) {
  const int n = static_cast<int>(base.grads.size());
  for (int b = 0; b < base.num_buckets(); ++b) {
    const int end = b + 1 < base.num_buckets() ? base.bucket_begin[b + 1] : n;
    if (base.bucket_begin[b] == lo && end == hi) return b;
  }
  return -1;
}

// Replays bucket [lo, hi)'s collective alone, rank r's Sync ready at max(ready_r(hi) + gap,
// free[r]); returns when each rank's comm device is free again (last node + finish gap).
Result<std::vector<double>> ReplayBucket(const dfg::ModelSpec& base, const ComputeTimeline& t,
                                         int lo, int hi, const std::vector<double>& free,
                                         const replay::ReplayOptions& options) {
  dfg::ModelSpec s;
  s.world_size = base.world_size;
  s.collective = base.collective;
  s.topology = base.topology;
  s.alpha_ns = base.alpha_ns;
  s.ns_per_byte = base.ns_per_byte;
  s.segment_bytes = base.segment_bytes;
  s.sync_ns = base.sync_ns;
  s.bw_to_sync_gap_ns = base.bw_to_sync_gap_ns;
  s.step_gap_ns = base.step_gap_ns;
  s.recv_ns = base.recv_ns;
  s.recv_ns_per_byte = base.recv_ns_per_byte;
  s.kappa = 1;
  int64_t bytes = 0;
  for (int i = lo; i < hi; ++i) bytes += base.grads[i].bytes;
  s.grads = {{"bucket", bytes}};
  if (!base.bucket_codec.empty()) s.bucket_codec = {base.bucket_codec[0]};
  const int same = BaseBucketOf(base, lo, hi);
  for (int r = 0; r < base.world_size; ++r) {
    const dfg::RankModel& old = base.ranks[r];
    dfg::RankModel m;
    m.head_ns = std::max(t.sync_ready[r][hi], free[r] - base.bw_to_sync_gap_ns);
    m.bw_ns = {0};
    m.egress_alpha_ns = old.egress_alpha_ns;
    m.egress_ns_per_byte = old.egress_ns_per_byte;
    m.bucket_sync_ns = {same >= 0 ? old.BucketSync(same, base.sync_ns) : base.sync_ns};
    m.bucket_finish_ns = {same >= 0 ? dfg::RankModel::At(old.bucket_finish_ns, same) : 0.0};
    s.ranks.push_back(std::move(m));
  }
  LOOM_ASSIGN_OR_RETURN(dfg::Graph g, dfg::BuildGraph(s));
  LOOM_ASSIGN_OR_RETURN(replay::ReplayResult r, replay::Replay(g, options));
  std::vector<double> out(base.world_size);
  for (int rank = 0; rank < base.world_size; ++rank) {
    const std::vector<int> update = g.NodesOf(dfg::NodeKind::kUpdate, rank);
    if (update.size() != 1) return InternalError("fusion DP: bucket graph without one UPDATE");
    out[rank] = r.timing[update[0]].start_ns;  // = last node end + finish gap
  }
  return out;
}

double Objective(const dfg::ModelSpec& base, const ComputeTimeline& t,
                 const std::vector<double>& free) {
  double worst = 0;
  for (int r = 0; r < base.world_size; ++r) {
    worst = std::max({worst, t.update_floor[r], free[r] + base.comm_to_update_gap_ns});
  }
  return worst;
}

double MaxOf(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

bool Uniform(const std::vector<double>& v) {
  for (double x : v) {
    if (std::abs(x - v[0]) > 1e-6 * std::max(1.0, std::abs(v[0]))) return false;
  }
  return true;
}

}  // namespace

Result<double> FusionObjective(const dfg::ModelSpec& base, const std::vector<int>& bucket_begin,
                               const replay::ReplayOptions& replay_options) {
  LOOM_RETURN_IF_ERROR(base.Validate());
  LOOM_RETURN_IF_ERROR(CheckUniformCodec(base));
  dfg::ModelSpec check = base;
  check.bucket_begin = bucket_begin;
  check.bucket_codec.clear();
  LOOM_RETURN_IF_ERROR(check.Validate());
  LOOM_ASSIGN_OR_RETURN(ComputeTimeline t, ReadComputeTimeline(base, replay_options));
  const int n = static_cast<int>(base.grads.size());
  std::vector<double> free(base.world_size, 0);
  for (size_t b = 0; b < bucket_begin.size(); ++b) {
    const int hi = b + 1 < bucket_begin.size() ? bucket_begin[b + 1] : n;
    LOOM_ASSIGN_OR_RETURN(free, ReplayBucket(base, t, bucket_begin[b], hi, free, replay_options));
  }
  return Objective(base, t, free);
}

Result<FusionPlan> OptimalFusion(const dfg::ModelSpec& base,
                                 const replay::ReplayOptions& replay_options, int max_grads) {
  const auto start = Clock::now();
  LOOM_RETURN_IF_ERROR(base.Validate());
  LOOM_RETURN_IF_ERROR(CheckUniformCodec(base));
  const int n = static_cast<int>(base.grads.size());
  if (n > max_grads) {
    return InvalidArgumentError("fusion DP: " + std::to_string(n) + " gradients exceed the limit " +
                                std::to_string(max_grads) + " (O(n^2) bucket replays)");
  }
  LOOM_ASSIGN_OR_RETURN(ComputeTimeline t, ReadComputeTimeline(base, replay_options));
  FusionPlan plan;
  // best[i]: comm-free vector after the best partition of gradients [0, i); from[i]: its last
  // bucket's first gradient.
  std::vector<std::vector<double>> best(n + 1);
  std::vector<int> from(n + 1, -1);
  best[0].assign(base.world_size, 0);
  bool uniform = true;
  for (int i = 1; i <= n; ++i) {
    for (int j = 0; j < i; ++j) {
      LOOM_ASSIGN_OR_RETURN(std::vector<double> f,
                            ReplayBucket(base, t, j, i, best[j], replay_options));
      ++plan.bucket_replays;
      uniform = uniform && Uniform(f);
      const bool better = from[i] < 0 || MaxOf(f) < MaxOf(best[i]) ||
                          (MaxOf(f) == MaxOf(best[i]) && f < best[i]);
      if (better) {
        best[i] = std::move(f);
        from[i] = j;
      }
    }
  }
  std::vector<int> begin;
  for (int i = n; i > 0; i = from[i]) begin.push_back(from[i]);
  std::reverse(begin.begin(), begin.end());
  plan.bucket_begin = begin;
  plan.objective_ns = Objective(base, t, best[n]);

  Strategy s = Strategy::FromSpec(base);
  s.bucket_begin = begin;
  s.codecs.assign(begin.size(), base.bucket_codec.empty() ? "none" : base.bucket_codec[0].name);
  LOOM_ASSIGN_OR_RETURN(plan.replayed_ns, PredictStrategy(base, s, {}, replay_options));

  if (replay_options.apply_kappa && base.kappa > 1) {
    plan.exact = false;
    plan.inexact_reason = "kappa > 1: backward slows while comm runs, which depends on the buckets";
  } else if (!base.serial_collectives) {
    plan.exact = false;
    plan.inexact_reason = "collectives are not serial: buckets share the comm devices and links";
  } else if (!uniform) {
    plan.exact = false;
    plan.inexact_reason = "ranks differ: per-rank comm-free times are not all equal";
  }
  plan.search_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return plan;
}

}  // namespace loom::trace::optimize
