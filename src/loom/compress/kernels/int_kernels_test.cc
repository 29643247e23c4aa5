// IntKernels: every implementation this CPU runs against the scalar reference (byte-identical
// payloads and scales, bit-identical decode and decode-add) over bits x group x rounding x
// Hadamard x odd sizes x Gaussian / heavy-tailed / zero-and-subnormal data, unaligned buffers with
// guard bytes; the reference against the loops IntCodec used before the kernels existed; the
// semantics on hand-made inputs (ties, the Philox stream, zero and subnormal groups, NaN/Inf,
// Hadamard overflow); and the run-time choice (LOOM_SIMD).
#include "loom/compress/kernels/int_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "loom/base/philox.h"
#include "loom/compress/codec.h"
#include "loom/compress/codecs/int_codec.h"

namespace loom::compress {
namespace {

constexpr uint64_t kSeed = 0x0123456789ABCDEFull;
constexpr uint64_t kStream = 0xFEDCBA9876543210ull;

// ---- buffers with misalignment and guards ----

constexpr int kGuard = 64;
constexpr uint8_t kGuardByte = 0xA5;

struct Encoded {
  int64_t bad = -1;
  std::vector<uint8_t> payload;  // exactly IntPayloadBytes(m)
  std::vector<char> scales;      // exactly 4 * groups
};

// Runs k.encode with x at a 4-byte (not 64-byte) aligned address and payload/scales at odd
// addresses, and checks that nothing outside the outputs was written.
Encoded EncodeWith(const IntKernels& k, const IntFormat& f, const std::vector<float>& x,
                   uint64_t seed = kSeed, uint64_t stream = kStream) {
  const int64_t n = static_cast<int64_t>(x.size());
  const int64_t m = IntWireElements(n, f);
  const int64_t pb = IntPayloadBytes(m, f), sb = 4 * IntGroups(m, f);
  std::vector<float> xs(x.size() + 1);
  std::copy(x.begin(), x.end(), xs.begin() + 1);
  std::vector<uint8_t> payload(static_cast<size_t>(pb + 2 * kGuard + 3), kGuardByte);
  std::vector<char> scales(static_cast<size_t>(sb + 2 * kGuard + 1), static_cast<char>(kGuardByte));
  IntEncodeArgs a;
  a.format = f;
  a.x = xs.data() + 1;
  a.n = n;
  a.seed = seed;
  a.stream = stream;
  a.payload = payload.data() + kGuard + 3;
  a.scales = scales.data() + kGuard + 1;
  Encoded e;
  e.bad = k.encode(a);
  for (int i = 0; i < kGuard + 3; ++i)
    EXPECT_EQ(payload[i], kGuardByte) << k.name << " before payload";
  for (int i = 0; i < kGuard; ++i) {
    EXPECT_EQ(payload[kGuard + 3 + pb + i], kGuardByte) << k.name << " wrote past the payload";
    EXPECT_EQ(static_cast<uint8_t>(scales[kGuard + 1 + sb + i]), kGuardByte)
        << k.name << " wrote past the scales";
  }
  e.payload.assign(a.payload, a.payload + pb);
  e.scales.assign(a.scales, a.scales + sb);
  return e;
}

// k.decode into a copy of `init` placed at an odd float offset; checks the guards.
std::vector<float> DecodeWith(const IntKernels& k, const IntFormat& f, const Encoded& e,
                              const std::vector<float>& init, bool add) {
  const int64_t n = static_cast<int64_t>(init.size());
  std::vector<float> ys(init.size() + 2 * kGuard + 1, -123.0f);
  std::copy(init.begin(), init.end(), ys.begin() + kGuard + 1);
  IntDecodeArgs a;
  a.format = f;
  a.payload = e.payload.data();
  a.scales = e.scales.data();
  a.n = n;
  a.y = ys.data() + kGuard + 1;
  a.add = add;
  k.decode(a);
  for (int i = 0; i < kGuard + 1; ++i) EXPECT_EQ(ys[i], -123.0f) << k.name << " before y";
  for (int i = 0; i < kGuard; ++i)
    EXPECT_EQ(ys[kGuard + 1 + n + i], -123.0f) << k.name << " past y";
  return std::vector<float>(a.y, a.y + n);
}

// "" when equal byte for byte, else where they first differ.
template <typename T>
std::string FirstDifference(const std::vector<T>& want, const std::vector<T>& got) {
  if (want.size() != got.size()) {
    return "sizes " + std::to_string(want.size()) + " vs " + std::to_string(got.size());
  }
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::memcmp(&want[i], &got[i], sizeof(T)) != 0) {
      return "first difference at index " + std::to_string(i) + ": " +
             std::to_string(static_cast<double>(want[i])) + " vs " +
             std::to_string(static_cast<double>(got[i]));
    }
  }
  return "";
}

