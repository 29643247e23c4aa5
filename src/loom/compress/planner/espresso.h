// EspressoPlan: picks a codec and an encode/decode placement per tensor so that the simulated
// iteration ends earliest (ByteComp/Espresso, arXiv 2205.14465, re-derived for loom's
// TimelineSimulator). A planner, not a compressor: the trainer applies the plan.
//
//   LOOM_ASSIGN_OR_RETURN(TimelineSimulator sim, TimelineSimulator::Create(profile, costs));
//   LOOM_ASSIGN_OR_RETURN(PlanReport r, EspressoPlan(sim));
//   // r.plan[i] for tensor i; r.plan_s <= r.uncompressed_s; r.best_single_s for comparison
//
// Algorithm (every step keeps a change only if the simulated iteration time drops, so the plan
// is never slower than all-uncompressed; candidates in decreasing size, ties by tensor index, so
// the result is deterministic; every step only tries EspressoOptions::placements):
//  (a) simulate all "none"; tensors before the last group of back-to-back communications (the
//      last tensor that took the link the moment it could) are hidden behind backward and stay
//      uncompressed;
//  (b) try "fp16" in the first allowed placement for each remaining tensor (if the cost model
//      lists it), then recompute the hidden prefix under the current plan;
//  (c)+(d) for each allowed placement in order, for each remaining tensor, try every codec in
//      that placement and keep the best (the first placement's pass also tries "none"). With the
//      default {compute, offload} these are Espresso's steps: (c) every codec on the compute
//      stream, (d) every codec on the offload worker (which includes moving an already compressed
//      tensor's encode/decode off the compute stream);
//  then repeat (c)+(d) over all options until nothing improves (at most refine_passes times).
// Beyond Espresso (both measured on random instances against ExactPlan, exact_plan_test.cc):
//  * multi-start: the same local search also runs from all-"none" without step (b) (which can
//    commit the largest tensor to fp16 too early) and from the best uniform plan (one codec and
//    allowed placement everywhere, every tensor a candidate); the best result wins, so
//    plan_s <= min(uncompressed_s, best_single_s);
//  * pair moves among the few largest candidates (one tensor gives up compression so another
//    can take it: single-tensor moves cannot see that), alternated with the local search.
// The trainer's GradReducer encodes, exchanges and decodes on its communication thread, so it
// plans with placements = {Placement::kLink}: the plan then holds only link placements and "none"
// (whose placement is ignored and written as kCompute).
// Cost: about 3 starts x (placements + refine passes) x tensors x options simulations of
// O(tensors) each: ~15k runs, 30-40 ms for 200 tensors, 5 codecs and the default placements on
// this project's shared 2-core VM.
// Thread-safety: reentrant (the simulator is read-only).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "loom/base/status.h"
#include "loom/compress/planner/timeline.h"

namespace loom::compress::planner {

struct EspressoOptions {
  // Where encode/decode may run; every step tries only these, in this order (step (b) uses the
  // first). Non-empty, no repeats. Default {compute, offload} (Espresso's GPU and CPU); the
  // trainer passes {kLink}.
  std::vector<Placement> placements = {Placement::kCompute, Placement::kOffload};
  bool keep_hidden_uncompressed = true;  // step (a); false: every tensor is a candidate
  int refine_passes = 2;                 // extra (c)+(d) rounds until no change; default 2
  bool multi_start = true;               // also run from all-"none" without (b) and from the best
                                         // uniform plan; keep the best; default true
  int pair_moves = 4;                    // > 1: then pairwise moves among this many largest
                                         // candidates; default 4
};

struct PlanReport {
  std::vector<TensorStrategy> plan;  // one per tensor, in backward order
  double plan_s = 0;                 // simulated iteration time of `plan`
  double uncompressed_s = 0;         // all "none"
  TensorStrategy best_single;        // the best uniform plan: one codec and placement everywhere
  double best_single_s = 0;          // (all "none" when no codec beats it)
  int first_candidate = 0;           // tensors before this index were hidden (step a)
  int64_t simulations = 0;           // timeline runs spent
};

// kInvalidArgument for bad placements or a cost model without "none".
Result<PlanReport> EspressoPlan(const TimelineSimulator& sim, const EspressoOptions& options = {});

// An allowed-placement list is non-empty, lists each placement at most once and holds only
// compute, offload and link (shared by EspressoPlan and ExactPlan).
Status ValidatePlacements(std::span<const Placement> placements);

// Index of the first tensor of the last back-to-back communication group of `t`: the largest i
// that did not wait for the link (link_start_s <= link_ready_s; 0 for an empty timeline).
int LastCommGroupStart(const Timeline& t);

}  // namespace loom::compress::planner
