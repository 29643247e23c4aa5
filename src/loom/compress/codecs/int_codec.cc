#include "loom/compress/codecs/int_codec.h"

#include <string>

namespace loom::compress {

IntCodec::IntCodec(CodecSpec spec, const IntKernels* kernels)
    : Codec(spec),
      format_{spec.bits, spec.group, spec.stochastic, spec.hadamard},
      kernels_(kernels != nullptr ? kernels : &SelectIntKernels()) {}

Status IntCodec::CheckFormat() const {
  const IntFormat& f = format_;
  if ((f.bits != 8 && f.bits != 4 && f.bits != 2) || f.group < 32 || f.group > kMaxIntGroup ||
      f.group % 32 != 0) {
    return InvalidArgumentError("int codec '" + spec().ToString() +
                                "' needs 8, 4 or 2 bits and a group that is a multiple of 32 in "
                                "[32, " +
                                std::to_string(kMaxIntGroup) + "]");
  }
  return OkStatus();
}

int64_t IntCodec::MaxEncodedBytes(int64_t n) const {
  const int64_t m = IntWireElements(n, format_);
  return kHeaderBytes + IntPayloadBytes(m, format_) + 4 * IntGroups(m, format_);
}

Result<int64_t> IntCodec::Encode(const float* x, int64_t n, char* out,
                                 const StepContext& ctx) const {
  LOOM_RETURN_IF_ERROR(CheckFormat());
  const int64_t m = IntWireElements(n, format_);
  const int64_t payload = IntPayloadBytes(m, format_);
  const int64_t body = payload + 4 * IntGroups(m, format_);
  WriteHeader(out, n, body);
  IntEncodeArgs args;
  args.format = format_;
  args.x = x;
  args.n = n;
  args.seed = ctx.seed;
  args.stream = StreamOf(ctx);
  args.payload = reinterpret_cast<uint8_t*>(out + kHeaderBytes);
  args.scales = out + kHeaderBytes + payload;
  // The kernels check finiteness while taking each group's max (no separate pass over x).
  if (const int64_t group = kernels_->encode(args); group >= 0) {
    if (const int64_t bad = FirstNonFinite(x, n); bad >= 0) {
      return InvalidArgumentError("non-finite value " + std::to_string(x[bad]) + " at element " +
                                  std::to_string(bad) + " of " + std::to_string(n) +
                                  " (not folded into a quantization scale)");
    }
    return InvalidArgumentError("the Hadamard rotation of group " + std::to_string(group) +
                                " (elements from " + std::to_string(group * format_.group) +
                                ") overflows fp32: values too close to FLT_MAX to quantize");
  }
  return kHeaderBytes + body;
}

Status IntCodec::DecodeInto(const char* in, int64_t bytes, int64_t n, float* y, bool add) const {
  LOOM_RETURN_IF_ERROR(CheckFormat());
  LOOM_ASSIGN_OR_RETURN(int64_t body, CheckHeader(in, bytes, n));
  const int64_t m = IntWireElements(n, format_);
  const int64_t payload = IntPayloadBytes(m, format_);
  const int64_t expected = payload + 4 * IntGroups(m, format_);
  if (body != expected) {
    return DataLossError("compressed buffer payload is " + std::to_string(body) +
                         " bytes, expected " + std::to_string(expected));
  }
  IntDecodeArgs args;
  args.format = format_;
  args.payload = reinterpret_cast<const uint8_t*>(in + kHeaderBytes);
  args.scales = in + kHeaderBytes + payload;
  args.n = n;
  args.y = y;
  args.add = add;
  kernels_->decode(args);
  return OkStatus();
}

}  // namespace loom::compress
