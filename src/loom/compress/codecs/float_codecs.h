// FloatCodec: none (fp32 copy), fp16 and bf16 (round to nearest even) on the wire.
// fp16 converts with F16C (vcvtps2ph / vcvtph2ps, 8 per instruction) when the CPU has it and
// LOOM_SIMD is not "scalar", else with the scalar reference (loom/base/dtype.h FloatToF16); both
// give the same bytes (tested). fp16 encode rejects NaN/Inf and values that round to fp16 Inf
// (|x| >= 65520), naming the element.
// Thread-safety: immutable.
#pragma once

#include "loom/compress/codec.h"

namespace loom::compress {

// The fp16 conversion a FloatCodec runs. kAuto: F16C when available (see above).
enum class Fp16Path { kAuto, kScalar, kF16c };
// Whether this CPU (and build) can run Fp16Path::kF16c.
bool HasF16c();

class FloatCodec : public Codec {
 public:
  // `fp16_path` other than kAuto is for tests; kF16c requires HasF16c().
  explicit FloatCodec(CodecSpec spec, Fp16Path fp16_path = Fp16Path::kAuto);
  int64_t MaxEncodedBytes(int64_t n) const override;
  Result<int64_t> Encode(const float* x, int64_t n, char* out,
                         const StepContext& ctx) const override;

 protected:
  Status DecodeInto(const char* in, int64_t bytes, int64_t n, float* y, bool add) const override;

 private:
  bool f16c_;
};

}  // namespace loom::compress
