#include "loom/trace/costmodel/fewshot_select.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>

namespace loom::trace::costmodel {
namespace {

double Dist2(const float* a, const float* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(a[i] - b[i]) * (a[i] - b[i]);
  return s;
}

// k-means++ seeding followed by Lloyd iterations; returns the final centres and assignment.
void Lloyd(const FeatureMatrix& x, int k, std::mt19937_64& rng,
           std::vector<std::vector<float>>* cent, std::vector<int>* assign) {
  const int n = static_cast<int>(x.rows), d = static_cast<int>(x.cols);
  std::vector<double> best(n, std::numeric_limits<double>::max());
  const int first = static_cast<int>(rng() % n);
  cent->emplace_back(x.Row(first), x.Row(first) + d);
  while (static_cast<int>(cent->size()) < k) {
    double total = 0;
    for (int i = 0; i < n; ++i) {
      best[i] = std::min(best[i], Dist2(x.Row(i), cent->back().data(), d));
      total += best[i];
    }
    int pick = 0;
    if (total > 0) {
      double r = std::uniform_real_distribution<double>(0, total)(rng);
      for (pick = 0; pick < n - 1 && (r -= best[pick]) > 0; ++pick) {
      }
    }
    cent->emplace_back(x.Row(pick), x.Row(pick) + d);
  }
  assign->assign(n, 0);
  for (int it = 0; it < 25; ++it) {
    bool changed = false;
    for (int i = 0; i < n; ++i) {
      double bd = std::numeric_limits<double>::max();
      int bc = 0;
      for (int c = 0; c < k; ++c) {
        const double dd = Dist2(x.Row(i), (*cent)[c].data(), d);
        if (dd < bd) {
          bd = dd;
          bc = c;
        }
      }
      changed |= (*assign)[i] != bc;
      (*assign)[i] = bc;
    }
    if (!changed && it > 0) break;
    std::vector<std::vector<double>> sum(k, std::vector<double>(d, 0));
    std::vector<int> cnt(k, 0);
    for (int i = 0; i < n; ++i) {
      ++cnt[(*assign)[i]];
      for (int j = 0; j < d; ++j) sum[(*assign)[i]][j] += x.Row(i)[j];
    }
    for (int c = 0; c < k; ++c) {
      if (cnt[c] == 0) continue;
      for (int j = 0; j < d; ++j) (*cent)[c][j] = static_cast<float>(sum[c][j] / cnt[c]);
    }
  }
}

std::vector<double> NormalisedWeights(const std::vector<double>& raw) {
  double sum = 0;
  for (double w : raw) sum += w;
  std::vector<double> out(raw.size(), 1.0);
  if (sum <= 0) return out;
  for (size_t i = 0; i < raw.size(); ++i) out[i] = raw[i] * raw.size() / sum;
  return out;
}

}  // namespace

Medoids KMeansMedoids(const FeatureMatrix& x, int k, uint64_t seed) {
  const int n = static_cast<int>(x.rows), d = static_cast<int>(x.cols);
  k = std::min(k, n);
  Medoids out;
  if (k <= 0) return out;
  std::mt19937_64 rng(seed);
  std::vector<std::vector<float>> cent;
  Lloyd(x, k, rng, &cent, &out.assignment);
  std::vector<int> cnt(k, 0);
  for (int a : out.assignment) ++cnt[a];
  std::vector<int> order(k);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return cnt[a] > cnt[b]; });
  std::vector<char> taken(n, 0);
  for (int c : order) {
    if (cnt[c] == 0) continue;
    int bi = -1;
    double bd = std::numeric_limits<double>::max();
    for (int i = 0; i < n; ++i) {
      if (out.assignment[i] != c) continue;
      const double dd = Dist2(x.Row(i), cent[c].data(), d);
      if (bi < 0 || dd < bd) {  // bi < 0: a member even if distances are not finite
        bd = dd;
        bi = i;
      }
    }
    taken[bi] = 1;
    out.picks.push_back(bi);
    out.cluster_size.push_back(cnt[c]);
  }
  while (static_cast<int>(out.picks.size()) < k) {  // farthest-point fill
    int bi = -1;
    double bd = -1;
    for (int i = 0; i < n; ++i) {
      if (taken[i]) continue;
      double nearest = std::numeric_limits<double>::max();
      for (int p : out.picks) nearest = std::min(nearest, Dist2(x.Row(i), x.Row(p), d));
      if (bi < 0 || nearest > bd) {
        bd = nearest;
        bi = i;
      }
    }
    taken[bi] = 1;
    out.picks.push_back(bi);
    out.cluster_size.push_back(1);
  }
  return out;
}

std::vector<int> KMeansSelect(const FeatureMatrix& x, int k, uint64_t seed) {
  return KMeansMedoids(x, k, seed).picks;
}

Selection KMeansSelection(const FeatureMatrix& x, int k, uint64_t seed, bool size_weighted) {
  Medoids m = KMeansMedoids(x, k, seed);
  Selection s;
  s.picks = std::move(m.picks);
  std::vector<double> raw(m.cluster_size.begin(), m.cluster_size.end());
  s.weights = size_weighted ? NormalisedWeights(raw) : std::vector<double>(s.picks.size(), 1.0);
  return s;
}

Selection RandomSelection(int n, int k, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int> pos(std::max(n, 0));
  std::iota(pos.begin(), pos.end(), 0);
  std::shuffle(pos.begin(), pos.end(), rng);
  pos.resize(std::clamp(k, 0, n));
  Selection s;
  s.picks = std::move(pos);
  s.weights.assign(s.picks.size(), 1.0);
  return s;
}

Selection StratifiedSelection(const std::vector<int>& stratum, int k, uint64_t seed) {
  const int n = static_cast<int>(stratum.size());
  k = std::clamp(k, 0, n);
  std::map<int, std::vector<int>> members;
  for (int i = 0; i < n; ++i) members[stratum[i]].push_back(i);
  // Largest-remainder allocation of k over the strata, capped at each stratum's size.
  std::vector<std::pair<int, std::vector<int>*>> strata;
  for (auto& [id, v] : members) strata.push_back({id, &v});
  std::vector<int> quota(strata.size());
  std::vector<std::pair<double, int>> rem;
  int given = 0;
  for (size_t j = 0; j < strata.size(); ++j) {
    const double share = n > 0 ? double(k) * strata[j].second->size() / n : 0;
    quota[j] = static_cast<int>(std::floor(share));
    given += quota[j];
    rem.push_back({share - quota[j], static_cast<int>(j)});
  }
  std::stable_sort(rem.begin(), rem.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  while (given < k) {  // k <= n, so some stratum always has room
    for (size_t r = 0; given < k && r < rem.size(); ++r) {
      const int j = rem[r].second;
      if (quota[j] < static_cast<int>(strata[j].second->size())) {
        ++quota[j];
        ++given;
      }
    }
  }
  std::mt19937_64 rng(seed);
  Selection s;
  for (size_t j = 0; j < strata.size(); ++j) {
    std::vector<int> v = *strata[j].second;
    std::shuffle(v.begin(), v.end(), rng);
    s.picks.insert(s.picks.end(), v.begin(), v.begin() + quota[j]);
  }
  s.weights.assign(s.picks.size(), 1.0);
  return s;
}

std::vector<int> CopiesForWeights(const std::vector<double>& weights, double scale) {
  std::vector<int> copies;
  for (double w : weights) copies.push_back(std::max(1, static_cast<int>(std::lround(scale * w))));
  return copies;
}

}  // namespace loom::trace::costmodel
