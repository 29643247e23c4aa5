// Baseline latency predictors and few-shot sample selection for the CDMPP-style predictor.
//
//   Roofline      max(flops / peak, bytes / bandwidth) with the device's measured peaks.
//   XgbRegressor  XGBoost (C API, libxgboost) on pooled leaf features + device vector, log target.
//   Mlp           small MLP (Eigen, Adam) on the same pooled features: no positions, no sequence.
// (Few-shot selection, KMeansSelect included, is in fewshot_select.h.)
// Inputs are row-major float matrices (FeatureMatrix); targets are ln(latency in seconds).
//
// Thread-safety: objects are used from one thread at a time; distinct objects are independent.
// XGBoost's own threads are limited by XgbOptions::threads.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "loom/base/status.h"
#include "loom/trace/costmodel/dataset.h"

namespace loom::trace::costmodel {

struct FeatureMatrix {
  int64_t rows = 0, cols = 0;
  std::vector<float> data;  // row-major
  float* Row(int64_t r) { return data.data() + r * cols; }
  const float* Row(int64_t r) const { return data.data() + r * cols; }
  void AddRow(const std::vector<float>& row);
};

// Pooled program features (PoolLeaves) followed by the device vector of the sample's device.
std::vector<float> PooledRow(const Sample& s, const DeviceInfo& device);
// Rows for samples[indices]; fails (kNotFound) on a sample whose device is not in ds.devices.
Result<FeatureMatrix> PooledMatrix(const Dataset& ds, const std::vector<int>& indices);

// Per-column mean/std (std floored at 1e-6) fitted on one matrix, applied to others.
struct Standardizer {
  std::vector<float> mean, inv_std;
  static Standardizer Fit(const FeatureMatrix& x);
  FeatureMatrix Apply(const FeatureMatrix& x) const;
};

// Roofline latency in seconds of a sample on its device.
double RooflineSeconds(double flops, double bytes, const DeviceInfo& device);

struct XgbOptions {
  int rounds = 300;  // boosting rounds
  double eta = 0.1;  // learning rate
  int max_depth = 6;
  double subsample = 0.8;
  double colsample = 0.8;
  double min_child_weight = 1;
  int threads = 1;  // nthread (the build machine has 2 shared cores)
  uint64_t seed = 0;
};

class XgbRegressor {
 public:
  // Squared-error regression of `y` on `x` (optionally weighted, one weight per row).
  static Result<XgbRegressor> Train(const FeatureMatrix& x, const std::vector<float>& y,
                                    const XgbOptions& options,
                                    const std::vector<float>* weights = nullptr);
  Result<std::vector<float>> Predict(const FeatureMatrix& x) const;

  XgbRegressor(XgbRegressor&&) noexcept;
  XgbRegressor& operator=(XgbRegressor&&) noexcept;
  ~XgbRegressor();

 private:
  XgbRegressor() = default;
  void* booster_ = nullptr;  // BoosterHandle
};

struct MlpOptions {
  int hidden = 64;  // two hidden layers of this width, ReLU
  int epochs = 150;
  int batch = 32;
  double lr = 1e-3;  // Adam
  double weight_decay = 1e-5;
  uint64_t seed = 0;
};

// Input standardisation is fitted by Train and kept for FineTune/Predict; the target is
// standardised too (mean/std of the training targets).
class Mlp {
 public:
  Mlp();
  ~Mlp();
  Mlp(Mlp&&) noexcept;
  Mlp& operator=(Mlp&&) noexcept;
  void Train(const FeatureMatrix& x, const std::vector<float>& y, const MlpOptions& options);
  // More Adam steps on (x, y) with the existing normalisation (CDMPP-style fine-tuning).
  void FineTune(const FeatureMatrix& x, const std::vector<float>& y, int epochs, double lr);
  std::vector<float> Predict(const FeatureMatrix& x) const;
  // The last hidden layer's activations (ReLU outputs, `hidden` columns) of each row: the MLP's
  // latent representation, for few-shot selection in the model's own feature space.
  FeatureMatrix Embed(const FeatureMatrix& x) const;
  // An independent copy (weights, normalisation, optimiser state).
  Mlp Clone() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace loom::trace::costmodel
