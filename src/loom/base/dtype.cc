#include "loom/base/dtype.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace loom {

int DTypeBits(DType t) {
  switch (t) {
    case DType::kF64:
    case DType::kI64: return 64;
    case DType::kF32:
    case DType::kI32: return 32;
    case DType::kF16:
    case DType::kBF16: return 16;
    case DType::kF8E4M3:
    case DType::kF8E5M2:
    case DType::kI8:
    case DType::kU8:
    case DType::kBool: return 8;
    case DType::kI4: return 4;
  }
  return 0;
}

int64_t DTypeBytes(DType t, int64_t numel) { return (numel * DTypeBits(t) + 7) / 8; }

bool IsFloating(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kF64:
    case DType::kF16:
    case DType::kBF16:
    case DType::kF8E4M3:
    case DType::kF8E5M2: return true;
    default: return false;
  }
}

std::string_view DTypeName(DType t) {
  switch (t) {
    case DType::kF32: return "F32";
    case DType::kF64: return "F64";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kF8E4M3: return "F8_E4M3";
    case DType::kF8E5M2: return "F8_E5M2";
    case DType::kI64: return "I64";
    case DType::kI32: return "I32";
    case DType::kI8: return "I8";
    case DType::kI4: return "I4";
    case DType::kU8: return "U8";
    case DType::kBool: return "BOOL";
  }
  return "?";
}

Result<DType> ParseDType(std::string_view name) {
  std::string n(name);
  for (char& c : n) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  struct Alias {
    const char* name;
    DType t;
  };
  static constexpr Alias kAliases[] = {
      {"F32", DType::kF32},        {"FP32", DType::kF32},       {"FLOAT32", DType::kF32},
      {"F64", DType::kF64},        {"FP64", DType::kF64},       {"F16", DType::kF16},
      {"FP16", DType::kF16},       {"BF16", DType::kBF16},      {"F8_E4M3", DType::kF8E4M3},
      {"FP8E4M3", DType::kF8E4M3}, {"F8E4M3", DType::kF8E4M3},  {"F8_E5M2", DType::kF8E5M2},
      {"FP8E5M2", DType::kF8E5M2}, {"F8E5M2", DType::kF8E5M2},  {"I64", DType::kI64},
      {"I32", DType::kI32},        {"INT32", DType::kI32},      {"I8", DType::kI8},
      {"INT8", DType::kI8},        {"I4", DType::kI4},          {"INT4", DType::kI4},
      {"U8", DType::kU8},          {"UINT8", DType::kU8},       {"BOOL", DType::kBool},
  };
  for (const Alias& a : kAliases) {
    if (n == a.name) return a.t;
  }
  return InvalidArgumentError("unknown dtype '" + std::string(name) +
                              "' (expected one of F32 F64 F16 BF16 F8_E4M3 F8_E5M2 I64 I32 I8 "
                              "I4 U8 BOOL)");
}

uint16_t FloatToBF16(float x) {
  uint32_t bits = std::bit_cast<uint32_t>(x);
  if (std::isnan(x)) return static_cast<uint16_t>((bits >> 16) | 0x0040);  // quiet NaN
  uint32_t rounding_bias = 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding_bias) >> 16);
}

