#include "loom/comm/reduce_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "loom/base/philox.h"

namespace loom::comm {
namespace {

// The vectorised f32/bf16 sums against the scalar definition, over odd sizes.
TEST(ReduceKernelsTest, F32AndBF16SumsMatchScalarReference) {
  for (int64_t n : {1, 3, 15, 16, 17, 63, 1000, 4099}) {
    std::vector<float> a(n), b(n), d(n);
    std::vector<uint16_t> ha(n), hb(n), hd(n);
    PhiloxStream rng(1, n);
    for (int64_t i = 0; i < n; ++i) {
      a[i] = rng.NextNormal() * 100;
      b[i] = rng.NextNormal();
      ha[i] = FloatToBF16(a[i]);
      hb[i] = FloatToBF16(b[i]);
    }
    ReduceInto(DType::kF32, ReduceOp::kSum, d.data(), a.data(), b.data(), n);
    ReduceInto(DType::kBF16, ReduceOp::kSum, hd.data(), ha.data(), hb.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(d[i], a[i] + b[i]);
      ASSERT_EQ(hd[i], FloatToBF16(BF16ToFloat(ha[i]) + BF16ToFloat(hb[i]))) << i;
    }
  }
}

TEST(ReduceKernelsTest, SpecialValues) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  float inf = std::numeric_limits<float>::infinity();
  uint16_t a[4] = {FloatToBF16(nan), FloatToBF16(inf), FloatToBF16(3.0e38f), FloatToBF16(1.0f)};
  uint16_t b[4] = {FloatToBF16(1.0f), FloatToBF16(1.0f), FloatToBF16(3.0e38f), FloatToBF16(-1.0f)};
  uint16_t d[4];
  ReduceInto(DType::kBF16, ReduceOp::kSum, d, a, b, 4);
  EXPECT_TRUE(std::isnan(BF16ToFloat(d[0])));
  EXPECT_TRUE(std::isinf(BF16ToFloat(d[1])));
  EXPECT_TRUE(std::isinf(BF16ToFloat(d[2])));  // overflow rounds to +Inf
  EXPECT_GT(BF16ToFloat(d[2]), 0);
  EXPECT_EQ(BF16ToFloat(d[3]), 0.0f);
  float x[2] = {nan, 1}, y[2] = {1, nan}, z[2];
  ReduceInto(DType::kF32, ReduceOp::kMax, z, x, y, 2);
  EXPECT_TRUE(std::isnan(z[0]));
  EXPECT_TRUE(std::isnan(z[1]));  // NaN propagates from either side
}

TEST(ReduceKernelsTest, IntegersWrapAndAverageTruncates) {
  int8_t a[2] = {100, -7}, b[2] = {100, 0}, d[2];
  ReduceInto(DType::kI8, ReduceOp::kSum, d, a, b, 2);
  EXPECT_EQ(d[0], -56);
  DivideInPlace(DType::kI8, d, 2, 2);
  EXPECT_EQ(d[0], -28);
  int32_t e[1] = {-7};
  DivideInPlace(DType::kI32, e, 1, 2);
  EXPECT_EQ(e[0], -3);
}

}  // namespace
}  // namespace loom::comm
