// Pieces shared by the IntKernels implementations (int_kernels_*.cc) so that every one computes
// the per-group scale and the Philox constants identically. Not for use outside kernels/.
// Everything here is baseline C++ (no target attributes): inline functions compile to the same
// operations in every file that includes this.
// Thread-safety: constants and pure functions.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "loom/compress/kernels/int_kernels.h"

namespace loom::compress::internal {

// Philox4x32-10 multipliers and Weyl key increments (as in loom/base/philox.cc).
inline constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
inline constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
inline constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;
inline constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;
inline constexpr int kPhiloxRounds = 10;

// The key words of round r: the seed's halves plus r Weyl increments.
inline uint32_t PhiloxRoundKey0(uint64_t seed, int r) {
  return static_cast<uint32_t>(seed) + static_cast<uint32_t>(r) * kPhiloxW0;
}
inline uint32_t PhiloxRoundKey1(uint64_t seed, int r) {
  return static_cast<uint32_t>(seed >> 32) + static_cast<uint32_t>(r) * kPhiloxW1;
}

// |x| of an fp32 bit pattern; for non-negative floats integer order is float order, and
// anything at or above kNonFiniteBits is Inf or NaN.
inline constexpr uint32_t kAbsMask = 0x7FFFFFFFu;
inline constexpr uint32_t kNonFiniteBits = 0x7F800000u;

inline int QMax(int bits) { return (1 << (bits - 1)) - 1; }

struct GroupScale {
  float scale;  // what goes on the wire
  float inv;    // what the values are multiplied by
};

// scale = amax / qmax, flushed to 0 when subnormal (1 / scale could overflow to Inf there).
inline GroupScale ScaleOfGroup(uint32_t amax_bits, int qmax) {
  float amax;
  std::memcpy(&amax, &amax_bits, 4);
  float scale = amax / static_cast<float>(qmax);
  if (!(scale >= FLT_MIN)) scale = 0.0f;
  return {scale, scale > 0.0f ? 1.0f / scale : 0.0f};
}

inline float HadamardScale() { return 1.0f / std::sqrt(32.0f); }

// u = (word >> 8) * 2^-24, as PhiloxStream::NextUniform.
inline constexpr float kUniformScale = 0x1.0p-24f;

}  // namespace loom::compress::internal

namespace loom::compress {

// The SIMD tables, defined in int_kernels_{avx2,avx512}.cc (nullptr where not compiled, e.g. off
// x86-64). Calling these is safe on any CPU; calling through the tables is not: the dispatcher
// (int_kernels.cc) checks the CPU first.
const IntKernels* Avx2IntKernels();
const IntKernels* Avx512IntKernels();

}  // namespace loom::compress
