// Few-shot adaptation by calibration: instead of retraining or fine-tuning a pretrained latency
// model on a handful of a new device's timings, keep the model and fit a two-parameter map of its
// log-latency prediction to the device's,
//
//   ln y  ~  ln yhat + offset + slope_delta * (ln yhat - center),
//
// by weighted least squares on the picked samples, with a ridge on slope_delta (towards the
// uncalibrated slope 1). The "devices" here differ mostly by a throughput scale (ISA lanes,
// threads) on the same memory hierarchy, which this map captures with two numbers; a 5% budget
// (about 33 timings) estimates two numbers well but cannot retrain a model. With weights
// proportional to the cluster sizes of KMeans picks, the weighted fit approximates the fit on the
// whole pool (fewshot_select.h).
//
// Thread-safety: pure functions.
#pragma once

#include <vector>

namespace loom::trace::costmodel {

struct LogCalibration {
  double offset = 0;       // added to ln yhat (at ln yhat == center)
  double slope_delta = 0;  // slope - 1
  double center = 0;       // weighted mean of the picks' ln yhat
  double Apply(double log_pred) const {
    return log_pred + offset + slope_delta * (log_pred - center);
  }
};

// Fits on the picks' log predictions `x`, log latencies `y` and weights `w` (> 0, same lengths,
// at least one pick). `ridge` is in units of total weight: the slope penalty is
// ridge * sum(w) * slope_delta^2. One pick (or picks with equal x) gives a pure offset.
LogCalibration FitLogCalibration(const std::vector<double>& x, const std::vector<double>& y,
                                 const std::vector<double>& w, double ridge);

}  // namespace loom::trace::costmodel
