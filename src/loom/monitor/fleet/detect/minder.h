// MinderDetector: Minder (NSDI'25) as loom runs it (spec fault_detection.md §1, §7.2). Per
// metric, walked in priority order: the fleet window of w samples (min-max normalised, missing
// mask), one denoiser per metric, s_i = mean distance of machine i's embedding to all others,
// robust z over machines (median/MAD); candidate = argmax z, kept when z >= threshold; the
// continuity gate alerts when one metric keeps the same candidate for T_c seconds.
//
//   MinderOptions o;                         // w = 8, L2, moving-median denoiser
//   auto d = std::make_unique<MinderDetector>(o, GateOptions{3.5, 30}, BuiltinDenoisers());
//   Verdict v = *d->Evaluate(series, t);
//
// Missing data: a machine without data in a metric's window (< half of the w samples) is left out
// of that metric's distances; if at most half the fleet is missing, the lowest-id missing machine
// is that metric's candidate with `missing = true` (it passes the threshold and is gated like any
// other candidate), so an unreachable machine is named, never scored as zero.
// Ablations: identity denoiser (RAW), continuity_s = 1 (no continuity), integrated = true (one
// model: all metrics' embeddings concatenated, channel "all").
// Thread-safety: not thread-safe (scratch buffers, gate state).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/monitor/fleet/detect/detector.h"
#include "loom/monitor/fleet/detect/level_shift.h"
#include "loom/monitor/fleet/detect/peer_scores.h"

namespace loom::monitor {

struct MinderOptions {
  int window = 8;                         // w, samples per window
  Distance distance = Distance::kL2;      // Minder uses L2
  bool integrated = false;                // one model over all metrics (ablation)
  std::vector<std::string> priority;      // metric order; unnamed metrics follow in series order
  int max_metrics = 0;                    // use only the first k metrics in priority order; 0 = all
  int64_t norm_horizon_s = 600;           // min-max normalisation horizon
  double scale_floor = 0.03;              // robust-z scale floor (normalised distance units)
  std::string denoiser = "moving_median"; // for name() only
  // Corroboration (loom's extension, 0 = off = Minder): one channel whose per-machine score is
  // the k-th largest per-metric z of that machine, so a fault must show in k metrics at once;
  // a one-metric excursion (a noise spike) cannot alert. The alert names the k metrics
  // ("gpu_power+gpu_tensor").
  int corroborate = 0;
  // Long-window channels (loom's extension, 0 = off): per metric, one more channel
  // "<metric>@<L>s" after the per-metric ones whose score is |robust z| over machines of each
  // machine's median normalised value over the last L seconds (floor long_scale_floor). A 1.05x
  // fail-slow stretch is below the 1 Hz noise but its level shift is visible over minutes; the
  // median ignores spikes and transients shorter than L/2.
  int64_t long_window_s = 0;
  double long_scale_floor = 0.003;
  // Multiplies the long-window channels' scores: their candidates need z >= threshold /
  // long_weight (the gate has one threshold for all channels).
  double long_weight = 1.0;
  // Level-shift channels (loom's extension, window_s 0 = off): per metric, one more channel
  // "<metric>~<window_s>s" after the long-window ones: each machine's step-averaged level now
  // against its own reference level, compared across machines (level_shift.h).
  LevelShiftOptions shift;
};

// Builds the denoiser for one metric.
using DenoiserFactory = std::function<Result<std::unique_ptr<Denoiser>>(const std::string& metric)>;
DenoiserFactory BuiltinDenoisers(const std::string& type = "moving_median");
// Name of a long-window channel: "gpu_power@120s".
std::string LongWindowChannelName(const std::string& metric, int64_t long_window_s);

class MinderDetector : public ScoredDetector {
 public:
  MinderDetector(MinderOptions options, GateOptions gate, DenoiserFactory denoisers);
  std::string name() const override;
  Result<ScoreStep> Score(const FleetSeries& s, int64_t t) override;
  // Metric indices (into s.metric_names) in the order walked; valid after the first Score().
  const std::vector<int>& metric_order() const { return order_; }

 private:
  Status Prepare(const FleetSeries& s);
  void AddLongWindowChannels(const FleetSeries& s, int64_t t, ScoreStep* step);
  void Corroborate(const FleetSeries& s, const std::vector<uint8_t>& any_missing, ScoreStep* step);
  MinderOptions options_;
  DenoiserFactory make_denoiser_;
  std::vector<std::string> prepared_for_;
  std::vector<int> order_;
  std::vector<std::unique_ptr<Denoiser>> denoisers_;  // per entry of order_
  FleetWindow win_;
  std::vector<float> emb_, sums_, z_;
  std::vector<uint8_t> present_all_;
  std::vector<float> long_level_, long_buf_;  // long-window channels: per-machine median
  std::vector<float> all_z_;  // [channel][machine] for corroboration
  LevelShiftChannels shift_;
};

}  // namespace loom::monitor
