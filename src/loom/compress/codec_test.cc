#include "loom/compress/codec.h"

#include <gtest/gtest.h>

#include "loom/compress/testing/codec_testing.h"

#include <cmath>
#include <random>
#include <vector>

#include "loom/compress/codecs/int_codec.h"
#include "loom/compress/decorators/error_feedback.h"

namespace loom::compress {
namespace {

std::unique_ptr<Codec> Make(const char* spec) { return testing::MakeTestCodec(spec); }

std::vector<float> Gaussian(int64_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::vector<float> RoundTrip(const Codec& c, const std::vector<float>& x, StepContext ctx = {}) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<char> wire(c.MaxEncodedBytes(n));
  auto bytes = c.Encode(x.data(), n, wire.data(), ctx);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_LE(*bytes, c.MaxEncodedBytes(n));
  std::vector<float> y(n, -7.f);
  EXPECT_TRUE(c.Decode(wire.data(), *bytes, n, y.data()).ok());
  return y;
}

TEST(CodecSpec, ParsesAndPrintsCanonically) {
  auto s = ParseCodecSpec("int4:g128:hadamard");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->bits, 4);
  EXPECT_EQ(s->group, 128);
  EXPECT_TRUE(s->stochastic);
  EXPECT_TRUE(s->hadamard);
  EXPECT_EQ(s->ToString(), "int4:g128:stochastic:hadamard");
  EXPECT_EQ(*ParseCodecSpec(s->ToString()), *s);
  EXPECT_EQ(ParseCodecSpec("int8:nearest:g512")->ToString(), "int8:g512:nearest");
  EXPECT_EQ(ParseCodecSpec("bf16")->kind, CodecKind::kBf16);
}

TEST(CodecSpec, BadSpecsNameWhatIsWrong) {
  auto msg = [](const char* s) { return ParseCodecSpec(s).status().message(); };
  EXPECT_NE(msg("int3").find("3-bit integers are not supported"), std::string::npos);
  EXPECT_NE(msg("int4:g100").find("multiple of 32"), std::string::npos);
  EXPECT_NE(msg("int4:g8192").find("multiple of 32 in [32, 4096]"), std::string::npos);
  EXPECT_NE(msg("int4:fast").find("unknown option 'fast'"), std::string::npos);
  EXPECT_NE(msg("zstd").find("unknown codec 'zstd'"), std::string::npos);
  EXPECT_NE(msg("bf16:g32").find("takes no options"), std::string::npos);
  EXPECT_NE(msg("int4:gx").find("'x' is not a number"), std::string::npos);
}

TEST(Codec, FloatCodecsRoundTripWithinTheirPrecision) {
  const auto x = Gaussian(10007, 1);
  EXPECT_EQ(RoundTrip(*Make("none"), x), x);
  for (auto [spec, rel] : {std::pair{"bf16", 1.0 / 256}, std::pair{"fp16", 1.0 / 2048}}) {
    const auto y = RoundTrip(*Make(spec), x);
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_LE(std::fabs(y[i] - x[i]), rel * std::fabs(x[i]) + 1e-7) << spec << " " << i;
    }
  }
}

// Per group: |x - decode| <= scale / 2 (nearest) or < scale (stochastic), scale = max|x| / qmax.
TEST(Codec, IntCodecsStayWithinTheirGroupErrorBound) {
  const auto x = Gaussian(10007, 2);  // not a multiple of the group: a short last group
  for (const char* spec : {"int8:g512:nearest", "int8:g128", "int4:g128:nearest", "int4:g32",
                           "int2:g256", "int2:g64:nearest"}) {
    auto c = Make(spec);
    const auto y = RoundTrip(*c, x, {7, 3, 1, 0});
    const int g = c->spec().group, qmax = (1 << (c->spec().bits - 1)) - 1;
    for (size_t b = 0; b < x.size(); b += g) {
      const size_t e = std::min(x.size(), b + g);
      float amax = 0;
      for (size_t i = b; i < e; ++i) amax = std::max(amax, std::fabs(x[i]));
      const float scale = amax / qmax;
      const float bound = c->spec().stochastic ? scale : scale / 2;
      for (size_t i = b; i < e; ++i) {
        ASSERT_LE(std::fabs(y[i] - x[i]), bound * (1 + 1e-5f)) << spec << " element " << i;
      }
    }
    const double bits = c->BitsPerElement(static_cast<int64_t>(x.size()));
    EXPECT_NEAR(bits, c->spec().bits + 32.0 / g, 0.02) << spec;
  }
}

TEST(Codec, StochasticRoundingIsUnbiased) {
  const auto x = Gaussian(256, 3);
  auto c = Make("int4:g128");
  const int reps = 10000;
  std::vector<double> mean(x.size(), 0);
  std::vector<char> wire(c->MaxEncodedBytes(256));
  std::vector<float> y(256);
  for (int r = 0; r < reps; ++r) {
    auto bytes = c->Encode(x.data(), 256, wire.data(), {42, r, 0, 0});
    ASSERT_TRUE(bytes.ok());
    ASSERT_TRUE(c->Decode(wire.data(), *bytes, 256, y.data()).ok());
    for (int i = 0; i < 256; ++i) mean[i] += y[i] / reps;
  }
  for (int g = 0; g < 2; ++g) {
    float amax = 0;
    for (int i = 0; i < 128; ++i) amax = std::max(amax, std::fabs(x[g * 128 + i]));
    const double scale = amax / 7.0;
    // One rounding has std <= scale / 2; the mean of 10^4 is within 3 sigma of x.
    for (int i = 0; i < 128; ++i) {
      ASSERT_NEAR(mean[g * 128 + i], x[g * 128 + i], 3 * scale / 2 / std::sqrt(reps))
          << "element " << g * 128 + i;
    }
  }
}

