// SignCodec: 1 bit per element (the sign) and one fp32 scale per group — signSGD with a scale,
// as 1-bit SGD / 1-bit Adam send. Scale = mean|x| over the group, or ||x|| / sqrt(len) with
// `l2`; a group of zeros has scale 0 and decodes to zeros; x = 0 decodes to +scale.
// Wire (docs/compression_format.md): ceil(n / 8) bytes of sign bits (bit i%8 of byte i/8 set
// when x[i] < 0), then one fp32 scale per group (group 0: one for the whole buffer).
// Biased: use with error feedback (compress.error_feedback=true).
// Thread-safety: immutable.
#pragma once

#include "loom/compress/codec.h"

namespace loom::compress {

class SignCodec : public Codec {
 public:
  explicit SignCodec(CodecSpec spec) : Codec(spec) {}
  int64_t MaxEncodedBytes(int64_t n) const override;
  Result<int64_t> Encode(const float* x, int64_t n, char* out,
                         const StepContext& ctx) const override;

 protected:
  Status DecodeInto(const char* in, int64_t bytes, int64_t n, float* y, bool add) const override;

 private:
  int64_t GroupSize(int64_t n) const { return spec().group > 0 ? spec().group : (n > 0 ? n : 1); }
  int64_t Groups(int64_t n) const { return (n + GroupSize(n) - 1) / GroupSize(n); }
};

}  // namespace loom::compress
