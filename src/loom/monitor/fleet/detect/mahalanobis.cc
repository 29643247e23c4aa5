// MahalanobisDetector and FindMetric (see baselines.h).
#include <cmath>

#include <Eigen/Dense>

#include "loom/monitor/fleet/detect/baselines.h"

namespace loom::monitor {

Result<int> FindMetric(const FleetSeries& s, const std::string& name,
                       const std::string& detector) {
  for (int m = 0; m < s.metrics(); ++m) {
    if (s.metric_names[m] == name) return m;
  }
  return NotFoundError(detector + ": the series has no metric '" + name + "'");
}

Result<ScoreStep> MahalanobisDetector::Score(const FleetSeries& s, int64_t t) {
  if (t < 0 || t >= s.seconds) return InvalidArgumentError("mahalanobis: t outside the series");
  const int n = s.machines, w = window_, m = s.metrics(), p = m * w;
  ScoreStep step;
  step.machine_scores.assign(n, NAN);
  ChannelScore ch{"all"};
  if (t < w - 1 || n < 3) {
    step.channels.push_back(ch);
    return step;
  }
  Eigen::MatrixXd x(n, p);
  std::vector<uint8_t> present(n, 1);
  for (int k = 0; k < m; ++k) {
    ExtractFleetWindow(s, k, t, w, horizon_, &win_);
    for (int i = 0; i < n; ++i) {
      if (!win_.present[i]) {
        present[i] = 0;
        continue;
      }
      for (int j = 0; j < w; ++j) x(i, k * w + j) = win_.values[static_cast<size_t>(i) * w + j];
    }
  }
  std::vector<int> rows;
  for (int i = 0; i < n; ++i) {
    if (present[i]) rows.push_back(i);
  }
  if (rows.size() >= 3) {
    Eigen::MatrixXd y(rows.size(), p);
    for (size_t r = 0; r < rows.size(); ++r) y.row(r) = x.row(rows[r]);
    const Eigen::RowVectorXd mu = y.colwise().mean();
    y.rowwise() -= mu;
    Eigen::MatrixXd cov = (y.transpose() * y) / std::max<double>(1.0, rows.size() - 1.0);
    const double avg_var = std::max(cov.trace() / p, 1e-6);
    cov *= (1.0 - shrinkage_);
    cov.diagonal().array() += shrinkage_ * avg_var + 1e-9;
    Eigen::LLT<Eigen::MatrixXd> llt(cov);
    if (llt.info() != Eigen::Success) return InternalError("mahalanobis: covariance not positive");
    const Eigen::MatrixXd sol = llt.matrixL().solve(y.transpose());  // p x rows
    for (size_t r = 0; r < rows.size(); ++r) {
      step.machine_scores[rows[r]] = static_cast<float>(sol.col(r).norm());
    }
    SetTopCandidate(step.machine_scores, &ch);
  }
  MarkMissingCandidate(present, &ch);
  step.channels.push_back(ch);
  return step;
}

}  // namespace loom::monitor
