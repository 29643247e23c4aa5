#include "loom/compress/decorators/nesterov.h"

#include <gtest/gtest.h>

#include <vector>

#include "loom/base/philox.h"
#include "loom/compress/decorators/error_feedback.h"
#include "loom/compress/testing/codec_testing.h"

namespace loom::compress {
namespace {

// mu = 1/2 and small integers: every value below is exact in fp32.
TEST(NesterovMomentumTest, MatchesAHandComputedSequence) {
  NesterovMomentum nesterov(0.5f, 3);
  std::vector<float> g = {1, 2, -4};
  nesterov.Apply(g.data());  // m = (1, 2, -4); sent = g + m / 2
  EXPECT_EQ(g, (std::vector<float>{1.5f, 3, -6}));
  EXPECT_EQ(nesterov.momentum(), (std::vector<float>{1, 2, -4}));
  g = {2, 0, 4};
  nesterov.Apply(g.data());  // m = (0.5 + 2, 1 + 0, -2 + 4) = (2.5, 1, 2)
  EXPECT_EQ(nesterov.momentum(), (std::vector<float>{2.5f, 1, 2}));
  EXPECT_EQ(g, (std::vector<float>{3.25f, 0.5f, 5}));
  g = {0, 0, 0};
  nesterov.Apply(g.data());  // m = (1.25, 0.5, 1)
  EXPECT_EQ(g, (std::vector<float>{0.625f, 0.25f, 0.5f}));
  nesterov.Reset();
  g = {1, 1, 1};
  nesterov.Apply(g.data());
  EXPECT_EQ(g, (std::vector<float>{1.5f, 1.5f, 1.5f}));
}

TEST(NesterovMomentumTest, ZeroMuIsTheIdentity) {
  NesterovMomentum nesterov(0.f, 4);
  for (int step = 0; step < 3; ++step) {
    std::vector<float> g = {1.f + step, -2.f, 0.25f, 3.f};
    const std::vector<float> before = g;
    nesterov.Apply(g.data());
    EXPECT_EQ(g, before);
  }
}

TEST(NesterovMomentumTest, PiecesEqualTheWholeBuffer) {
  NesterovMomentum whole(0.9f, 101), pieces(0.9f, 101);
  PhiloxStream rng(1, 2);
  for (int step = 0; step < 5; ++step) {
    std::vector<float> a(101);
    for (float& v : a) v = rng.NextNormal();
    std::vector<float> b = a;
    whole.Apply(a.data());
    pieces.ApplyRange(b.data(), 0, 40);
    pieces.ApplyRange(b.data() + 40, 40, 61);
    EXPECT_EQ(a, b);
  }
}

// Nesterov -> error feedback -> int2: what was decoded plus the final residual telescopes to the
// sum of the Nesterov look-aheads, computed here in fp64 from m_t = mu m_{t-1} + g_t.
TEST(NesterovMomentumTest, ComposesWithErrorFeedback) {
  constexpr int64_t n = 257;
  constexpr double mu = 0.9;
  auto codec = testing::MakeTestCodec("int2:g32:nearest");
  ASSERT_NE(codec, nullptr);
  NesterovMomentum nesterov(static_cast<float>(mu), n);
  ErrorFeedback ef(codec.get(), n);
  std::vector<double> m(n, 0), inputs(n, 0), sent(n, 0);
  std::vector<char> wire(codec->MaxEncodedBytes(n));
  std::vector<float> y(n);
  PhiloxStream rng(3, 4);
  for (int step = 0; step < 40; ++step) {
    std::vector<float> g(n);
    for (float& v : g) v = rng.NextNormal() + 0.3f;  // a drift the momentum accumulates
    for (int64_t i = 0; i < n; ++i) {
      m[i] = mu * m[i] + g[i];
      inputs[i] += g[i] + mu * m[i];
    }
    nesterov.Apply(g.data());
    Result<int64_t> bytes = ef.Encode(g.data(), wire.data(), {1, step, 0, 0});
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    ASSERT_TRUE(codec->Decode(wire.data(), *bytes, n, y.data()).ok());
    for (int64_t i = 0; i < n; ++i) sent[i] += y[i];
  }
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_NEAR(nesterov.momentum()[i], m[i], 1e-4 * (1 + std::fabs(m[i]))) << i;
  }
  testing::ExpectErrorFeedbackTelescopes(sent, ef.residual(), inputs);
}

}  // namespace
}  // namespace loom::compress
