// The R each trial of `loom bench overlap` actually ran at, and each fused/decomposed pair judged
// against the closed form at that R (README "The R = 1 arms did not run at R = 1").
//
// On a shared VM the GEMM speed drifts up to 3x within minutes, so an arm whose link was sized for
// R = 1 runs at other R; the closed-form fused/decomposed ratio falls fast away from R = 1 (1.41x
// at R = 1, S = 8; 1.25x at 0.75; 1.21x at 2). These functions measure R per trial and per pair
// and compare the measured speedup with the closed form at that R:
//
//   r_trial = t_comm / t_comp,round     t_comp,round = median of the round's compute times (its
//                                       compute-only probe and every non-auto variant's compute_s)
//   r_pair  = t_comm / ((c_dec + c_fused) / 2)   the pair's own GEMM speed in that round
//   measured = t_dec / t_fused      closed_form = Dec(1, r_pair) / Fused_S(1, r_pair)
//   vs_closed_form = measured / closed_form   (1 = the schedule is at its model at its own R)
//   closed_form_own_tc = Dec(c_dec, t_comm) / Fused_S(c_fused, t_comm)   (each variant's own
//                        GEMM time: also models a GEMM-speed change between the two runs)
//
// A pair counts as "at R in the band" only when both variants' own R (t_comm / c_dec and
// t_comm / c_fused) lie in it: a pair whose two runs saw different GEMM speeds did not run at one
// R, and selecting on the mean alone would pull in pairs whose decomposed run happened to be slow.
//
// t_comm is the round's comm-only time at the paced link. The closed forms are sim/closed_form.h's
// (through VariantIdealSeconds; MoE uses the AG+GEMM formulas, an approximation).
//
//   json own = AnalyzeOwnRatio(arm["trials"], kept, BenchOp::kGemmRs, /*world=*/2, variants, {});
//   own["pairs"]["fused_s8"]["vs_closed_form"]["median"]
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loom/overlap/bench/bench_config.h"

namespace loom::overlap {

// Closed-form decomposed / fused(S) time ratio at R = t_comm / t_comp (t_comp = 1, no reduction
// term): 1.41 at R = 1, S = 8, W = 2. NaN unless r > 0.
double ClosedFormFusedSpeedup(BenchOp op, int splits, double r, int world);

// The median of the positive finite values of `compute_times` (NaN if none): the round's t_comp.
double RoundComputeSeconds(const std::vector<double>& compute_times);

// One fused/decomposed pair of one round.
struct PairAtOwnRatio {
  double r = 0;                   // r_pair
  double r_dec = 0;               // t_comm / c_dec
  double r_fused = 0;             // t_comm / c_fused
  double measured = 0;            // t_dec / t_fused
  double closed_form = 0;         // ClosedFormFusedSpeedup at r
  double vs_closed_form = 0;      // measured / closed_form
  double closed_form_own_tc = 0;  // Dec(c_dec, t_comm) / Fused_S(c_fused, t_comm)
  double vs_closed_form_own_tc = 0;
  bool InBand(double lo, double hi) const {
    return r_dec >= lo && r_dec <= hi && r_fused >= lo && r_fused <= hi;
  }
};
// NaN fields where an input is not positive.
PairAtOwnRatio EvaluatePair(BenchOp op, int splits, int world, double t_comm, double c_dec,
                            double c_fused, double t_dec, double t_fused);

// The R band whose pairs count as "at R = 1" for the target ([0.8, 1.25]: a factor 1.25 either
// side).
struct RatioBand {
  double lo = 0.8;
  double hi = 1.25;
};

// Per-trial own R and per fused variant the pair analysis over trials[i] for i in `keep` (the
// arm's kept trials: each with t_comp_s, t_comm_s, x.<variant>.{wall_s, compute_s}). Returns
//   {"r_trial": [..], "t_comp_round_s": [..], "r_trial_stats": quartiles,
//    "round_compute_spread": quartiles of max/min of each round's compute times,
//    "band": [lo, hi],
//    "pairs": {"fused_sS": {"r_pair": [..], "r_dec": [..], "r_fused": [..], "in_band_flags": [..],
//              "measured": [..], "closed_form": [..], "vs_closed_form": [..],
//              "closed_form_own_tc": [..], "vs_closed_form_own_tc": [..], "r_pair_stats",
//              "measured_median", "closed_form_median", "vs_closed_form_median",
//              "vs_closed_form_own_tc_median", "in_band": {"n", "measured_median",
//              "closed_form_median", "vs_closed_form_median", "vs_closed_form_own_tc_median"}}}}
// (JSON null for NaN). Variants not named fused_s<S> are not paired.
nlohmann::json AnalyzeOwnRatio(const nlohmann::json& trials, const std::vector<size_t>& keep,
                               BenchOp op, int world, const std::vector<std::string>& variants,
                               RatioBand band);

}  // namespace loom::overlap
