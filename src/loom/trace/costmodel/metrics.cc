#include "loom/trace/costmodel/metrics.h"

#include <algorithm>
#include <cmath>

#include "loom/base/check.h"

namespace loom::trace::costmodel {

double Mape(const std::vector<double>& truth, const std::vector<double>& pred) {
  LOOM_CHECK(truth.size() == pred.size());
  if (truth.empty()) return 0;
  double s = 0;
  for (size_t i = 0; i < truth.size(); ++i) s += std::abs(pred[i] - truth[i]) / truth[i];
  return s / truth.size();
}

double MedianApe(const std::vector<double>& truth, const std::vector<double>& pred) {
  LOOM_CHECK(truth.size() == pred.size());
  if (truth.empty()) return 0;
  std::vector<double> e;
  for (size_t i = 0; i < truth.size(); ++i) e.push_back(std::abs(pred[i] - truth[i]) / truth[i]);
  std::nth_element(e.begin(), e.begin() + e.size() / 2, e.end());
  return e[e.size() / 2];
}

double RmseLog(const std::vector<double>& truth, const std::vector<double>& pred) {
  LOOM_CHECK(truth.size() == pred.size());
  if (truth.empty()) return 0;
  double s = 0;
  for (size_t i = 0; i < truth.size(); ++i) {
    const double d = std::log(std::max(pred[i], 1e-15)) - std::log(truth[i]);
    s += d * d;
  }
  return std::sqrt(s / truth.size());
}

double KendallTau(const std::vector<double>& truth, const std::vector<double>& pred) {
  LOOM_CHECK(truth.size() == pred.size());
  const size_t n = truth.size();
  if (n < 2) return 0;
  double concordant = 0, discordant = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      const double a = (truth[i] - truth[j]) * (pred[i] - pred[j]);
      if (a > 0) ++concordant;
      if (a < 0) ++discordant;
    }
  }
  return (concordant - discordant) / (0.5 * n * (n - 1));
}

}  // namespace loom::trace::costmodel
