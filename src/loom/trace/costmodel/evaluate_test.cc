// Tests of the evaluation pipeline and the sequence tensors on a synthetic dataset whose
// latencies follow a known formula (no timing, so the test is deterministic).
#include "loom/trace/costmodel/evaluate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "loom/trace/costmodel/collect.h"
#include "loom/trace/costmodel/testing/synthetic_dataset.h"
#include "loom/trace/costmodel/sequence.h"

namespace loom::trace::costmodel {
namespace {

Dataset SyntheticDataset(int kernels) { return testing::SyntheticDataset(kernels, /*seed=*/11); }

EvalOptions SmallOptions() {
  EvalOptions o;
  o.xgb.rounds = 60;
  o.mlp.epochs = 20;
  o.random_seeds = 2;
  return o;
}

TEST(EvaluateTest, LearnedModelsBeatRooflineOnAKnownFormula) {
  const Dataset ds = SyntheticDataset(150);
  std::vector<int> train, test;
  for (int i = 0; i < static_cast<int>(ds.samples.size()); ++i) {
    (ds.samples[i].spec.InstanceKey().size() % 5 == 0 ? test : train).push_back(i);
  }
  Result<std::vector<MetricRow>> rows = EvaluateSplit(ds, train, test, "t", SmallOptions());
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 3u);
  const MetricRow& roof = (*rows)[0];
  const MetricRow& xgb = (*rows)[1];
  EXPECT_EQ(roof.model, "roofline");
  EXPECT_EQ(xgb.model, "xgboost");
  EXPECT_GT(roof.mape, 0.45);  // the formula is 2x roofline
  EXPECT_LT(xgb.mape, roof.mape);
  EXPECT_GT(xgb.tau, 0.8);
  EXPECT_EQ(EvaluateSplit(ds, train, {}, "t", SmallOptions()).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(EvaluateTest, FewShotBudgetAndRows) {
  const Dataset ds = SyntheticDataset(120);
  Result<std::vector<FewShotRow>> fs = EvaluateFewShot(ds, "avx2x1", SmallOptions());
  ASSERT_TRUE(fs.ok()) << fs.status();
  ASSERT_EQ(fs->size(), 2u);
  EXPECT_EQ((*fs)[0].budget, 6);  // ceil(5% of 120)
  EXPECT_EQ((*fs)[0].n_test, 114);
  EXPECT_GT((*fs)[0].kmeans_mape, 0);
  EXPECT_GT((*fs)[0].random_mape_mean, 0);
  EXPECT_EQ(EvaluateFewShot(ds, "avx512x2", SmallOptions()).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(EvaluateTest, FewShotArmsPerMethodAndSeed) {
  const Dataset ds = SyntheticDataset(120);
  EvalOptions o = SmallOptions();
  o.fewshot_methods = {"random", "stratified", "kmeans", "kmeans_unweighted", "kmeans_pooled"};
  Result<std::vector<FewShotRow>> fs = EvaluateFewShot(ds, "avx2x1", o);
  ASSERT_TRUE(fs.ok()) << fs.status();
  ASSERT_EQ(fs->size(), 2u);
  for (const FewShotRow& r : *fs) {
    ASSERT_EQ(r.arms.size(), 5u);
    for (size_t a = 0; a < r.arms.size(); ++a) {
      const FewShotArm& arm = r.arms[a];
      EXPECT_EQ(arm.method, o.fewshot_methods[a]);
      ASSERT_EQ(arm.mapes.size(), 2u);  // random_seeds
      EXPECT_GT(arm.mean, 0);
      // The MLP sees one source device here, so the target's device columns are far outside
      // its standardisation and its MAPE overflows; XGBoost's is finite.
      if (r.model != "xgboost") continue;
      EXPECT_NEAR(arm.mean, 0.5 * (arm.mapes[0] + arm.mapes[1]), 1e-12);
      EXPECT_NEAR(arm.std, 0.5 * std::abs(arm.mapes[0] - arm.mapes[1]), 1e-12);
    }
    EXPECT_EQ(r.arms[0].space, "-");
    EXPECT_EQ(r.arms[2].space, r.model == "xgboost" ? "pooled" : "latent");
    EXPECT_TRUE(r.arms[2].size_weighted);
    EXPECT_FALSE(r.arms[3].size_weighted);
    EXPECT_EQ(r.arms[4].space, "pooled");
    EXPECT_DOUBLE_EQ(r.kmeans_mape, r.arms[2].mean);
    if (r.model != "xgboost") continue;
    EXPECT_DOUBLE_EQ(r.random_mape_mean, r.arms[0].mean);
    EXPECT_DOUBLE_EQ(r.random_mape_std, r.arms[0].std);
  }
  // XGBoost clusters the same pooled features with and without weights: same picks, and the
  // weights change the result only through the row weights.
  EXPECT_EQ((*fs)[0].arms[4].mapes, (*fs)[0].arms[3].mapes);
  o.fewshot_methods = {"kmeans_typo"};
  EXPECT_EQ(EvaluateFewShot(ds, "avx2x1", o).status().code(), StatusCode::kInvalidArgument);
}

TEST(SequenceTest, NormalisedLeavesPlusPositionsEndTokenAndMask) {
  Dataset ds = SyntheticDataset(3);
  KernelSpec gemm;
  gemm.gemm.order = LoopOrder::kIJK;  // two leaves at pre-order 7 and 8
  ds.samples.push_back(
      MakeSample(99, gemm, ds.devices[1],
                 Timing{.median_s = 2e-6, .cv = 0, .iqr_rel = 0.01, .min_s = 2e-6, .runs = 20}));
  const int idx = static_cast<int>(ds.samples.size()) - 1;
  LeafNormalizer identity;
  identity.mean.assign(kNumLeafFeatures, 0.f);
  identity.inv_std.assign(kNumLeafFeatures, 1.f);
  SequenceOptions o;
  o.max_leaves = 4;
  Result<SequenceTensors> t = BuildSequenceTensors(ds, {idx}, identity, o);
  ASSERT_TRUE(t.ok()) << t.status();
  const int64_t F = kNumLeafFeatures;
  ASSERT_EQ(t->leaves.size(), static_cast<size_t>(4 * F));
  const std::vector<float> pe7 = PositionalEncoding(7, F), pe8 = PositionalEncoding(8, F);
  for (int64_t f = 0; f < F; ++f) {
    EXPECT_FLOAT_EQ(t->leaves[f], ds.samples[idx].leaves[0][f] + pe7[f]);
    EXPECT_FLOAT_EQ(t->leaves[F + f], ds.samples[idx].leaves[1][f] + pe8[f]);
    EXPECT_FLOAT_EQ(t->leaves[2 * F + f], 1.f);  // end token
    EXPECT_FLOAT_EQ(t->leaves[3 * F + f], 0.f);  // padding
  }
  EXPECT_EQ(t->mask, (std::vector<float>{1, 1, 0, 0}));
  EXPECT_EQ(t->device, DeviceVector(ds.devices[1]));
  EXPECT_FLOAT_EQ(t->target[0], static_cast<float>(std::log(2e-6)));
  o.max_leaves = 1;
  EXPECT_EQ(BuildSequenceTensors(ds, {idx}, identity, o).status().code(), StatusCode::kOutOfRange);
  // Fitted normaliser: zero mean over the fitted leaves.
  const LeafNormalizer fit = LeafNormalizer::Fit(ds, {idx});
  EXPECT_FLOAT_EQ(fit.mean[0],
                  0.5f * (ds.samples[idx].leaves[0][0] + ds.samples[idx].leaves[1][0]));
}

}  // namespace
}  // namespace loom::trace::costmodel
