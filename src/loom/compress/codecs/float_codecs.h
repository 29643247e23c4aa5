// FloatCodec: none (fp32 copy), fp16 and bf16 (round to nearest even) on the wire.
// Thread-safety: immutable.
#pragma once

#include "loom/compress/codec.h"

namespace loom::compress {

class FloatCodec : public Codec {
 public:
  explicit FloatCodec(CodecSpec spec) : Codec(spec) {}
  int64_t MaxEncodedBytes(int64_t n) const override;
  Result<int64_t> Encode(const float* x, int64_t n, char* out,
                         const StepContext& ctx) const override;

 protected:
  Status DecodeInto(const char* in, int64_t bytes, int64_t n, float* y, bool add) const override;
};

}  // namespace loom::compress
