// Tests of the few-shot selections: KMeans medoids (one distinct pick per cluster, the member
// nearest the centre, largest cluster first, sizes and weights), random and stratified picks,
// weight -> copies, and the MLP's latent embedding.
#include "loom/trace/costmodel/fewshot_select.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

namespace loom::trace::costmodel {
namespace {

// Blobs of 20, 10 and 5 points around (0,0), (10,0), (0,10); row r belongs to blob Blob(r).
FeatureMatrix ThreeBlobs() {
  FeatureMatrix x;
  std::mt19937_64 rng(5);
  std::normal_distribution<float> nd(0, 0.3f);
  const float centers[3][2] = {{0, 0}, {10, 0}, {0, 10}};
  const int sizes[3] = {20, 10, 5};
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < sizes[c]; ++i) x.AddRow({centers[c][0] + nd(rng), centers[c][1] + nd(rng)});
  }
  return x;
}
int Blob(int row) { return row < 20 ? 0 : row < 30 ? 1 : 2; }

TEST(KMeansMedoidsTest, OneMedoidPerClusterLargestFirst) {
  const FeatureMatrix x = ThreeBlobs();
  for (uint64_t seed : {1, 2, 42}) {
    const Medoids m = KMeansMedoids(x, 3, seed);
    ASSERT_EQ(m.picks.size(), 3u);
    EXPECT_EQ(m.cluster_size, (std::vector<int>{20, 10, 5}));
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(Blob(m.picks[c]), c) << "seed " << seed;
      // Medoid: no member of the blob is nearer the blob's mean than the pick.
      double mx = 0, my = 0;
      int n = 0;
      for (int r = 0; r < x.rows; ++r) {
        if (Blob(r) != c) continue;
        mx += x.Row(r)[0];
        my += x.Row(r)[1];
        ++n;
      }
      mx /= n;
      my /= n;
      auto d2 = [&](int r) {
        return std::pow(x.Row(r)[0] - mx, 2) + std::pow(x.Row(r)[1] - my, 2);
      };
      for (int r = 0; r < x.rows; ++r) {
        if (Blob(r) == c) {
          EXPECT_LE(d2(m.picks[c]), d2(r) + 1e-9);
        }
      }
    }
    EXPECT_EQ(KMeansMedoids(x, 3, seed).picks, m.picks);  // deterministic
  }
}

TEST(KMeansMedoidsTest, ToySetKnownMedoids) {
  // 1-D: {0, 1, 2, 10} (mean 3.25 -> medoid 2, row 2) and {100, 101, 102} (medoid 101, row 5).
  FeatureMatrix x;
  for (float v : {0.f, 1.f, 2.f, 10.f, 100.f, 101.f, 102.f}) x.AddRow({v});
  const Medoids m = KMeansMedoids(x, 2, 7);
  EXPECT_EQ(m.picks, (std::vector<int>{2, 5}));
  EXPECT_EQ(m.cluster_size, (std::vector<int>{4, 3}));
  EXPECT_EQ(m.assignment[0], m.assignment[3]);
  EXPECT_NE(m.assignment[0], m.assignment[4]);
}

TEST(KMeansMedoidsTest, KDistinctPicksIncludingDuplicateRows) {
  FeatureMatrix x = ThreeBlobs();
  for (int i = 0; i < 10; ++i) x.AddRow({50, 50});  // duplicates: some clusters stay empty
  for (int k : {1, 7, 30, 45, 60}) {
    const std::vector<int> p = KMeansSelect(x, k, 1);
    EXPECT_EQ(p.size(), static_cast<size_t>(std::min<int64_t>(k, x.rows)));
    EXPECT_EQ(std::set<int>(p.begin(), p.end()).size(), p.size());
    for (int r : p) EXPECT_TRUE(r >= 0 && r < x.rows);
  }
  EXPECT_TRUE(KMeansSelect(x, 0, 1).empty());
}

