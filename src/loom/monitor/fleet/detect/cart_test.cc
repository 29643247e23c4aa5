#include "loom/monitor/fleet/detect/cart.h"

#include <random>

#include <gtest/gtest.h>

namespace loom::monitor {
namespace {

TEST(CartTest, RecoversTheInformativeFeature) {
  // Feature 2 decides the label; features 0, 1, 3 are noise.
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<std::vector<double>> x;
  std::vector<int> y;
  for (int i = 0; i < 400; ++i) {
    std::vector<double> f = {u(rng), u(rng), u(rng), u(rng)};
    y.push_back(f[2] > 0.7 ? 1 : 0);
    x.push_back(f);
  }
  auto tree = DecisionTree::Fit(x, y, CartOptions{});
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  EXPECT_EQ(tree->nodes()[0].feature, 2);
  EXPECT_NEAR(tree->nodes()[0].threshold, 0.7, 0.03);
  EXPECT_EQ(tree->FeaturePriority()[0], 2);
  EXPECT_GT(tree->PredictProba(std::vector<double>{0.5, 0.5, 0.9, 0.5}), 0.9);
  EXPECT_LT(tree->PredictProba(std::vector<double>{0.5, 0.5, 0.1, 0.5}), 0.1);
}

TEST(CartTest, SecondFeatureRanksAfterTheRoot) {
  // Label = f1 > 0.5 && f0 > 0.5: both used, f3 never.
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<std::vector<double>> x;
  std::vector<int> y;
  for (int i = 0; i < 600; ++i) {
    std::vector<double> f = {u(rng), u(rng), u(rng) * 0.01, u(rng)};
    y.push_back(f[1] > 0.5 && f[0] > 0.5 ? 1 : 0);
    x.push_back(f);
  }
  auto tree = DecisionTree::Fit(x, y, CartOptions{.max_depth = 2, .min_leaf = 5});
  ASSERT_TRUE(tree.ok());
  const std::vector<int> order = tree->FeaturePriority();
  EXPECT_TRUE((order[0] == 0 && order[1] == 1) || (order[0] == 1 && order[1] == 0));
  EXPECT_EQ(order.size(), 4u);
}

TEST(CartTest, BadInputIsAnError) {
  EXPECT_FALSE(DecisionTree::Fit({}, {}, {}).ok());
  EXPECT_FALSE(DecisionTree::Fit({{1.0}, {1.0, 2.0}}, {0, 1}, {}).ok());
  EXPECT_FALSE(DecisionTree::Fit({{NAN}}, {0}, {}).ok());
}

}  // namespace
}  // namespace loom::monitor
