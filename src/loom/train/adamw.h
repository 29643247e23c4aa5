// AdamW on raw fp32 arrays (decoupled weight decay, bias-corrected moments), the update every
// data-parallel mode applies to its slice of the parameters. Compiled for AVX-512, AVX2 and
// baseline x86-64, chosen at run time.
//
//   p -= lr * (m_hat / (sqrt(v_hat) + eps) + weight_decay * p),   g scaled by grad_scale first
//
// This matches torch.optim.AdamW (same order of operations up to rounding).
// Thread-safety: pure function of its arguments.
#pragma once

#include <cstdint>

namespace loom::train {

struct AdamWStep {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.0;  // 0 for parameters without decay
  int64_t step = 1;           // 1-based, for bias correction
  double grad_scale = 1.0;    // e.g. the clipping coefficient
};

void AdamWUpdate(float* param, const float* grad, float* m, float* v, int64_t n,
                 const AdamWStep& s);

// Sum of squares (in double) of x[0..n).
double SumOfSquares(const float* x, int64_t n);

}  // namespace loom::train
