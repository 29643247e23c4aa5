#include "loom/monitor/fleet/detect/cart.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace loom::monitor {
namespace {

double Gini(double pos, double n) {
  if (n <= 0) return 0;
  const double p = pos / n;
  return 2 * p * (1 - p);
}

}  // namespace

Result<DecisionTree> DecisionTree::Fit(const std::vector<std::vector<double>>& x,
                                       const std::vector<int>& y, CartOptions options) {
  if (x.empty() || x.size() != y.size()) {
    return InvalidArgumentError("cart: need the same non-zero number of samples and labels, got " +
                                std::to_string(x.size()) + " and " + std::to_string(y.size()));
  }
  DecisionTree tree;
  tree.features_ = static_cast<int>(x[0].size());
  for (size_t i = 0; i < x.size(); ++i) {
    if (static_cast<int>(x[i].size()) != tree.features_) {
      return InvalidArgumentError("cart: sample " + std::to_string(i) + " has " +
                                  std::to_string(x[i].size()) + " features, expected " +
                                  std::to_string(tree.features_));
    }
    for (double v : x[i]) {
      if (!std::isfinite(v)) {
        return InvalidArgumentError("cart: sample " + std::to_string(i) + " has a non-finite feature");
      }
    }
  }
  tree.importance_.assign(tree.features_, 0.0);
  std::vector<int> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0);
  tree.Grow(x, y, idx, 0, static_cast<int>(idx.size()), 0, options);
  return tree;
}

int DecisionTree::Grow(const std::vector<std::vector<double>>& x, const std::vector<int>& y,
                       std::vector<int>& idx, int lo, int hi, int depth,
                       const CartOptions& options) {
  const int id = static_cast<int>(nodes_.size());
  nodes_.push_back({});
  const double n = hi - lo;
  double pos = 0;
  for (int k = lo; k < hi; ++k) pos += y[idx[k]];
  nodes_[id].depth = depth;
  nodes_[id].p_positive = pos / n;
  const double parent = Gini(pos, n);
  if (depth >= options.max_depth || parent == 0 || n < 2 * options.min_leaf) return id;
  double best_gain = 1e-12, best_thr = 0;
  int best_f = -1;
  std::vector<int> order(idx.begin() + lo, idx.begin() + hi);
  for (int f = 0; f < features_; ++f) {
    std::sort(order.begin(), order.end(), [&](int a, int b) { return x[a][f] < x[b][f]; });
    double left_pos = 0;
    for (int k = 0; k + 1 < static_cast<int>(order.size()); ++k) {
      left_pos += y[order[k]];
      const double nl = k + 1, nr = n - nl;
      if (nl < options.min_leaf || nr < options.min_leaf) continue;
      if (x[order[k]][f] == x[order[k + 1]][f]) continue;
      const double gain =
          parent - (nl * Gini(left_pos, nl) + nr * Gini(pos - left_pos, nr)) / n;
      if (gain > best_gain) {
        best_gain = gain;
        best_f = f;
        best_thr = 0.5 * (x[order[k]][f] + x[order[k + 1]][f]);
      }
    }
  }
  if (best_f < 0) return id;
  importance_[best_f] += best_gain * n;
  const int mid = static_cast<int>(
      std::partition(idx.begin() + lo, idx.begin() + hi,
                     [&](int s) { return x[s][best_f] <= best_thr; }) -
      idx.begin());
  nodes_[id].feature = best_f;
  nodes_[id].threshold = best_thr;
  const int l = Grow(x, y, idx, lo, mid, depth + 1, options);
  const int r = Grow(x, y, idx, mid, hi, depth + 1, options);
  nodes_[id].left = l;
  nodes_[id].right = r;
  return id;
}

double DecisionTree::PredictProba(std::span<const double> x) const {
  int id = 0;
  while (nodes_[id].feature >= 0) {
    id = x[nodes_[id].feature] <= nodes_[id].threshold ? nodes_[id].left : nodes_[id].right;
  }
  return nodes_[id].p_positive;
}

std::vector<int> DecisionTree::FeaturePriority() const {
  std::vector<int> first(features_, std::numeric_limits<int>::max());
  for (const Node& node : nodes_) {
    if (node.feature >= 0) first[node.feature] = std::min(first[node.feature], node.depth);
  }
  std::vector<int> order(features_);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (first[a] != first[b]) return first[a] < first[b];
    if (first[a] == std::numeric_limits<int>::max()) return false;  // unused: keep index order
    return importance_[a] > importance_[b];
  });
  return order;
}

}  // namespace loom::monitor
