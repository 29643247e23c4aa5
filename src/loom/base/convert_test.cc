#include "loom/base/convert.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <vector>

#include "loom/base/dtype.h"
#include "loom/base/philox.h"

namespace loom {
namespace {

// The vectorised conversions against the scalar reference, over odd lengths and special values.
TEST(ConvertTest, MatchesScalarBf16Conversion) {
  for (int64_t n : {1, 15, 16, 17, 1000, 4097}) {
    std::vector<float> src(n);
    PhiloxStream rng(9, n);
    for (int64_t i = 0; i < n; ++i) src[i] = rng.NextNormal() * std::ldexp(1.0f, i % 40 - 20);
    if (n > 4) {
      src[0] = NAN;
      src[1] = INFINITY;
      src[2] = -0.0f;
      src[3] = 3.4e38f;
    }
    std::vector<uint16_t> dst(n);
    ConvertF32ToBF16(src.data(), dst.data(), n);
    std::vector<float> back(n);
    ConvertBF16ToF32(dst.data(), back.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(dst[i], FloatToBF16(src[i])) << i;
      ASSERT_EQ(std::bit_cast<uint32_t>(back[i]), std::bit_cast<uint32_t>(BF16ToFloat(dst[i])));
    }
  }
}

}  // namespace
}  // namespace loom
