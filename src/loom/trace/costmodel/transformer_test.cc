// Tests of the libtorch CDMPP transformer on a tiny synthetic dataset with a known latency formula
// (no timing: deterministic), the CMD term, and the model file.
#include "loom/trace/costmodel/transformer_torch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>

#include "loom/trace/costmodel/collect.h"
#include "loom/trace/costmodel/testing/synthetic_dataset.h"

namespace loom::trace::costmodel {
namespace {

Dataset TinyDataset(int kernels) { return testing::SyntheticDataset(kernels, /*seed=*/5); }

std::vector<int> All(const Dataset& ds) {
  std::vector<int> v(ds.samples.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int>(i);
  return v;
}

TransformerOptions Small() {
  TransformerOptions o;
  o.epochs = 25;
  o.batch = 32;
  o.seed = 3;
  return o;
}

double RmseLog(const Dataset& ds, const std::vector<double>& pred) {
  double s = 0;
  for (size_t i = 0; i < pred.size(); ++i) {
    const double e = std::log(pred[i]) - std::log(ds.samples[i].latency_s);
    s += e * e;
  }
  return std::sqrt(s / pred.size());
}

TEST(TransformerTest, TrainingReducesLossAndBeatsTheMean) {
  const Dataset ds = TinyDataset(80);
  TransformerPredictor model(Small());
  ASSERT_TRUE(model.Train(ds, All(ds), {}).ok());
  const TransformerTrainingLog& log = model.training_log();
  ASSERT_EQ(log.epoch_loss.size(), 25u);
  EXPECT_LT(log.epoch_loss.back(), 0.3 * log.epoch_loss.front());
  EXPECT_GE(log.best_epoch, 1);
  Result<std::vector<double>> pred = model.PredictSeconds(ds, All(ds));
  ASSERT_TRUE(pred.ok()) << pred.status().ToString();
  // The mean predictor's RMSE of ln latency is the std of ln latency.
  double m = 0, q = 0;
  for (const Sample& s : ds.samples) m += std::log(s.latency_s) / ds.samples.size();
  for (const Sample& s : ds.samples) q += std::pow(std::log(s.latency_s) - m, 2);
  const double mean_rmse = std::sqrt(q / ds.samples.size());
  EXPECT_LT(RmseLog(ds, *pred), 0.35 * mean_rmse);
}

TEST(TransformerTest, SameSeedSamePredictionsAndSaveLoadRoundTrip) {
  const Dataset ds = TinyDataset(40);
  TransformerOptions o = Small();
  o.epochs = 5;
  TransformerPredictor a(o), b(o);
  std::vector<int> target;  // the second device's samples as the unlabelled target (CMD on)
  for (int i : All(ds)) {
    if (ds.samples[i].device == "avx2x1") target.push_back(i);
  }
  ASSERT_TRUE(a.Train(ds, All(ds), target).ok());
  ASSERT_TRUE(b.Train(ds, All(ds), target).ok());
  const std::vector<double> pa = *a.PredictSeconds(ds, All(ds));
  EXPECT_EQ(pa, *b.PredictSeconds(ds, All(ds)));
  const std::string path = ::testing::TempDir() + "/cm_transformer.json";
  ASSERT_TRUE(a.Save(path).ok());
  Result<TransformerPredictor> loaded = TransformerPredictor::Load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(*loaded->PredictSeconds(ds, All(ds)), pa);  // bit-identical
  EXPECT_EQ(loaded->options().d_model, 64);
  // A clone fine-tuned on one device moves; the original does not.
  std::unique_ptr<LatencyModel> clone = a.Clone();
  ASSERT_TRUE(clone->FineTune(ds, target).ok());
  EXPECT_NE(*clone->PredictSeconds(ds, All(ds)), pa);
  EXPECT_EQ(*a.PredictSeconds(ds, All(ds)), pa);
  std::remove(path.c_str());
  // Latents: one d_model-wide row per sample (after a ReLU), identical for the loaded copy.
  Result<std::vector<std::vector<float>>> z = a.Latents(ds, target);
  ASSERT_TRUE(z.ok()) << z.status().ToString();
  ASSERT_EQ(z->size(), target.size());
  float zmax = 0;
  for (const std::vector<float>& row : *z) {
    ASSERT_EQ(row.size(), 64u);
    for (float v : row) {
      EXPECT_GE(v, 0.f);
      zmax = std::max(zmax, v);
    }
  }
  EXPECT_GT(zmax, 0.f);
  EXPECT_EQ(*loaded->Latents(ds, target), *z);
}

TEST(TransformerTest, BadModelFileAndBadInputsNameTheProblem) {
  const std::string path = ::testing::TempDir() + "/cm_bad_model.json";
  std::ofstream(path) << "{\"format\":\"loom.costmodel.transformer\",\"version\":1,";
  Result<TransformerPredictor> r = TransformerPredictor::Load(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find(path), std::string::npos);
  std::remove(path.c_str());
  EXPECT_EQ(TransformerPredictor::Load(path).status().code(), StatusCode::kNotFound);

  const Dataset ds = TinyDataset(10);
  TransformerOptions o = Small();
  o.max_leaves = 0;
  EXPECT_EQ(TransformerPredictor(o).Train(ds, All(ds), {}).code(), StatusCode::kInvalidArgument);
  TransformerPredictor untrained(Small());
  EXPECT_EQ(untrained.PredictSeconds(ds, All(ds)).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(untrained.Latents(ds, All(ds)).status().code(), StatusCode::kFailedPrecondition);
}

TEST(TransformerTest, CmdIsZeroForIdenticalSetsAndGrowsWithTheShift) {
  std::mt19937_64 rng(1);
  std::normal_distribution<float> n01(0, 1);
  const int dim = 4, rows = 2000;
  std::vector<float> a(rows * dim);
  for (float& v : a) v = n01(rng);
  EXPECT_NEAR(*CentralMomentDiscrepancy(a, a, dim, 5), 0, 1e-5);
  double last = 0;
  for (float shift : {0.25f, 0.5f, 1.0f}) {
    std::vector<float> b = a;
    for (float& v : b) v += shift;
    const double cmd = *CentralMomentDiscrepancy(a, b, dim, 3);
    // A pure shift changes only the mean: CMD = ||shift|| = shift * sqrt(dim).
    EXPECT_NEAR(cmd, shift * std::sqrt(double(dim)), 1e-3) << shift;
    EXPECT_GT(cmd, last);
    last = cmd;
  }
  // A scale change has the same mean: invisible at order 1, seen from order 2.
  std::vector<float> c = a;
  for (float& v : c) v *= 2;
  EXPECT_LT(*CentralMomentDiscrepancy(a, c, dim, 1), 0.2);
  EXPECT_GT(*CentralMomentDiscrepancy(a, c, dim, 2), 4.0);
  EXPECT_FALSE(CentralMomentDiscrepancy(a, c, 3, 2).ok());  // 8000 values are not [n, 3]
}

}  // namespace
}  // namespace loom::trace::costmodel
