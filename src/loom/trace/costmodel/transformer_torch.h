// CDMPP's latency predictor (AttentionNetV2, scaled down) in libtorch: the leaf feature sequence
// (standardised, + pre-order positional encoding, sequence.h) -> linear embedding -> transformer
// encoder (`layers` x {4-head self-attention over the real leaves, ReLU FFN, post-LayerNorm}) ->
// masked mean and max over leaves -> program latent z; the device vector (standardised) -> MLP ->
// device embedding added to z; decoder MLP -> standardised ln(latency).
// Loss: MSE on standardised ln latency + mape_weight * MAPE + cmd_weight * CMD(z_source, z_target)
// where CMD (central moment discrepancy, Zellinger et al. 2017, CDMPP utils/metrics.py:metric_cmd)
// = ||mean_s - mean_t|| + sum_{k=2..order} ||c_k(s) - c_k(t)|| aligns the program latents of the
// labelled source samples with those of unlabelled target-domain samples (e.g. a held-out
// device's kernels). Adam (global-norm clip 1), cosine learning rate, best epoch on a 10%
// validation split. Deterministic for a seed (one intra-op thread).
//
// This header does not include torch (pimpl); only transformer_torch.cc does.
// Thread-safety: one object is used from one thread at a time; training sets torch's intra-op
// threads to 1 and restores them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/trace/costmodel/dataset.h"
#include "loom/trace/costmodel/latency_model.h"

namespace loom::trace::costmodel {

struct TransformerOptions {
  int d_model = 64;                 // embedding width
  int heads = 4;                    // attention heads (d_model % heads == 0)
  int layers = 2;                   // encoder layers
  int ffn = 128;                    // feed-forward width
  int max_leaves = 4;               // sequence length (leaves + end token); data has <= 3 leaves
  bool positional_encoding = true;  // false: the "- PE" ablation
  int epochs = 40;
  int batch = 128;
  double lr = 2e-3;  // Adam, cosine-decayed to lr / 20
  double weight_decay = 1e-5;
  double mape_weight = 0.1;  // weight of the MAPE term (latency space)
  double cmd_weight = 0.1;   // weight of the CMD term (0: no domain adaptation)
  int cmd_order = 3;         // highest central moment in CMD (CDMPP: up to 5)
  double validation_fraction = 0.1;
  int finetune_epochs = 5;   // LatencyModel::FineTune
  double finetune_lr = 3e-4;
  uint64_t seed = 0;
  bool verbose = false;  // per-epoch loss to stderr
};

struct TransformerTrainingLog {
  std::vector<double> epoch_loss;  // mean training loss per epoch (all terms)
  int best_epoch = 0;              // epoch whose weights were kept (validation RMSE of ln latency)
  double best_validation_rmse_log = 0;
  double seconds = 0;
};

class TransformerPredictor : public LatencyModel {
 public:
  explicit TransformerPredictor(const TransformerOptions& options = {});
  ~TransformerPredictor() override;
  TransformerPredictor(TransformerPredictor&&) noexcept;
  TransformerPredictor& operator=(TransformerPredictor&&) noexcept;

  // LatencyModel. Train fails on an empty training set, a sample with more leaves than
  // max_leaves, or a sample whose device is not in ds.devices.
  Status Train(const Dataset& ds, const std::vector<int>& train,
               const std::vector<int>& unlabeled) override;
  Status FineTune(const Dataset& ds, const std::vector<int>& samples) override;
  Result<std::vector<double>> PredictSeconds(const Dataset& ds,
                                             const std::vector<int>& samples) const override;
  std::unique_ptr<LatencyModel> Clone() const override;
  // The program latent z (d_model values after the pooling layer's ReLU, before the device
  // embedding is added): the representation the CMD term aligns across domains.
  Result<std::vector<std::vector<float>>> Latents(const Dataset& ds,
                                                  const std::vector<int>& samples) const override;

  const TransformerOptions& options() const;
  const TransformerTrainingLog& training_log() const;

  // JSON file: options, normalisers, parameter shapes and values (exact float round trip).
  Status Save(const std::string& path) const;
  static Result<TransformerPredictor> Load(const std::string& path);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// CMD between two sets of row vectors (row-major [n, dim] and [m, dim]) up to `order` (>= 1).
Result<double> CentralMomentDiscrepancy(const std::vector<float>& a, const std::vector<float>& b,
                                        int dim, int order);

// A factory for the evaluation (evaluate.h): fresh TransformerPredictors with these options.
LatencyModelFactory TransformerModelFactory(const TransformerOptions& options);

}  // namespace loom::trace::costmodel
