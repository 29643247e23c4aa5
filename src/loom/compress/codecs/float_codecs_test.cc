#include "loom/compress/codecs/float_codecs.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "loom/base/dtype.h"
#include "loom/base/philox.h"

namespace loom::compress {
namespace {

const CodecSpec kFp16Spec = *ParseCodecSpec("fp16");

// Gaussian values at many scales, with fp16 subnormals, fp32 subnormals, signed zeros, values
// just below the fp16 overflow threshold and exact round-to-nearest-even ties.
std::vector<float> HardValues(int64_t n) {
  PhiloxStream rng(5, static_cast<uint64_t>(n));
  std::vector<float> x(n);
  const float special[] = {
      0.f,      -0.f,     1e-40f,      -1e-45f,  5.96e-8f,       2.98e-8f,           6.1e-5f,
      -6.0e-5f, 65504.f,  65519.99f,   -65519.f, 1.f + 0x1p-11f, 1.f + 3 * 0x1p-11f, 2049.f,
      -2051.f,  0x1p-25f, 3 * 0x1p-26f};
  for (int64_t i = 0; i < n; ++i) {
    const int kind = static_cast<int>(rng.NextBelow(4));
    if (kind == 0) {
      x[i] = special[rng.NextBelow(std::size(special))];
    } else {
      x[i] = rng.NextNormal() * std::ldexp(1.f, static_cast<int>(rng.NextBelow(40)) - 28);
    }
  }
  return x;
}

std::vector<char> Encode(const Codec& codec, const std::vector<float>& x) {
  std::vector<char> wire(codec.MaxEncodedBytes(static_cast<int64_t>(x.size())));
  Result<int64_t> bytes = codec.Encode(x.data(), static_cast<int64_t>(x.size()), wire.data(), {});
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return wire;
}

TEST(Fp16CodecTest, F16cAndScalarGiveIdenticalBytesOnOddSizes) {
  if (!HasF16c()) GTEST_SKIP() << "no F16C on this CPU";
  const FloatCodec scalar(kFp16Spec, Fp16Path::kScalar), f16c(kFp16Spec, Fp16Path::kF16c);
  for (int64_t n : {1, 7, 8, 9, 31, 4095, 4097, 10007}) {
    const std::vector<float> x = HardValues(n);
    const std::vector<char> a = Encode(scalar, x), b = Encode(f16c, x);
    ASSERT_EQ(a, b) << "n=" << n;
    // And the reference rounding (base/dtype.h's generic minifloat encoder).
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, a.data() + kHeaderBytes + 2 * i, 2);
      ASSERT_EQ(h, internal::ReferenceFloatToF16(x[i])) << "x=" << x[i];
    }
    std::vector<float> ya(n), yb(n), acc_a(n, 0.5f), acc_b(n, 0.5f);
    ASSERT_TRUE(scalar.Decode(a.data(), static_cast<int64_t>(a.size()), n, ya.data()).ok());
    ASSERT_TRUE(f16c.Decode(a.data(), static_cast<int64_t>(a.size()), n, yb.data()).ok());
    ASSERT_EQ(0, std::memcmp(ya.data(), yb.data(), 4 * n)) << "n=" << n;
    ASSERT_TRUE(scalar.DecodeAdd(a.data(), static_cast<int64_t>(a.size()), n, acc_a.data()).ok());
    ASSERT_TRUE(f16c.DecodeAdd(a.data(), static_cast<int64_t>(a.size()), n, acc_b.data()).ok());
    ASSERT_EQ(0, std::memcmp(acc_a.data(), acc_b.data(), 4 * n)) << "n=" << n;
  }
}

TEST(Fp16CodecTest, F16cDecodesEveryFiniteHalfLikeTheScalarPath) {
  if (!HasF16c()) GTEST_SKIP() << "no F16C on this CPU";
  std::vector<uint16_t> halves;
  for (uint32_t h = 0; h < 65536; ++h) {
    if ((h & 0x7C00u) != 0x7C00u) halves.push_back(static_cast<uint16_t>(h));
  }
  const int64_t n = static_cast<int64_t>(halves.size());
  const FloatCodec scalar(kFp16Spec, Fp16Path::kScalar), f16c(kFp16Spec, Fp16Path::kF16c);
  // A valid buffer: header from encoding zeros, payload replaced by every finite half.
  std::vector<char> wire = Encode(scalar, std::vector<float>(n, 0.f));
  std::memcpy(wire.data() + kHeaderBytes, halves.data(), 2 * n);
  std::vector<float> a(n), b(n);
  ASSERT_TRUE(scalar.Decode(wire.data(), static_cast<int64_t>(wire.size()), n, a.data()).ok());
  ASSERT_TRUE(f16c.Decode(wire.data(), static_cast<int64_t>(wire.size()), n, b.data()).ok());
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(a[i]), std::bit_cast<uint32_t>(b[i])) << "half " << halves[i];
    ASSERT_EQ(a[i], internal::ReferenceF16ToFloat(halves[i]));
  }
}

// Inf/NaN inputs and values rounding to fp16 Inf are refused with their index, on both paths.
TEST(Fp16CodecTest, RejectsNonFiniteAndOverflowingValuesWithTheirIndex) {
  std::vector<Fp16Path> paths = {Fp16Path::kScalar};
  if (HasF16c()) paths.push_back(Fp16Path::kF16c);
  for (Fp16Path path : paths) {
    const FloatCodec codec(kFp16Spec, path);
    for (int64_t at : {0, 7, 4100, 4102}) {  // in the vector body, in a scalar tail, 2nd block
      for (float bad : {std::numeric_limits<float>::infinity(),
                        -std::numeric_limits<float>::quiet_NaN(), 65520.f, -1e6f}) {
        std::vector<float> x(4103, 1.f);
        x[at] = bad;
        std::vector<char> wire(codec.MaxEncodedBytes(4103));
        Status s = codec.Encode(x.data(), 4103, wire.data(), {}).status();
        ASSERT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
        EXPECT_NE(s.message().find("at element " + std::to_string(at) + " of 4103"),
                  std::string::npos)
            << s;
        EXPECT_NE(s.message().find(std::isfinite(bad) ? "overflows fp16" : "non-finite"),
                  std::string::npos)
            << s;
      }
    }
    // The largest value that still rounds to a finite half.
    std::vector<float> x = {65519.99f, -65519.f};
    std::vector<char> wire = Encode(codec, x);
    std::vector<float> y(2);
    ASSERT_TRUE(codec.Decode(wire.data(), static_cast<int64_t>(wire.size()), 2, y.data()).ok());
    EXPECT_EQ(y, (std::vector<float>{65504.f, -65504.f}));
  }
}

}  // namespace
}  // namespace loom::compress
