#include "loom/base/convert.h"

#include <bit>

namespace loom {

__attribute__((target_clones("avx512f", "avx2", "default"))) void ConvertF32ToBF16(
    const float* __restrict src_f, uint16_t* __restrict dst, int64_t n) {
  const AliasedU32* src = reinterpret_cast<const AliasedU32*>(src_f);
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits = src[i];
    bool is_nan = (bits & 0x7FFFFFFFu) > 0x7F800000u;
    uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
    dst[i] = static_cast<uint16_t>(is_nan ? ((bits >> 16) | 0x40u) : rounded);
  }
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void ConvertBF16ToF32(
    const uint16_t* __restrict src, float* __restrict dst_f, int64_t n) {
  AliasedU32* dst = reinterpret_cast<AliasedU32*>(dst_f);
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<uint32_t>(src[i]) << 16;
}

}  // namespace loom
