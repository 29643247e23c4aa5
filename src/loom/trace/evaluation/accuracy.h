// Accuracy metrics of predicted against measured iteration times (`loom bench replay`):
// relative-error statistics, Kendall's τ between the two rankings, and the optimizer regret of
// picking the predicted best configuration.
//
//   std::vector<double> e = AbsRelativeErrors(predicted, measured);
//   LOOM_ASSIGN_OR_RETURN(ErrorStats s, SummarizeErrors(e));      // s.median, s.p90, ...
//   LOOM_ASSIGN_OR_RETURN(double tau, KendallTau(predicted, measured));
//   LOOM_ASSIGN_OR_RETURN(double regret, OptimizerRegret(predicted, measured));
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <vector>

#include "loom/base/status.h"

namespace loom::trace::evaluation {

// (predicted − measured) / measured; measured must be > 0 (else NaN).
double RelativeError(double predicted, double measured);

// |RelativeError| per pair; kInvalidArgument when the sizes differ or a measured value is <= 0.
Result<std::vector<double>> AbsRelativeErrors(const std::vector<double>& predicted,
                                              const std::vector<double>& measured);

// Quantile q ∈ [0, 1] with linear interpolation between order statistics (numpy's default);
// kInvalidArgument for an empty input or q outside [0, 1].
Result<double> Quantile(std::vector<double> v, double q);

struct ErrorStats {
  double mean = 0, median = 0, p90 = 0, max = 0;
  size_t n = 0;
};
// Statistics of absolute relative errors; kInvalidArgument when empty or not finite.
Result<ErrorStats> SummarizeErrors(const std::vector<double>& abs_errors);

// Kendall's τ-b of two paired samples (ties in either ranking handled as τ-b does): 1 = same
// order, −1 = reversed. kInvalidArgument when the sizes differ, fewer than 2 pairs, or one side
// is constant (τ undefined).
Result<double> KendallTau(const std::vector<double>& a, const std::vector<double>& b);

// Index of the smallest value (the first on ties); kInvalidArgument when empty.
Result<size_t> ArgMin(const std::vector<double>& v);

// measured[argmin predicted] / min(measured) − 1: how much slower the configuration a predictor
// picks is than the best one actually measured (0 = it picked the best).
Result<double> OptimizerRegret(const std::vector<double>& predicted,
                               const std::vector<double>& measured);

}  // namespace loom::trace::evaluation
