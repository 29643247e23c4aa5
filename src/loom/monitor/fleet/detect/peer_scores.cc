#include "loom/monitor/fleet/detect/peer_scores.h"

#include <algorithm>
#include <cmath>

#include <Eigen/Dense>

namespace loom::monitor {

void ExtractFleetWindow(const FleetSeries& s, int metric, int64_t t, int w,
                        int64_t norm_horizon_s, FleetWindow* out) {
  const int n = s.machines;
  out->machines = n;
  out->w = w;
  out->values.assign(static_cast<size_t>(n) * w, NAN);
  out->present.assign(n, 0);
  out->present_count = 0;
  const int64_t t0 = t - w + 1;
  const int64_t horizon = std::max<int64_t>(w, norm_horizon_s);
  const int64_t h0 = std::max<int64_t>(0, t - horizon + 1);
  const int64_t stride = std::max<int64_t>(1, (t0 - h0) / 64);
  float lo = INFINITY, hi = -INFINITY;
  for (int i = 0; i < n; ++i) {
    const float* row = s.row(metric, i);
    float* dst = out->values.data() + static_cast<size_t>(i) * w;
    int have = 0;
    for (int k = 0; k < w; ++k) {
      const float v = t0 + k >= 0 ? row[t0 + k] : NAN;
      dst[k] = v;
      if (!std::isnan(v)) ++have;
    }
    if (2 * have < w || have == 0) {
      std::fill(dst, dst + w, NAN);
      continue;
    }
    // Nearest-sample gap fill inside the window.
    for (int k = 0; k < w; ++k) {
      if (!std::isnan(dst[k])) continue;
      for (int d = 1; d < w; ++d) {
        if (k - d >= 0 && !std::isnan(dst[k - d])) {
          dst[k] = dst[k - d];
          break;
        }
        if (k + d < w && !std::isnan(dst[k + d])) {
          dst[k] = dst[k + d];
          break;
        }
      }
    }
    out->present[i] = 1;
    ++out->present_count;
    for (int k = 0; k < w; ++k) {
      lo = std::min(lo, dst[k]);
      hi = std::max(hi, dst[k]);
    }
    for (int64_t u = h0; u < t0; u += stride) {
      const float v = row[u];
      if (std::isnan(v)) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  if (out->present_count == 0) return;
  const float range = hi - lo;
  const float inv = range > 1e-12f ? 1.0f / range : 0.0f;
  for (int i = 0; i < n; ++i) {
    if (!out->present[i]) continue;
    float* dst = out->values.data() + static_cast<size_t>(i) * w;
    for (int k = 0; k < w; ++k) dst[k] = range > 1e-12f ? (dst[k] - lo) * inv : 0.5f;
  }
}

Result<Distance> ParseDistance(const std::string& name) {
  if (name == "l2") return Distance::kL2;
  if (name == "l2sq") return Distance::kL2Squared;
  if (name == "l1") return Distance::kL1;
  if (name == "linf") return Distance::kLInf;
  return InvalidArgumentError("distance must be l2, l2sq, l1 or linf, got '" + name + "'");
}

namespace {

float PairDistance(const float* a, const float* b, int d, Distance distance) {
  float acc = 0;
  switch (distance) {
    case Distance::kL2:
    case Distance::kL2Squared:
      for (int k = 0; k < d; ++k) acc += (a[k] - b[k]) * (a[k] - b[k]);
      return distance == Distance::kL2 ? std::sqrt(acc) : acc;
    case Distance::kL1:
      for (int k = 0; k < d; ++k) acc += std::fabs(a[k] - b[k]);
      return acc;
    case Distance::kLInf:
      for (int k = 0; k < d; ++k) acc = std::max(acc, std::fabs(a[k] - b[k]));
      return acc;
  }
  return acc;
}

}  // namespace

void SquaredDistanceSumsBruteForce(const float* emb, int n, int d, const uint8_t* present,
                                   float* out) {
  int p = 0;
  for (int i = 0; i < n; ++i) p += present[i];
  for (int i = 0; i < n; ++i) {
    if (!present[i] || p < 2) {
      out[i] = NAN;
      continue;
    }
    double acc = 0;
    for (int j = 0; j < n; ++j) {
      if (j != i && present[j]) acc += PairDistance(emb + i * d, emb + j * d, d, Distance::kL2Squared);
    }
    out[i] = static_cast<float>(acc / (p - 1));
  }
}

void PeerDistanceSums(const float* emb, int n, int d, const uint8_t* present, Distance distance,
                      float* out) {
  int p = 0;
  for (int i = 0; i < n; ++i) p += present[i];
  if (p < 2) {
    std::fill(out, out + n, NAN);
    return;
  }
  if (distance == Distance::kL2Squared) {
    std::vector<double> sum_b(d, 0.0);
    double sum_sq = 0;
    for (int j = 0; j < n; ++j) {
      if (!present[j]) continue;
      const float* b = emb + static_cast<size_t>(j) * d;
      for (int k = 0; k < d; ++k) {
        sum_b[k] += b[k];
        sum_sq += static_cast<double>(b[k]) * b[k];
      }
    }
    for (int i = 0; i < n; ++i) {
      if (!present[i]) {
        out[i] = NAN;
        continue;
      }
      const float* a = emb + static_cast<size_t>(i) * d;
      double aa = 0, ab = 0;
      for (int k = 0; k < d; ++k) {
        aa += static_cast<double>(a[k]) * a[k];
        ab += a[k] * sum_b[k];
      }
      out[i] = static_cast<float>(std::max(0.0, p * aa - 2 * ab + sum_sq) / (p - 1));
    }
    return;
  }
  if (distance == Distance::kL2 && n >= kGramMinMachines) {
    // |a - b| = sqrt(|a|^2 + |b|^2 - 2 a.b): the O(n^2 d) part becomes one GEMM (in double, so
    // the cancellation for near-identical machines stays far below the scores' noise).
    Eigen::MatrixXd e(p, d);
    std::vector<int> rows;
    for (int i = 0; i < n; ++i) {
      if (!present[i]) continue;
      for (int k = 0; k < d; ++k) e(rows.size(), k) = emb[static_cast<size_t>(i) * d + k];
      rows.push_back(i);
    }
    Eigen::MatrixXd gram = e * e.transpose();
    const Eigen::VectorXd sq = gram.diagonal();
    // In place: gram(q, r) <- |e_q - e_r|^2, then vectorised sqrt (the diagonal becomes 0).
    gram.array() = ((-2.0 * gram.array()).colwise() + sq.array()).rowwise() + sq.transpose().array();
    const Eigen::RowVectorXd sums = gram.array().max(0.0).sqrt().colwise().sum();
    std::fill(out, out + n, NAN);
    for (int r = 0; r < p; ++r) out[rows[r]] = static_cast<float>(sums(r) / (p - 1));
    return;
  }
  // Symmetric pairs once: O(n^2 d / 2).
  std::vector<double> acc(n, 0.0);
  for (int i = 0; i < n; ++i) {
    if (!present[i]) continue;
    const float* a = emb + static_cast<size_t>(i) * d;
    for (int j = i + 1; j < n; ++j) {
      if (!present[j]) continue;
      const float dist = PairDistance(a, emb + static_cast<size_t>(j) * d, d, distance);
      acc[i] += dist;
      acc[j] += dist;
    }
  }
  for (int i = 0; i < n; ++i) out[i] = present[i] ? static_cast<float>(acc[i] / (p - 1)) : NAN;
}

void RobustZ(std::span<const float> x, std::span<const uint8_t> present, double scale_floor,
             std::span<float> z) {
  std::vector<float> v;
  v.reserve(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    if (present[i] && !std::isnan(x[i])) v.push_back(x[i]);
  }
  if (v.empty()) {
    std::fill(z.begin(), z.end(), NAN);
    return;
  }
  auto median = [](std::vector<float>& a) {
    const size_t m = a.size() / 2;
    std::nth_element(a.begin(), a.begin() + m, a.end());
    float med = a[m];
    if (a.size() % 2 == 0) med = 0.5f * (med + *std::max_element(a.begin(), a.begin() + m));
    return med;
  };
  const float med = median(v);
  for (float& e : v) e = std::fabs(e - med);
  const float mad = median(v);
  const double scale = std::max(1.4826 * mad, scale_floor);
  for (size_t i = 0; i < x.size(); ++i) {
    z[i] = present[i] && !std::isnan(x[i]) ? static_cast<float>((x[i] - med) / scale) : NAN;
  }
}

int ArgMax(std::span<const float> x) {
  int best = -1;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) continue;
    if (best < 0 || x[i] > x[best]) best = static_cast<int>(i);
  }
  return best;
}

}  // namespace loom::monitor

