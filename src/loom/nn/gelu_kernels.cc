#include "loom/nn/gelu_kernels.h"

#include <bit>

#include "loom/base/convert.h"
#include "loom/nn/internal/fast_exp.h"

namespace loom::nn::kernels {
namespace {

#define LOOM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

// erf(z) (A&S 7.1.26) given e = exp(-z^2).
inline float Erf(float z, float e) {
  const float a = z < 0 ? -z : z;
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  const float poly =
      t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  const float r = 1.0f - poly * e;
  return z < 0 ? -r : r;
}

constexpr int64_t kChunk = 1024;  // bf16 is processed through fp32 chunks on the stack

}  // namespace

LOOM_CLONES void GeluForwardF32(const float* __restrict x, float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float z = v * kInvSqrt2;
    y[i] = 0.5f * v * (1.0f + Erf(z, ExpCore(-z * z)));
  }
}

LOOM_CLONES void GeluBackwardF32(const float* __restrict x, const float* __restrict dy,
                                 float* __restrict dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float z = v * kInvSqrt2;
    const float e = ExpCore(-z * z);  // exp(-x^2 / 2)
    dx[i] = dy[i] * (0.5f * (1.0f + Erf(z, e)) + v * e * kInvSqrt2Pi);
  }
}

void GeluForwardBF16(const uint16_t* x, uint16_t* y, int64_t n) {
  float buf[kChunk];
  for (int64_t b = 0; b < n; b += kChunk) {
    const int64_t m = n - b < kChunk ? n - b : kChunk;
    ConvertBF16ToF32(x + b, buf, m);
    GeluForwardF32(buf, buf, m);
    ConvertF32ToBF16(buf, y + b, m);
  }
}

void GeluBackwardBF16(const uint16_t* x, const uint16_t* dy, uint16_t* dx, int64_t n) {
  float xb[kChunk], gb[kChunk];
  for (int64_t b = 0; b < n; b += kChunk) {
    const int64_t m = n - b < kChunk ? n - b : kChunk;
    ConvertBF16ToF32(x + b, xb, m);
    ConvertBF16ToF32(dy + b, gb, m);
    GeluBackwardF32(xb, gb, gb, m);
    ConvertF32ToBF16(gb, dx + b, m);
  }
}

}  // namespace loom::nn::kernels
