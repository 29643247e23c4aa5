// BocdDetector (see baselines.h): Adams & MacKay's Bayesian online change-point detection
// (arXiv:0710.3742) per machine, Gaussian observations with known noise sigma and a conjugate
// Gaussian prior on each segment's mean, constant hazard 1/hazard_s, run lengths truncated at
// max_run. Observations are the machine's step time divided by the fleet median at that second,
// so a fleet-wide change (all machines slow down together) is invisible by construction.
#include <algorithm>
#include <cmath>

#include "loom/monitor/fleet/detect/baselines.h"

namespace loom::monitor {
namespace {

constexpr double kPriorMean = 1.0;
constexpr double kPriorVar = 0.25;
constexpr int64_t kReplayS = 900;

float Median(std::vector<float> v) {
  if (v.empty()) return NAN;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

}  // namespace

void BocdDetector::ResetModel() {
  last_t_ = -2;
  prob_.clear();
  mean_.clear();
  var_.clear();
  sigma_ = 0.05;
}

void BocdDetector::Update(const FleetSeries& s, int m, int64_t t) {
  const int n = s.machines;
  if (static_cast<int>(prob_.size()) != n) {
    prob_.assign(n, {1.0});
    mean_.assign(n, {kPriorMean});
    var_.assign(n, {kPriorVar});
  }
  std::vector<float> x(n), ok;
  for (int i = 0; i < n; ++i) {
    x[i] = s.at(m, i, t);
    if (!std::isnan(x[i])) ok.push_back(x[i]);
  }
  const float med = Median(ok);
  if (std::isnan(med) || med <= 0) return;
  std::vector<float> dev;
  for (float v : ok) dev.push_back(std::fabs(v / med - 1.0f));
  const double spread = 1.4826 * Median(dev);
  sigma_ = std::max(0.005, 0.99 * sigma_ + 0.01 * spread);
  const double noise = sigma_ * sigma_, hazard = 1.0 / hazard_s_;
  for (int i = 0; i < n; ++i) {
    if (std::isnan(x[i])) continue;  // missing: the posterior waits
    const double y = x[i] / med;
    std::vector<double>& p = prob_[i];
    std::vector<double>& mu = mean_[i];
    std::vector<double>& var = var_[i];
    const size_t r = p.size();
    std::vector<double> np(std::min<size_t>(r + 1, max_run_), 0.0), nmu(np.size()),
        nvar(np.size());
    double cp = 0, total = 0;
    for (size_t k = 0; k < r; ++k) {
      const double v = var[k] + noise;
      const double like = std::exp(-0.5 * (y - mu[k]) * (y - mu[k]) / v) / std::sqrt(v);
      const double grow = p[k] * like * (1 - hazard);
      cp += p[k] * like * hazard;
      const size_t dst = std::min(k + 1, np.size() - 1);
      // Truncation merges the oldest runs into the last slot (keeps the heavier one's stats).
      const double post_var = 1.0 / (1.0 / var[k] + 1.0 / noise);
      const double post_mu = post_var * (mu[k] / var[k] + y / noise);
      if (grow >= np[dst]) {
        nmu[dst] = post_mu;
        nvar[dst] = post_var;
      }
      np[dst] += grow;
      total += grow;
    }
    np[0] = cp;
    {
      const double post_var = 1.0 / (1.0 / kPriorVar + 1.0 / noise);
      nmu[0] = post_var * (kPriorMean / kPriorVar + y / noise);
      nvar[0] = post_var;
    }
    total += cp;
    if (!(total > 0)) {  // numerical underflow: restart this machine's model at y
      np.assign(1, 1.0);
      nmu.assign(1, y);
      nvar.assign(1, noise);
      total = 1;
    }
    for (double& v : np) v /= total;
    p.swap(np);
    mu.swap(nmu);
    var.swap(nvar);
  }
}

Result<ScoreStep> BocdDetector::Score(const FleetSeries& s, int64_t t) {
  if (t < 0 || t >= s.seconds) return InvalidArgumentError("bocd: t outside the series");
  LOOM_ASSIGN_OR_RETURN(const int m, FindMetric(s, metric_, "bocd"));
  if (t != last_t_ + 1) {  // not a streaming continuation: rebuild from recent history
    ResetModel();
    for (int64_t u = std::max<int64_t>(0, t - kReplayS); u < t; ++u) Update(s, m, u);
  }
  Update(s, m, t);
  last_t_ = t;
  const int n = s.machines;
  ScoreStep step;
  step.machine_scores.assign(n, NAN);
  ChannelScore ch{metric_};
  std::vector<uint8_t> present(n, 0);
  for (int i = 0; i < n; ++i) {
    present[i] = !std::isnan(s.at(m, i, t));
    if (!present[i] || prob_.empty()) continue;
    double mean = 0;
    for (size_t k = 0; k < prob_[i].size(); ++k) mean += prob_[i][k] * mean_[i][k];
    step.machine_scores[i] = static_cast<float>(std::fabs(mean - 1.0) / sigma_);
  }
  if (n >= 3) {
    SetTopCandidate(step.machine_scores, &ch);
    MarkMissingCandidate(present, &ch);
  }
  step.channels.push_back(ch);
  return step;
}

}  // namespace loom::monitor
