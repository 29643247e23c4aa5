// IntCodec: group-wise symmetric b-bit integers (b = 8, 4, 2), SDP4Bit / ZeRO++ style.
//
// Per group of G elements: scale = max|x| / (2^(b-1) - 1) (one fp32 per group, after the
// payload; 0 when that would be subnormal), q = round(x / scale) clamped to +-(2^(b-1) - 1) —
// nearest (half to even), or stochastic (floor(x * (1 / scale) + u), u ~ U[0, 1) from Philox:
// unbiased). Packed little-end first: two 4-bit values per byte (element 2i in the low nibble),
// four 2-bit values per byte. With `hadamard`, each 32-element block is rotated by the
// orthonormal Hadamard matrix H32/sqrt(32) before quantizing (spreading outliers over the block,
// shrinking the group max) and rotated back after decoding; the buffer is then padded with zeros
// to a multiple of 32 on the wire.
// The loops are IntKernels (kernels/int_kernels.h): scalar, AVX2 or AVX-512, chosen at run time
// (LOOM_SIMD overrides), all producing identical bytes.
// Thread-safety: immutable.
#pragma once

#include "loom/compress/codec.h"
#include "loom/compress/kernels/int_kernels.h"  // Hadamard32

namespace loom::compress {

class IntCodec : public Codec {
 public:
  // `kernels`: the implementation to run (tests pin one); nullptr = SelectIntKernels().
  explicit IntCodec(CodecSpec spec, const IntKernels* kernels = nullptr);
  int64_t MaxEncodedBytes(int64_t n) const override;
  Result<int64_t> Encode(const float* x, int64_t n, char* out,
                         const StepContext& ctx) const override;

 protected:
  Status DecodeInto(const char* in, int64_t bytes, int64_t n, float* y, bool add) const override;

 private:
  Status CheckFormat() const;

  IntFormat format_;
  const IntKernels* kernels_;
};

}  // namespace loom::compress
