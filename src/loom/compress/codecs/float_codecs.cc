#include "loom/compress/codecs/float_codecs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define LOOM_HAVE_F16C_PATH 1
#endif

#include "loom/base/check.h"
#include "loom/base/convert.h"
#include "loom/base/dtype.h"
#include "loom/compress/kernels/int_kernels.h"

namespace loom::compress {
namespace {

// Elements per conversion block: the fp16 output of one block stays in L1 for the Inf check.
constexpr int64_t kBlock = 4096;

void F32ToF16Scalar(const float* x, uint16_t* h, int64_t n) {
  for (int64_t i = 0; i < n; ++i) h[i] = FloatToF16(x[i]);
}

void F16ToF32Scalar(const uint16_t* h, float* y, int64_t n, bool add) {
  float tmp[kBlock];
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    float* dst = add ? tmp : y + b;
    for (int64_t i = 0; i < m; ++i) dst[i] = F16ToFloat(h[b + i]);
    if (add) {
      for (int64_t i = 0; i < m; ++i) y[b + i] += tmp[i];
    }
  }
}

#ifdef LOOM_HAVE_F16C_PATH
// vcvtps2ph with round-to-nearest-even (imm 0, exceptions suppressed): the same results as the
// scalar FloatToF16 for every input, subnormal results and overflow to Inf included.
__attribute__((target("avx,f16c"))) void F32ToF16F16c(const float* x, uint16_t* h, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i r =
        _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h + i), r);
  }
  for (; i < n; ++i) h[i] = FloatToF16(x[i]);
}

__attribute__((target("avx,f16c"))) void F16ToF32F16c(const uint16_t* h, float* y, int64_t n,
                                                      bool add) {
  int64_t i = 0;
  if (add) {
    for (; i + 8 <= n; i += 8) {
      const __m256 v = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i)));
      _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), v));
    }
    for (; i < n; ++i) y[i] += F16ToFloat(h[i]);
  } else {
    for (; i + 8 <= n; i += 8) {
      _mm256_storeu_ps(y + i,
                       _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
    }
    for (; i < n; ++i) y[i] = F16ToFloat(h[i]);
  }
}
#endif

// Whether some h[0, n) is fp16 Inf/NaN: an all-ones exponent carries into bit 15 when 0x0400 is
// added to the exponent bits (branch-free, vectorizes with SSE2).
bool AnyF16NonFinite(const uint16_t* h, int64_t n) {
  uint32_t carry = 0;
  for (int64_t i = 0; i < n; ++i) carry |= (h[i] & 0x7C00u) + 0x0400u;
  return (carry & 0x8000u) != 0;
}

bool UseF16c(Fp16Path path) {
  switch (path) {
    case Fp16Path::kScalar:
      return false;
    case Fp16Path::kF16c:
      LOOM_CHECK(HasF16c());
      return true;
    case Fp16Path::kAuto:
      break;
  }
  // LOOM_SIMD=scalar (which selects the scalar int kernels) also selects the scalar fp16 path.
  static const bool use = HasF16c() && std::string(SelectIntKernels().name) != "scalar";
  return use;
}

}  // namespace

bool HasF16c() {
#ifdef LOOM_HAVE_F16C_PATH
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
#else
  return false;
#endif
}

FloatCodec::FloatCodec(CodecSpec spec, Fp16Path fp16_path)
    : Codec(spec), f16c_(spec.kind == CodecKind::kFp16 && UseF16c(fp16_path)) {}

int64_t FloatCodec::MaxEncodedBytes(int64_t n) const {
  return kHeaderBytes + n * (spec().kind == CodecKind::kNone ? 4 : 2);
}

Result<int64_t> FloatCodec::Encode(const float* x, int64_t n, char* out, const StepContext&) const {
  const CodecKind kind = spec().kind;
  if (kind == CodecKind::kBf16) {
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
    // fp16: convert a block, then look for Inf/NaN in its output (NaN/Inf inputs and overflow).
    auto* h = reinterpret_cast<uint16_t*>(p);
    for (int64_t b = 0; b < n; b += kBlock) {
      const int64_t m = std::min(kBlock, n - b);
#ifdef LOOM_HAVE_F16C_PATH
      if (f16c_) {
        F32ToF16F16c(x + b, h + b, m);
      } else {
        F32ToF16Scalar(x + b, h + b, m);
      }
#else
      F32ToF16Scalar(x + b, h + b, m);
#endif
      if (!AnyF16NonFinite(h + b, m)) continue;
      int64_t bad = b;
      while ((h[bad] & 0x7C00u) != 0x7C00u) ++bad;
      if (!std::isfinite(x[bad])) {
        return InvalidArgumentError("non-finite value " + std::to_string(x[bad]) + " at element " +
                                    std::to_string(bad) + " of " + std::to_string(n));
      }
      return InvalidArgumentError("value " + std::to_string(x[bad]) + " at element " +
                                  std::to_string(bad) + " of " + std::to_string(n) +
                                  " overflows fp16 (largest finite 65504); use bf16");
    }
  }
  return kHeaderBytes + payload;
}

Status FloatCodec::DecodeInto(const char* in, int64_t bytes, int64_t n, float* y, bool add) const {
  LOOM_RETURN_IF_ERROR(CheckHeader(in, bytes, n).status());
  const char* p = in + kHeaderBytes;
  const CodecKind kind = spec().kind;
  if (kind == CodecKind::kNone && !add) {
    std::memcpy(y, p, static_cast<size_t>(n) * 4);
    return OkStatus();
  }
  if (kind == CodecKind::kFp16) {
    const auto* h = reinterpret_cast<const uint16_t*>(p);
#ifdef LOOM_HAVE_F16C_PATH
    if (f16c_) {
      F16ToF32F16c(h, y, n, add);
      return OkStatus();
    }
#endif
    F16ToF32Scalar(h, y, n, add);
    return OkStatus();
  }
  // Blocks keep the temporary in cache.
  float tmp[kBlock];
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    float* dst = add ? tmp : y + b;
    if (kind == CodecKind::kNone) {
      std::memcpy(dst, p + b * 4, static_cast<size_t>(m) * 4);
    } else {
      ConvertBF16ToF32(reinterpret_cast<const uint16_t*>(p) + b, dst, m);
    }
    if (add) {
      for (int64_t i = 0; i < m; ++i) y[b + i] += tmp[i];
    }
  }
  return OkStatus();
}

}  // namespace loom::compress
