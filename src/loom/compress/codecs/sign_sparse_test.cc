#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "loom/compress/testing/codec_testing.h"

#include "loom/base/philox.h"
#include "loom/compress/codec.h"
#include "loom/compress/codecs/sparse_codecs.h"

namespace loom::compress {
namespace {

std::unique_ptr<Codec> Make(const char* spec) { return testing::MakeTestCodec(spec); }

std::vector<float> Gaussian(uint64_t seed, int64_t n) {
  PhiloxStream rng(seed, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = rng.NextNormal();
  return v;
}

std::vector<float> RoundTrip(const Codec& c, const std::vector<float>& x, StepContext ctx = {}) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<char> wire(static_cast<size_t>(c.MaxEncodedBytes(n)));
  auto bytes = c.Encode(x.data(), n, wire.data(), ctx);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, c.MaxEncodedBytes(n));
  std::vector<float> y(x.size(), 7.0f);  // Decode must overwrite every element
  EXPECT_TRUE(c.Decode(wire.data(), *bytes, n, y.data()).ok());
  return y;
}

TEST(SignSparseSpec, ParsesPrintsAndRejects) {
  for (const char* s :
       {"sign", "sign:g64:l2", "topk:0.01", "randk:0.25:unbiased", "randk:1", "powersgd:r4"}) {
    auto spec = ParseCodecSpec(s);
    ASSERT_TRUE(spec.ok()) << s << ": " << spec.status();
    EXPECT_EQ(spec->ToString(), s);
  }
  EXPECT_EQ(ParseCodecSpec("topk:0.01")->fraction, 0.01f);
  EXPECT_EQ(ParseCodecSpec("powersgd:r4")->rank, 4);
  auto not_a_codec = MakeCodec(*ParseCodecSpec("powersgd:r4"));
  ASSERT_FALSE(not_a_codec.ok());
  EXPECT_NE(not_a_codec.status().message().find("low-rank all-reduce"), std::string::npos);
  for (auto [bad, why] : {std::pair{"topk", "e.g. topk:0.01"}, std::pair{"topk:0", "(0, 1]"},
                          std::pair{"randk:1.5", "(0, 1]"}, std::pair{"topk:x", "(0, 1]"},
                          std::pair{"sign:g33", "multiple of 32"}, std::pair{"sign:l1", "l2"},
                          std::pair{"topk:0.1:unbiased", "unknown option"},
                          std::pair{"powersgd", "powersgd:r4"},
                          std::pair{"powersgd:r0", "[1, 64]"}}) {
    auto spec = ParseCodecSpec(bad);
    ASSERT_FALSE(spec.ok()) << bad;
    EXPECT_NE(spec.status().message().find(why), std::string::npos) << spec.status();
    EXPECT_NE(spec.status().message().find(bad), std::string::npos) << spec.status();
  }
}

TEST(SignCodec, DecodesToTheGroupScaleWithTheSign) {
  for (bool l2 : {false, true}) {
    auto c = Make(l2 ? "sign:g64:l2" : "sign:g64");
    EXPECT_FALSE(c->Summable());
    std::vector<float> x = Gaussian(3, 200);  // 3 full groups + 8
    std::fill(x.begin() + 64, x.begin() + 128, 0.0f);  // a zero group
    std::vector<float> y = RoundTrip(*c, x);
    for (int64_t g = 0; g < 4; ++g) {
      const int64_t b = g * 64, e = std::min<int64_t>(200, b + 64);
      double s = 0;
      for (int64_t i = b; i < e; ++i) s += l2 ? double(x[i]) * x[i] : std::fabs(x[i]);
      const float scale = static_cast<float>(l2 ? std::sqrt(s / (e - b)) : s / (e - b));
      for (int64_t i = b; i < e; ++i) ASSERT_EQ(y[i], x[i] < 0 ? -scale : scale) << l2 << " " << i;
    }
    EXPECT_EQ(y[100], 0.0f);
  }
  EXPECT_NEAR(Make("sign:g128")->BitsPerElement(1 << 20), 1.25, 1e-9);
  EXPECT_NEAR(Make("sign")->BitsPerElement(1 << 20), 1.0, 1e-4);  // one scale per buffer
}

TEST(TopKCodec, KeepsExactlyTheLargestMagnitudes) {
  auto c = Make("topk:0.1");
  std::vector<float> x = Gaussian(5, 1001);
  x[17] = 100.0f;
  x[900] = -100.0f;
  std::vector<float> y = RoundTrip(*c, x);
  const int64_t k = KeptCount(0.1f, 1001);
  EXPECT_EQ(k, 101);
  std::vector<float> mags;
  for (float v : x) mags.push_back(std::fabs(v));
  std::sort(mags.rbegin(), mags.rend());
  const float threshold = mags[k - 1];
  int64_t kept = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (y[i] != 0.0f) {
      ++kept;
      ASSERT_EQ(y[i], x[i]);
      ASSERT_GE(std::fabs(x[i]), threshold);
    } else {
      ASSERT_LE(std::fabs(x[i]), threshold);
    }
  }
  EXPECT_EQ(kept, k);
  EXPECT_EQ(y[17], 100.0f);
  EXPECT_EQ(y[900], -100.0f);
}

