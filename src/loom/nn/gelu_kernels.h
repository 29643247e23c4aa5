// GELU (exact, erf form) forward and backward on raw buffers, fp32 math for fp32 or bf16 storage:
//   y = 0.5 x (1 + erf(x / sqrt 2)),  dy/dx = 0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi)
// erf uses Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7) with the vectorisable exp of
// attention_kernels; compiled for AVX-512, AVX2 and baseline x86-64. Tests compare with libm.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

namespace loom::nn::kernels {

void GeluForwardF32(const float* x, float* y, int64_t n);
void GeluBackwardF32(const float* x, const float* dy, float* dx, int64_t n);
void GeluForwardBF16(const uint16_t* x, uint16_t* y, int64_t n);
void GeluBackwardBF16(const uint16_t* x, const uint16_t* dy, uint16_t* dx, int64_t n);

}  // namespace loom::nn::kernels
