// The reference IntKernels ("scalar"): plain C++ for any CPU, and the definition the SIMD kernels
// must match bit for bit (see int_kernels.h for the semantics). Compiled with -ffp-contract=off
// like the other kernel files.
#include <algorithm>
#include <cstring>

#include "loom/base/philox.h"
#include "loom/compress/kernels/int_kernels.h"
#include "loom/compress/kernels/int_kernels_internal.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace loom::compress {

namespace {

// One butterfly stage of stride kH: (v[j], v[j + kH]) -> (v[j] + v[j + kH], v[j] - v[j + kH]).
// A constant stride lets the compiler vectorize the stages with kH >= 4.
template <int kH>
void HadamardStage(float* v) {
  for (int i = 0; i < 32; i += 2 * kH) {
    for (int j = i; j < i + kH; ++j) {
      const float a = v[j], b = v[j + kH];
      v[j] = a + b;
      v[j + kH] = a - b;
    }
  }
}

}  // namespace

void Hadamard32(float* v) {
  HadamardStage<1>(v);
  HadamardStage<2>(v);
  HadamardStage<4>(v);
  HadamardStage<8>(v);
  HadamardStage<16>(v);
  const float s = internal::HadamardScale();
  for (int i = 0; i < 32; ++i) v[i] *= s;
}

namespace {

using internal::GroupScale;

uint32_t BitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Round half to even for |t| <= 2^22 (adding 1.5 * 2^23 leaves no fraction bits; the default
// rounding mode rounds to even). Same function as roundps with _MM_FROUND_TO_NEAREST_INT.
float RoundHalfEven(float t) {
  constexpr float kMagic = 12582912.0f;
  return (t + kMagic) - kMagic;
}

// floor(t) for |t| <= 2^22; the comparison subtracted as an integer keeps the loop branch-free
// (so it vectorizes).
int FloorToInt(float t) {
  const float r = RoundHalfEven(t);
  return static_cast<int>(r) - (r > t);
}

// The loops below work on chunks of kChunk elements (a multiple of 32, so a chunk starts on a
// Philox block and a byte boundary) and are written so that the compiler vectorizes them.
constexpr int64_t kChunk = 256;

// Packs len values in [-2^(b-1), 2^(b-1) - 1] as b-bit two's complement, least significant bits
// first; the unused bits of a last, partial byte are 0.
void Pack(const int8_t* q, int64_t len, int bits, uint8_t* out) {
  if (bits == 8) {
    std::memcpy(out, q, static_cast<size_t>(len));
    return;
  }
  const int per = 8 / bits;
  const int64_t full = len / per;
  if (bits == 4) {
    for (int64_t j = 0; j < full; ++j) {
      out[j] = static_cast<uint8_t>((q[2 * j] & 0xF) | ((q[2 * j + 1] & 0xF) << 4));
    }
  } else {
    for (int64_t j = 0; j < full; ++j) {
      out[j] = static_cast<uint8_t>((q[4 * j] & 3) | ((q[4 * j + 1] & 3) << 2) |
                                    ((q[4 * j + 2] & 3) << 4) | ((q[4 * j + 3] & 3) << 6));
    }
  }
  if (full * per < len) {
    uint32_t byte = 0;
    for (int64_t i = full * per; i < len; ++i) {
      byte |= (static_cast<uint32_t>(q[i]) & ((1u << bits) - 1)) << ((i - full * per) * bits);
    }
    out[full] = static_cast<uint8_t>(byte);
  }
}

// Inverse of Pack, sign-extended: each field moved to the top of a byte, then shifted back down.
void Unpack(const uint8_t* in, int64_t len, int bits, int8_t* q) {
  if (bits == 8) {
    std::memcpy(q, in, static_cast<size_t>(len));
    return;
  }
  auto field = [](uint8_t byte, int up, int bits) {
    return static_cast<int8_t>(static_cast<int8_t>(static_cast<uint8_t>(byte << up)) >> (8 - bits));
  };
  if (bits == 4) {
    for (int64_t j = 0; j < len / 2; ++j) {
      q[2 * j] = field(in[j], 4, 4);
      q[2 * j + 1] = field(in[j], 0, 4);
    }
    if (len % 2) q[len - 1] = field(in[len / 2], 4, 4);
    return;
  }
  for (int64_t j = 0; j < len / 4; ++j) {
    q[4 * j] = field(in[j], 6, 2);
    q[4 * j + 1] = field(in[j], 4, 2);
    q[4 * j + 2] = field(in[j], 2, 2);
    q[4 * j + 3] = field(in[j], 0, 2);
  }
  for (int64_t i = len / 4 * 4; i < len; ++i) q[i] = field(in[len / 4], 6 - 2 * (i % 4), 2);
}

// u for elements e .. e + len - 1 (e a multiple of 4): word e % 4 of block e / 4, ...
void Uniforms(const PhiloxKey& key, uint64_t stream, int64_t e, int64_t len, float* u) {
  for (int64_t i = 0; i < len; i += 4) {
    const uint64_t block = static_cast<uint64_t>(e + i) / 4;
    const PhiloxCounter w =
        Philox4x32({static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                    static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)},
                   key);
    for (int k = 0; k < 4; ++k) u[i + k] = static_cast<float>(w[k] >> 8) * internal::kUniformScale;
  }
}

void UniformRange(uint64_t seed, uint64_t stream, int64_t first, int64_t n, float* u) {
  const PhiloxKey key = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  Uniforms(key, stream, first, (n + 31) / 32 * 32, u);
}

int64_t Encode(const IntEncodeArgs& a) {
  const IntFormat& f = a.format;
  const int64_t n = a.n, m = IntWireElements(n, f), groups = IntGroups(m, f);
  const int qmax = internal::QMax(f.bits);
  const float lo = static_cast<float>(-qmax), hi = static_cast<float>(qmax);
  const PhiloxKey key = {static_cast<uint32_t>(a.seed), static_cast<uint32_t>(a.seed >> 32)};
  alignas(64) float rotated[kMaxIntGroup];
  alignas(64) float u[kChunk];
  alignas(64) int8_t q[kChunk];
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t b = g * f.group, len = std::min<int64_t>(f.group, m - b);
    const float* v = a.x + b;
    if (f.hadamard) {
      for (int64_t i = 0; i < len; ++i) rotated[i] = b + i < n ? a.x[b + i] : 0.0f;
      for (int64_t i = 0; i < len; i += 32) Hadamard32(rotated + i);
      v = rotated;
    }
    uint32_t amax_bits = 0;
    for (int64_t i = 0; i < len; ++i) {
      amax_bits = std::max(amax_bits, BitsOf(v[i]) & internal::kAbsMask);
    }
    if (amax_bits >= internal::kNonFiniteBits) return g;
    const GroupScale s = internal::ScaleOfGroup(amax_bits, qmax);
    std::memcpy(a.scales + 4 * g, &s.scale, 4);
    for (int64_t c = 0; c < len; c += kChunk) {
      const int64_t cl = std::min(kChunk, len - c);
      const float* vc = v + c;
      if (f.stochastic) {
        Uniforms(key, a.stream, b + c, cl, u);
        for (int64_t i = 0; i < cl; ++i) {
          const float t = std::min(std::max(vc[i] * s.inv + u[i], lo), hi);
          q[i] = static_cast<int8_t>(FloorToInt(t));
        }
      } else {
        for (int64_t i = 0; i < cl; ++i) {
          const float t = std::min(std::max(vc[i] * s.inv, lo), hi);
          q[i] = static_cast<int8_t>(RoundHalfEven(t));
        }
      }
      Pack(q, cl, f.bits, a.payload + (b + c) * f.bits / 8);
    }
  }
  return -1;
}

