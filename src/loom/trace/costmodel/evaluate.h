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
// chosen by KMeansSelect (pooled standardised features) or uniformly at random (`random_seeds`
// seeds); XGBoost retrains with those samples added (weight `fewshot_weight`), the pretrained
// MLP is fine-tuned for a few epochs on the source plus `fewshot_weight` copies of each pick
// (fine-tuning on 5% alone overfits); both are scored on the target's remaining samples.
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
  int random_seeds = 10;
  float fewshot_weight = 10;  // XGBoost row weight; MLP: copies of each picked sample
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

struct FewShotRow {
  std::string target, model;
  int budget = 0, n_test = 0;
  double zero_shot_mape = 0, kmeans_mape = 0, random_mape_mean = 0, random_mape_std = 0;
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

// KMeans vs random few-shot on `target` (see above).
Result<std::vector<FewShotRow>> EvaluateFewShot(const Dataset& ds, const std::string& target,
                                                const EvalOptions& options);

// Runs every split above (after the max_iqr_rel filter) and the few-shot comparison.
Result<EvalReport> RunEvaluation(const Dataset& ds, const EvalOptions& options);

}  // namespace loom::trace::costmodel
