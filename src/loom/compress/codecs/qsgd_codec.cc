#include "loom/compress/codecs/qsgd_codec.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>

#include "loom/compress/kernels/int_kernels.h"

namespace loom::compress {
namespace {

// LSB-first bit stream of `bits`-wide values (bits <= 8), 32 bits stored at a time.
class BitWriter {
 public:
  explicit BitWriter(uint8_t* out) : out_(out) {}
  void Put(uint32_t v, int bits) {
    acc_ |= static_cast<uint64_t>(v) << fill_;
    fill_ += bits;
    if (fill_ >= 32) {
      const auto word = static_cast<uint32_t>(acc_);
      std::memcpy(out_, &word, 4);
      out_ += 4;
      acc_ >>= 32;
      fill_ -= 32;
    }
  }
  void Flush() {
    for (; fill_ > 0; fill_ -= 8, acc_ >>= 8) *out_++ = static_cast<uint8_t>(acc_);
  }

 private:
  uint8_t* out_;
  uint64_t acc_ = 0;
  int fill_ = 0;
};

class BitReader {
 public:
  BitReader(const uint8_t* in, int64_t bytes) : in_(in), end_(in + bytes) {}
  uint32_t Get(int bits) {
    if (fill_ < bits) Refill();
    const auto v = static_cast<uint32_t>(acc_ & ((uint64_t{1} << bits) - 1));
    acc_ >>= bits;
    fill_ -= bits;
    return v;
  }

 private:
  void Refill() {
    uint32_t word = 0;
    const int64_t left = end_ - in_;
    const int64_t take = left < 4 ? left : 4;
    std::memcpy(&word, in_, static_cast<size_t>(take));  // zero-padded past the end
    in_ += take;
    acc_ |= static_cast<uint64_t>(word) << fill_;
    fill_ += 32;
  }

