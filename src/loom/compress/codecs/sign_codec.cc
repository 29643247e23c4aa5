#include "loom/compress/codecs/sign_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace loom::compress {

int64_t SignCodec::MaxEncodedBytes(int64_t n) const {
  return kHeaderBytes + (n + 7) / 8 + 4 * Groups(n);
}

Result<int64_t> SignCodec::Encode(const float* x, int64_t n, char* out,
                                  const StepContext& ctx) const {
  if (int64_t bad = FirstNonFinite(x, n); bad >= 0) {
    return InvalidArgumentError("non-finite value " + std::to_string(x[bad]) + " at element " +
                                std::to_string(bad) + " of " + std::to_string(n));
  }
  const int64_t bits_bytes = (n + 7) / 8, groups = Groups(n), G = GroupSize(n);
  WriteHeader(out, n, bits_bytes + 4 * groups);
  auto* bits = reinterpret_cast<uint8_t*>(out + kHeaderBytes);
  // A byte per 8 elements from their sign bits (branch-free; the compiler vectorizes it).
  const int64_t full = n / 8;
  for (int64_t j = 0; j < full; ++j) {
    uint32_t b = 0;
    for (int k = 0; k < 8; ++k) {
      uint32_t u;
      std::memcpy(&u, x + 8 * j + k, 4);
      b |= (u >> 31) << k;
    }
    bits[j] = static_cast<uint8_t>(b);
  }
  if (full < bits_bytes) {
    uint32_t b = 0;
    for (int64_t i = 8 * full; i < n; ++i) b |= static_cast<uint32_t>(x[i] < 0) << (i & 7);
    bits[full] = static_cast<uint8_t>(b);
  }
  char* scales = out + kHeaderBytes + bits_bytes;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t b = g * G, len = std::min(G, n - b);
    double acc = 0;
    if (spec().l2_scale) {
      for (int64_t i = b; i < b + len; ++i) acc += static_cast<double>(x[i]) * x[i];
      acc = std::sqrt(acc / static_cast<double>(len));
    } else {
      for (int64_t i = b; i < b + len; ++i) acc += std::fabs(x[i]);
      acc /= static_cast<double>(len);
    }
    const float scale = static_cast<float>(acc);
    std::memcpy(scales + 4 * g, &scale, 4);
  }
  return MaxEncodedBytes(n);
}

Status SignCodec::DecodeInto(const char* in, int64_t bytes, int64_t n, float* y,
                             bool add) const {
  LOOM_ASSIGN_OR_RETURN(int64_t body, CheckHeader(in, bytes, n));
  const int64_t bits_bytes = (n + 7) / 8, groups = Groups(n), G = GroupSize(n);
  if (body != bits_bytes + 4 * groups) {
    return DataLossError("sign buffer payload is " + std::to_string(body) + " bytes, expected " +
                         std::to_string(bits_bytes + 4 * groups));
  }
  const auto* bits = reinterpret_cast<const uint8_t*>(in + kHeaderBytes);
  const char* scales = in + kHeaderBytes + bits_bytes;
  // Groups are whole bytes (G % 32 == 0, or one group): 8 elements per byte from a table of signs.
  static const auto* kSigns = [] {
    auto* t = new float[256 * 8];
    for (int b = 0; b < 256; ++b) {
      for (int k = 0; k < 8; ++k) t[b * 8 + k] = (b >> k) & 1 ? -1.0f : 1.0f;
    }
    return t;
  }();
  for (int64_t g = 0; g < groups; ++g) {
    float scale;
    std::memcpy(&scale, scales + 4 * g, 4);
    const int64_t b = g * G, e = std::min(n, b + G), full_end = b + (e - b) / 8 * 8;
    for (int64_t i = b; i < full_end; i += 8) {
      const float* sign = kSigns + 8 * bits[i >> 3];
      if (add) {
        for (int k = 0; k < 8; ++k) y[i + k] += sign[k] * scale;
      } else {
        for (int k = 0; k < 8; ++k) y[i + k] = sign[k] * scale;
      }
    }
    for (int64_t i = full_end; i < e; ++i) {
      const float v = (bits[i >> 3] >> (i & 7)) & 1 ? -scale : scale;
      y[i] = add ? y[i] + v : v;
    }
  }
  return OkStatus();
}

}  // namespace loom::compress
