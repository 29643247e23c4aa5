// DType: the element types loom moves, stores and reduces, with their sizes and names.
//
// Names follow safetensors ("F32", "BF16", "F8_E4M3", ...); packed 4-bit integers ("I4") hold two
// elements per byte, element 2i in the low nibble. Scalar conversions to and from f32 are the
// reference implementations the SIMD kernels are tested against:
//   - f16, bf16: IEEE round-to-nearest-even, NaN and Inf preserved.
//   - f8e4m3 (OCP "e4m3fn": no Inf, max 448) and f8e5m2 (IEEE-like, max 57344): round-to-nearest-
//     even, saturating to the largest finite value on overflow; NaN stays NaN.
// Thread-safety: pure functions.
#pragma once

#include <bit>
#include <cstdint>
#include <string>
#include <string_view>

#include "loom/base/status.h"

namespace loom {

enum class DType : uint8_t {
  kF32,
  kF64,
  kF16,
  kBF16,
  kF8E4M3,
  kF8E5M2,
  kI64,
  kI32,
  kI8,
  kI4,  // packed, two per byte
  kU8,
  kBool,
};

inline constexpr DType kAllDTypes[] = {DType::kF32,    DType::kF64,    DType::kF16, DType::kBF16,
                                       DType::kF8E4M3, DType::kF8E5M2, DType::kI64, DType::kI32,
                                       DType::kI8,     DType::kI4,     DType::kU8,  DType::kBool};

// Bits per element (4 for kI4).
int DTypeBits(DType t);
// Bytes needed to hold `numel` elements (rounds up for packed types).
int64_t DTypeBytes(DType t, int64_t numel);
bool IsFloating(DType t);
// safetensors-style name ("F32", "BF16", "F8_E4M3", "I4", "BOOL").
std::string_view DTypeName(DType t);
// Accepts the safetensors name or a lower-case alias ("f32", "fp32", "bf16", "fp8e4m3", "int4").
Result<DType> ParseDType(std::string_view name);

// ---- scalar conversions (reference implementations) ----
uint16_t FloatToBF16(float x);
inline float BF16ToFloat(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }
uint16_t FloatToF16(float x);
float F16ToFloat(uint16_t h);
uint8_t FloatToF8E4M3(float x);
float F8E4M3ToFloat(uint8_t v);
uint8_t FloatToF8E5M2(float x);
float F8E5M2ToFloat(uint8_t v);

namespace internal {
// Slow generic-format versions of the f16 conversions, the reference for the fast ones.
uint16_t ReferenceFloatToF16(float x);
float ReferenceF16ToFloat(uint16_t h);
}  // namespace internal

// Packed int4 access (values in [-8, 7]).
inline int8_t GetI4(const uint8_t* packed, int64_t i) {
  uint8_t byte = packed[i >> 1];
  uint8_t nib = (i & 1) ? (byte >> 4) : (byte & 0xF);
  return static_cast<int8_t>(static_cast<int8_t>(nib << 4) >> 4);
}
inline void SetI4(uint8_t* packed, int64_t i, int8_t v) {
  uint8_t nib = static_cast<uint8_t>(v) & 0xF;
  uint8_t& byte = packed[i >> 1];
  byte = (i & 1) ? static_cast<uint8_t>((byte & 0x0F) | (nib << 4))
                 : static_cast<uint8_t>((byte & 0xF0) | nib);
}

// Element i of a buffer of type t, as double (for tests and reference reductions).
double LoadAsDouble(DType t, const void* data, int64_t i);
// Stores v (rounded/saturated/wrapped as the type's conversion does) into element i.
void StoreFromDouble(DType t, void* data, int64_t i, double v);

}  // namespace loom
