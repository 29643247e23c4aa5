#include "loom/compress/codecs/qsgd_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "loom/base/philox.h"
#include "loom/compress/testing/codec_testing.h"

namespace loom::compress {
namespace {

using testing::MakeTestCodec;

std::vector<float> Gaussian(int64_t n, uint64_t stream) {
  PhiloxStream rng(7, stream);
  std::vector<float> x(n);
  for (float& v : x) v = rng.NextNormal();
  return x;
}

double Norm(const float* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return std::sqrt(s);
}

// Exact variance of element i's estimate: (norm / s)^2 p (1 - p), p = frac(s |x_i| / norm).
std::vector<double> ExactVariance(const std::vector<float>& x, int levels, int group) {
  std::vector<double> var(x.size());
  for (size_t b = 0; b < x.size(); b += group) {
    const size_t e = std::min(x.size(), b + group);
    const double norm = static_cast<float>(Norm(x.data() + b, static_cast<int64_t>(e - b)));
    for (size_t i = b; i < e; ++i) {
      const double t = std::fabs(x[i]) * levels / norm, p = t - std::floor(t);
      var[i] = (norm / levels) * (norm / levels) * p * (1 - p);
    }
  }
  return var;
}

TEST(QsgdSpecTest, ParsesAndPrintsCanonically) {
  Result<CodecSpec> s16 = ParseCodecSpec("qsgd:s16");
  ASSERT_TRUE(s16.ok()) << s16.status();
  EXPECT_EQ(s16->kind, CodecKind::kQsgd);
  EXPECT_EQ(s16->levels, 16);
  EXPECT_EQ(s16->group, 512);
  EXPECT_EQ(s16->bits, 6);  // -16..16: 33 values
  EXPECT_EQ(s16->ToString(), "qsgd:s16:g512");
  EXPECT_EQ(*ParseCodecSpec(s16->ToString()), *s16);
  Result<CodecSpec> s4 = ParseCodecSpec("qsgd:s4:g256");
  ASSERT_TRUE(s4.ok()) << s4.status();
  EXPECT_EQ(s4->bits, 4);
  EXPECT_EQ(s4->group, 256);
  EXPECT_EQ(QsgdBits(1), 2);
  EXPECT_EQ(QsgdBits(2), 3);
  EXPECT_EQ(QsgdBits(7), 4);
  EXPECT_EQ(QsgdBits(8), 5);
  EXPECT_EQ(QsgdBits(127), 8);
}

TEST(QsgdSpecTest, BadSpecsNameTheSpec) {
  for (const char* bad : {"qsgd", "qsgd:16", "qsgd:s0", "qsgd:s128", "qsgd:sx", "qsgd:s4:g100",
                          "qsgd:s4:g16", "qsgd:s4:nearest"}) {
    Result<CodecSpec> r = ParseCodecSpec(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status();
  }
}

TEST(QsgdCodecTest, RoundTripIsWithinOneLevelOnOddSizes) {
  for (const char* spec :
       {"qsgd:s1:g32", "qsgd:s2:g64", "qsgd:s4", "qsgd:s16:g96", "qsgd:s100:g32", "qsgd:s127"}) {
    auto codec = MakeTestCodec(spec);
    ASSERT_NE(codec, nullptr);
    const int s = codec->spec().levels, G = codec->spec().group;
    for (int64_t n : {1, 31, 33, 1000, 4097}) {
      std::vector<float> x = Gaussian(n, n);
      x[0] = 0.f;  // zero decodes to zero
      std::vector<char> wire(codec->MaxEncodedBytes(n));
      Result<int64_t> bytes = codec->Encode(x.data(), n, wire.data(), {1, 2, 3, 4});
      ASSERT_TRUE(bytes.ok()) << bytes.status();
      EXPECT_EQ(*bytes, codec->MaxEncodedBytes(n));
      EXPECT_EQ(*bytes, kHeaderBytes + (n * codec->spec().bits + 7) / 8 + 4 * ((n + G - 1) / G));
      std::vector<float> y(n), acc(n, 1.f);
      ASSERT_TRUE(codec->Decode(wire.data(), *bytes, n, y.data()).ok());
      ASSERT_TRUE(codec->DecodeAdd(wire.data(), *bytes, n, acc.data()).ok());
      EXPECT_EQ(y[0], 0.f);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t b = i / G * G;
        const double step = static_cast<float>(Norm(x.data() + b, std::min<int64_t>(G, n - b))) / s;
        if (step == 0) {  // an all-zero group
          ASSERT_EQ(y[i], 0.f);
          continue;
        }
        const double level = y[i] / step;
        ASSERT_NEAR(level, std::round(level), 1e-3) << spec << " n=" << n << " i=" << i;
        ASSERT_LE(std::fabs(y[i] - x[i]), step * (1 + 1e-5)) << spec << " n=" << n << " i=" << i;
        ASSERT_TRUE(y[i] == 0 || std::signbit(y[i]) == std::signbit(x[i])) << spec << " i=" << i;
        ASSERT_FLOAT_EQ(acc[i], 1.f + y[i]) << spec << " i=" << i;
      }
    }
  }
}

TEST(QsgdCodecTest, BitsPerElement) {
  EXPECT_DOUBLE_EQ(MakeTestCodec("qsgd:s4:g128")->BitsPerElement(1 << 20), 4 + 32.0 / 128);
  EXPECT_DOUBLE_EQ(MakeTestCodec("qsgd:s127:g512")->BitsPerElement(1 << 20), 8 + 32.0 / 512);
  EXPECT_FALSE(MakeTestCodec("qsgd:s4")->Summable());
}

// Mean of 10^4 encodes: each element within 3 sigma of x (sigma from the exact variance), except
// the expected ~0.3%, and the standardized squared errors average to 1 (the variance is right).
TEST(QsgdCodecTest, UnbiasedOverManyEncodes) {
  constexpr int kReps = 10000;
  auto codec = MakeTestCodec("qsgd:s4:g32");
  ASSERT_NE(codec, nullptr);
  const int64_t n = 101;
  std::vector<float> x = Gaussian(n, 99);
  x[5] *= 20;  // an outlier dominates its group's norm
  std::vector<double> sum(n, 0);
  std::vector<char> wire(codec->MaxEncodedBytes(n));
  std::vector<float> y(n);
  for (int rep = 0; rep < kReps; ++rep) {
    Result<int64_t> bytes = codec->Encode(x.data(), n, wire.data(), {11, rep, 0, 0});
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    ASSERT_TRUE(codec->Decode(wire.data(), *bytes, n, y.data()).ok());
    for (int64_t i = 0; i < n; ++i) sum[i] += y[i];
  }
  const std::vector<double> var = ExactVariance(x, 4, 32);
  int outside = 0, random = 0;
  double z2 = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double mean = sum[i] / kReps, sigma = std::sqrt(var[i] / kReps);
    if (sigma < 1e-9) {  // on a level: deterministic
      EXPECT_NEAR(mean, x[i], 1e-5) << i;
      continue;
    }
    const double z = (mean - x[i]) / sigma;
    EXPECT_LT(std::fabs(z), 4.5) << "element " << i;
    outside += std::fabs(z) > 3;
    z2 += z * z;
    ++random;
  }
  EXPECT_LE(outside, 2);
  EXPECT_GT(random, 90);
  EXPECT_NEAR(z2 / random, 1.0, 0.35);
}

// E||Q(x) - x||^2 <= min(n / s^2, sqrt(n) / s) ||x||^2 (Lemma 3.1) and matches the exact variance.
TEST(QsgdCodecTest, VarianceWithinThePapersBound) {
  constexpr int kReps = 2000;
  const int64_t n = 512;
  for (int s : {1, 4, 16, 127}) {
    auto codec = MakeTestCodec(("qsgd:s" + std::to_string(s) + ":g512").c_str());
    ASSERT_NE(codec, nullptr);
    for (int data = 0; data < 2; ++data) {
      std::vector<float> x = Gaussian(n, 1000 + s);
      if (data == 1) {  // heavy tail: a few large values
        for (int64_t i = 0; i < n; i += 64) x[i] *= 30;
      }
      const double norm2 = Norm(x.data(), n) * Norm(x.data(), n);
      double err = 0;
      std::vector<char> wire(codec->MaxEncodedBytes(n));
      std::vector<float> y(n);
      for (int rep = 0; rep < kReps; ++rep) {
        Result<int64_t> bytes = codec->Encode(x.data(), n, wire.data(), {3, rep, 1, 2});
        ASSERT_TRUE(bytes.ok());
        ASSERT_TRUE(codec->Decode(wire.data(), *bytes, n, y.data()).ok());
        for (int64_t i = 0; i < n; ++i) err += (y[i] - x[i]) * static_cast<double>(y[i] - x[i]);
      }
      err /= kReps;
      double exact = 0;
      for (double v : ExactVariance(x, s, 512)) exact += v;
      const double bound = std::min(n / (1.0 * s * s), std::sqrt(1.0 * n) / s) * norm2;
      EXPECT_LE(err, bound) << "s=" << s << " data=" << data;
      EXPECT_NEAR(err, exact, 0.1 * exact) << "s=" << s << " data=" << data;
    }
  }
}

TEST(QsgdCodecTest, DeterministicPerStepContext) {
  auto codec = MakeTestCodec("qsgd:s16:g128");
  const int64_t n = 1000;
  std::vector<float> x = Gaussian(n, 5);
  auto encode = [&](StepContext ctx) {
    std::vector<char> wire(codec->MaxEncodedBytes(n));
    EXPECT_TRUE(codec->Encode(x.data(), n, wire.data(), ctx).ok());
    return wire;
  };
  const StepContext base{1, 2, 3, 4};
  EXPECT_EQ(encode(base), encode(base));
  EXPECT_NE(encode(base), encode({2, 2, 3, 4}));
  EXPECT_NE(encode(base), encode({1, 3, 3, 4}));
  EXPECT_NE(encode(base), encode({1, 2, 4, 4}));
  EXPECT_NE(encode(base), encode({1, 2, 3, 5}));
}

// Element j's level is floor(|x_j| s / norm + u_j), u_j the j-th draw of
// PhiloxStream(seed, StreamOf(ctx)), on every int-kernel implementation (the uniforms' source).
// Squares that sum exactly make the norm independent of the summation order.
TEST(QsgdCodecTest, LevelsUseTheJthDrawOnEveryKernelImplementation) {
  const int levels = 5, G = 128;
  auto parsed = ParseCodecSpec("qsgd:s5:g128");
  ASSERT_TRUE(parsed.ok());
  const QsgdCodec codec(*parsed);
  const int64_t n = 3 * G + 45;  // a partial last group and a partial 32-block
  std::vector<float> x(n);
  for (int64_t j = 0; j < n; ++j) x[j] = j % G == 0 ? 8.f : (j % 3 ? 0.5f : -0.5f);
  const StepContext ctx{0xC0FFEE, 7, 1, 3};
  PhiloxStream rng(ctx.seed, StreamOf(ctx));
  std::vector<float> want(n);
  for (int64_t g = 0; g < n; g += G) {
    const int64_t len = std::min<int64_t>(G, n - g);
    const float norm = static_cast<float>(std::sqrt(64.0 + 0.25 * (len - 1)));
    const float mult = static_cast<float>(levels) / norm, scale = norm / levels;
    for (int64_t j = g; j < g + len; ++j) {
      const float u = rng.NextUniform();
      const int level = std::min(levels, static_cast<int>(std::fabs(x[j]) * mult + u));
      want[j] = static_cast<float>(x[j] < 0 ? -level : level) * scale;
    }
  }
  std::vector<char> first;
  for (const IntKernels* k : AvailableIntKernels()) {
    std::vector<char> wire(codec.MaxEncodedBytes(n));
    auto bytes = codec.EncodeWith(*k, x.data(), n, wire.data(), ctx);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    wire.resize(*bytes);
    std::vector<float> y(n);
    ASSERT_TRUE(codec.Decode(wire.data(), *bytes, n, y.data()).ok());
    for (int64_t j = 0; j < n; ++j) ASSERT_EQ(y[j], want[j]) << k->name << " element " << j;
    if (first.empty()) first = wire;
    EXPECT_EQ(wire, first) << k->name << " wire differs from scalar";
  }
}

TEST(QsgdCodecTest, RejectsNonFiniteWithTheIndexAndOverflowingNorms) {
  auto codec = MakeTestCodec("qsgd:s4:g32");
  std::vector<float> x = Gaussian(100, 8);
  std::vector<char> wire(codec->MaxEncodedBytes(100));
  x[37] = std::numeric_limits<float>::quiet_NaN();
  Result<int64_t> r = codec->Encode(x.data(), 100, wire.data(), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("element 37 of 100"), std::string::npos) << r.status();
  x[37] = 1.f;
  x[99] = -std::numeric_limits<float>::infinity();
  r = codec->Encode(x.data(), 100, wire.data(), {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("element 99"), std::string::npos) << r.status();
  x[99] = 1.f;
  x[64] = x[65] = 3e38f;  // each finite, the group's norm is not
  r = codec->Encode(x.data(), 100, wire.data(), {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("group 2"), std::string::npos) << r.status();
}

TEST(QsgdCodecTest, ZeroAndTinyGroupsDecodeToZero) {
  auto codec = MakeTestCodec("qsgd:s8:g32");
  std::vector<float> x(64, 0.f);
  for (int i = 32; i < 64; ++i) x[i] = 1e-39f;  // norm below FLT_MIN: flushed
  std::vector<char> wire(codec->MaxEncodedBytes(64));
  Result<int64_t> bytes = codec->Encode(x.data(), 64, wire.data(), {});
  ASSERT_TRUE(bytes.ok());
  std::vector<float> y(64, 5.f);
  ASSERT_TRUE(codec->Decode(wire.data(), *bytes, 64, y.data()).ok());
  for (float v : y) EXPECT_EQ(v, 0.f);
}

TEST(QsgdCodecTest, RejectsCorruptHeadersPayloadsAndMismatchedSpecs) {
  auto codec = MakeTestCodec("qsgd:s4:g32");
  const int64_t n = 100;
  std::vector<float> x = Gaussian(n, 9), y(n);
  std::vector<char> wire(codec->MaxEncodedBytes(n));
  const int64_t bytes = *codec->Encode(x.data(), n, wire.data(), {});
  ASSERT_TRUE(codec->Decode(wire.data(), bytes, n, y.data()).ok());

  std::vector<char> bad = wire;
  bad[0] ^= 1;  // magic
  EXPECT_EQ(codec->Decode(bad.data(), bytes, n, y.data()).code(), StatusCode::kDataLoss);
  EXPECT_EQ(codec->Decode(wire.data(), bytes - 1, n, y.data()).code(), StatusCode::kDataLoss);
  EXPECT_FALSE(codec->Decode(wire.data(), bytes, n + 1, y.data()).ok());

  // Same bits (4), different levels: only the levels byte differs.
  auto s5 = MakeTestCodec("qsgd:s5:g32");
  Status mismatch = s5->Decode(wire.data(), bytes, n, y.data());
  EXPECT_EQ(mismatch.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(mismatch.message().find("qsgd:s4:g32"), std::string::npos) << mismatch;
  EXPECT_NE(mismatch.message().find("qsgd:s5:g32"), std::string::npos) << mismatch;
  auto int4 = MakeTestCodec("int4:g32");
  EXPECT_EQ(int4->Decode(wire.data(), bytes, n, y.data()).code(), StatusCode::kFailedPrecondition);

  bad = wire;
  bad[kHeaderBytes + 3] = static_cast<char>(0xFF);  // level 15 - 4 = 11 > 4
  Status level = codec->Decode(bad.data(), bytes, n, y.data());
  EXPECT_EQ(level.code(), StatusCode::kDataLoss);
  EXPECT_NE(level.message().find("group 0"), std::string::npos) << level;

  bad = wire;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(bad.data() + kHeaderBytes + (n * 4 + 7) / 8 + 4, &nan, 4);  // group 1's norm
  Status norm = codec->Decode(bad.data(), bytes, n, y.data());
  EXPECT_EQ(norm.code(), StatusCode::kDataLoss);
  EXPECT_NE(norm.message().find("group 1"), std::string::npos) << norm;
}

}  // namespace
}  // namespace loom::compress
