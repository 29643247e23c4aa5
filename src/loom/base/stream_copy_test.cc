#include "loom/base/stream_copy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace loom {
namespace {

TEST(StreamingCopy, EqualsMemcpyForEveryAlignmentAndSize) {
  const size_t big = (256 << 10) + 1000;
  std::vector<unsigned char> src(big + 64), dst(big + 64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7 + 3);
  for (size_t n : {size_t{0}, size_t{5}, size_t{4096}, big - 37, big}) {
    for (size_t so = 0; so < 16; so += 5) {
      for (size_t d_off = 0; d_off < 16; d_off += 3) {
        std::fill(dst.begin(), dst.end(), 0xAA);
        StreamingCopy(dst.data() + d_off, src.data() + so, n);
        for (size_t i = 0; i < d_off; ++i) ASSERT_EQ(dst[i], 0xAA);
        ASSERT_EQ(0, std::memcmp(dst.data() + d_off, src.data() + so, n)) << n << " " << so;
        ASSERT_EQ(dst[d_off + n], 0xAA) << "wrote past the end";
      }
    }
  }
}

}  // namespace
}  // namespace loom