namespace {

// A small IEEE-like binary format: `ebits` exponent bits, `mbits` mantissa bits.
// `has_inf`: the all-ones exponent encodes Inf/NaN (IEEE); otherwise only all-ones
// exponent+mantissa is NaN (OCP e4m3fn) and everything else is finite.
struct MiniFormat {
  int ebits;
  int mbits;
  bool has_inf;
  bool saturate;  // overflow -> max finite (else -> Inf)
};

constexpr MiniFormat kF16Format{5, 10, true, false};
constexpr MiniFormat kE4M3Format{4, 3, false, true};
constexpr MiniFormat kE5M2Format{5, 2, true, true};

uint32_t EncodeMini(float x, MiniFormat f) {
  const int bias = (1 << (f.ebits - 1)) - 1;
  const uint32_t sign = (std::bit_cast<uint32_t>(x) >> 31) << (f.ebits + f.mbits);
  const uint32_t exp_all_ones = (1u << f.ebits) - 1;
  const uint32_t mant_all_ones = (1u << f.mbits) - 1;
  if (std::isnan(x)) {
    return f.has_inf ? (sign | (exp_all_ones << f.mbits) | (1u << (f.mbits - 1)))
                     : (sign | (exp_all_ones << f.mbits) | mant_all_ones);
  }
  const int max_exp_field = f.has_inf ? static_cast<int>(exp_all_ones) - 1 : exp_all_ones;
  const uint32_t max_mant = f.has_inf ? mant_all_ones : mant_all_ones - 1;
  const double max_finite =
      std::ldexp(1.0 + static_cast<double>(max_mant) / (1 << f.mbits), max_exp_field - bias);
  const uint32_t max_bits = sign | (static_cast<uint32_t>(max_exp_field) << f.mbits) | max_mant;
  const uint32_t inf_bits = sign | (exp_all_ones << f.mbits);
  double a = std::fabs(static_cast<double>(x));
  if (std::isinf(a)) {
    if (f.has_inf) return inf_bits;
    return f.saturate ? max_bits : (sign | (exp_all_ones << f.mbits) | mant_all_ones);
  }
  if (a == 0.0) return sign;
  int e;
  std::frexp(a, &e);
  int exp_unbiased = e - 1;
  const int min_normal_exp = 1 - bias;
  int quantum_exp = (exp_unbiased < min_normal_exp ? min_normal_exp : exp_unbiased) - f.mbits;
  double q = std::nearbyint(std::ldexp(a, -quantum_exp));  // exact scaling, RNE rounding
  double rounded = std::ldexp(q, quantum_exp);
  if (rounded > max_finite) return f.saturate ? max_bits : inf_bits;
  if (rounded == 0.0) return sign;
  std::frexp(rounded, &e);
  exp_unbiased = e - 1;
  if (exp_unbiased < min_normal_exp) {
    uint32_t mant = static_cast<uint32_t>(std::ldexp(rounded, -(min_normal_exp - f.mbits)));
    return sign | mant;
  }
  uint32_t mant =
      static_cast<uint32_t>(std::ldexp(rounded, f.mbits - exp_unbiased)) - (1u << f.mbits);
  return sign | (static_cast<uint32_t>(exp_unbiased + bias) << f.mbits) | mant;
}

float DecodeMini(uint32_t v, MiniFormat f) {
  const int bias = (1 << (f.ebits - 1)) - 1;
  const uint32_t exp_all_ones = (1u << f.ebits) - 1;
  const uint32_t mant_mask = (1u << f.mbits) - 1;
  bool negative = (v >> (f.ebits + f.mbits)) & 1;
  uint32_t exp_field = (v >> f.mbits) & exp_all_ones;
  uint32_t mant = v & mant_mask;
  double r;
  if (exp_field == exp_all_ones && f.has_inf) {
    r = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (exp_field == exp_all_ones && mant == mant_mask) {
    r = std::numeric_limits<double>::quiet_NaN();
  } else if (exp_field == 0) {
    r = std::ldexp(static_cast<double>(mant), 1 - bias - f.mbits);
  } else {
    r = std::ldexp(1.0 + static_cast<double>(mant) / (1 << f.mbits),
                   static_cast<int>(exp_field) - bias);
  }
  return static_cast<float>(negative ? -r : r);
}

}  // namespace

// Fast f16 conversions (bit manipulation, after F. Giesen's float_to_half_fast3_rtne); the test
// checks them against the generic EncodeMini/DecodeMini path over every code and random floats.
uint16_t FloatToF16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7FFFFFFFu;
  if (ax >= 0x7F800000u) return static_cast<uint16_t>(sign | (ax > 0x7F800000u ? 0x7E00u : 0x7C00u));
  if (ax >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to >= 65520: Inf
  if (ax < 0x38800000u) {  // result is subnormal or zero: let float addition round (RNE)
    float r = std::bit_cast<float>(ax) + 0.5f;
    return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(r) - 0x3F000000u));
  }
  uint32_t mant_odd = (ax >> 13) & 1u;
  ax += 0xC8000FFFu + mant_odd;  // rebias exponent by (15 - 127) and round to nearest even
  return static_cast<uint16_t>(sign | (ax >> 13));
}

