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

// Packs len values (each in [-2^(b-1), 2^(b-1)-1]) as b-bit two's complement, least significant
// bits first, starting at a byte boundary. Written as plain loops so they vectorize.
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
  if (full * per < len) {  // a last, partial byte
    uint8_t b = 0;
    for (int64_t i = full * per; i < len; ++i) {
      b |= static_cast<uint8_t>((q[i] & ((1 << bits) - 1)) << ((i - full * per) * bits));
    }
    out[full] = b;
  }
}

// Inverse of Pack: sign-extended values.
void Unpack(const uint8_t* in, int64_t len, int bits, int8_t* q) {
  if (bits == 8) {
    std::memcpy(q, in, static_cast<size_t>(len));
    return;
  }
  // Move each field to the top of a byte, then arithmetic-shift it back down: sign extension.
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
  float* scales = reinterpret_cast<float*>(out + kHeaderBytes + payload);  // may be unaligned
  const int qmax = (1 << (s.bits - 1)) - 1;
  PhiloxStream rng(ctx.seed, Mix(Mix(static_cast<uint64_t>(ctx.step)) ^
                                 Mix(static_cast<uint64_t>(ctx.rank) << 32 ^
                                     static_cast<uint64_t>(ctx.chunk))));
  std::vector<float> v(static_cast<size_t>(s.group)), u(static_cast<size_t>(s.group), 0.f);
  std::vector<int8_t> qv(static_cast<size_t>(s.group));
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
    std::memcpy(scales + g, &scale, 4);
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
    Pack(qv.data(), len, s.bits, q + b * s.bits / 8);
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
  std::vector<int8_t> qv(static_cast<size_t>(s.group));
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t b = g * s.group, len = std::min<int64_t>(s.group, m - b);
    float scale;
    std::memcpy(&scale, scales + 4 * g, 4);
    Unpack(q + b * s.bits / 8, len, s.bits, qv.data());
    for (int64_t i = 0; i < len; ++i) v[i] = static_cast<float>(qv[i]) * scale;
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