  const uint8_t* in_;
  const uint8_t* end_;
  uint64_t acc_ = 0;
  int fill_ = 0;
};

// ||x[0, len)||^2 in double (no overflow for finite fp32; NaN/Inf propagate). Eight partial sums
// let the compiler vectorize without reassociating.
double SumOfSquares(const float* x, int64_t len) {
  double acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= len; i += 8) {
    for (int k = 0; k < 8; ++k) acc[k] += static_cast<double>(x[i + k]) * x[i + k];
  }
  for (; i < len; ++i) acc[0] += static_cast<double>(x[i]) * x[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

constexpr int64_t kChunk = 512;  // elements per uniforms call (a multiple of 32)

// code[i] = level_i + s with the sign folded in (0 .. 2s), level_i = min(s, floor(|x_i| * mult +
// u_i)); t + u is in [0, s + 2), so the int conversion truncates as floor. Vectorizes (-O3).
void Levels(const float* x, int64_t len, float mult, const float* u, int32_t s, uint8_t* code) {
  for (int64_t i = 0; i < len; ++i) {
    const int32_t level = std::min(s, static_cast<int32_t>(std::fabs(x[i]) * mult + u[i]));
    code[i] = static_cast<uint8_t>(std::signbit(x[i]) ? s - level : s + level);
  }
}

}  // namespace

Status QsgdCodec::CheckFormat() const {
  const CodecSpec& s = spec();
  if (s.levels < 1 || s.levels > kMaxQsgdLevels || s.bits != QsgdBits(s.levels) || s.group < 32 ||
      s.group > kMaxQsgdGroup || s.group % 32 != 0) {
    return InvalidArgumentError("qsgd codec '" + s.ToString() + "' needs levels in [1, " +
                                std::to_string(kMaxQsgdLevels) + "], " +
                                std::to_string(QsgdBits(s.levels)) +
                                " bits and a group that is a multiple of 32 in [32, " +
                                std::to_string(kMaxQsgdGroup) + "]");
  }
  return OkStatus();
}

int64_t QsgdCodec::MaxEncodedBytes(int64_t n) const {
  return kHeaderBytes + PayloadBytes(n) + 4 * Groups(n);
}

Result<int64_t> QsgdCodec::Encode(const float* x, int64_t n, char* out,
                                  const StepContext& ctx) const {
  return EncodeWith(SelectIntKernels(), x, n, out, ctx);
}

Result<int64_t> QsgdCodec::EncodeWith(const IntKernels& kernels, const float* x, int64_t n,
                                      char* out, const StepContext& ctx) const {
  LOOM_RETURN_IF_ERROR(CheckFormat());
  const int bits = spec().bits;
  const auto s = static_cast<int32_t>(spec().levels);
  const int64_t G = spec().group, payload = PayloadBytes(n), groups = Groups(n);
  WriteHeader(out, n, payload + 4 * groups);
  BitWriter writer(reinterpret_cast<uint8_t*>(out + kHeaderBytes));
  char* norms = out + kHeaderBytes + payload;
  const uint64_t stream = StreamOf(ctx);
  alignas(64) float u[kChunk];
  uint8_t code[kChunk];
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t b = g * G, e = std::min(n, b + G);
    const double sum_sq = SumOfSquares(x + b, e - b);
    if (!std::isfinite(sum_sq)) {
      const int64_t bad = b + FirstNonFinite(x + b, e - b);
      return InvalidArgumentError("non-finite value " + std::to_string(x[bad]) + " at element " +
                                  std::to_string(bad) + " of " + std::to_string(n) +
                                  " (not folded into a QSGD norm)");
    }
    float norm = static_cast<float>(std::sqrt(sum_sq));
    if (!std::isfinite(norm)) {
      return InvalidArgumentError("the L2 norm of QSGD group " + std::to_string(g) +
                                  " (elements from " + std::to_string(b) +
                                  ") overflows fp32: values too large to quantize");
    }
    if (norm < FLT_MIN) norm = 0;
    std::memcpy(norms + 4 * g, &norm, 4);
    const float mult = norm > 0 ? static_cast<float>(s) / norm : 0.f;
    // Groups start at multiples of 32, and so do the chunks: the kernels' uniforms line up.
    for (int64_t c = b; c < e; c += kChunk) {
      const int64_t len = std::min(kChunk, e - c);
      kernels.uniforms(ctx.seed, stream, c, len, u);
      Levels(x + c, len, mult, u, s, code);
      for (int64_t i = 0; i < len; ++i) writer.Put(code[i], bits);
    }
  }
  writer.Flush();
  return kHeaderBytes + payload + 4 * groups;
}

Status QsgdCodec::DecodeInto(const char* in, int64_t bytes, int64_t n, float* y, bool add) const {
  LOOM_RETURN_IF_ERROR(CheckFormat());
  LOOM_ASSIGN_OR_RETURN(int64_t body, CheckHeader(in, bytes, n));
  const int bits = spec().bits;
  const int s = spec().levels;
  const int64_t G = spec().group, payload = PayloadBytes(n), groups = Groups(n);
  if (body != payload + 4 * groups) {
    return DataLossError("qsgd buffer payload is " + std::to_string(body) + " bytes, expected " +
                         std::to_string(payload + 4 * groups));
  }
  BitReader reader(reinterpret_cast<const uint8_t*>(in + kHeaderBytes), payload);
  const char* norms = in + kHeaderBytes + payload;
  for (int64_t g = 0; g < groups; ++g) {
    float norm;
    std::memcpy(&norm, norms + 4 * g, 4);
    if (!std::isfinite(norm) || norm < 0) {
      return DataLossError("qsgd buffer has norm " + std::to_string(norm) + " for group " +
                           std::to_string(g) + " (corrupt)");
    }
    const float scale = norm / static_cast<float>(s);
    const int64_t b = g * G, e = std::min(n, b + G);
    uint32_t worst = 0;
    for (int64_t j = b; j < e; ++j) {
      const uint32_t v = reader.Get(bits);
      worst = std::max(worst, v);
      const float value = static_cast<float>(static_cast<int>(v) - s) * scale;
      y[j] = add ? y[j] + value : value;
    }
    if (worst > static_cast<uint32_t>(2 * s)) {
      return DataLossError("qsgd buffer has level " + std::to_string(static_cast<int>(worst) - s) +
                           " in group " + std::to_string(g) + ", beyond +-" + std::to_string(s) +
                           " (corrupt)");
    }
  }
  return OkStatus();
}

}  // namespace loom::compress
