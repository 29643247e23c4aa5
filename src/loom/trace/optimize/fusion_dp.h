// Exact dynamic program for the fusion-only subproblem: the contiguous partition of the
// gradients (backward order) into buckets that minimises the replayed iteration time, codecs
// and overlap fixed as in the base spec.
//
//   LOOM_ASSIGN_OR_RETURN(FusionPlan p, OptimalFusion(spec));
//   p.bucket_begin; p.replayed_ns; p.exact;
//
// Cost decomposition. Let R_r(i) be the end of backward piece i-1 on rank r, read from one
// replay of the compute chains without κ (they do not depend on the buckets then). With serial
// collectives, bucket [j, i) on rank r can start its Sync at
//   S_r = max(R_r(i) + bw_to_sync_gap, F_r(j))      (overlap off: R_r(i) = end of backward)
// where F_r(j) is when rank r's comm device is free after the previous bucket (its last node +
// its measured finish gap). The bucket's collective (Sync, [COMPRESS], ring SEND/RECV,
// [DECOMPRESS]) is then replayed on its own, in a small graph that holds only that collective
// with every rank released at S_r; it yields F_r(i). Nothing else shares the comm devices or the
// links while it runs (serial collectives, and the ring's first SEND waits for every rank's
// Sync), so this is the replayer's own timing of that bucket. The objective is the UPDATE ready
// time max_r max(bw_end_r + bw_to_update_gap_r, F_r(n) + comm_to_update_gap), which the rest of
// the iteration (UPDATE, update collectives, tail) only shifts by a constant.
//   F(i) = min over j < i of  Bucket(j, i, F(j))     — O(n²) bucket replays.
// Exact w.r.t. the replayer (the brute-force test checks it) when: κ = 1 (compute does not slow
// while comm runs), serial_collectives, and identical ranks (then F_r is the same for every r and
// the finish time is non-decreasing in the start time, so keeping only the earliest F per prefix
// loses nothing). Otherwise the DP keeps, per prefix, the F vector with the smallest max over
// ranks — a heuristic, reported as exact = false with the reason.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/trace/dfg/model_spec.h"
#include "loom/trace/replay/replayer.h"

namespace loom::trace::optimize {

struct FusionPlan {
  std::vector<int> bucket_begin{0};
  double objective_ns = 0;  // DP objective: UPDATE ready time (latest over ranks)
  double replayed_ns = 0;   // full replay of the base spec with these buckets
  int bucket_replays = 0;   // small per-bucket replays run
  double search_seconds = 0;
  bool exact = true;           // the DP is exact w.r.t. the replayer for this spec
  std::string inexact_reason;  // why not, when !exact
};

// Errors: a spec that does not validate, per-bucket codecs that differ (fusion-only keeps one
// codec for every bucket), more than `max_grads` gradients (default 400: O(n²) bucket replays).
Result<FusionPlan> OptimalFusion(const dfg::ModelSpec& base,
                                 const replay::ReplayOptions& replay_options = {},
                                 int max_grads = 400);

// The DP objective of one partition (same decomposition, no minimisation): what the brute-force
// test compares OptimalFusion against.
Result<double> FusionObjective(const dfg::ModelSpec& base, const std::vector<int>& bucket_begin,
                               const replay::ReplayOptions& replay_options = {});

}  // namespace loom::trace::optimize
