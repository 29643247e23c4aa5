// ExactPlan: the optimal per-tensor (codec x placement) plan for a small problem, to measure how
// far EspressoPlan's greedy is from optimal.
//
//   LOOM_ASSIGN_OR_RETURN(ExactResult best, ExactPlan(sim));   // <= 12 tensors
//   double gap = greedy.plan_s / best.plan_s - 1;
//
// Depth-first enumeration of every tensor's options ("none", then each codec in each allowed
// placement) in tensor order, with branch and bound. The incumbent starts as the better of
// all-"none" and EspressoPlan's plan (same placements). A prefix's bound is exact about the
// prefix and optimistic about the rest: tensor i's link end does not depend on later tensors
// (the link is FIFO in tensor order, later encodes only delay later tensors, later worker jobs
// arrive after the prefix's encodes), the backward end and the prefix's decode ends can only
// move later, and each later tensor j leaves the link no earlier than
// L_j = min over options of max(L_{j-1}, ready_j + encode) + link (+ decode for its own end),
// or, for link placement, max(L_{j-1}, ready_j) + encode + link + decode (the link decodes it).
// A branch is cut only when its bound is >= the incumbent, so the result is optimal for the
// TimelineSimulator; ties keep the incumbent, then the first plan found: deterministic.
// Cost: exponential in the worst case. Measured (5 codecs x {compute, offload}, 9 options per
// tensor): instances of <= 7 tensors take < 1 ms; of 12 tensors, milliseconds to seconds, but an
// instance whose many small tensors do not matter cannot be pruned and hits max_nodes
// (kResourceExhausted). kInvalidArgument for bad placements (ValidatePlacements).
// Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/base/status.h"
#include "loom/compress/planner/timeline.h"

namespace loom::compress::planner {

struct ExactOptions {
  int max_tensors = 12;  // refuse larger problems; default 12
  // Placements enumerated (see EspressoOptions::placements); default {compute, offload}.
  std::vector<Placement> placements = {Placement::kCompute, Placement::kOffload};
  int64_t max_nodes = 20'000'000;  // prefixes visited before giving up with
                                   // kResourceExhausted (~2 us each); default 2e7
};

struct ExactResult {
  std::vector<TensorStrategy> plan;
  double plan_s = 0;
  int64_t nodes = 0;  // prefixes visited
};

Result<ExactResult> ExactPlan(const TimelineSimulator& sim, const ExactOptions& options = {});

}  // namespace loom::compress::planner