TEST(TopKCodec, RejectsCorruptIndices) {
  auto c = Make("topk:0.5");
  std::vector<float> x = Gaussian(6, 10);
  std::vector<char> wire(static_cast<size_t>(c->MaxEncodedBytes(10)));
  ASSERT_TRUE(c->Encode(x.data(), 10, wire.data(), {}).ok());
  const uint32_t bad = 10;
  std::memcpy(wire.data() + kHeaderBytes + 4, &bad, 4);
  std::vector<float> y(10);
  Status s = c->Decode(wire.data(), static_cast<int64_t>(wire.size()), 10, y.data());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s;
}

TEST(RandKCodec, SamplesEachElementWithProbabilityKOverNAndUnbiasedMeansConverge) {
  const int64_t n = 100;
  auto plain = Make("randk:0.2");
  auto unbiased = Make("randk:0.2:unbiased");
  std::vector<float> x = Gaussian(8, n);
  std::vector<double> kept(n, 0), mean(n, 0);
  const int steps = 4000;
  for (int step = 0; step < steps; ++step) {
    const StepContext ctx{.seed = 1, .step = step, .rank = 0, .chunk = 0};
    std::vector<float> y = RoundTrip(*plain, x, ctx);
    int64_t nonzero = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (y[i] != 0.0f) {
        ASSERT_EQ(y[i], x[i]);
        kept[i] += 1.0 / steps;
        ++nonzero;
      }
    }
    ASSERT_EQ(nonzero, 20);
    std::vector<float> u = RoundTrip(*unbiased, x, ctx);
    for (int64_t i = 0; i < n; ++i) mean[i] += u[i] / steps;
  }
  for (int64_t i = 0; i < n; ++i) {
    // Binomial(4000, 0.2): sigma of the frequency is 0.0063; 5 sigma.
    ASSERT_NEAR(kept[i], 0.2, 0.032) << i;
    // Unbiased: mean of 5 x kept values; sigma = |x| * sqrt(0.2 * 0.8 / 4000) * 5 = 0.032 |x|.
    ASSERT_NEAR(mean[i], x[i], 0.16 * std::fabs(x[i]) + 1e-6) << i;
  }
}

TEST(RandKCodec, RanksAndStepsDrawDifferentIndices) {
  auto c = Make("randk:0.1");
  std::vector<float> x(1000, 1.0f);
  auto a = RoundTrip(*c, x, {.seed = 1, .step = 3, .rank = 0, .chunk = 0});
  auto b = RoundTrip(*c, x, {.seed = 1, .step = 3, .rank = 1, .chunk = 0});
  auto a2 = RoundTrip(*c, x, {.seed = 1, .step = 3, .rank = 0, .chunk = 0});
  EXPECT_NE(a, b);
  EXPECT_EQ(a, a2);
}

TEST(SignSparseCodecs, RefuseNonFiniteInput) {
  for (const char* s : {"sign", "topk:0.1", "randk:0.1"}) {
    auto c = Make(s);
    std::vector<float> x(64, 1.0f);
    x[9] = std::nanf("");
    std::vector<char> wire(static_cast<size_t>(c->MaxEncodedBytes(64)));
    auto r = c->Encode(x.data(), 64, wire.data(), {});
    ASSERT_FALSE(r.ok()) << s;
    EXPECT_NE(r.status().message().find("element 9"), std::string::npos) << r.status();
  }
}

TEST(SignSparseCodecs, DecodersRejectAnotherConfiguration) {
  auto a = Make("topk:0.1");
  auto b = Make("topk:0.2");
  std::vector<float> x = Gaussian(9, 100), y(100);
  std::vector<char> wire(static_cast<size_t>(a->MaxEncodedBytes(100)));
  auto bytes = a->Encode(x.data(), 100, wire.data(), {});
  ASSERT_TRUE(bytes.ok());
  Status s = b->Decode(wire.data(), *bytes, 100, y.data());
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("topk:0.1"), std::string::npos) << s;
}

}  // namespace
}  // namespace loom::compress
