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
  std::memset(bits, 0, static_cast<size_t>(bits_bytes));
  for (int64_t i = 0; i < n; ++i) bits[i >> 3] |= static_cast<uint8_t>((x[i] < 0) << (i & 7));
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
  for (int64_t g = 0; g < groups; ++g) {
    float scale;
    std::memcpy(&scale, scales + 4 * g, 4);
    const int64_t b = g * G, e = std::min(n, b + G);
    for (int64_t i = b; i < e; ++i) {
      const float v = (bits[i >> 3] >> (i & 7)) & 1 ? -scale : scale;
      y[i] = add ? y[i] + v : v;
    }
  }
  return OkStatus();
}

}  // namespace loom::compress
