// IntCodec: group-wise symmetric b-bit integers (b = 8, 4, 2), SDP4Bit / ZeRO++ style.
//
// Per group of G elements: scale = max|x| / (2^(b-1) - 1) (one fp32 per group, after the
// payload), q = round(x / scale) clamped to +-(2^(b-1) - 1) — nearest, or stochastic
// (floor(v + u), u ~ U[0, 1) from Philox: unbiased). Packed little-end first: two 4-bit values per
// byte (element 2i in the low nibble), four 2-bit values per byte. With `hadamard`, each
// 32-element block is rotated by the orthonormal Hadamard matrix H32/sqrt(32) before
// quantizing (spreading outliers over the block, shrinking the group max) and rotated back after
// decoding; the buffer is then padded with zeros to a multiple of 32 on the wire.
// Scalar reference implementation (loops written to auto-vectorize); SIMD kernels with run-time
// dispatch come later.
// Thread-safety: immutable.
#pragma once

#include "loom/compress/codec.h"

namespace loom::compress {

class IntCodec : public Codec {
 public:
  explicit IntCodec(CodecSpec spec) : Codec(spec) {}
  int64_t MaxEncodedBytes(int64_t n) const override;
  Result<int64_t> Encode(const float* x, int64_t n, char* out,
                         const StepContext& ctx) const override;

 protected:
  Status DecodeInto(const char* in, int64_t bytes, int64_t n, float* y, bool add) const override;

 private:
  int64_t Padded(int64_t n) const { return spec().hadamard ? (n + 31) / 32 * 32 : n; }
  int64_t Groups(int64_t m) const { return (m + spec().group - 1) / spec().group; }
  int64_t PayloadBytes(int64_t m) const { return (m * spec().bits + 7) / 8; }
};

// In-place orthonormal Hadamard transform of 32 values (self-inverse).
void Hadamard32(float* v);

}  // namespace loom::compress