void Decode(const IntDecodeArgs& a) {
  const IntFormat& f = a.format;
  const int64_t n = a.n, m = IntWireElements(n, f), groups = IntGroups(m, f);
  alignas(64) int8_t unpacked[kChunk];
  alignas(64) float v[kChunk];
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t b = g * f.group, len = std::min<int64_t>(f.group, m - b);
    float scale;
    std::memcpy(&scale, a.scales + 4 * g, 4);
    for (int64_t c = 0; c < len; c += kChunk) {
      const int64_t cl = std::min(kChunk, len - c);
      const uint8_t* in = a.payload + (b + c) * f.bits / 8;
      const int8_t* q = reinterpret_cast<const int8_t*>(in);
      if (f.bits != 8) {
        Unpack(in, cl, f.bits, unpacked);
        q = unpacked;
      }
      const int64_t keep = std::min(cl, n - (b + c));
      float* y = a.y + b + c;
      if (!f.hadamard) {
        if (a.add) {
          for (int64_t i = 0; i < keep; ++i) y[i] = y[i] + static_cast<float>(q[i]) * scale;
        } else {
          for (int64_t i = 0; i < keep; ++i) y[i] = static_cast<float>(q[i]) * scale;
        }
        continue;
      }
      for (int64_t i = 0; i < cl; ++i) v[i] = static_cast<float>(q[i]) * scale;
      for (int64_t i = 0; i < cl; i += 32) Hadamard32(v + i);
      if (a.add) {
        for (int64_t i = 0; i < keep; ++i) y[i] = y[i] + v[i];
      } else {
        std::memcpy(y, v, static_cast<size_t>(keep) * 4);
      }
    }
  }
}

}  // namespace

const IntKernels& ScalarIntKernels() {
  static constexpr IntKernels kScalar = {"scalar", &Encode, &Decode, &UniformRange};
  return kScalar;
}

}  // namespace loom::compress
