// Bulk dtype conversions (vectorised; AVX-512, AVX2 and baseline clones chosen at run time).
// Same rounding as the scalar FloatToBF16 in dtype.h (nearest even, NaN kept quiet).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

namespace loom {

// A uint32_t that may alias a float: lets bit-level float loops vectorise (GCC does not vectorise
// std::bit_cast between float and integer lanes).
using AliasedU32 = uint32_t __attribute__((may_alias));

void ConvertF32ToBF16(const float* src, uint16_t* dst, int64_t n);
void ConvertBF16ToF32(const uint16_t* src, float* dst, int64_t n);

}  // namespace loom