// ---- data ----

enum class Data { kGaussian, kHeavyTailed, kZerosAndSubnormals };

std::vector<float> MakeData(Data kind, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> x(static_cast<size_t>(n));
  std::normal_distribution<float> gauss(0.f, 1.f);
  std::student_t_distribution<float> heavy(1.5f);
  for (int64_t i = 0; i < n; ++i) {
    switch (kind) {
      case Data::kGaussian:
        x[i] = gauss(rng);
        break;
      case Data::kHeavyTailed:
        x[i] = heavy(rng) * (i % 1001 == 0 ? 1e4f : 1.f);
        break;
      case Data::kZerosAndSubnormals: {
        const int64_t run = (i / 96) % 5;  // runs that cross group and block boundaries
        x[i] = run == 0   ? 0.0f
               : run == 1 ? -0.0f
               : run == 2 ? gauss(rng) * 1e-39f  // subnormal: the group's scale flushes to 0
               : run == 3 ? gauss(rng) * 1e-30f
                          : gauss(rng);
        break;
      }
    }
  }
  return x;
}

const char* DataName(Data d) {
  return d == Data::kGaussian ? "gaussian" : d == Data::kHeavyTailed ? "t(1.5)" : "zeros/subnormal";
}

std::string FormatName(const IntFormat& f) {
  return "int" + std::to_string(f.bits) + ":g" + std::to_string(f.group) +
         (f.stochastic ? ":stochastic" : ":nearest") + (f.hadamard ? ":hadamard" : "");
}

// ---- the loops IntCodec ran before the kernels (commit 7e682be), as an independent oracle ----

uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void LegacyPack(const int8_t* q, int64_t len, int bits, uint8_t* out) {
  if (bits == 8) {
    std::memcpy(out, q, static_cast<size_t>(len));
    return;
  }
  const int per = 8 / bits;
  const int64_t full = len / per;
  for (int64_t j = 0; j < full; ++j) {
    uint8_t b = 0;
    for (int k = 0; k < per; ++k)
      b |= static_cast<uint8_t>((q[per * j + k] & ((1 << bits) - 1)) << (k * bits));
    out[j] = b;
  }
  if (full * per < len) {
    uint8_t b = 0;
    for (int64_t i = full * per; i < len; ++i) {
      b |= static_cast<uint8_t>((q[i] & ((1 << bits) - 1)) << ((i - full * per) * bits));
    }
    out[full] = b;
  }
}

