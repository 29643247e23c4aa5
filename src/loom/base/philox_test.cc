#include "loom/base/philox.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace loom {
namespace {

// Known-answer vectors of Random123's kat_vectors for philox4x32_10.
TEST(PhiloxTest, KnownAnswers) {
  EXPECT_EQ(Philox4x32({0, 0, 0, 0}, {0, 0}),
            (PhiloxCounter{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(Philox4x32({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                       {0xffffffffu, 0xffffffffu}),
            (PhiloxCounter{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(Philox4x32({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                       {0xa4093822u, 0x299f31d0u}),
            (PhiloxCounter{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(PhiloxTest, StreamsAreReproducibleAndDistinct) {
  PhiloxStream a(42, 0), b(42, 0), c(42, 1);
  std::set<uint32_t> seen;
  bool any_diff = false;
  for (int i = 0; i < 100; ++i) {
    uint32_t x = a.NextU32();
    EXPECT_EQ(x, b.NextU32());
    any_diff |= (x != c.NextU32());
    seen.insert(x);
  }
  EXPECT_TRUE(any_diff);
  EXPECT_GT(seen.size(), 95u);
  PhiloxStream d(42, 0);
  d.Seek(10);
  a.Seek(10);
  EXPECT_EQ(a.NextU32(), d.NextU32());
}

TEST(PhiloxTest, DistributionMoments) {
  PhiloxStream r(7, 3);
  const int n = 200000;
  double su = 0, sn = 0, sn2 = 0;
  for (int i = 0; i < n; ++i) {
    float u = r.NextUniform();
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    su += u;
    float z = r.NextNormal();
    ASSERT_TRUE(std::isfinite(z));
    sn += z;
    sn2 += z * z;
  }
  EXPECT_NEAR(su / n, 0.5, 0.005);
  EXPECT_NEAR(sn / n, 0.0, 0.01);
  EXPECT_NEAR(sn2 / n, 1.0, 0.02);
  for (int i = 0; i < 1000; ++i) EXPECT_LT(r.NextBelow(17), 17u);
}

}  // namespace
}  // namespace loom
