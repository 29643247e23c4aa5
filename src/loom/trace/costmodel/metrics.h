// Accuracy metrics of a latency predictor (CDMPP utils/metrics.py): MAPE, RMSE of log latency,
// Kendall's tau (rank agreement). Inputs are latencies in seconds, all positive.
// Thread-safety: pure functions.
#pragma once

#include <vector>

namespace loom::trace::costmodel {

// mean |pred - true| / true.
double Mape(const std::vector<double>& truth, const std::vector<double>& pred);
// median |pred - true| / true (robust to a few tiny, noisy kernels).
double MedianApe(const std::vector<double>& truth, const std::vector<double>& pred);
// sqrt(mean (ln pred - ln true)^2).
double RmseLog(const std::vector<double>& truth, const std::vector<double>& pred);
// Kendall's tau-a over all pairs (O(n^2); fine for a few thousand samples).
double KendallTau(const std::vector<double>& truth, const std::vector<double>& pred);

}  // namespace loom::trace::costmodel
