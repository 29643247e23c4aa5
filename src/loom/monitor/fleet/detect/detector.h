// Detector: the interface every faulty-machine detector implements (Minder, its ablations and
// the baselines), and the factory that builds one from JSON. A detector reads a FleetSeries up
// to second t (inclusive) and says which machine, if any, it suspects and whether it alerts.
// Every alert names the machine and the metric (or "channel": "all", "missing", "step_time")
// that fired.
//
//   LOOM_ASSIGN_OR_RETURN(auto d, MakeDetector({{"type", "minder"}, {"continuity_s", 30}}));
//   for (int64_t t = 0; t < s.seconds; ++t) {   // streaming: called every second
//     LOOM_ASSIGN_OR_RETURN(Verdict v, d->Evaluate(s, t));
//     if (v.alert) Report(t, v.machine, v.metric);
//   }
//
// Most detectors are ScoredDetectors: a stateless per-second Score() (one candidate per channel)
// followed by a ContinuityGate (threshold + T_c). The evaluation records Score() once and
// replays the cheap gate for many thresholds (calibration, batch mode).
// Thread-safety: a Detector keeps streaming state; use one per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "loom/base/status.h"
#include "loom/monitor/fleet/detect/continuity_gate.h"
#include "loom/monitor/fleet/detect/denoiser.h"
#include "loom/monitor/fleet/fleet_series.h"

namespace loom::monitor {

struct Verdict {
  std::vector<float> scores;  // per machine (of the first channel in priority order); NaN = missing
  int candidate = -1;         // this second's candidate (first channel with one), -1 = none
  bool alert = false;         // the continuity gate is satisfied now
  int machine = -1;           // the machine alerted on (valid when alert)
  std::string metric;         // the metric / channel that fired (valid when alert)
  bool missing = false;       // the alert is about missing data (machine unreachable)
  double score = 0;           // the firing channel's score
};

class Detector {
 public:
  virtual ~Detector() = default;
  virtual std::string name() const = 0;
  // Uses samples [0, t] only. Streaming: called every second; keeps continuity state.
  virtual Result<Verdict> Evaluate(const FleetSeries& s, int64_t t) = 0;
  // Forgets all streaming state (continuity runs, online models).
  virtual void Reset() = 0;
};

// A detector split into stateless scoring and a continuity gate.
class ScoredDetector : public Detector {
 public:
  explicit ScoredDetector(GateOptions gate) : gate_(gate) {}
  // One candidate per channel at second t (channels in this detector's priority order) plus
  // per-machine scores of the first channel. Must not depend on earlier calls unless the
  // detector documents it (BOCD keeps an online model; it replays history when t jumps).
  virtual Result<ScoreStep> Score(const FleetSeries& s, int64_t t) = 0;
  Result<Verdict> Evaluate(const FleetSeries& s, int64_t t) override;
  void Reset() override;
  ContinuityGate& gate() { return gate_; }
  const GateOptions& gate_options() const { return gate_.options(); }

 protected:
  // Drops online-model state of subclasses (gate state is reset by Reset()).
  virtual void ResetModel() {}

 private:
  ContinuityGate gate_;
};

// Loads the per-metric denoiser named by a detector spec's "denoiser" field when it is not one
// of the built-ins ("identity", "moving_median"), e.g. the LSTM-VAE from fleet/denoise/. It must
// accept windows of `window` samples (a model made for another window is an error).
using DenoiserLoader = std::function<Result<std::unique_ptr<Denoiser>>(
    const std::string& type, const std::string& model_dir, const std::string& metric,
    int window)>;

// Builds a detector from {"type": ...}. Types and their fields (defaults in brackets):
//  minder       window [8], denoiser ["moving_median"|"identity"|other via loader], model_dir,
//               distance ["l2"|"l2sq"|"l1"|"linf"], integrated [false] (one model, all metrics
//               concatenated), priority [metric order], max_metrics [all], norm_horizon_s [600],
//               long_window_s [0 = off], long_scale_floor [0.003], long_weight [1]
//               (long-window channels), shift_window_s [0 = off], shift_block_s [9],
//               shift_ref_s [1800], shift_weight [1] (level-shift channels, level_shift.h)
//  mahalanobis  window [8], shrinkage [0.1]
//  peer_z       (per-metric robust z of the latest sample)
//  iforest      window [8], trees [50], sample [64], seed [1]
//  nvrx         window_s [60] (median step time window), metric ["step_time"]
//  bocd         metric ["step_time"], hazard_s [300], max_run [300]
//  heartbeat    metric ["step_time"] (progress: stuck value); score = seconds missing or stuck
// Every type takes the gate fields threshold, continuity_s, min_fraction [1], min_channels [1],
// fast_confirm_s [0 = off], fast_min_channels [2], missing_confirm_s [0 = off] (GateOptions).
// Unknown types or fields of the wrong type are InvalidArgument errors naming the field.
Result<std::unique_ptr<Detector>> MakeDetector(const nlohmann::json& spec,
                                               const DenoiserLoader& loader = nullptr);
// Same, but returns the ScoredDetector (every built-in type is one).
Result<std::unique_ptr<ScoredDetector>> MakeScoredDetector(const nlohmann::json& spec,
                                                           const DenoiserLoader& loader = nullptr);

}  // namespace loom::monitor
