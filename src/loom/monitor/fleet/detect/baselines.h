// The baseline detectors, behind the same ScoredDetector interface as Minder (spec §7.2):
//   MahalanobisDetector   per-machine all-metric window vector vs the fleet's mean and
//                         covariance (Ledoit-Wolf-style shrinkage toward a scaled identity);
//                         Minder's only baseline. Channel "all", score = distance.
//   PeerZDetector         per metric, robust z of the latest sample over machines ("3-sigma"
//                         with median/MAD); score = |z|.
//   IsolationForestDetector  per-machine features (window mean, std per metric) isolated by a
//                         forest rebuilt on the fleet each call (seeded by t); score = 2^-E[h]/c.
//   NvrxStragglerDetector NVRx's formula: own median step time over window_s vs the fleet's
//                         fastest median; score = own / fastest (NVRx flags < 0.75 = score > 1.33).
//   BocdDetector          Greyhound-style Bayesian online change-point detection on each
//                         machine's step time relative to the fleet median; score = |posterior
//                         segment mean - 1| / sigma. Online: replays history when t jumps.
//   HeartbeatDetector     timeout only: seconds a machine has had no data at all (channel
//                         "heartbeat") or an unchanged step time (channel "progress").
// All of them name missing machines through MarkMissingCandidate where a window applies.
// Thread-safety: not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/monitor/fleet/detect/detector.h"
#include "loom/monitor/fleet/detect/peer_scores.h"

namespace loom::monitor {

class MahalanobisDetector : public ScoredDetector {
 public:
  MahalanobisDetector(int window, double shrinkage, int64_t norm_horizon_s, GateOptions gate)
      : ScoredDetector(gate), window_(window), shrinkage_(shrinkage), horizon_(norm_horizon_s) {}
  std::string name() const override { return "mahalanobis"; }
  Result<ScoreStep> Score(const FleetSeries& s, int64_t t) override;

 private:
  int window_;
  double shrinkage_;
  int64_t horizon_;
  FleetWindow win_;
};

class PeerZDetector : public ScoredDetector {
 public:
  explicit PeerZDetector(GateOptions gate) : ScoredDetector(gate) {}
  std::string name() const override { return "peer_z"; }
  Result<ScoreStep> Score(const FleetSeries& s, int64_t t) override;
};

class IsolationForestDetector : public ScoredDetector {
 public:
  IsolationForestDetector(int window, int trees, int sample, uint64_t seed, GateOptions gate)
      : ScoredDetector(gate), window_(window), trees_(trees), sample_(sample), seed_(seed) {}
  std::string name() const override { return "iforest"; }
  Result<ScoreStep> Score(const FleetSeries& s, int64_t t) override;

 private:
  int window_, trees_, sample_;
  uint64_t seed_;
  FleetWindow win_;
};

// Isolation-forest anomaly scores 2^(-E[h(x)]/c(psi)) of each row of `x` ([n][d]) against a
// forest built on the rows themselves. Exposed for tests.
std::vector<float> IsolationForestScores(const std::vector<float>& x, int n, int d, int trees,
                                         int sample, uint64_t seed);

class NvrxStragglerDetector : public ScoredDetector {
 public:
  NvrxStragglerDetector(std::string metric, int64_t window_s, GateOptions gate)
      : ScoredDetector(gate), metric_(std::move(metric)), window_s_(window_s) {}
  std::string name() const override { return "nvrx"; }
  Result<ScoreStep> Score(const FleetSeries& s, int64_t t) override;

 private:
  std::string metric_;
  int64_t window_s_;
};

class BocdDetector : public ScoredDetector {
 public:
  BocdDetector(std::string metric, double hazard_s, int max_run, GateOptions gate)
      : ScoredDetector(gate), metric_(std::move(metric)), hazard_s_(hazard_s), max_run_(max_run) {}
  std::string name() const override { return "bocd"; }
  Result<ScoreStep> Score(const FleetSeries& s, int64_t t) override;

 protected:
  void ResetModel() override;

 private:
  void Update(const FleetSeries& s, int metric, int64_t t);
  std::string metric_;
  double hazard_s_;
  int max_run_;
  int64_t last_t_ = -2;
  double sigma_ = 0.05;
  // Per machine: run-length posterior and the posterior mean/variance of each run's mean.
  std::vector<std::vector<double>> prob_, mean_, var_;
};

class HeartbeatDetector : public ScoredDetector {
 public:
  HeartbeatDetector(std::string progress_metric, GateOptions gate)
      : ScoredDetector(gate), metric_(std::move(progress_metric)) {}
  std::string name() const override { return "heartbeat"; }
  Result<ScoreStep> Score(const FleetSeries& s, int64_t t) override;

 private:
  std::string metric_;
};

// Index of `name` in s.metric_names or NotFound naming the detector and the metric.
Result<int> FindMetric(const FleetSeries& s, const std::string& name, const std::string& detector);

}  // namespace loom::monitor
