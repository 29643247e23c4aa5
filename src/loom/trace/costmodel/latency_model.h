// A learned kernel latency predictor that the evaluation (evaluate.h) can score next to its
// built-in baselines without depending on how the model is implemented (the libtorch transformer
// in transformer_torch.h implements it; the evaluation library stays torch-free).
//
// Thread-safety: one object is used from one thread at a time.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/trace/costmodel/dataset.h"

namespace loom::trace::costmodel {

class LatencyModel {
 public:
  virtual ~LatencyModel() = default;
  // Fits on the labelled samples `train` (indices into ds.samples). `unlabeled` are samples of
  // the target domain whose features (not latencies) may be used for domain adaptation; empty
  // when there is no target domain.
  virtual Status Train(const Dataset& ds, const std::vector<int>& train,
                       const std::vector<int>& unlabeled) = 0;
  // A few more epochs on `samples` (duplicates allowed: they weight a sample), starting from the
  // current weights and normalisation.
  virtual Status FineTune(const Dataset& ds, const std::vector<int>& samples) = 0;
  // Predicted latency in seconds of each sample.
  virtual Result<std::vector<double>> PredictSeconds(const Dataset& ds,
                                                     const std::vector<int>& samples) const = 0;
  // An independent copy (weights, normalisation, optimiser state).
  virtual std::unique_ptr<LatencyModel> Clone() const = 0;
  // The model's latent representation of each sample (one row per sample, equal lengths), used
  // to pick few-shot samples in the model's own feature space (CDMPP's KMeans sampling).
  // Optional: the default is kUnimplemented and callers fall back to pooled features.
  virtual Result<std::vector<std::vector<float>>> Latents(const Dataset& ds,
                                                          const std::vector<int>& samples) const {
    (void)ds;
    (void)samples;
    return UnimplementedError("costmodel: this latency model has no latent representation");
  }
};

// Makes a fresh, untrained model (the evaluation trains one per split).
using LatencyModelFactory = std::function<std::unique_ptr<LatencyModel>()>;

}  // namespace loom::trace::costmodel
