#include "loom/trace/costmodel/evaluate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>

#include "loom/trace/costmodel/fewshot_calibrate.h"
#include "loom/trace/costmodel/fewshot_select.h"
#include "loom/trace/costmodel/metrics.h"

namespace loom::trace::costmodel {
namespace {

std::vector<float> LogTargets(const Dataset& ds, const std::vector<int>& idx) {
  std::vector<float> y;
  for (int i : idx) y.push_back(static_cast<float>(std::log(ds.samples[i].latency_s)));
  return y;
}

std::vector<double> Truth(const Dataset& ds, const std::vector<int>& idx) {
  std::vector<double> y;
  for (int i : idx) y.push_back(ds.samples[i].latency_s);
  return y;
}

std::vector<double> Exp(const std::vector<float>& v) {
  std::vector<double> out;
  for (float x : v) out.push_back(std::exp(static_cast<double>(x)));
  return out;
}

MetricRow Score(const std::string& split, const std::string& model, int n_train,
                const std::vector<double>& truth, const std::vector<double>& pred) {
  return MetricRow{split,
                   model,
                   n_train,
                   static_cast<int>(truth.size()),
                   Mape(truth, pred),
                   MedianApe(truth, pred),
                   RmseLog(truth, pred),
                   KendallTau(truth, pred)};
}

std::vector<int> Without(const std::vector<int>& all, const std::vector<int>& drop) {
  std::set<int> d(drop.begin(), drop.end());
  std::vector<int> out;
  for (int i : all) {
    if (!d.count(i)) out.push_back(i);
  }
  return out;
}

std::vector<int> Concat(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

Result<std::vector<MetricRow>> EvaluateSplit(const Dataset& ds, const std::vector<int>& train,
                                             const std::vector<int>& test, const std::string& split,
                                             const EvalOptions& o) {
  if (train.empty() || test.empty()) {
    return InvalidArgumentError("costmodel: split '" + split + "' has " +
                                std::to_string(train.size()) + " train and " +
                                std::to_string(test.size()) + " test samples");
  }
  std::vector<MetricRow> rows;
  const std::vector<double> truth = Truth(ds, test);
  std::vector<double> roof;
  for (int i : test) {
    const Sample& s = ds.samples[i];
    roof.push_back(RooflineSeconds(s.flops, s.bytes, *ds.FindDevice(s.device)));
  }
  rows.push_back(Score(split, "roofline", 0, truth, roof));
  LOOM_ASSIGN_OR_RETURN(FeatureMatrix xtr, PooledMatrix(ds, train));
  LOOM_ASSIGN_OR_RETURN(FeatureMatrix xte, PooledMatrix(ds, test));
  const std::vector<float> ytr = LogTargets(ds, train);
  LOOM_ASSIGN_OR_RETURN(XgbRegressor xgb, XgbRegressor::Train(xtr, ytr, o.xgb));
  LOOM_ASSIGN_OR_RETURN(std::vector<float> px, xgb.Predict(xte));
  rows.push_back(Score(split, "xgboost", static_cast<int>(train.size()), truth, Exp(px)));
  Mlp mlp;
  mlp.Train(xtr, ytr, o.mlp);
  rows.push_back(
      Score(split, "mlp_no_pe", static_cast<int>(train.size()), truth, Exp(mlp.Predict(xte))));
  if (o.learned_model) {
    std::unique_ptr<LatencyModel> model = o.learned_model();
    LOOM_RETURN_IF_ERROR(model->Train(ds, train, o.adapt_to_test ? test : std::vector<int>{}));
    LOOM_ASSIGN_OR_RETURN(std::vector<double> pl, model->PredictSeconds(ds, test));
    rows.push_back(Score(split, o.learned_model_name, static_cast<int>(train.size()), truth, pl));
  }
  return rows;
}

namespace {

FeatureMatrix FromRows(const std::vector<std::vector<float>>& rows) {
  FeatureMatrix m;
  for (const std::vector<float>& r : rows) m.AddRow(r);
  return m;
}

void MeanStd(FewShotArm* arm) {
  double m = 0, q = 0;
  for (double x : arm->mapes) m += x / arm->mapes.size();
  for (double x : arm->mapes) q += (x - m) * (x - m) / arm->mapes.size();
  arm->mean = m;
  arm->std = std::sqrt(q);
}

bool KnownMethod(const std::string& m) {
  return m == "random" || m == "stratified" || m == "kmeans" || m == "kmeans_unweighted" ||
         m == "kmeans_pooled";
}

// One few-shot evaluation on `target`: the base models trained on every other device, then each
// selection method's picks from the target's pool scored by adapting the models to them.
class FewShotEvaluation {
 public:
  FewShotEvaluation(const Dataset& ds, const std::string& target, const EvalOptions& o)
      : ds_(ds), target_(target), o_(o) {}

  Result<std::vector<FewShotRow>> Run() {
    LOOM_RETURN_IF_ERROR(SplitAndTrain());
    std::vector<FewShotRow> rows(n_models_);
    const char* names[3] = {"xgboost", "mlp_no_pe", nullptr};
    for (int m = 0; m < n_models_; ++m) {
      rows[m].target = target_;
      rows[m].model = m == kLearned ? o_.learned_model_name : names[m];
      rows[m].budget = budget_;
      rows[m].n_test = static_cast<int>(pool_.size()) - budget_;
    }
    LOOM_RETURN_IF_ERROR(ZeroShot(rows));
    LOOM_RETURN_IF_ERROR(ClusterSpaces());
    for (const std::string& method : o_.fewshot_methods) {
      LOOM_RETURN_IF_ERROR(RunMethod(method, rows));
    }
    return rows;
  }

 private:
  enum Model { kXgb = 0, kMlp = 1, kLearned = 2 };

  // The target's samples form the pool, every other device's the source; trains the base models.
  Status SplitAndTrain() {
    for (const std::string& m : o_.fewshot_methods) {
      if (!KnownMethod(m)) {
        return InvalidArgumentError("costmodel: unknown few-shot method '" + m +
                                    "' (random, stratified, kmeans, kmeans_unweighted, "
                                    "kmeans_pooled)");
      }
    }
    if (o_.fewshot_adapt != "retrain" && o_.fewshot_adapt != "calibrate") {
      return InvalidArgumentError("costmodel: unknown few-shot adaptation '" + o_.fewshot_adapt +
                                  "' (retrain, calibrate)");
    }
    for (int i = 0; i < static_cast<int>(ds_.samples.size()); ++i) {
      (ds_.samples[i].device == target_ ? pool_ : source_).push_back(i);
    }
    if (pool_.size() < 20 || source_.empty()) {
      return InvalidArgumentError("costmodel: few-shot target " + target_ + " has " +
                                  std::to_string(pool_.size()) + " samples (need >= 20)");
    }
    budget_ = std::max(1, static_cast<int>(std::ceil(o_.fewshot_fraction * pool_.size())));
    LOOM_ASSIGN_OR_RETURN(FeatureMatrix xs, PooledMatrix(ds_, source_));
    LOOM_ASSIGN_OR_RETURN(xp_, PooledMatrix(ds_, pool_));
    const std::vector<float> ys = LogTargets(ds_, source_);
    LOOM_ASSIGN_OR_RETURN(xgb0_, XgbRegressor::Train(xs, ys, o_.xgb));
    mlp0_.Train(xs, ys, o_.mlp);
    if (o_.learned_model) {
      learned0_ = o_.learned_model();
      LOOM_RETURN_IF_ERROR(
          learned0_->Train(ds_, source_, o_.adapt_to_test ? pool_ : std::vector<int>{}));
    }
    n_models_ = learned0_ ? 3 : 2;
    return OkStatus();
  }

  // MAPE of each base model on the whole pool; keeps each model's log predictions of the pool
  // (what calibration maps).
  Status ZeroShot(std::vector<FewShotRow>& rows) {
    const std::vector<double> truth = Truth(ds_, pool_);
    LOOM_ASSIGN_OR_RETURN(std::vector<float> px, xgb0_->Predict(xp_));
    std::vector<std::vector<double>> pred = {Exp(px), Exp(mlp0_.Predict(xp_))};
    if (learned0_) {
      LOOM_ASSIGN_OR_RETURN(std::vector<double> pl, learned0_->PredictSeconds(ds_, pool_));
      pred.push_back(pl);
    }
    pool_log_pred_.clear();
    for (int m = 0; m < n_models_; ++m) {
      rows[m].zero_shot_mape = Mape(truth, pred[m]);
      std::vector<double> logs;
      for (double v : pred[m]) logs.push_back(std::log(std::max(v, 1e-30)));
      pool_log_pred_.push_back(std::move(logs));
    }
    return OkStatus();
  }

  // MAPE on the pool's unpicked samples of model `m`'s zero-shot predictions, calibrated on the
  // picks (fewshot_calibrate.h; weights as the selection gives them).
  double CalibratedMape(int m, const Selection& sel) const {
    std::vector<double> x, y, w;
    std::vector<char> picked(pool_.size(), 0);
    for (size_t j = 0; j < sel.picks.size(); ++j) {
      const int p = sel.picks[j];
      picked[p] = 1;
      x.push_back(pool_log_pred_[m][p]);
      y.push_back(std::log(ds_.samples[pool_[p]].latency_s));
      w.push_back(sel.weights.empty() ? 1.0 : sel.weights[j]);
    }
    const LogCalibration c = FitLogCalibration(x, y, w, o_.calibration_ridge);
    std::vector<double> truth, pred;
    for (size_t p = 0; p < pool_.size(); ++p) {
      if (picked[p]) continue;
      truth.push_back(ds_.samples[pool_[p]].latency_s);
      pred.push_back(std::exp(c.Apply(pool_log_pred_[m][p])));
    }
    return Mape(truth, pred);
  }

  // What KMeans clusters for each model: the model's latents, or standardised pooled features.
  Status ClusterSpaces() {
    pooled_ = Standardizer::Fit(xp_).Apply(xp_);
    space_.assign(n_models_, pooled_);
    space_name_.assign(n_models_, "pooled");
    space_[kMlp] = mlp0_.Embed(xp_);
    space_name_[kMlp] = "latent";
    if (learned0_) {
      Result<std::vector<std::vector<float>>> z = learned0_->Latents(ds_, pool_);
      if (z.ok()) {
        space_[kLearned] = FromRows(*z);
        space_name_[kLearned] = "latent";
      } else if (z.status().code() != StatusCode::kUnimplemented) {
        return z.status();
      }
    }
    for (int m = 0; m < n_models_; ++m) {  // a model that blew up on the pool: pooled features
      if (!std::all_of(space_[m].data.begin(), space_[m].data.end(),
                       [](float v) { return std::isfinite(v); })) {
        space_[m] = pooled_;
        space_name_[m] = "pooled";
      }
    }
    for (int i : pool_) kinds_.push_back(static_cast<int>(ds_.samples[i].spec.kind));
    return OkStatus();
  }

  Selection Select(const std::string& method, int m, int seed_index, bool size_weighted) const {
    if (method == "random") {
      return RandomSelection(static_cast<int>(pool_.size()), budget_, o_.seed * 1000 + seed_index);
    }
    if (method == "stratified")
      return StratifiedSelection(kinds_, budget_, o_.seed * 1000 + seed_index);
    const FeatureMatrix& x = method == "kmeans_pooled" ? pooled_ : space_[m];
    return KMeansSelection(x, budget_, o_.seed + seed_index, size_weighted);
  }

  // One method over every seed and model; its arm is appended to each model's row.
  Status RunMethod(const std::string& method, std::vector<FewShotRow>& rows) const {
    const bool kmeans = method.rfind("kmeans", 0) == 0;
    std::vector<FewShotArm> arms(n_models_);
    for (int m = 0; m < n_models_; ++m) {
      arms[m].method = method;
      arms[m].space = !kmeans ? "-" : method == "kmeans_pooled" ? "pooled" : space_name_[m];
      arms[m].size_weighted = method == "kmeans";
    }
    for (int s = 0; s < o_.random_seeds; ++s) {
      for (int m = 0; m < n_models_; ++m) {
        LOOM_ASSIGN_OR_RETURN(double mape, Score(m, Select(method, m, s, arms[m].size_weighted)));
        arms[m].mapes.push_back(mape);
      }
    }
    for (int m = 0; m < n_models_; ++m) {
      MeanStd(&arms[m]);
      if (method == "kmeans") rows[m].kmeans_mape = arms[m].mean;
      if (method == "random") {
        rows[m].random_mape_mean = arms[m].mean;
        rows[m].random_mape_std = arms[m].std;
      }
      rows[m].arms.push_back(arms[m]);
    }
    return OkStatus();
  }

  // MAPE on the pool's remaining samples of model `m` adapted with `sel` (positions into pool).
  Result<double> Score(int m, const Selection& sel) const {
    if (o_.fewshot_adapt == "calibrate") return CalibratedMape(m, sel);
    std::vector<int> picked;
    for (int p : sel.picks) picked.push_back(pool_[p]);
    const std::vector<int> test = Without(pool_, picked);
    const std::vector<double> truth = Truth(ds_, test);
    if (m == kXgb) {
      LOOM_ASSIGN_OR_RETURN(FeatureMatrix xt, PooledMatrix(ds_, test));
      LOOM_ASSIGN_OR_RETURN(FeatureMatrix xa, PooledMatrix(ds_, Concat(source_, picked)));
      std::vector<float> w(source_.size(), 1.f);
      for (double pw : sel.weights) w.push_back(static_cast<float>(o_.fewshot_weight * pw));
      LOOM_ASSIGN_OR_RETURN(
          XgbRegressor xgb,
          XgbRegressor::Train(xa, LogTargets(ds_, Concat(source_, picked)), o_.xgb, &w));
      LOOM_ASSIGN_OR_RETURN(std::vector<float> px, xgb.Predict(xt));
      return Mape(truth, Exp(px));
    }
    // Source, then the picks round by round (equal weights: fewshot_weight copies of the picks,
    // in the order the original evaluation used).
    const std::vector<int> copies = CopiesForWeights(sel.weights, o_.fewshot_weight);
    std::vector<int> mix = source_;
    const int rounds = copies.empty() ? 0 : *std::max_element(copies.begin(), copies.end());
    for (int c = 0; c < rounds; ++c) {
      for (size_t j = 0; j < picked.size(); ++j) {
        if (copies[j] > c) mix.push_back(picked[j]);
      }
    }
    if (m == kMlp) {
      LOOM_ASSIGN_OR_RETURN(FeatureMatrix xt, PooledMatrix(ds_, test));
      LOOM_ASSIGN_OR_RETURN(FeatureMatrix xk, PooledMatrix(ds_, mix));
      Mlp mlp = mlp0_.Clone();
      mlp.FineTune(xk, LogTargets(ds_, mix), o_.finetune_epochs, o_.finetune_lr);
      return Mape(truth, Exp(mlp.Predict(xt)));
    }
    std::unique_ptr<LatencyModel> learned = learned0_->Clone();
    LOOM_RETURN_IF_ERROR(learned->FineTune(ds_, mix));
    LOOM_ASSIGN_OR_RETURN(std::vector<double> pl, learned->PredictSeconds(ds_, test));
    return Mape(truth, pl);
  }

  const Dataset& ds_;
  const std::string target_;
  const EvalOptions& o_;
  std::vector<int> source_, pool_;
  int budget_ = 0;
  int n_models_ = 2;
  FeatureMatrix xp_;
  std::vector<std::vector<double>> pool_log_pred_;  // [model][pool position], set by ZeroShot
  std::optional<XgbRegressor> xgb0_;  // set by SplitAndTrain
  Mlp mlp0_;
  std::unique_ptr<LatencyModel> learned0_;
  FeatureMatrix pooled_;
  std::vector<FeatureMatrix> space_;
  std::vector<std::string> space_name_;
  std::vector<int> kinds_;
};

}  // namespace

Result<std::vector<FewShotRow>> EvaluateFewShot(const Dataset& ds, const std::string& target,
                                                const EvalOptions& o) {
  return FewShotEvaluation(ds, target, o).Run();
}

Result<EvalReport> RunEvaluation(const Dataset& all, const EvalOptions& o) {
  Dataset filtered;
  if (o.max_iqr_rel > 0) {
    filtered.devices = all.devices;
    for (const Sample& s : all.samples) {
      if (s.iqr_rel <= o.max_iqr_rel) filtered.samples.push_back(s);
    }
  }
  const Dataset& ds = o.max_iqr_rel > 0 ? filtered : all;
  EvalReport report;
  auto add = [&](const Result<std::vector<MetricRow>>& r) -> Status {
    if (!r.ok()) return r.status();
    report.rows.insert(report.rows.end(), r->begin(), r->end());
    return OkStatus();
  };
  // Held-out shapes.
  std::set<std::string> keys;
  for (const Sample& s : ds.samples) keys.insert(s.shape_key);
  std::vector<std::string> key_list(keys.begin(), keys.end());
  std::mt19937_64 rng(o.seed);
  std::shuffle(key_list.begin(), key_list.end(), rng);
  std::set<std::string> held(
      key_list.begin(),
      key_list.begin() + static_cast<size_t>(o.shape_holdout_fraction * key_list.size()));
  std::vector<int> train, test;
  for (int i = 0; i < static_cast<int>(ds.samples.size()); ++i) {
    (held.count(ds.samples[i].shape_key) ? test : train).push_back(i);
  }
  if (o.run_splits) LOOM_RETURN_IF_ERROR(add(EvaluateSplit(ds, train, test, "heldout_shapes", o)));
  if (o.run_splits && !o.holdout_group.empty()) {
    train.clear();
    test.clear();
    for (int i = 0; i < static_cast<int>(ds.samples.size()); ++i) {
      (ds.samples[i].spec.shape_group == o.holdout_group ? test : train).push_back(i);
    }
    LOOM_RETURN_IF_ERROR(
        add(EvaluateSplit(ds, train, test, "heldout_group:" + o.holdout_group, o)));
  }
  std::vector<std::string> targets = o.target_devices;
  if (targets.empty()) {
    for (const DeviceInfo& d : ds.devices) targets.push_back(d.device.Name());
  }
  for (const std::string& t : targets) {
    if (ds.FindDevice(t) == nullptr) {
      return InvalidArgumentError("costmodel: target device '" + t + "' is not in the dataset");
    }
    train.clear();
    test.clear();
    for (int i = 0; i < static_cast<int>(ds.samples.size()); ++i) {
      (ds.samples[i].device == t ? test : train).push_back(i);
    }
    if (o.run_splits) {
      LOOM_RETURN_IF_ERROR(add(EvaluateSplit(ds, train, test, "heldout_device:" + t, o)));
    }
    LOOM_ASSIGN_OR_RETURN(std::vector<FewShotRow> fs, EvaluateFewShot(ds, t, o));
    report.fewshot.insert(report.fewshot.end(), fs.begin(), fs.end());
  }
  return report;
}

std::string EvalReport::ToText() const {
  std::string out;
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%-26s %-11s %6s %5s %8s %8s %8s %6s\n", "split", "model",
                "train", "test", "MAPE", "MdAPE", "RMSElog", "tau");
  out += buf;
  for (const MetricRow& r : rows) {
    std::snprintf(buf, sizeof(buf), "%-26s %-11s %6d %5d %7.1f%% %7.1f%% %8.3f %6.3f\n",
                  r.split.c_str(), r.model.c_str(), r.n_train, r.n_test, 100 * r.mape,
                  100 * r.median_ape, r.rmse_log, r.tau);
    out += buf;
  }
  if (!fewshot.empty()) {
    std::snprintf(buf, sizeof(buf), "\n%-10s %-11s %6s %5s %9s", "target", "model", "budget",
                  "test", "zero-shot");
    out += buf;
    for (const FewShotArm& a : fewshot[0].arms) {
      std::snprintf(buf, sizeof(buf), " %22s", a.method.c_str());
      out += buf;
    }
    out += "   (MAPE, mean +- sd over seeds; kmeans space in [])\n";
  }
  for (const FewShotRow& r : fewshot) {
    std::snprintf(buf, sizeof(buf), "%-10s %-11s %6d %5d %8.1f%%", r.target.c_str(),
                  r.model.c_str(), r.budget, r.n_test, 100 * r.zero_shot_mape);
    out += buf;
    for (const FewShotArm& a : r.arms) {
      std::string tag;  // "[lat]" / "[poo]" (built with +=: GCC 12 warns falsely on "[" + s)
      if (a.space != "-") {
        tag += '[';
        tag += a.space.substr(0, 3);
        tag += ']';
      }
      std::snprintf(buf, sizeof(buf), " %6.1f%% +- %4.1f %-6s", 100 * a.mean, 100 * a.std,
                    tag.c_str());
      out += buf;
    }
    out += "\n";
  }
  return out;
}

std::string EvalReport::ToJson() const {
  nlohmann::json j = {{"rows", nlohmann::json::array()}, {"fewshot", nlohmann::json::array()}};
  for (const MetricRow& r : rows) {
    j["rows"].push_back({{"split", r.split},
                         {"model", r.model},
                         {"n_train", r.n_train},
                         {"n_test", r.n_test},
                         {"mape", r.mape},
                         {"median_ape", r.median_ape},
                         {"rmse_log", r.rmse_log},
                         {"kendall_tau", r.tau}});
  }
  for (const FewShotRow& r : fewshot) {
    j["fewshot"].push_back({{"target", r.target},
                            {"model", r.model},
                            {"budget", r.budget},
                            {"n_test", r.n_test},
                            {"zero_shot_mape", r.zero_shot_mape},
                            {"kmeans_mape", r.kmeans_mape},
                            {"random_mape_mean", r.random_mape_mean},
                            {"random_mape_std", r.random_mape_std},
                            {"arms", nlohmann::json::array()}});
    for (const FewShotArm& a : r.arms) {
      j["fewshot"].back()["arms"].push_back({{"method", a.method},
                                             {"space", a.space},
                                             {"size_weighted", a.size_weighted},
                                             {"mape_per_seed", a.mapes},
                                             {"mape_mean", a.mean},
                                             {"mape_std", a.std}});
    }
  }
  return j.dump(2);
}

}  // namespace loom::trace::costmodel