Encoded LegacyEncode(const IntFormat& s, const std::vector<float>& xv, uint64_t seed,
                     uint64_t stream) {
  const float* x = xv.data();
  const int64_t n = static_cast<int64_t>(xv.size());
  const int64_t m = s.hadamard ? (n + 31) / 32 * 32 : n;
  const int64_t groups = (m + s.group - 1) / s.group;
  Encoded e;
  e.payload.assign(static_cast<size_t>((m * s.bits + 7) / 8), 0);
  e.scales.assign(static_cast<size_t>(4 * groups), 0);
  const int qmax = (1 << (s.bits - 1)) - 1;
  PhiloxStream rng(seed, stream);
  std::vector<float> v(s.group), u(s.group, 0.f);
  std::vector<int8_t> qv(s.group);
  const float lo = static_cast<float>(-qmax), hi = static_cast<float>(qmax);
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t b = g * s.group, len = std::min<int64_t>(s.group, m - b);
    for (int64_t i = 0; i < len; ++i) v[i] = b + i < n ? x[b + i] : 0.0f;
    if (s.hadamard) {
      for (int64_t i = 0; i < len; i += 32) Hadamard32(v.data() + i);
    }
    float amax = 0;
    for (int64_t i = 0; i < len; ++i) amax = std::max(amax, std::fabs(v[i]));
    const float scale = amax / static_cast<float>(qmax);
    std::memcpy(e.scales.data() + 4 * g, &scale, 4);
    const float inv = scale > 0 ? 1.0f / scale : 0.0f;
    if (s.stochastic) {
      for (int64_t i = 0; i < len; ++i) u[i] = rng.NextUniform();
      for (int64_t i = 0; i < len; ++i) {
        qv[i] = static_cast<int8_t>(std::clamp(std::floor(v[i] * inv + u[i]), lo, hi));
      }
    } else {
      for (int64_t i = 0; i < len; ++i) {
        qv[i] = static_cast<int8_t>(std::clamp(std::nearbyint(v[i] * inv), lo, hi));
      }
    }
    LegacyPack(qv.data(), len, s.bits, e.payload.data() + b * s.bits / 8);
  }
  return e;
}

int LegacyField(const uint8_t* in, int64_t i, int bits) {
  if (bits == 8) return static_cast<int8_t>(in[i]);
  const int per = 8 / bits;
  const uint8_t byte = in[i / per];
  const int up = 8 - bits - static_cast<int>(i % per) * bits;
  return static_cast<int8_t>(static_cast<uint8_t>(byte << up)) >> (8 - bits);
}

std::vector<float> LegacyDecode(const IntFormat& s, const Encoded& e, int64_t n) {
  const int64_t m = s.hadamard ? (n + 31) / 32 * 32 : n;
  const int64_t groups = (m + s.group - 1) / s.group;
  std::vector<float> y(n), v(s.group);
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t b = g * s.group, len = std::min<int64_t>(s.group, m - b);
    float scale;
    std::memcpy(&scale, e.scales.data() + 4 * g, 4);
    for (int64_t i = 0; i < len; ++i) {
      v[i] = static_cast<float>(LegacyField(e.payload.data() + b * s.bits / 8, i, s.bits)) * scale;
    }
    if (s.hadamard) {
      for (int64_t i = 0; i < len; i += 32) Hadamard32(v.data() + i);
    }
    for (int64_t i = 0; i < std::min(len, n - b); ++i) y[b + i] = v[i];
  }
  return y;
}

// ---- every implementation vs scalar, over the whole matrix ----

using FormatParam = std::tuple<int, int, bool, bool>;  // bits, group, stochastic, hadamard

IntFormat ToFormat(const FormatParam& p) {
  return IntFormat{std::get<0>(p), std::get<1>(p), std::get<2>(p), std::get<3>(p)};
}

class IntKernelsMatchScalar : public testing::TestWithParam<FormatParam> {};

TEST_P(IntKernelsMatchScalar, BytesAndDecodedValuesAreIdentical) {
  const IntFormat f = ToFormat(GetParam());
  const IntKernels& ref = ScalarIntKernels();
  const auto impls = AvailableIntKernels();
  int compared = 0;
  for (Data data : {Data::kGaussian, Data::kHeavyTailed, Data::kZerosAndSubnormals}) {
    for (int64_t n : {1, 31, 32, 33, 127, 4096 + 17, 1000003}) {
      SCOPED_TRACE(FormatName(f) + " n=" + std::to_string(n) + " " + DataName(data));
      const auto x = MakeData(data, n, static_cast<uint32_t>(n * 7 + f.bits));
      const uint64_t seed = kSeed + static_cast<uint64_t>(n);
      const Encoded want = EncodeWith(ref, f, x, seed);
      ASSERT_EQ(want.bad, -1);
      const auto acc = MakeData(Data::kGaussian, n, 99);
      const auto want_y = DecodeWith(ref, f, want, std::vector<float>(n, 0.f), false);
      const auto want_acc = DecodeWith(ref, f, want, acc, true);
      // Sanity of the reference itself: decode-add is acc + decode, element by element.
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(want_acc[i], acc[i] + want_y[i]) << i;
      for (const IntKernels* k : impls) {
        if (k == &ref) continue;
        SCOPED_TRACE(k->name);
        const Encoded got = EncodeWith(*k, f, x, seed);
        ASSERT_EQ(got.bad, -1);
        ASSERT_EQ(FirstDifference(want.payload, got.payload), "") << "payload";
        ASSERT_EQ(FirstDifference(want.scales, got.scales), "") << "scales";
        ASSERT_EQ(
            FirstDifference(want_y, DecodeWith(*k, f, want, std::vector<float>(n, 0.f), false)), "")
            << "decode";
        ASSERT_EQ(FirstDifference(want_acc, DecodeWith(*k, f, want, acc, true)), "")
            << "decode-add";
        ++compared;
      }
    }
  }
  if (impls.size() == 1) GTEST_SKIP() << "only the scalar kernels run on this CPU";
  EXPECT_EQ(compared, 3 * 7 * static_cast<int>(impls.size() - 1));
}