TEST(Codec, EncodingIsReproducibleAndKeyedByStepRankAndChunk) {
  const auto x = Gaussian(1000, 4);
  auto c = Make("int4:g128");
  auto enc = [&](StepContext ctx) {
    std::vector<char> w(c->MaxEncodedBytes(1000));
    w.resize(*c->Encode(x.data(), 1000, w.data(), ctx));
    return w;
  };
  EXPECT_EQ(enc({1, 5, 0, 0}), enc({1, 5, 0, 0}));
  EXPECT_NE(enc({1, 5, 0, 0}), enc({1, 6, 0, 0}));
  EXPECT_NE(enc({1, 5, 0, 0}), enc({1, 5, 1, 0}));
  EXPECT_NE(enc({1, 5, 0, 0}), enc({1, 5, 0, 1}));
}

TEST(Codec, DecodeAddAddsTheDecodedValues) {
  const auto x = Gaussian(3001, 5);
  for (const char* spec : {"none", "bf16", "fp16", "int8:g128", "int4:g64:hadamard"}) {
    auto c = Make(spec);
    std::vector<char> wire(c->MaxEncodedBytes(3001));
    auto bytes = c->Encode(x.data(), 3001, wire.data(), {});
    ASSERT_TRUE(bytes.ok());
    std::vector<float> y(3001), acc = Gaussian(3001, 6);
    const std::vector<float> before = acc;
    ASSERT_TRUE(c->Decode(wire.data(), *bytes, 3001, y.data()).ok());
    ASSERT_TRUE(c->DecodeAdd(wire.data(), *bytes, 3001, acc.data()).ok());
    for (int i = 0; i < 3001; ++i) ASSERT_FLOAT_EQ(acc[i], before[i] + y[i]) << spec << " " << i;
  }
}

TEST(Codec, HadamardRotationShrinksErrorOnOutliers) {
  // Gaussian data with a few large outliers: without rotation they blow up their group's scale.
  auto x = Gaussian(4096, 7);
  for (int i = 0; i < 4096; i += 300) x[i] = 60.f;
  auto mse = [&](const char* spec) {
    const auto y = RoundTrip(*Make(spec), x);
    double e = 0;
    for (size_t i = 0; i < x.size(); ++i) e += (y[i] - x[i]) * (y[i] - x[i]);
    return e / x.size();
  };
  EXPECT_LT(mse("int4:g128:nearest:hadamard"), 0.5 * mse("int4:g128:nearest"));
  // The rotation itself is orthonormal and self-inverse.
  std::vector<float> v(x.begin(), x.begin() + 32), w = v;
  Hadamard32(w.data());
  Hadamard32(w.data());
  for (int i = 0; i < 32; ++i) ASSERT_NEAR(w[i], v[i], 1e-5);
}

TEST(Codec, NonFiniteInputIsRejectedWithItsIndex) {
  auto x = Gaussian(500, 8);
  x[321] = std::nanf("");
  for (const char* spec : {"bf16", "fp16", "int4:g128"}) {
    auto c = Make(spec);
    std::vector<char> wire(c->MaxEncodedBytes(500));
    Status s = c->Encode(x.data(), 500, wire.data(), {}).status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << spec;
    EXPECT_NE(s.message().find("element 321"), std::string::npos) << s;
  }
  x[321] = INFINITY;
  auto c = Make("int8:g128");
  std::vector<char> wire(c->MaxEncodedBytes(500));
  EXPECT_FALSE(c->Encode(x.data(), 500, wire.data(), {}).ok());
}

TEST(Codec, WireHeaderCatchesMismatchesAndCorruption) {
  const auto x = Gaussian(1000, 9);
  auto int4 = Make("int4:g128");
  std::vector<char> wire(int4->MaxEncodedBytes(1000));
  const int64_t bytes = *int4->Encode(x.data(), 1000, wire.data(), {});
  std::vector<float> y(1000);
  Status s = Make("int8:g128")->Decode(wire.data(), bytes, 1000, y.data());
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("'int4:g128:stochastic'"), std::string::npos) << s;
  EXPECT_NE(s.message().find("'int8:g128:stochastic'"), std::string::npos) << s;
  EXPECT_FALSE(Make("int4:g64")->Decode(wire.data(), bytes, 1000, y.data()).ok());
  EXPECT_NE(int4->Decode(wire.data(), bytes, 999, y.data()).message().find("expected 999"),
            std::string::npos);
  EXPECT_EQ(int4->Decode(wire.data(), bytes - 10, 1000, y.data()).code(), StatusCode::kDataLoss);
  wire[0] ^= 0x55;
  EXPECT_EQ(int4->Decode(wire.data(), bytes, 1000, y.data()).code(), StatusCode::kDataLoss);
}

TEST(ErrorFeedback, SentPlusResidualTelescopesToTheInputs) {
  auto c = Make("int2:g64");
  const int64_t n = 777;
  ErrorFeedback ef(c.get(), n);
  std::vector<double> inputs(n, 0), sent(n, 0);
  std::vector<char> wire(c->MaxEncodedBytes(n));
  std::vector<float> y(n);
  for (int step = 0; step < 50; ++step) {
    const auto x = Gaussian(n, 100 + step);
    for (int64_t i = 0; i < n; ++i) inputs[i] += x[i];
    auto bytes = ef.Encode(x.data(), wire.data(), {1, step, 0, 0});
    ASSERT_TRUE(bytes.ok());
    ASSERT_TRUE(c->Decode(wire.data(), *bytes, n, y.data()).ok());
    for (int64_t i = 0; i < n; ++i) sent[i] += y[i];
  }
  testing::ExpectErrorFeedbackTelescopes(sent, ef.residual(), inputs);
}

}  // namespace
}  // namespace loom::compress
