#include "loom/compress/codecs/int_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "loom/base/philox.h"

namespace loom::compress {

void Hadamard32(float* v) {
  for (int h = 1; h < 32; h *= 2) {
    for (int i = 0; i < 32; i += 2 * h) {
      for (int j = i; j < i + h; ++j) {
        const float a = v[j], b = v[j + h];
        v[j] = a + b;
        v[j + h] = a - b;
      }
    }
  }
  const float s = 1.0f / std::sqrt(32.0f);
  for (int i = 0; i < 32; ++i) v[i] *= s;
}

namespace {

uint64_t Mix(uint64_t x) {  // splitmix64 finalizer
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Stores q (in [-qmax, qmax]) as `bits`-bit two's complement at element i.
inline void Put(uint8_t* p, int bits, int64_t i, int q) {
  if (bits == 8) {
    p[i] = static_cast<uint8_t>(static_cast<int8_t>(q));
    return;
  }
  const int per = 8 / bits;
  const int shift = static_cast<int>(i % per) * bits;
  const uint8_t mask = static_cast<uint8_t>((1 << bits) - 1);
  p[i / per] = static_cast<uint8_t>((p[i / per] & ~(mask << shift)) | ((q & mask) << shift));
}

inline int Get(const uint8_t* p, int bits, int64_t i) {
  if (bits == 8) return static_cast<int8_t>(p[i]);
  const int per = 8 / bits;
  const int v = (p[i / per] >> ((i % per) * bits)) & ((1 << bits) - 1);
  return v >= (1 << (bits - 1)) ? v - (1 << bits) : v;  // sign-extend
}

}  // namespace

int64_t IntCodec::MaxEncodedBytes(int64_t n) const {
  const int64_t m = Padded(n);
  return kHeaderBytes + PayloadBytes(m) + 4 * Groups(m);
}

Result<int64_t> IntCodec::Encode(const float* x, int64_t n, char* out,
                                 const StepContext& ctx) const {
  if (int64_t bad = FirstNonFinite(x, n); bad >= 0) {
    return InvalidArgumentError("non-finite value " + std::to_string(x[bad]) + " at element " +
                                std::to_string(bad) + " of " + std::to_string(n) +
                                " (not folded into a quantization scale)");
  }
  const CodecSpec& s = spec();
  const int64_t m = Padded(n);
  const int64_t payload = PayloadBytes(m);
  const int64_t groups = Groups(m);
  WriteHeader(out, n, payload + 4 * groups);
  auto* q = reinterpret_cast<uint8_t*>(out + kHeaderBytes);
  std::memset(q, 0, static_cast<size_t>(payload));
  float* scales = reinterpret_cast<float*>(out + kHeaderBytes + payload);  // may be unaligned
  const int qmax = (1 << (s.bits - 1)) - 1;
  PhiloxStream rng(ctx.seed, Mix(Mix(static_cast<uint64_t>(ctx.step)) ^
                                 Mix(static_cast<uint64_t>(ctx.rank) << 32 ^
                                     static_cast<uint64_t>(ctx.chunk))));
  std::vector<float> v(static_cast<size_t>(s.group));
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t b = g * s.group, len = std::min<int64_t>(s.group, m - b);
    for (int64_t i = 0; i < len; ++i) v[i] = b + i < n ? x[b + i] : 0.0f;
    if (s.hadamard) {
      for (int64_t i = 0; i < len; i += 32) Hadamard32(v.data() + i);
    }
    float amax = 0;
    for (int64_t i = 0; i < len; ++i) amax = std::max(amax, std::fabs(v[i]));
    const float scale = amax / static_cast<float>(qmax);
    std::memcpy(scales + g, &scale, 4);
    const float inv = scale > 0 ? 1.0f / scale : 0.0f;
    for (int64_t i = 0; i < len; ++i) {
      const float t = v[i] * inv;
      float r = s.stochastic ? std::floor(t + rng.NextUniform()) : std::nearbyint(t);
      r = std::clamp(r, static_cast<float>(-qmax), static_cast<float>(qmax));
      Put(q, s.bits, b + i, static_cast<int>(r));
    }
  }
  return kHeaderBytes + payload + 4 * groups;
}

Status IntCodec::DecodeInto(const char* in, int64_t bytes, int64_t n, float* y,
                            bool add) const {
  LOOM_ASSIGN_OR_RETURN(int64_t body, CheckHeader(in, bytes, n));
  const CodecSpec& s = spec();
  const int64_t m = Padded(n);
  const int64_t payload = PayloadBytes(m);
  const int64_t groups = Groups(m);
  if (body != payload + 4 * groups) {
    return DataLossError("compressed buffer payload is " + std::to_string(body) +
                         " bytes, expected " + std::to_string(payload + 4 * groups));
  }
  const auto* q = reinterpret_cast<const uint8_t*>(in + kHeaderBytes);
  const char* scales = in + kHeaderBytes + payload;
  std::vector<float> v(static_cast<size_t>(s.group));
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t b = g * s.group, len = std::min<int64_t>(s.group, m - b);
    float scale;
    std::memcpy(&scale, scales + 4 * g, 4);
    for (int64_t i = 0; i < len; ++i) v[i] = static_cast<float>(Get(q, s.bits, b + i)) * scale;
    if (s.hadamard) {
      for (int64_t i = 0; i < len; i += 32) Hadamard32(v.data() + i);
    }
    const int64_t keep = std::min(len, n - b);
    if (add) {
      for (int64_t i = 0; i < keep; ++i) y[b + i] += v[i];
    } else {
      for (int64_t i = 0; i < keep; ++i) y[b + i] = v[i];
    }
  }
  return OkStatus();
}

}  // namespace loom::compress
