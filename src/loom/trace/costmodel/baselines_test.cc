// Tests of the metrics, the roofline, the XGBoost and MLP baselines, and KMeans selection.
#include "loom/trace/costmodel/baselines.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "loom/trace/costmodel/fewshot_select.h"
#include "loom/trace/costmodel/metrics.h"

namespace loom::trace::costmodel {
namespace {

TEST(MetricsTest, KnownValues) {
  EXPECT_DOUBLE_EQ(Mape({1, 2, 4}, {1.5, 2, 2}), (0.5 + 0 + 0.5) / 3);
  EXPECT_NEAR(RmseLog({1, 1}, {std::exp(1.0), std::exp(-1.0)}), 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(KendallTau({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(KendallTau({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  EXPECT_DOUBLE_EQ(KendallTau({1, 2, 3}, {1, 3, 2}), 1.0 / 3);
}

TEST(RooflineTest, KnownNumbers) {
  DeviceInfo d;
  d.peak_gflops = 10;
  d.mem_gbps = 5;
  EXPECT_DOUBLE_EQ(RooflineSeconds(1e9, 1e8, d), 0.1);  // compute-bound
  EXPECT_DOUBLE_EQ(RooflineSeconds(1e8, 1e9, d), 0.2);  // memory-bound
}

// y = 2 x0 - x1 + 0.5 x2^2 + 0.1 noise, 5 features (x3, x4 irrelevant).
void Synthetic(int n, uint64_t seed, FeatureMatrix* x, std::vector<float>* y) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-2, 2);
  std::normal_distribution<float> noise(0, 0.1f);
  for (int i = 0; i < n; ++i) {
    std::vector<float> row(5);
    for (float& v : row) v = u(rng);
    x->AddRow(row);
    y->push_back(2 * row[0] - row[1] + 0.5f * row[2] * row[2] + noise(rng));
  }
}

double Rmse(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(s / a.size());
}

TEST(XgbTest, BeatsTheMeanOnAKnownFormula) {
  FeatureMatrix xtr, xte;
  std::vector<float> ytr, yte;
  Synthetic(600, 1, &xtr, &ytr);
  Synthetic(200, 2, &xte, &yte);
  XgbOptions o;
  o.rounds = 100;
  Result<XgbRegressor> m = XgbRegressor::Train(xtr, ytr, o);
  ASSERT_TRUE(m.ok()) << m.status();
  Result<std::vector<float>> p = m->Predict(xte);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->size(), yte.size());
  double mean = 0;
  for (float v : ytr) mean += v / ytr.size();
  const double rmse_mean = Rmse(std::vector<float>(yte.size(), static_cast<float>(mean)), yte);
  const double rmse = Rmse(*p, yte);
  EXPECT_LT(rmse, 0.25 * rmse_mean) << rmse << " vs mean " << rmse_mean;
  // Weighted training and bad input.
  std::vector<float> w(ytr.size(), 2.f);
  EXPECT_TRUE(XgbRegressor::Train(xtr, ytr, o, &w).ok());
  ytr.pop_back();
  EXPECT_EQ(XgbRegressor::Train(xtr, ytr, o).status().code(), StatusCode::kInvalidArgument);
}

TEST(MlpTest, LearnsAKnownFormulaAndFineTunes) {
  FeatureMatrix xtr, xte;
  std::vector<float> ytr, yte;
  Synthetic(600, 3, &xtr, &ytr);
  Synthetic(200, 4, &xte, &yte);
  MlpOptions o;
  o.epochs = 60;
  Mlp mlp;
  mlp.Train(xtr, ytr, o);
  double mean = 0;
  for (float v : ytr) mean += v / ytr.size();
  const double rmse_mean = Rmse(std::vector<float>(yte.size(), static_cast<float>(mean)), yte);
  const double rmse = Rmse(mlp.Predict(xte), yte);
  EXPECT_LT(rmse, 0.25 * rmse_mean) << rmse << " vs mean " << rmse_mean;
  // Fine-tuning on shifted targets moves predictions towards the shift; the clone is untouched.
  Mlp tuned = mlp.Clone();
  std::vector<float> shifted = yte;
  for (float& v : shifted) v += 3;
  tuned.FineTune(xte, shifted, 40, 1e-3);
  EXPECT_LT(Rmse(tuned.Predict(xte), shifted), Rmse(mlp.Predict(xte), shifted));
  EXPECT_DOUBLE_EQ(Rmse(mlp.Predict(xte), yte), rmse);
}

TEST(KMeansTest, PicksDistinctRepresentativesDeterministically) {
  FeatureMatrix x;
  std::mt19937_64 rng(5);
  std::normal_distribution<float> nd(0, 0.1f);
  const float centers[3][2] = {{0, 0}, {10, 0}, {0, 10}};
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 10; ++i) x.AddRow({centers[c][0] + nd(rng), centers[c][1] + nd(rng)});
  }
  const std::vector<int> pick = KMeansSelect(x, 3, 42);
  ASSERT_EQ(pick.size(), 3u);
  std::set<int> clusters;
  for (int i : pick) clusters.insert(i / 10);
  EXPECT_EQ(clusters.size(), 3u);  // one representative per blob
  EXPECT_EQ(KMeansSelect(x, 3, 42), pick);
  for (int k : {7, 30, 45}) {
    const std::vector<int> p = KMeansSelect(x, k, 1);
    EXPECT_EQ(p.size(), static_cast<size_t>(std::min(k, 30)));
    EXPECT_EQ(std::set<int>(p.begin(), p.end()).size(), p.size());
  }
}

}  // namespace
}  // namespace loom::trace::costmodel