TEST(KMeansSelectionTest, ClusterSizeWeightsHaveMeanOne) {
  const FeatureMatrix x = ThreeBlobs();
  const Selection w = KMeansSelection(x, 3, 1, /*size_weighted=*/true);
  ASSERT_EQ(w.weights.size(), 3u);
  EXPECT_NEAR(w.weights[0], 20.0 * 3 / 35, 1e-12);
  EXPECT_NEAR(w.weights[1], 10.0 * 3 / 35, 1e-12);
  EXPECT_NEAR(w.weights[2], 5.0 * 3 / 35, 1e-12);
  const Selection u = KMeansSelection(x, 3, 1, /*size_weighted=*/false);
  EXPECT_EQ(u.picks, w.picks);
  EXPECT_EQ(u.weights, (std::vector<double>{1, 1, 1}));
  // Weights -> copies for repeat-weighted fine-tuning.
  EXPECT_EQ(CopiesForWeights(w.weights, 10), (std::vector<int>{17, 9, 4}));
  EXPECT_EQ(CopiesForWeights({0.01, 1.0}, 10), (std::vector<int>{1, 10}));
}

TEST(RandomSelectionTest, DistinctDeterministicAndTheOriginalShuffle) {
  const Selection a = RandomSelection(100, 10, 7);
  ASSERT_EQ(a.picks.size(), 10u);
  EXPECT_EQ(std::set<int>(a.picks.begin(), a.picks.end()).size(), 10u);
  EXPECT_EQ(RandomSelection(100, 10, 7).picks, a.picks);
  EXPECT_NE(RandomSelection(100, 10, 8).picks, a.picks);
  std::mt19937_64 rng(7);  // what the evaluation did before: iota, shuffle, truncate
  std::vector<int> pos(100);
  for (int i = 0; i < 100; ++i) pos[i] = i;
  std::shuffle(pos.begin(), pos.end(), rng);
  pos.resize(10);
  EXPECT_EQ(a.picks, pos);
  EXPECT_EQ(RandomSelection(5, 10, 1).picks.size(), 5u);
}

TEST(StratifiedSelectionTest, ProportionalAllocationLargestRemainder) {
  std::vector<int> stratum;
  for (int i = 0; i < 100; ++i) stratum.push_back(i < 50 ? 3 : i < 80 ? 1 : 2);
  auto counts = [&](const Selection& s) {
    std::vector<int> c(4, 0);
    for (int p : s.picks) ++c[stratum[p]];
    return c;
  };
  const Selection s10 = StratifiedSelection(stratum, 10, 1);
  EXPECT_EQ(counts(s10), (std::vector<int>{0, 3, 2, 5}));
  const Selection s7 = StratifiedSelection(stratum, 7, 1);  // 3.5 / 2.1 / 1.4 -> 4 / 2 / 1
  EXPECT_EQ(counts(s7), (std::vector<int>{0, 2, 1, 4}));
  EXPECT_EQ(std::set<int>(s7.picks.begin(), s7.picks.end()).size(), 7u);
  EXPECT_EQ(StratifiedSelection(stratum, 7, 1).picks, s7.picks);
  EXPECT_EQ(StratifiedSelection(stratum, 100, 1).picks.size(), 100u);
  EXPECT_EQ(StratifiedSelection(stratum, 200, 1).picks.size(), 100u);
}

TEST(MlpEmbedTest, LastHiddenLayerShape) {
  FeatureMatrix x;
  std::vector<float> y;
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int i = 0; i < 50; ++i) {
    x.AddRow({u(rng), u(rng), u(rng)});
    y.push_back(x.Row(i)[0] - x.Row(i)[1]);
  }
  MlpOptions o;
  o.epochs = 5;
  o.hidden = 16;
  Mlp mlp;
  mlp.Train(x, y, o);
  const FeatureMatrix z = mlp.Embed(x);
  EXPECT_EQ(z.rows, 50);
  EXPECT_EQ(z.cols, 16);
  EXPECT_GE(*std::min_element(z.data.begin(), z.data.end()), 0.f);  // ReLU outputs
  EXPECT_GT(*std::max_element(z.data.begin(), z.data.end()), 0.f);
}

}  // namespace
}  // namespace loom::trace::costmodel
