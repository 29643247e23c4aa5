// QsgdCodec: QSGD (Alistarh et al., NeurIPS 2017), `qsgd:s<levels>[:g<G>]`.
//
// Per group of G elements: norm = ||x||_2 (fp32; 0 when below FLT_MIN, then the group decodes to
// zeros), t_i = |x_i| * (s / norm) in [0, s], level_i = floor(t_i + u_i) clamped to s, with u_i
// ~ U[0, 1) from Philox keyed by the StepContext (element j of the buffer draws word j % 4 of block
// j / 4, as the int codec: kernels/int_kernels.h). So E[level_i] = t_i and the decoded value
// sign(x_i) * level_i * norm / s is an unbiased estimate of x_i; its variance per group is at
// most min(n / s^2, sqrt(n) / s) * ||x||^2 (the paper's Lemma 3.1, n = group length).
// Wire (docs/compression_format.md): header (levels in byte 7), then each element's
// level + s (sign folded in: 0 .. 2s) in b = QsgdBits(s) bits, packed least significant bit
// first as one bit stream, then one fp32 norm per group. Decoding rejects a level above 2s.
// Not summable (per-group norms). Encode rejects NaN/Inf naming the element, and groups whose
// norm overflows fp32.
// The uniforms come from the int kernels (AVX2/AVX-512 Philox, byte-identical to scalar).
// Thread-safety: immutable.
#pragma once

#include "loom/compress/codec.h"
#include "loom/compress/kernels/int_kernels.h"

namespace loom::compress {

class QsgdCodec : public Codec {
 public:
  explicit QsgdCodec(CodecSpec spec) : Codec(spec) {}
  int64_t MaxEncodedBytes(int64_t n) const override;
  Result<int64_t> Encode(const float* x, int64_t n, char* out,
                         const StepContext& ctx) const override;
  // Encode with these kernels' uniforms (tests compare implementations; the wire is identical).
  Result<int64_t> EncodeWith(const IntKernels& kernels, const float* x, int64_t n, char* out,
                             const StepContext& ctx) const;

 protected:
  Status DecodeInto(const char* in, int64_t bytes, int64_t n, float* y, bool add) const override;

 private:
  Status CheckFormat() const;
  int64_t PayloadBytes(int64_t n) const { return (n * spec().bits + 7) / 8; }
  int64_t Groups(int64_t n) const { return (n + spec().group - 1) / spec().group; }
};

}  // namespace loom::compress