// Arbitrary payload bytes (every field value, including -8 for int4 and -2 for int2, which the
// encoder never writes) and arbitrary scales decode identically everywhere.
TEST_P(IntKernelsMatchScalar, DecodeOfArbitraryBytesIsIdentical) {
  const IntFormat f = ToFormat(GetParam());
  std::mt19937 rng(5);
  for (int64_t n : {1, 33, 4096 + 5, 100003}) {
    const int64_t m = IntWireElements(n, f);
    Encoded e;
    e.payload.resize(static_cast<size_t>(IntPayloadBytes(m, f)));
    for (auto& b : e.payload) b = static_cast<uint8_t>(rng());
    std::normal_distribution<float> d(0.f, 3.f);
    for (int64_t g = 0; g < IntGroups(m, f); ++g) {
      const float s = g % 5 == 0 ? 0.0f : d(rng);
      e.scales.resize(e.scales.size() + 4);
      std::memcpy(e.scales.data() + 4 * g, &s, 4);
    }
    const auto acc = MakeData(Data::kHeavyTailed, n, 3);
    const auto want = DecodeWith(ScalarIntKernels(), f, e, acc, false);
    ASSERT_EQ(FirstDifference(LegacyDecode(f, e, n), want), "") << "scalar vs the old loops";
    const auto want_add = DecodeWith(ScalarIntKernels(), f, e, acc, true);
    for (const IntKernels* k : AvailableIntKernels()) {
      SCOPED_TRACE(std::string(k->name) + " n=" + std::to_string(n));
      ASSERT_EQ(FirstDifference(want, DecodeWith(*k, f, e, acc, false)), "");
      ASSERT_EQ(FirstDifference(want_add, DecodeWith(*k, f, e, acc, true)), "");
    }
  }
}

