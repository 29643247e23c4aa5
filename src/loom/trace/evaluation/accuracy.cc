#include "loom/trace/evaluation/accuracy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

namespace loom::trace::evaluation {
namespace {

Status SameSize(const std::vector<double>& a, const std::vector<double>& b, const char* what) {
  if (a.size() != b.size()) {
    return InvalidArgumentError(std::string(what) + ": " + std::to_string(a.size()) +
                                " predictions but " + std::to_string(b.size()) + " measurements");
  }
  return OkStatus();
}

}  // namespace

double RelativeError(double predicted, double measured) {
  if (!(measured > 0)) return std::numeric_limits<double>::quiet_NaN();
  return (predicted - measured) / measured;
}

Result<std::vector<double>> AbsRelativeErrors(const std::vector<double>& predicted,
                                              const std::vector<double>& measured) {
  LOOM_RETURN_IF_ERROR(SameSize(predicted, measured, "relative errors"));
  std::vector<double> e;
  for (size_t i = 0; i < predicted.size(); ++i) {
    if (!(measured[i] > 0)) {
      return InvalidArgumentError("relative errors: measurement #" + std::to_string(i) +
                                  " is not > 0");
    }
    e.push_back(std::abs(RelativeError(predicted[i], measured[i])));
  }
  return e;
}

Result<double> Quantile(std::vector<double> v, double q) {
  if (v.empty()) return InvalidArgumentError("quantile of an empty sample");
  if (!(q >= 0 && q <= 1)) return InvalidArgumentError("quantile q must be in [0, 1]");
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

Result<ErrorStats> SummarizeErrors(const std::vector<double>& abs_errors) {
  if (abs_errors.empty()) return InvalidArgumentError("error statistics of no configurations");
  for (double e : abs_errors) {
    if (!std::isfinite(e)) return InvalidArgumentError("error statistics: an error is not finite");
  }
  ErrorStats s;
  s.n = abs_errors.size();
  s.mean = std::accumulate(abs_errors.begin(), abs_errors.end(), 0.0) / s.n;
  LOOM_ASSIGN_OR_RETURN(s.median, Quantile(abs_errors, 0.5));
  LOOM_ASSIGN_OR_RETURN(s.p90, Quantile(abs_errors, 0.9));
  s.max = *std::max_element(abs_errors.begin(), abs_errors.end());
  return s;
}

Result<double> KendallTau(const std::vector<double>& a, const std::vector<double>& b) {
  LOOM_RETURN_IF_ERROR(SameSize(a, b, "Kendall tau"));
  if (a.size() < 2) return InvalidArgumentError("Kendall tau needs at least 2 pairs");
  // O(n^2): the grid has tens of configurations.
  double concordant = 0, discordant = 0, ties_a = 0, ties_b = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = i + 1; j < a.size(); ++j) {
      const double da = a[i] - a[j], db = b[i] - b[j];
      if (da == 0 && db == 0) continue;  // tied in both: counts in neither denominator term
      if (da == 0) {
        ++ties_a;
      } else if (db == 0) {
        ++ties_b;
      } else if ((da > 0) == (db > 0)) {
        ++concordant;
      } else {
        ++discordant;
      }
    }
  }
  const double denom =
      std::sqrt((concordant + discordant + ties_a) * (concordant + discordant + ties_b));
  if (!(denom > 0)) return InvalidArgumentError("Kendall tau is undefined: a ranking is constant");
  return (concordant - discordant) / denom;
}

Result<size_t> ArgMin(const std::vector<double>& v) {
  if (v.empty()) return InvalidArgumentError("argmin of no values");
  return static_cast<size_t>(std::min_element(v.begin(), v.end()) - v.begin());
}

Result<double> OptimizerRegret(const std::vector<double>& predicted,
                               const std::vector<double>& measured) {
  LOOM_RETURN_IF_ERROR(SameSize(predicted, measured, "optimizer regret"));
  LOOM_ASSIGN_OR_RETURN(size_t pick, ArgMin(predicted));
  LOOM_ASSIGN_OR_RETURN(size_t best, ArgMin(measured));
  if (!(measured[best] > 0)) return InvalidArgumentError("optimizer regret: a measurement <= 0");
  return measured[pick] / measured[best] - 1;
}

}  // namespace loom::trace::evaluation
