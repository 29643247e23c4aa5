#include "loom/compress/collectives/small_tensor_bypass.h"

#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace loom::compress {
namespace {

TEST(SmallTensorBypass, BypassesBelowTheThresholdAndCountsBothSides) {
  SmallTensorBypass bypass(1000);
  EXPECT_TRUE(bypass.Bypass(999));
  EXPECT_FALSE(bypass.Bypass(1000));
  EXPECT_FALSE(bypass.Bypass(5000));
  EXPECT_TRUE(bypass.Bypass(1));
  EXPECT_TRUE(bypass.WouldBypass(10));  // not counted
  const BypassCounts c = bypass.counts();
  EXPECT_EQ(c.bypassed, 2);
  EXPECT_EQ(c.bypassed_elements, 1000);
  EXPECT_EQ(c.compressed, 2);
  EXPECT_EQ(c.compressed_elements, 6000);
  EXPECT_EQ(bypass.Describe(),
            "small-tensor bypass (< 1000 elements, compress.min_elements): 2 of 4 reductions, "
            "1000 of 7000 elements (14.29%) sent uncompressed");
}

TEST(SmallTensorBypass, ZeroDisablesItAndNothingBypassedSaysNothing) {
  SmallTensorBypass off(0);
  EXPECT_FALSE(off.Bypass(1));
  EXPECT_EQ(off.counts().compressed, 1);
  EXPECT_EQ(off.Describe(), "");
  EXPECT_EQ(SmallTensorBypass().min_elements(), kDefaultMinElements);
}

TEST(SmallTensorBypass, CountsFromSeveralThreads) {
  SmallTensorBypass bypass(100);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) bypass.Bypass(i % 2 == 0 ? 50 : 150);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bypass.counts().bypassed, 2000);
  EXPECT_EQ(bypass.counts().compressed_elements, 2000 * 150);
}

}  // namespace
}  // namespace loom::compress