// The reference produces exactly the bytes of the loops it replaced (so ranks running either
// agree), on data without subnormal groups (the old loops kept subnormal scales).
TEST_P(IntKernelsMatchScalar, ScalarMatchesTheLoopsItReplaced) {
  const IntFormat f = ToFormat(GetParam());
  for (Data data : {Data::kGaussian, Data::kHeavyTailed}) {
    for (int64_t n : {1, 33, 127, 4096 + 17, 100003}) {
      SCOPED_TRACE(FormatName(f) + " n=" + std::to_string(n) + " " + DataName(data));
      const auto x = MakeData(data, n, static_cast<uint32_t>(n));
      const uint64_t stream = Mix(Mix(3) ^ Mix(uint64_t{1} << 32 ^ 2));
      const Encoded want = LegacyEncode(f, x, kSeed, stream);
      const Encoded got = EncodeWith(ScalarIntKernels(), f, x, kSeed, stream);
      ASSERT_EQ(FirstDifference(want.payload, got.payload), "") << "payload";
      ASSERT_EQ(FirstDifference(want.scales, got.scales), "") << "scales";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, IntKernelsMatchScalar,
                         testing::Combine(testing::Values(8, 4, 2), testing::Values(32, 128, 2048),
                                          testing::Bool(), testing::Bool()),
                         [](const testing::TestParamInfo<FormatParam>& info) {
                           const IntFormat f = ToFormat(info.param);
                           return "int" + std::to_string(f.bits) + "_g" + std::to_string(f.group) +
                                  (f.stochastic ? "_stochastic" : "_nearest") +
                                  (f.hadamard ? "_hadamard" : "");
                         });

// ---- semantics on hand-made inputs, for every implementation ----

// Packed field i of a payload, sign-extended.
int FieldOf(const Encoded& e, int64_t i, int bits) {
  return LegacyField(e.payload.data(), i, bits);
}

TEST(IntKernels, NearestRoundsHalfToEven) {
  // amax 7 with int4 -> scale 1, inv 1: t is x itself.
  const std::vector<float> x = {7.f,         0.5f,  1.5f, 2.5f,  -0.5f, -1.5f, -2.5f, 3.5f,
                                0.49999997f, -3.5f, 6.5f, -6.5f, 5.5f,  1.0f,  -7.f,  0.f};
  const std::vector<int> want = {7, 0, 2, 2, 0, -2, -2, 4, 0, -4, 6, -6, 6, 1, -7, 0};
  const IntFormat f{4, 32, /*stochastic=*/false, /*hadamard=*/false};
  for (const IntKernels* k : AvailableIntKernels()) {
    const Encoded e = EncodeWith(*k, f, x);
    float scale;
    std::memcpy(&scale, e.scales.data(), 4);
    ASSERT_EQ(scale, 1.0f) << k->name;
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_EQ(FieldOf(e, i, 4), want[i]) << k->name << " " << i;
    const auto y = DecodeWith(*k, f, e, std::vector<float>(x.size(), 0.f), false);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], static_cast<float>(want[i])) << k->name;
  }
}

// Element j of the buffer rounds with the j-th draw of PhiloxStream(seed, stream): with scale 1
// and x = 0.5, q = 1 exactly when that uniform is >= 0.5.
TEST(IntKernels, StochasticRoundingUsesTheJthDrawOfThePhiloxStream) {
  const int64_t n = 3 * 128 + 37;
  std::vector<float> x(n, 0.5f);
  for (int64_t g = 0; g < n; g += 128) x[g] = 127.f;  // int8: scale 1 in every group
  const IntFormat f{8, 128, /*stochastic=*/true, /*hadamard=*/false};
  const uint64_t seed = 0xDEADBEEF00C0FFEEull, stream = 0x8000000100000002ull;
  PhiloxStream rng(seed, stream);
  std::vector<int> want(n);
  for (int64_t j = 0; j < n; ++j) {
    const float u = rng.NextUniform();  // drawn for every element, the group maxima too
    want[j] = j % 128 == 0 ? 127 : u >= 0.5f ? 1 : 0;
  }
  for (const IntKernels* k : AvailableIntKernels()) {
    const Encoded e = EncodeWith(*k, f, x, seed, stream);
    int ones = 0;
    for (int64_t j = 0; j < n; ++j) {
      ASSERT_EQ(FieldOf(e, j, 8), want[j]) << k->name << " element " << j;
      ones += want[j] == 1;
    }
    EXPECT_GT(ones, n / 3) << "the draws are not all below 0.5";
    EXPECT_LT(ones, 2 * n / 3);
  }
}

// uniforms(first, n) = draws first .. first + n - 1 of PhiloxStream(seed, stream), bit for bit,
// on every implementation; nothing past n rounded up to 32 is written.
TEST(IntKernels, UniformsAreTheStreamsDrawsAtAnyOffset) {
  const uint64_t seed = 0xDEADBEEF00C0FFEEull, stream = 0x8000000100000002ull;
  PhiloxStream rng(seed, stream);
  std::vector<float> want(4096);
  for (float& u : want) u = rng.NextUniform();
  for (const IntKernels* k : AvailableIntKernels()) {
    for (auto [first, n] : {std::pair<int64_t, int64_t>{0, 1}, {0, 32}, {32, 100}, {64, 128},
                            {96, 513}, {1024, 3000}}) {
      const int64_t room = (n + 31) / 32 * 32;
      std::vector<float> u(room + 8, -1.f);
      k->uniforms(seed, stream, first, n, u.data() + 1);  // unaligned
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(u[1 + i], want[first + i]) << k->name << " first " << first << " i " << i;
      }
      EXPECT_EQ(u[0], -1.f) << k->name;
      EXPECT_EQ(u[1 + room], -1.f) << k->name << " wrote past the rounded-up count";
    }
  }
}

