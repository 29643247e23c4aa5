// FitLink: least-squares fit of the α-β link model from measured chunk transfers.
//
//   t = α · segments + β⁻¹ · bytes · concurrency
//
// `segments` is the number of messages a ring step was split into (each pays α) and
// `concurrency` the number of flows sharing the bottleneck while it ran (1 on a per-sender
// link; on a shared link each of m flows gets β/m, so the fit recovers the link's full β).
// Robust by default: samples are grouped by (segments, concurrency, size within a factor of 2)
// and each group contributes its median time at its median size (stalls of a loaded host are
// outliers that would otherwise leak into α; the median keeps the typical transfer, which is
// what the replay must reproduce); then two regressors, no intercept, solved by the 2x2 normal
// equations. When the samples cannot separate α from β (one message size) α is 0 and
// β⁻¹ = Σ t·x / Σ x²; a negative α is clamped to 0 and β refitted; a β⁻¹ <= 0 (times that do not
// grow with bytes) leaves β unidentified (β⁻¹ = 0, α = mean time).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/base/status.h"

namespace loom::trace::dfg {

struct LinkSample {
  double bytes = 0;
  double ns = 0;  // measured transfer time
  double segments = 1;
  double concurrency = 1;
  int link = 0;       // which link (e.g. the sending rank); FitLink ignores it
  int64_t step = -1;  // training step of the transfer (FitLinkStepTotals); -1 = unknown
  // FitTokenBucket: when the transfer was posted and when it arrived (absolute ns; < 0 unknown),
  // and whether the arrival is a measurement (the receiver was waiting) or only an upper bound.
  double post_ns = -1;
  double arrival_ns = -1;
  bool timed = true;
};

struct LinkFit {
  double alpha_ns = 0;
  double ns_per_byte = 0;
  double r2 = 0;  // coefficient of determination on the fitted points (the group
                  // representatives when robust)
  double rmse_ns = 0;
  int64_t samples = 0;
  bool alpha_identified = true;  // false: one message size, α fixed at 0
  bool beta_identified = true;   // false: times do not grow with bytes (latency-dominated
                                 // transfers); ns_per_byte is 0 and bandwidth what-ifs are void
  int64_t steps = 0;  // FitLinkStepTotals: steps whose totals set β (0: per-transfer fit)
  // FitTokenBucket: a token bucket (Link::burst_bytes) with ns_per_byte as its token rate.
  bool token_bucket = false;
  double burst_bytes = 0;
  double line_ns_per_byte = 0;
  // FitTokenBucket: mean |predicted − measured arrival| over the timed transfers, simulated with
  // the fitted bucket and with the α-β link it started from (same α, FIFO queueing, no burst).
  double tb_error_ns = 0;
  double alpha_beta_error_ns = 0;
  double shaped_fraction = 0;  // of the bytes, the share that waited for tokens (fitted bucket)
  double GBps() const { return ns_per_byte > 0 ? 1.0 / ns_per_byte : 0; }
  // "alpha 52.1 us, beta 1.21 GB/s (0.83 ns/B), R^2 0.97, 120 samples"
  // (+ ", token bucket burst 256.0 KiB, line 1.2 GB/s, arrival error 0.41 ms (alpha-beta 1.1 ms)")
  std::string ToString() const;
};

// kInvalidArgument when there are no samples or a sample is not finite / negative.
// robust = false fits every sample as is (plain least squares).
Result<LinkFit> FitLink(const std::vector<LinkSample>& samples, bool robust = true);

// FitLinkStepTotals: the link the replay needs to reproduce a typical *step*, robust to a loaded
// host. Per-transfer times on a shaped link are a mixture: a rank that waited sends out of a full
// token bucket at line rate, the other direction drains at the shaped rate, and a receiver that
// wakes late stretches one transfer by milliseconds. Any α-β line through such points is poor
// (R² 0.4, α of 1.5 ms charged on every transfer). Instead:
//   α   = the lower quartile of the latency-bound transfers (those whose FitLink time is < 10 %
//         bytes) when there are >= 3 of them and it is below FitLink's α (the lower envelope: a
//         late wake-up only adds), else FitLink's α;
//   β⁻¹ = the median over steps of Σ(t − α·segments) / Σ bytes·concurrency of the step's
//         transfers (a bytes-weighted rate per step; the steps' median, so a stalled step does
//         not count).
// On exact α-β data this returns FitLink's α and β. Needs >= 2 steps with bytes (LinkSample::
// step >= 0); otherwise it returns FitLink(samples). R² and RMSE are of the per-transfer points.
Result<LinkFit> FitLinkStepTotals(const std::vector<LinkSample>& samples);

// FitTokenBucket: rate and burst of a token-bucket link (Link::burst_bytes; dfg/token_bucket.h)
// from transfers with post/arrival times, starting from an α-β fit `ab`. α = the lower quartile
// of the transfers of <= 1 KiB (when >= 3; else ab's α). Each
// link (LinkSample::link) is simulated on its own over its transfers in post order, each step
// starting from the bucket state the same step leaves one training-loop period earlier (the
// replay's periodic steady state; period = median first-post distance per step between traced
// steps, or the step's own first post -> last arrival when longer (a stalled step); a full
// bucket when unknown); the predicted
// arrival is the bytes' drain time + α·segments. Chosen: the (rate, burst) minimizing the mean
// |predicted − measured arrival| over the timed transfers (a late receiver only adds, so the
// untimed ones still take tokens but are not scored): a grid of rate (1/8 octave, 1/8x..64x of
// ab's β: a bursty link's step totals overstate its rate) x burst (1/4 octave: 0 or
// 1 KiB..8 MiB), then twice rate ±1/8 octave (1/64 steps) x burst ±1/2 octave (1/32 steps)
// around the best; line rate on the coarse grid: 0 or the fastest transfer of
// >= 16 KiB's (time − α)/bytes (out of a full bucket; an upper bound) x 2^-j, j = 0..6.
// token_bucket = true in the result when the best burst is >= 4 KiB, its error is below
// `min_gain` x the α-β link's (default 0.85) and at least `min_shaped_fraction` of the bytes
// waited for tokens (default 0.5: a link that mostly sends out of a full bucket is not limited
// by its rate, and α-β prices it as well); otherwise `ab` is returned with both errors.
// kInvalidArgument without timed samples that have post/arrival times.
Result<LinkFit> FitTokenBucket(const std::vector<LinkSample>& samples, const LinkFit& ab,
                               double min_gain = 0.85, double min_shaped_fraction = 0.5);

}  // namespace loom::trace::dfg