float F16ToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t em = h & 0x7FFFu;
  if (em >= 0x7C00u) return std::bit_cast<float>(sign | 0x7F800000u | ((em & 0x3FFu) << 13));
  if (em >= 0x0400u) return std::bit_cast<float>(sign | ((em << 13) + 0x38000000u));
  float f = static_cast<float>(em) * 0x1.0p-24f;
  return sign ? -f : f;
}

namespace internal {
uint16_t ReferenceFloatToF16(float x) { return static_cast<uint16_t>(EncodeMini(x, kF16Format)); }
float ReferenceF16ToFloat(uint16_t h) { return DecodeMini(h, kF16Format); }
}  // namespace internal
uint8_t FloatToF8E4M3(float x) { return static_cast<uint8_t>(EncodeMini(x, kE4M3Format)); }
float F8E4M3ToFloat(uint8_t v) { return DecodeMini(v, kE4M3Format); }
uint8_t FloatToF8E5M2(float x) { return static_cast<uint8_t>(EncodeMini(x, kE5M2Format)); }
float F8E5M2ToFloat(uint8_t v) { return DecodeMini(v, kE5M2Format); }

double LoadAsDouble(DType t, const void* data, int64_t i) {
  switch (t) {
    case DType::kF32: return static_cast<const float*>(data)[i];
    case DType::kF64: return static_cast<const double*>(data)[i];
    case DType::kF16: return F16ToFloat(static_cast<const uint16_t*>(data)[i]);
    case DType::kBF16: return BF16ToFloat(static_cast<const uint16_t*>(data)[i]);
    case DType::kF8E4M3: return F8E4M3ToFloat(static_cast<const uint8_t*>(data)[i]);
    case DType::kF8E5M2: return F8E5M2ToFloat(static_cast<const uint8_t*>(data)[i]);
    case DType::kI64: return static_cast<double>(static_cast<const int64_t*>(data)[i]);
    case DType::kI32: return static_cast<const int32_t*>(data)[i];
    case DType::kI8: return static_cast<const int8_t*>(data)[i];
    case DType::kI4: return GetI4(static_cast<const uint8_t*>(data), i);
    case DType::kU8: return static_cast<const uint8_t*>(data)[i];
    case DType::kBool: return static_cast<const uint8_t*>(data)[i] != 0 ? 1.0 : 0.0;
  }
  return 0.0;
}

namespace {
// Two's-complement wrap of an integral double into `bits` bits.
int64_t WrapInt(double v, int bits) {
  int64_t x = static_cast<int64_t>(v);
  if (bits >= 64) return x;
  uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t u = static_cast<uint64_t>(x) & mask;
  if (u >> (bits - 1)) u |= ~mask;  // sign-extend
  return static_cast<int64_t>(u);
}
}  // namespace

void StoreFromDouble(DType t, void* data, int64_t i, double v) {
  switch (t) {
    case DType::kF32: static_cast<float*>(data)[i] = static_cast<float>(v); return;
    case DType::kF64: static_cast<double*>(data)[i] = v; return;
    case DType::kF16: static_cast<uint16_t*>(data)[i] = FloatToF16(static_cast<float>(v)); return;
    case DType::kBF16: static_cast<uint16_t*>(data)[i] = FloatToBF16(static_cast<float>(v)); return;
    case DType::kF8E4M3: static_cast<uint8_t*>(data)[i] = FloatToF8E4M3(static_cast<float>(v)); return;
    case DType::kF8E5M2: static_cast<uint8_t*>(data)[i] = FloatToF8E5M2(static_cast<float>(v)); return;
    case DType::kI64: static_cast<int64_t*>(data)[i] = static_cast<int64_t>(v); return;
    case DType::kI32: static_cast<int32_t*>(data)[i] = static_cast<int32_t>(WrapInt(v, 32)); return;
    case DType::kI8: static_cast<int8_t*>(data)[i] = static_cast<int8_t>(WrapInt(v, 8)); return;
    case DType::kI4: SetI4(static_cast<uint8_t*>(data), i, static_cast<int8_t>(WrapInt(v, 4))); return;
    case DType::kU8: static_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(WrapInt(v, 64) & 0xFF); return;
    case DType::kBool: static_cast<uint8_t*>(data)[i] = v != 0.0 ? 1 : 0; return;
  }
}

}  // namespace loom