TEST(IntKernels, ZeroAndSubnormalGroupsGetScaleZeroAndDecodeToZero) {
  std::vector<float> x(3 * 32, 0.0f);
  // max 3.2e-39: subnormal (< FLT_MIN = 1.2e-38), and so is scale = amax / qmax.
  for (int i = 32; i < 64; ++i) x[i] = (i % 2 ? 1.f : -1.f) * 1e-40f * static_cast<float>(i - 31);
  for (int i = 64; i < 96; ++i) x[i] = static_cast<float>(i - 80);
  for (const IntKernels* k : AvailableIntKernels()) {
    for (int bits : {8, 4, 2}) {
      for (bool stochastic : {false, true}) {
        const IntFormat f{bits, 32, stochastic, false};
        const Encoded e = EncodeWith(*k, f, x);
        float s[3];
        std::memcpy(s, e.scales.data(), 12);
        EXPECT_EQ(s[0], 0.0f) << k->name;
        EXPECT_EQ(s[1], 0.0f) << k->name << " subnormal scale not flushed";
        EXPECT_EQ(s[2], 16.0f / static_cast<float>((1 << (bits - 1)) - 1)) << k->name;
        for (int i = 0; i < 64; ++i) ASSERT_EQ(FieldOf(e, i, bits), 0) << k->name << " " << i;
        const auto y = DecodeWith(*k, f, e, std::vector<float>(x.size(), 5.f), false);
        for (int i = 0; i < 64; ++i) ASSERT_EQ(y[i], 0.0f) << k->name << " " << i;
      }
    }
  }
}

TEST(IntKernels, NonFiniteValuesReportTheirGroup) {
  for (const IntKernels* k : AvailableIntKernels()) {
    for (bool hadamard : {false, true}) {
      const IntFormat f{4, 128, true, hadamard};
      for (float bad : {std::nanf(""), INFINITY, -INFINITY}) {
        for (int64_t at : {0, 1000, 1000 * 128 - 1, 1000 * 128 + 3}) {
          auto x = MakeData(Data::kGaussian, 1000 * 128 + 5, 1);
          x[at] = bad;
          EXPECT_EQ(EncodeWith(*k, f, x).bad, at / 128) << k->name << " " << bad << " at " << at;
        }
      }
      // Finite values near FLT_MAX: fine alone, but 32 of them overflow the rotation.
      std::vector<float> x(1000, 1.0f);
      for (int i = 320; i < 352; ++i) x[i] = 3e38f;
      EXPECT_EQ(EncodeWith(*k, f, x).bad, hadamard ? 2 : -1) << k->name;
    }
  }
}

// ---- IntCodec runs whichever kernels it is given, with identical wire bytes ----

TEST(IntKernels, IntCodecWireIsTheSameWithEveryImplementation) {
  const auto x = MakeData(Data::kHeavyTailed, 100003, 11);
  for (const char* text : {"int4:g128", "int2:g64:hadamard", "int8:g2048:nearest"}) {
    const CodecSpec spec = *ParseCodecSpec(text);
    IntCodec ref(spec, &ScalarIntKernels());
    std::vector<char> want(ref.MaxEncodedBytes(100003));
    const int64_t bytes = *ref.Encode(x.data(), 100003, want.data(), {7, 3, 1, 2});
    for (const IntKernels* k : AvailableIntKernels()) {
      IntCodec codec(spec, k);
      std::vector<char> got(codec.MaxEncodedBytes(100003));
      ASSERT_EQ(*codec.Encode(x.data(), 100003, got.data(), {7, 3, 1, 2}), bytes);
      ASSERT_EQ(FirstDifference(want, got), "") << text << " " << k->name;
      std::vector<float> y(100003, 1.f);
      ASSERT_TRUE(codec.DecodeAdd(got.data(), bytes, 100003, y.data()).ok());
      std::vector<float> y_ref(100003, 1.f);
      ASSERT_TRUE(ref.DecodeAdd(want.data(), bytes, 100003, y_ref.data()).ok());
      ASSERT_EQ(FirstDifference(y_ref, y), "") << text << " " << k->name;
    }
  }
}

