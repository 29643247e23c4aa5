#include "loom/compress/codecs/float_codecs.h"

#include <cstring>
#include <vector>

#include "loom/base/convert.h"
#include "loom/base/dtype.h"

namespace loom::compress {

int64_t FloatCodec::MaxEncodedBytes(int64_t n) const {
  return kHeaderBytes + n * (spec().kind == CodecKind::kNone ? 4 : 2);
}

Result<int64_t> FloatCodec::Encode(const float* x, int64_t n, char* out,
                                   const StepContext&) const {
  const CodecKind kind = spec().kind;
  if (kind != CodecKind::kNone) {
    if (int64_t bad = FirstNonFinite(x, n); bad >= 0) {
      return InvalidArgumentError("non-finite value " + std::to_string(x[bad]) + " at element " +
                                  std::to_string(bad) + " of " + std::to_string(n));
    }
  }
  const int64_t payload = MaxEncodedBytes(n) - kHeaderBytes;
  WriteHeader(out, n, payload);
  char* p = out + kHeaderBytes;
  if (kind == CodecKind::kNone) {
    std::memcpy(p, x, static_cast<size_t>(payload));
  } else if (kind == CodecKind::kBf16) {
    ConvertF32ToBF16(x, reinterpret_cast<uint16_t*>(p), n);
  } else {
    auto* h = reinterpret_cast<uint16_t*>(p);
    for (int64_t i = 0; i < n; ++i) h[i] = FloatToF16(x[i]);
  }
  return kHeaderBytes + payload;
}

Status FloatCodec::DecodeInto(const char* in, int64_t bytes, int64_t n, float* y,
                              bool add) const {
  LOOM_RETURN_IF_ERROR(CheckHeader(in, bytes, n).status());
  const char* p = in + kHeaderBytes;
  const CodecKind kind = spec().kind;
  if (kind == CodecKind::kNone && !add) {
    std::memcpy(y, p, static_cast<size_t>(n) * 4);
    return OkStatus();
  }
  // Blocks keep the temporary in cache.
  constexpr int64_t kBlock = 4096;
  float tmp[kBlock];
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    float* dst = add ? tmp : y + b;
    if (kind == CodecKind::kNone) {
      std::memcpy(dst, p + b * 4, static_cast<size_t>(m) * 4);
    } else if (kind == CodecKind::kBf16) {
      ConvertBF16ToF32(reinterpret_cast<const uint16_t*>(p) + b, dst, m);
    } else {
      const auto* h = reinterpret_cast<const uint16_t*>(p) + b;
      for (int64_t i = 0; i < m; ++i) dst[i] = F16ToFloat(h[i]);
    }
    if (add) {
      for (int64_t i = 0; i < m; ++i) y[b + i] += tmp[i];
    }
  }
  return OkStatus();
}

}  // namespace loom::compress