#include "loom/monitor/fleet/detect/continuity_gate.h"

namespace loom::monitor {

void SetTopCandidate(std::span<const float> scores, ChannelScore* ch) {
  // Top k by insertion (strict > keeps the lower id first on ties, like ArgMax).
  constexpr int k = ChannelScore::kRunnersUp + 1;
  int idx[k];
  float val[k];
  int filled = 0;
  for (size_t i = 0; i < scores.size(); ++i) {
    const float v = scores[i];
    if (std::isnan(v)) continue;
    if (filled == k && !(v > val[k - 1])) continue;
    int p = filled < k ? filled++ : k - 1;
    for (; p > 0 && v > val[p - 1]; --p) {
      idx[p] = idx[p - 1];
      val[p] = val[p - 1];
    }
    idx[p] = static_cast<int>(i);
    val[p] = v;
  }
  if (filled == 0) return;
  ch->machine = idx[0];
  ch->score = val[0];
  for (int r = 0; r + 1 < k; ++r) {
    ch->runner_up[r] = r + 1 < filled ? idx[r + 1] : -1;
    ch->runner_up_score[r] = r + 1 < filled ? val[r + 1] : -INFINITY;
  }
}

void MarkMissingCandidate(std::span<const uint8_t> present, ChannelScore* ch) {
  int p = 0;
  for (uint8_t v : present) p += v;
  const int n = static_cast<int>(present.size());
  if (p == n || 2 * p < n) return;
  for (int i = 0; i < n; ++i) {
    if (!present[i]) {
      if (ch->machine >= 0 && !ch->missing) {  // the scored top becomes the first runner-up
        for (int r = ChannelScore::kRunnersUp - 1; r > 0; --r) {
          ch->runner_up[r] = ch->runner_up[r - 1];
          ch->runner_up_score[r] = ch->runner_up_score[r - 1];
        }
        ch->runner_up[0] = ch->machine;
        ch->runner_up_score[0] = static_cast<float>(ch->score);
      }
      ch->machine = i;
      ch->missing = true;
      ch->score = INFINITY;
      return;
    }
  }
}

}  // namespace loom::monitor
