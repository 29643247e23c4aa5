// IsolationForestDetector (see baselines.h): Liu, Ting, Zhou (ICDM'08), loom's own C++.
#include <cmath>
#include <random>

#include "loom/monitor/fleet/detect/baselines.h"

namespace loom::monitor {
namespace {

// Average path length of an unsuccessful BST search over n points.
double C(double n) {
  if (n <= 1) return 0;
  if (n == 2) return 1;
  return 2.0 * (std::log(n - 1.0) + 0.5772156649) - 2.0 * (n - 1.0) / n;
}

struct Node {
  int feature = -1;  // -1 = leaf
  float split = 0;
  int left = -1, right = -1;
  int size = 0;
};

int Build(const std::vector<float>& x, int d, std::vector<int>& idx, int lo, int hi, int depth,
          int max_depth, std::mt19937_64& rng, std::vector<Node>& nodes) {
  const int id = static_cast<int>(nodes.size());
  nodes.push_back({});
  nodes[id].size = hi - lo;
  if (hi - lo <= 1 || depth >= max_depth) return id;
  // Pick a feature with spread (a few tries), split uniformly between its min and max.
  for (int attempt = 0; attempt < 8; ++attempt) {
    const int f = static_cast<int>(rng() % d);
    float mn = INFINITY, mx = -INFINITY;
    for (int k = lo; k < hi; ++k) {
      mn = std::min(mn, x[static_cast<size_t>(idx[k]) * d + f]);
      mx = std::max(mx, x[static_cast<size_t>(idx[k]) * d + f]);
    }
    if (!(mx > mn)) continue;
    const float split = mn + (mx - mn) * std::uniform_real_distribution<float>(0, 1)(rng);
    int mid = lo;
    for (int k = lo; k < hi; ++k) {
      if (x[static_cast<size_t>(idx[k]) * d + f] < split) std::swap(idx[k], idx[mid++]);
    }
    if (mid == lo || mid == hi) continue;
    nodes[id].feature = f;
    nodes[id].split = split;
    const int l = Build(x, d, idx, lo, mid, depth + 1, max_depth, rng, nodes);
    const int r = Build(x, d, idx, mid, hi, depth + 1, max_depth, rng, nodes);
    nodes[id].left = l;
    nodes[id].right = r;
    return id;
  }
  return id;
}

double PathLength(const std::vector<Node>& nodes, const float* v) {
  int id = 0, depth = 0;
  while (nodes[id].feature >= 0) {
    id = v[nodes[id].feature] < nodes[id].split ? nodes[id].left : nodes[id].right;
    ++depth;
  }
  return depth + C(nodes[id].size);
}

}  // namespace

std::vector<float> IsolationForestScores(const std::vector<float>& x, int n, int d, int trees,
                                         int sample, uint64_t seed) {
  std::vector<float> scores(n, NAN);
  if (n < 2) return scores;
  const int psi = std::min(sample, n);
  const int max_depth = static_cast<int>(std::ceil(std::log2(std::max(2, psi))));
  std::mt19937_64 rng(seed);
  std::vector<double> total(n, 0.0);
  std::vector<int> all(n);
  std::vector<Node> nodes;
  for (int tr = 0; tr < trees; ++tr) {
    for (int i = 0; i < n; ++i) all[i] = i;
    for (int i = 0; i < psi; ++i) {  // partial Fisher-Yates: the first psi are the sample
      const int j = i + static_cast<int>(rng() % (n - i));
      std::swap(all[i], all[j]);
    }
    std::vector<int> idx(all.begin(), all.begin() + psi);
    nodes.clear();
    Build(x, d, idx, 0, psi, 0, max_depth, rng, nodes);
    for (int i = 0; i < n; ++i) total[i] += PathLength(nodes, x.data() + static_cast<size_t>(i) * d);
  }
  const double c = C(psi);
  for (int i = 0; i < n; ++i) {
    scores[i] = static_cast<float>(std::pow(2.0, -(total[i] / trees) / std::max(c, 1e-9)));
  }
  return scores;
}

Result<ScoreStep> IsolationForestDetector::Score(const FleetSeries& s, int64_t t) {
  if (t < 0 || t >= s.seconds) return InvalidArgumentError("iforest: t outside the series");
  const int n = s.machines, w = window_, m = s.metrics(), d = 2 * m;
  ScoreStep step;
  step.machine_scores.assign(n, NAN);
  ChannelScore ch{"all"};
  if (t < w - 1 || n < 3) {
    step.channels.push_back(ch);
    return step;
  }
  std::vector<float> feat(static_cast<size_t>(n) * d, 0.0f);
  std::vector<uint8_t> present(n, 1);
  for (int k = 0; k < m; ++k) {
    ExtractFleetWindow(s, k, t, w, 600, &win_);
    for (int i = 0; i < n; ++i) {
      if (!win_.present[i]) {
        present[i] = 0;
        continue;
      }
      const float* v = win_.values.data() + static_cast<size_t>(i) * w;
      double mean = 0, sq = 0;
      for (int j = 0; j < w; ++j) mean += v[j];
      mean /= w;
      for (int j = 0; j < w; ++j) sq += (v[j] - mean) * (v[j] - mean);
      feat[static_cast<size_t>(i) * d + 2 * k] = static_cast<float>(mean);
      feat[static_cast<size_t>(i) * d + 2 * k + 1] = static_cast<float>(std::sqrt(sq / w));
    }
  }
  std::vector<int> rows;
  std::vector<float> x;
  for (int i = 0; i < n; ++i) {
    if (!present[i]) continue;
    rows.push_back(i);
    x.insert(x.end(), feat.begin() + static_cast<size_t>(i) * d,
             feat.begin() + static_cast<size_t>(i + 1) * d);
  }
  if (rows.size() >= 3) {
    const std::vector<float> sc = IsolationForestScores(
        x, static_cast<int>(rows.size()), d, trees_, sample_,
        seed_ * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(t));
    for (size_t r = 0; r < rows.size(); ++r) step.machine_scores[rows[r]] = sc[r];
    SetTopCandidate(step.machine_scores, &ch);
  }
  MarkMissingCandidate(present, &ch);
  step.channels.push_back(ch);
  return step;
}

}  // namespace loom::monitor
