// A vectorisable exp for the nn kernels (softmax, GELU): Cephes-style range reduction and a
// degree-6 polynomial; relative error < 2e-7 for inputs in [-87, 88]; clamps below -87 (result
// ~1e-38). Inline so that each caller's target clones vectorise it.
#pragma once

#include <bit>
#include <cstdint>

namespace loom::nn::kernels {

// exp(x) = 2^n * exp(r), x = n ln2 + r, |r| <= ln2/2; Cephes' degree-6 polynomial for exp(r).
inline float ExpCore(float x) {
  x = x > 88.0f ? 88.0f : x;
  x = x < -87.0f ? -87.0f : x;
  // Round to nearest by adding and subtracting 1.5 * 2^23 (branch-free, so loops vectorise).
  const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  return p * std::bit_cast<float>(bits);
}

}  // namespace loom::nn::kernels
