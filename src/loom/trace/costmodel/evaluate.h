// Evaluation of the baselines (roofline, XGBoost, MLP without positions) on held-out shapes,
// held-out shape groups and held-out devices, plus KMeans-vs-random few-shot adaptation.
//
// Splits:
//   shape   a random `shape_holdout_fraction` of the distinct shape keys (all devices) is test.
//   group   every sample of `holdout_group` (e.g. "attention": CDMPP's cross-model) is test.
//   device  train on all other devices, test on the target. Devices are ISA/thread variants of
//           one host sharing one memory hierarchy, and the same kernel instances appear on the
//           source devices: a proxy for cross-device transfer, not new hardware.
// Few-shot (per target device): a budget of `fewshot_fraction` of the target's samples is
// chosen by each of `fewshot_methods` (fewshot_select.h), `random_seeds` seeds each; XGBoost
// retrains with those samples added (weight `fewshot_weight` x the pick's weight), the pretrained
// MLP / learned model is fine-tuned for a few epochs on the source plus
// round(`fewshot_weight` x weight) copies of each pick (fine-tuning on 5% alone overfits); all
// are scored on the target's remaining samples. With fewshot_adapt == "calibrate" no model is
// retrained: each keeps its zero-shot predictions and a two-parameter log map is fitted on the
// picks (fewshot_calibrate.h). Methods:
//   random             uniform picks, weight 1 (seed: seed * 1000 + s, as before).
//   stratified         uniform within kernel kinds, proportional allocation, weight 1.
//   kmeans             KMeans medoids (k = budget, one pick per cluster) in each model's own
//                      representation: the MLP's last hidden layer, the learned model's latents
//                      (LatencyModel::Latents; pooled features if it has none), standardised
//                      pooled features for XGBoost; each pick weighted by its cluster's size.
//   kmeans_unweighted  the same picks, weight 1.
//   kmeans_pooled      the original selection: medoids of the standardised pooled features for
//                      every model, weight 1 (seed s = 0 reproduces the old single KMeans run).
//
// Thread-safety: pure functions of their inputs.
#pragma once

#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/trace/costmodel/baselines.h"
#include "loom/trace/costmodel/dataset.h"
#include "loom/trace/costmodel/latency_model.h"

namespace loom::trace::costmodel {

struct EvalOptions {
  double shape_holdout_fraction = 0.2;
  std::string holdout_group = "attention";  // "" skips the group split
  std::vector<std::string> target_devices;  // empty: every device in the dataset
  double fewshot_fraction = 0.05;
  int random_seeds = 10;  // seeds per few-shot method (k-means++ seeds for the KMeans ones)
  std::vector<std::string> fewshot_methods = {"random", "stratified", "kmeans"};
  bool run_splits = true;     // false: skip the MAPE splits, only the few-shot comparison
  float fewshot_weight = 10;  // XGBoost row weight; MLP: copies of each picked sample
  // "retrain": XGBoost retrains, the MLP / learned model fine-tune (above). "calibrate": every
  // model stays as pretrained and a two-parameter log-latency map is fitted on the picks
  // (fewshot_calibrate.h; weighted by the selection's weights, slope ridge `calibration_ridge`).
  std::string fewshot_adapt = "retrain";
  double calibration_ridge = 0.1;
  int finetune_epochs = 5;    // MLP: epochs over source + weighted picks
  double finetune_lr = 3e-4;
  uint64_t seed = 1;
  double max_iqr_rel = 0;  // > 0: drop samples whose timing IQR/median exceeds this first
  XgbOptions xgb;
  MlpOptions mlp;
  // A learned model scored next to the baselines on every split and few-shot target (e.g.
  // TransformerModelFactory from transformer_torch.h); empty: baselines only. It is trained with
  // the split's test samples (features only, no latencies) as its unlabelled target domain when
  // `adapt_to_test` (CDMPP's CMD term); few-shot: pretrained on the source devices with the
  // target pool unlabelled, then LatencyModel::FineTune on source + fewshot_weight copies of the
  // picks, like the MLP.
  LatencyModelFactory learned_model;
  std::string learned_model_name = "transformer";
  bool adapt_to_test = true;
};

struct MetricRow {
  std::string split, model;
  int n_train = 0, n_test = 0;
  double mape = 0, median_ape = 0, rmse_log = 0, tau = 0;
};

// One few-shot method for one (target, model): the MAPE of each seed and their mean / sd.
struct FewShotArm {
  std::string method;
  std::string space;  // what KMeans clustered: "latent", "pooled"; "-" for random/stratified
  bool size_weighted = false;
  std::vector<double> mapes;
  double mean = 0, std = 0;
};

struct FewShotRow {
  std::string target, model;
  int budget = 0, n_test = 0;
  double zero_shot_mape = 0;
  std::vector<FewShotArm> arms;  // in EvalOptions::fewshot_methods order
  // Copies of the "kmeans" arm's mean and the "random" arm's mean / sd (0 when not run).
  double kmeans_mape = 0, random_mape_mean = 0, random_mape_std = 0;
};

struct EvalReport {
  std::vector<MetricRow> rows;
  std::vector<FewShotRow> fewshot;
  std::string ToText() const;
  std::string ToJson() const;
};

// Roofline, XGBoost and MLP trained on `train`, scored on `test` (indices into ds.samples).
Result<std::vector<MetricRow>> EvaluateSplit(const Dataset& ds, const std::vector<int>& train,
                                             const std::vector<int>& test,
                                             const std::string& split_name,
                                             const EvalOptions& options);

// The few-shot methods on `target` (see above); kInvalidArgument on an unknown method.
Result<std::vector<FewShotRow>> EvaluateFewShot(const Dataset& ds, const std::string& target,
                                                const EvalOptions& options);

// Runs every split above (unless !run_splits; after the max_iqr_rel filter) and the few-shot
// comparison on every target device.
Result<EvalReport> RunEvaluation(const Dataset& ds, const EvalOptions& options);

}  // namespace loom::trace::costmodel
