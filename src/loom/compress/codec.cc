#include "loom/compress/codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "loom/compress/codecs/float_codecs.h"
#include "loom/compress/codecs/int_codec.h"
#include "loom/compress/codecs/qsgd_codec.h"
#include "loom/compress/codecs/sign_codec.h"
#include "loom/compress/codecs/sparse_codecs.h"

namespace loom::compress {

namespace {

struct WireHeader {
  uint32_t magic;
  uint8_t kind;
  uint8_t bits;
  uint8_t flags;  // 1: stochastic, 2: hadamard, 4: l2 scale, 8: unbiased
  uint8_t levels;  // qsgd: s (0 for the other codecs)
  uint32_t group;
  float fraction;  // topk / randk

  int64_t n;
  int64_t payload_bytes;
};
static_assert(sizeof(WireHeader) == kHeaderBytes);

uint8_t Flags(const CodecSpec& s) {
  return (s.stochastic ? 1 : 0) | (s.hadamard ? 2 : 0) |
         (s.l2_scale ? 4 : 0) | (s.unbiased ? 8 : 0);
}

uint64_t Mix(uint64_t x) {  // splitmix64 finalizer
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

void Codec::WriteHeader(char* out, int64_t n, int64_t payload_bytes) const {
  WireHeader h{kWireMagic, static_cast<uint8_t>(spec_.kind), static_cast<uint8_t>(spec_.bits),
               Flags(spec_), static_cast<uint8_t>(spec_.levels),
               static_cast<uint32_t>(spec_.group), spec_.fraction, n, payload_bytes};
  std::memcpy(out, &h, sizeof h);
}

Result<int64_t> Codec::CheckHeader(const char* in, int64_t bytes, int64_t n) const {
  if (bytes < kHeaderBytes) {
    return DataLossError("compressed buffer of " + std::to_string(bytes) +
                         " bytes is shorter than its header");
  }
  WireHeader h;
  std::memcpy(&h, in, sizeof h);
  if (h.magic != kWireMagic) return DataLossError("compressed buffer has no loom wire header");
  CodecSpec sent;
  sent.kind = static_cast<CodecKind>(h.kind);
  sent.bits = h.bits;
  sent.group = static_cast<int>(h.group);
  sent.stochastic = h.flags & 1;
  sent.hadamard = h.flags & 2;
  sent.l2_scale = h.flags & 4;
  sent.unbiased = h.flags & 8;
  sent.fraction = h.fraction;
  sent.levels = h.levels;
  if (h.kind != static_cast<uint8_t>(spec_.kind) || h.bits != spec_.bits ||
      h.levels != static_cast<uint8_t>(spec_.levels) ||
      h.group != static_cast<uint32_t>(spec_.group) || h.flags != Flags(spec_) ||
      std::memcmp(&h.fraction, &spec_.fraction, 4) != 0) {
    return FailedPreconditionError("codec mismatch: the buffer was encoded as '" +
                                   sent.ToString() + "', this rank decodes '" +
                                   spec_.ToString() + "' (configure every rank alike)");
  }
  if (h.n != n) {
    return FailedPreconditionError("compressed buffer holds " + std::to_string(h.n) +
                                   " elements, expected " + std::to_string(n));
  }
  if (h.payload_bytes < 0 || kHeaderBytes + h.payload_bytes > bytes) {
    return DataLossError("compressed buffer is truncated: " + std::to_string(bytes) +
                         " bytes for a " + std::to_string(h.payload_bytes) + "-byte payload");
  }
  return h.payload_bytes;
}

int64_t FirstNonFinite(const float* x, int64_t n) {
  // Branch-free scan in blocks, then locate. Inf/NaN have an all-ones exponent, and only then
  // does adding 2^23 to the exponent bits carry into bit 31: integer ops that SSE2 vectorizes.
  constexpr int64_t kBlock = 1024;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = std::min(n, b + kBlock);
    uint32_t carry = 0;
    for (int64_t i = b; i < e; ++i) {
      uint32_t u;
      std::memcpy(&u, x + i, 4);
      carry |= (u & 0x7F800000u) + 0x00800000u;
    }
    if (carry & 0x80000000u) {
      for (int64_t i = b; i < e; ++i) {
        if (!std::isfinite(x[i])) return i;
      }
    }
  }
  return -1;
}

uint64_t StreamOf(const StepContext& ctx) {
  return Mix(Mix(static_cast<uint64_t>(ctx.step)) ^
             Mix(static_cast<uint64_t>(ctx.rank) << 32 ^ static_cast<uint64_t>(ctx.chunk)));
}

Result<std::unique_ptr<Codec>> MakeCodec(const CodecSpec& spec) {
  switch (spec.kind) {
    case CodecKind::kNone:
    case CodecKind::kFp16:
    case CodecKind::kBf16: return std::unique_ptr<Codec>(new FloatCodec(spec));
    case CodecKind::kInt: return std::unique_ptr<Codec>(new IntCodec(spec));
    case CodecKind::kSign: return std::unique_ptr<Codec>(new SignCodec(spec));
    case CodecKind::kTopK: return std::unique_ptr<Codec>(new TopKCodec(spec));
    case CodecKind::kRandK: return std::unique_ptr<Codec>(new RandKCodec(spec));
    case CodecKind::kQsgd: return std::unique_ptr<Codec>(new QsgdCodec(spec));
    case CodecKind::kPowerSgd:
      return InvalidArgumentError("'" + spec.ToString() +
                                  "' is a low-rank all-reduce (compress::PowerSgd), not an "
                                  "element codec");
  }
  return InvalidArgumentError("unknown codec kind in '" + spec.ToString() + "'");
}

}  // namespace loom::compress