TEST(IntKernels, IntCodecNamesTheBadElementOrTheOverflowingGroup) {
  for (const IntKernels* k : AvailableIntKernels()) {
    IntCodec codec(*ParseCodecSpec("int4:g64:hadamard"), k);
    auto x = MakeData(Data::kGaussian, 500, 8);
    std::vector<char> wire(codec.MaxEncodedBytes(500));
    x[321] = std::nanf("");
    Status s = codec.Encode(x.data(), 500, wire.data(), {}).status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << k->name;
    EXPECT_NE(s.message().find("element 321"), std::string::npos) << s;
    x[321] = 0.f;
    for (int i = 128; i < 160; ++i) x[i] = -3.3e38f;
    s = codec.Encode(x.data(), 500, wire.data(), {}).status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << k->name;
    EXPECT_NE(s.message().find("rotation of group 2"), std::string::npos) << s;
  }
}

TEST(IntKernels, HadamardIsOrthonormalAndSelfInverse) {
  std::vector<float> e(32, 0.f);
  e[5] = 1.f;
  Hadamard32(e.data());
  for (int i = 0; i < 32; ++i) EXPECT_FLOAT_EQ(std::fabs(e[i]), 1.f / std::sqrt(32.f)) << i;
  const auto x = MakeData(Data::kGaussian, 32, 4);
  auto w = x;
  Hadamard32(w.data());
  Hadamard32(w.data());
  for (int i = 0; i < 32; ++i) EXPECT_NEAR(w[i], x[i], 1e-5) << i;
}

// ---- choice of implementation ----

TEST(IntKernelsChoice, ScalarFirstThenEachAvailableOnceAndFindable) {
  const auto impls = AvailableIntKernels();
  ASSERT_FALSE(impls.empty());
  EXPECT_EQ(impls[0], &ScalarIntKernels());
  std::set<std::string> names;
  for (const IntKernels* k : impls) {
    EXPECT_TRUE(names.insert(k->name).second) << k->name;
    auto found = FindIntKernels(k->name);
    ASSERT_TRUE(found.ok()) << found.status();
    EXPECT_EQ(*found, k);
  }
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  EXPECT_EQ(names.count("avx2"), avx2 ? 1u : 0u);
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  EXPECT_EQ(names.count("avx512"), avx512 ? 1u : 0u);
  if (!avx512) {
    auto r = FindIntKernels("avx512");
    EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(r.status().message().find("lacks"), std::string::npos) << r.status();
  }
#endif
}

TEST(IntKernelsChoice, LoomSimdPicksOrExplains) {
  EXPECT_EQ(*ChooseIntKernels(Env::FromMap({})), AvailableIntKernels().back());
  EXPECT_EQ(*ChooseIntKernels(Env::FromMap({{"LOOM_SIMD", "auto"}})), AvailableIntKernels().back());
  EXPECT_EQ(*ChooseIntKernels(Env::FromMap({{"LOOM_SIMD", "scalar"}})), &ScalarIntKernels());
  auto bad = ChooseIntKernels(Env::FromMap({{"LOOM_SIMD", "neon"}}));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("LOOM_SIMD=neon"), std::string::npos) << bad.status();
  EXPECT_NE(bad.status().message().find("available here: scalar"), std::string::npos)
      << bad.status();
}

TEST(IntKernelsChoiceDeathTest, SelectAbortsOnAnImpossibleRequest) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process: the choice is not made yet
  EXPECT_DEATH(
      {
        setenv("LOOM_SIMD", "sse9", 1);
        (void)SelectIntKernels();
      },
      "LOOM_SIMD=sse9: unknown int kernels 'sse9'");
}

}  // namespace
}  // namespace loom::compress
