// DecisionTree: a small CART classifier (Gini impurity, binary labels) used for Minder's metric
// prioritisation: features are per-window max-over-machines |z| of each metric, labels say
// whether a fault was active. Metrics used near the root are the most fault-sensitive.
//
//   LOOM_ASSIGN_OR_RETURN(DecisionTree tree, DecisionTree::Fit(x, y, CartOptions{}));
//   std::vector<int> order = tree.FeaturePriority();   // most informative feature first
//   double p = tree.PredictProba(x[0]);
//
// Thread-safety: immutable after Fit().
#pragma once

#include <span>
#include <vector>

#include "loom/base/status.h"

namespace loom::monitor {

struct CartOptions {
  int max_depth = 4;  // root = depth 0
  int min_leaf = 5;   // minimum samples per leaf
};

class DecisionTree {
 public:
  struct Node {
    int feature = -1;  // -1 = leaf
    double threshold = 0;  // go left when x[feature] <= threshold
    int left = -1, right = -1;
    int depth = 0;
    double p_positive = 0;
  };

  // x: samples x features (rectangular, finite); y: 0/1 per sample.
  static Result<DecisionTree> Fit(const std::vector<std::vector<double>>& x,
                                  const std::vector<int>& y, CartOptions options);
  double PredictProba(std::span<const double> x) const;
  // Features by depth of first use, ties by Gini importance; unused features last in index order.
  std::vector<int> FeaturePriority() const;
  const std::vector<double>& importance() const { return importance_; }
  const std::vector<Node>& nodes() const { return nodes_; }

 private:
  int Grow(const std::vector<std::vector<double>>& x, const std::vector<int>& y,
           std::vector<int>& idx, int lo, int hi, int depth, const CartOptions& options);
  std::vector<Node> nodes_;
  std::vector<double> importance_;
  int features_ = 0;
};

}  // namespace loom::monitor
