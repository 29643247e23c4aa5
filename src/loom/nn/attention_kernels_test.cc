#include "loom/nn/attention_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "loom/base/dtype.h"
#include "loom/base/philox.h"

namespace loom::nn::kernels {
namespace {

TEST(AttentionKernelsTest, ExpMatchesLibm) {
  for (float x = -87.0f; x <= 0.0f; x += 0.0137f) {
    float ref = std::exp(x);
    ASSERT_NEAR(ExpNonPositive(x), ref, 2e-7f * ref + 1e-38f) << x;
  }
  EXPECT_EQ(ExpNonPositive(0.0f), 1.0f);
  EXPECT_LT(ExpNonPositive(-1000.0f), 1e-37f);
}

TEST(AttentionKernelsTest, MaskedSoftmaxMatchesScalarReference) {
  const int64_t rows = 5, cols = 19, ld = 23;
  std::vector<float> s(rows * ld), ref(rows * ld);
  PhiloxStream rng(1, 1);
  for (float& x : s) x = rng.NextNormal() * 4;
  ref = s;
  int64_t lo[rows] = {0, 2, 5, 0, 18}, hi[rows] = {19, 7, 6, 1, 19};
  MaskedSoftmaxRows(s.data(), rows, cols, ld, lo, hi, 0.5f);
  for (int64_t i = 0; i < rows; ++i) {
    double m = -1e30, sum = 0;
    for (int64_t j = lo[i]; j < hi[i]; ++j) m = std::max(m, 0.5 * ref[i * ld + j]);
    for (int64_t j = lo[i]; j < hi[i]; ++j) sum += std::exp(0.5 * ref[i * ld + j] - m);
    for (int64_t j = 0; j < cols; ++j) {
      double want = (j >= lo[i] && j < hi[i]) ? std::exp(0.5 * ref[i * ld + j] - m) / sum : 0.0;
      ASSERT_NEAR(s[i * ld + j], want, 1e-6) << i << "," << j;
    }
    ASSERT_EQ(s[i * ld + cols], ref[i * ld + cols]) << "padding beyond cols untouched";
  }
}

TEST(AttentionKernelsTest, SoftmaxBackwardMatchesDefinition) {
  const int64_t rows = 3, cols = 17;
  std::vector<float> p(rows * cols), dp(rows * cols);
  PhiloxStream rng(2, 2);
  for (int64_t i = 0; i < rows; ++i) {
    float sum = 0;
    for (int64_t j = 0; j < cols; ++j) sum += p[i * cols + j] = rng.NextUniform();
    for (int64_t j = 0; j < cols; ++j) p[i * cols + j] /= sum;
  }
  for (float& x : dp) x = rng.NextNormal();
  std::vector<float> in = dp;
  SoftmaxBackwardRows(p.data(), cols, dp.data(), cols, rows, cols, 0.125f);
  for (int64_t i = 0; i < rows; ++i) {
    double dot = 0;
    for (int64_t j = 0; j < cols; ++j) dot += p[i * cols + j] * in[i * cols + j];
    for (int64_t j = 0; j < cols; ++j) {
      ASSERT_NEAR(dp[i * cols + j], 0.125 * p[i * cols + j] * (in[i * cols + j] - dot), 1e-6);
    }
  }
}

TEST(AttentionKernelsTest, GemmsAgreeWithNaiveProducts) {
  const int64_t m = 7, n = 5, k = 9;
  std::vector<float> a(k * m), b(n * k), c(m * n, 1.0f);  // a stored transposed, b transposed
  PhiloxStream rng(3, 3);
  for (float& x : a) x = rng.NextNormal();
  for (float& x : b) x = rng.NextNormal();
  ASSERT_TRUE(GemmF32(true, true, m, n, k, 2.0f, a.data(), m, b.data(), k, 1.0f, c.data(), n).ok());
  std::vector<uint16_t> a16(a.size()), b16(b.size());
  F32ToBF16(a.data(), a.size(), a16.data(), a.size(), 1, a.size());
  F32ToBF16(b.data(), b.size(), b16.data(), b.size(), 1, b.size());
  std::vector<float> c16(m * n, 0.0f), cw(m * n, 0.0f);
  ASSERT_TRUE(GemmBF16(true, true, m, n, k, 1.0f, a16.data(), m, b16.data(), k, 0.0f, c16.data(), n).ok());
  ASSERT_TRUE(GemmBF16Widened(true, true, m, n, k, 1.0f, a16.data(), m, b16.data(), k, 0.0f,
                              cw.data(), n).ok());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 0, want16 = 0;
      for (int64_t l = 0; l < k; ++l) {
        want += a[l * m + i] * b[j * k + l];
        want16 += BF16ToFloat(a16[l * m + i]) * BF16ToFloat(b16[j * k + l]);
      }
      ASSERT_NEAR(c[i * n + j], 1.0 + 2 * want, 1e-4);
      ASSERT_NEAR(c16[i * n + j], want16, 1e-4);
      ASSERT_NEAR(cw[i * n + j], want16, 1e-4);
    }
  }
}

TEST(AttentionKernelsTest, Bf16ConversionRoundsToNearestEven) {
  std::vector<float> src = {1.0f, 1.0f + 0x1.0p-8f, 1.0f + 3 * 0x1.0p-8f, -2.5f};
  std::vector<uint16_t> dst(4);
  F32ToBF16(src.data(), 4, dst.data(), 4, 1, 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(dst[i], FloatToBF16(src[i])) << i;
  std::vector<float> back(4);
  BF16ToF32(dst.data(), 4, back.data(), 4, 1, 4);
  EXPECT_EQ(back[3], -2.5f);
}

}  // namespace
}  // namespace loom::nn::kernels
