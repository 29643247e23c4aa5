#include "loom/base/dtype.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

namespace loom {
namespace {

TEST(DTypeTest, SizesAndNames) {
  EXPECT_EQ(DTypeBits(DType::kBF16), 16);
  EXPECT_EQ(DTypeBytes(DType::kI4, 7), 4);
  EXPECT_EQ(DTypeBytes(DType::kF32, 3), 12);
  for (DType t : kAllDTypes) {
    auto parsed = ParseDType(DTypeName(t));
    ASSERT_TRUE(parsed.ok()) << DTypeName(t);
    EXPECT_EQ(*parsed, t);
  }
  EXPECT_EQ(*ParseDType("bf16"), DType::kBF16);
  EXPECT_EQ(*ParseDType("fp8e4m3"), DType::kF8E4M3);
  EXPECT_FALSE(ParseDType("f12").ok());
}

TEST(DTypeTest, BF16RoundsToNearestEven) {
  EXPECT_EQ(FloatToBF16(1.0f), 0x3F80);
  // 1 + 2^-8 is exactly halfway between 1 and 1+2^-7: ties to even (1.0).
  EXPECT_EQ(FloatToBF16(1.0f + 0x1.0p-8f), 0x3F80);
  // 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6: rounds up to even.
  EXPECT_EQ(FloatToBF16(1.0f + 3 * 0x1.0p-8f), 0x3F82);
  EXPECT_TRUE(std::isnan(BF16ToFloat(FloatToBF16(std::nanf("")))));
  EXPECT_EQ(BF16ToFloat(FloatToBF16(-2.5f)), -2.5f);
}

TEST(DTypeTest, F16KnownValues) {
  EXPECT_EQ(FloatToF16(1.0f), 0x3C00);
  EXPECT_EQ(FloatToF16(-2.0f), 0xC000);
  EXPECT_EQ(FloatToF16(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToF16(65536.0f), 0x7C00);  // overflow -> Inf
  EXPECT_EQ(FloatToF16(0x1.0p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(F16ToFloat(0x0001), 0x1.0p-24f);
  EXPECT_EQ(F16ToFloat(0x3555), 0.333251953125f);
  EXPECT_TRUE(std::isinf(F16ToFloat(0x7C00)));
}

TEST(DTypeTest, F8KnownValuesAndSaturation) {
  EXPECT_EQ(F8E4M3ToFloat(0x7E), 448.0f);
  EXPECT_EQ(FloatToF8E4M3(448.0f), 0x7E);
  EXPECT_EQ(FloatToF8E4M3(1e6f), 0x7E);    // saturates
  EXPECT_EQ(FloatToF8E4M3(-1e6f), 0xFE);
  EXPECT_TRUE(std::isnan(F8E4M3ToFloat(0x7F)));
  EXPECT_EQ(F8E4M3ToFloat(0x01), 0x1.0p-9f);  // smallest subnormal
  EXPECT_EQ(FloatToF8E4M3(1.0f), 0x38);
  EXPECT_EQ(F8E5M2ToFloat(0x7B), 57344.0f);
  EXPECT_EQ(FloatToF8E5M2(1e9f), 0x7B);
  EXPECT_EQ(FloatToF8E5M2(1.0f), 0x3C);
  EXPECT_TRUE(std::isinf(F8E5M2ToFloat(0x7C)));
}

// Every code of the 8-bit formats decodes and re-encodes to itself (NaNs aside).
TEST(DTypeTest, F8RoundTripsAllCodes) {
  for (int c = 0; c < 256; ++c) {
    float a = F8E4M3ToFloat(static_cast<uint8_t>(c));
    if (!std::isnan(a)) {
      EXPECT_EQ(FloatToF8E4M3(a), c) << c;
    }
    float b = F8E5M2ToFloat(static_cast<uint8_t>(c));
    if (!std::isnan(b) && !std::isinf(b)) {
      EXPECT_EQ(FloatToF8E5M2(b), c) << c;
    }
  }
}

TEST(DTypeTest, F16RoundTripsAllFiniteCodes) {
  for (int c = 0; c < 65536; ++c) {
    float a = F16ToFloat(static_cast<uint16_t>(c));
    if (std::isnan(a)) continue;
    ASSERT_EQ(FloatToF16(a), c) << c;
  }
}

TEST(DTypeTest, FastF16MatchesReference) {
  for (int c = 0; c < 65536; ++c) {
    float a = internal::ReferenceF16ToFloat(static_cast<uint16_t>(c));
    float b = F16ToFloat(static_cast<uint16_t>(c));
    if (std::isnan(a)) {
      ASSERT_TRUE(std::isnan(b)) << c;
      continue;
    }
    ASSERT_EQ(std::bit_cast<uint32_t>(a), std::bit_cast<uint32_t>(b)) << c;
  }
  // Random floats across the whole f16 range, including ties and subnormals.
  uint32_t state = 12345;
  for (int i = 0; i < 200000; ++i) {
    state = state * 1664525u + 1013904223u;
    float exp_scale = std::ldexp(1.0f, static_cast<int>(state % 44) - 28);
    state = state * 1664525u + 1013904223u;
    float x = (static_cast<float>(state >> 8) * 0x1.0p-24f - 0.5f) * 2.0f * exp_scale;
    ASSERT_EQ(FloatToF16(x), internal::ReferenceFloatToF16(x)) << x;
  }
  // Exact ties between two f16 values.
  EXPECT_EQ(FloatToF16(1.0f + 0x1.0p-11f), 0x3C00);             // tie -> even (down)
  EXPECT_EQ(FloatToF16(1.0f + 3 * 0x1.0p-11f), 0x3C02);         // tie -> even (up)
  EXPECT_EQ(FloatToF16(65519.0f), 0x7BFF);
  EXPECT_EQ(FloatToF16(65520.0f), 0x7C00);
}

TEST(DTypeTest, PackedInt4) {
  uint8_t buf[2] = {0, 0};
  SetI4(buf, 0, -8);
  SetI4(buf, 1, 7);
  SetI4(buf, 2, -1);
  EXPECT_EQ(GetI4(buf, 0), -8);
  EXPECT_EQ(GetI4(buf, 1), 7);
  EXPECT_EQ(GetI4(buf, 2), -1);
  EXPECT_EQ(GetI4(buf, 3), 0);
  EXPECT_EQ(buf[0], 0x78);
  StoreFromDouble(DType::kI4, buf, 3, 9.0);  // wraps to -7
  EXPECT_EQ(LoadAsDouble(DType::kI4, buf, 3), -7.0);
}

TEST(DTypeTest, LoadStoreIntegersWrap) {
  int8_t i8 = 0;
  StoreFromDouble(DType::kI8, &i8, 0, 130.0);
  EXPECT_EQ(i8, -126);
  uint8_t u8 = 0;
  StoreFromDouble(DType::kU8, &u8, 0, 257.0);
  EXPECT_EQ(u8, 1);
}

}  // namespace
}  // namespace loom
