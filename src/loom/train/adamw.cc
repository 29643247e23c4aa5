#include "loom/train/adamw.h"

#include <cmath>

namespace loom::train {
namespace {

__attribute__((target_clones("avx512f", "avx2", "default"))) void Update(
    float* __restrict p, const float* __restrict g, float* __restrict m, float* __restrict v,
    int64_t n, float lr, float b1, float b2, float eps, float decay_factor, float step_size,
    float inv_bc2_sqrt, float gs) {
  for (int64_t i = 0; i < n; ++i) {
    float gi = g[i] * gs;
    float mi = b1 * m[i] + (1.0f - b1) * gi;
    float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    float denom = std::sqrt(vi) * inv_bc2_sqrt + eps;
    p[i] = p[i] * decay_factor - step_size * mi / denom;
  }
}

__attribute__((target_clones("avx512f", "avx2", "default"))) double Squares(const float* x,
                                                                           int64_t n) {
  // 16 independent fp32 lanes (so the loop vectorises without reassociation) over blocks of
  // 4096 elements, each block's lanes accumulated in double: fast and accurate for a norm.
  constexpr int kLanes = 16;
  double total = 0;
  for (int64_t b = 0; b < n; b += 4096) {
    const int64_t e = b + 4096 < n ? b + 4096 : n;
    float acc[kLanes] = {};
    int64_t i = b;
    for (; i + kLanes <= e; i += kLanes) {
      for (int l = 0; l < kLanes; ++l) acc[l] += x[i + l] * x[i + l];
    }
    for (; i < e; ++i) acc[0] += x[i] * x[i];
    for (int l = 0; l < kLanes; ++l) total += acc[l];
  }
  return total;
}

}  // namespace

void AdamWUpdate(float* param, const float* grad, float* m, float* v, int64_t n,
                 const AdamWStep& s) {
  const double bc1 = 1.0 - std::pow(s.beta1, static_cast<double>(s.step));
  const double bc2 = 1.0 - std::pow(s.beta2, static_cast<double>(s.step));
  Update(param, grad, m, v, n, static_cast<float>(s.lr), static_cast<float>(s.beta1),
         static_cast<float>(s.beta2), static_cast<float>(s.eps),
         static_cast<float>(1.0 - s.lr * s.weight_decay), static_cast<float>(s.lr / bc1),
         static_cast<float>(1.0 / std::sqrt(bc2)), static_cast<float>(s.grad_scale));
}

double SumOfSquares(const float* x, int64_t n) { return Squares(x, n); }

}  // namespace loom::train
