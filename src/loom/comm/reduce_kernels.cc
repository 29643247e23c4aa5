#include "loom/comm/reduce_kernels.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "loom/base/check.h"
#include "loom/base/convert.h"

namespace loom::comm {

std::string_view ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kAvg: return "avg";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kMin: return "min";
  }
  return "?";
}

namespace {

#define LOOM_MULTIVERSION __attribute__((target_clones("avx512f", "avx2", "default")))

template <typename T>
inline T Apply(ReduceOp op, T x, T y) {
  switch (op) {
    case ReduceOp::kMax: return x > y ? x : y;
    case ReduceOp::kMin: return x < y ? x : y;
    default: return static_cast<T>(x + y);
  }
}

// NaN-propagating max/min for floats (torch semantics): a NaN in either input wins.
template <typename F>
inline F ApplyF(ReduceOp op, F x, F y) {
  switch (op) {
    case ReduceOp::kMax: return (x > y || std::isnan(x)) ? x : y;
    case ReduceOp::kMin: return (x < y || std::isnan(x)) ? x : y;
    default: return x + y;
  }
}

LOOM_MULTIVERSION void SumF32(float* dst, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = a[i] + b[i];
}

// bf16 sums through fp32 chunks (the conversions vectorise as integer lanes; dst may alias).
void SumBF16(uint16_t* dst, const uint16_t* a, const uint16_t* b, int64_t n) {
  constexpr int64_t kChunk = 1024;
  float x[kChunk], y[kChunk];
  for (int64_t s = 0; s < n; s += kChunk) {
    const int64_t m = n - s < kChunk ? n - s : kChunk;
    ConvertBF16ToF32(a + s, x, m);
    ConvertBF16ToF32(b + s, y, m);
    SumF32(x, x, y, m);
    ConvertF32ToBF16(x, dst + s, m);
  }
}

template <typename T>
void ReduceInt(ReduceOp op, T* dst, const T* a, const T* b, int64_t n) {
  using U = std::make_unsigned_t<T>;
  for (int64_t i = 0; i < n; ++i) {
    if (op == ReduceOp::kSum || op == ReduceOp::kAvg) {
      dst[i] = static_cast<T>(static_cast<U>(a[i]) + static_cast<U>(b[i]));  // wraps
    } else {
      dst[i] = Apply(op, a[i], b[i]);
    }
  }
}

using ToF = float (*)(uint16_t);
using FromF = uint16_t (*)(float);

template <typename Bits, typename Load, typename Store>
void ReduceViaFloat(ReduceOp op, Bits* dst, const Bits* a, const Bits* b, int64_t n, Load load,
                    Store store) {
  for (int64_t i = 0; i < n; ++i) dst[i] = store(ApplyF(op, load(a[i]), load(b[i])));
}

}  // namespace

void ReduceInto(DType dtype, ReduceOp op, void* dst, const void* a, const void* b, int64_t n) {
  const bool sum = op == ReduceOp::kSum || op == ReduceOp::kAvg;
  switch (dtype) {
    case DType::kF32: {
      auto* d = static_cast<float*>(dst);
      auto* x = static_cast<const float*>(a);
      auto* y = static_cast<const float*>(b);
      if (sum) {
        SumF32(d, x, y, n);
      } else {
        for (int64_t i = 0; i < n; ++i) d[i] = ApplyF(op, x[i], y[i]);
      }
      return;
    }
    case DType::kF64: {
      auto* d = static_cast<double*>(dst);
      auto* x = static_cast<const double*>(a);
      auto* y = static_cast<const double*>(b);
      for (int64_t i = 0; i < n; ++i) d[i] = ApplyF(op, x[i], y[i]);
      return;
    }
    case DType::kBF16:
      if (sum) {
        SumBF16(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(a),
                static_cast<const uint16_t*>(b), n);
      } else {
        ReduceViaFloat(op, static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(a),
                       static_cast<const uint16_t*>(b), n, BF16ToFloat, FloatToBF16);
      }
      return;
    case DType::kF16:
      ReduceViaFloat(op, static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(a),
                     static_cast<const uint16_t*>(b), n, F16ToFloat, FloatToF16);
      return;
    case DType::kF8E4M3:
      ReduceViaFloat(op, static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(a),
                     static_cast<const uint8_t*>(b), n, F8E4M3ToFloat, FloatToF8E4M3);
      return;
    case DType::kF8E5M2:
      ReduceViaFloat(op, static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(a),
                     static_cast<const uint8_t*>(b), n, F8E5M2ToFloat, FloatToF8E5M2);
      return;
    case DType::kI64:
      ReduceInt(op, static_cast<int64_t*>(dst), static_cast<const int64_t*>(a),
                static_cast<const int64_t*>(b), n);
      return;
    case DType::kI32:
      ReduceInt(op, static_cast<int32_t*>(dst), static_cast<const int32_t*>(a),
                static_cast<const int32_t*>(b), n);
      return;
    case DType::kI8:
      ReduceInt(op, static_cast<int8_t*>(dst), static_cast<const int8_t*>(a),
                static_cast<const int8_t*>(b), n);
      return;
    case DType::kU8:
      ReduceInt(op, static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(a),
                static_cast<const uint8_t*>(b), n);
      return;
    case DType::kBool: {
      auto* d = static_cast<uint8_t*>(dst);
      auto* x = static_cast<const uint8_t*>(a);
      auto* y = static_cast<const uint8_t*>(b);
      for (int64_t i = 0; i < n; ++i) {
        d[i] = op == ReduceOp::kMin ? (x[i] && y[i]) : (x[i] || y[i]);
      }
      return;
    }
    case DType::kI4: {
      LOOM_CHECK(n % 2 == 0) << "I4 reductions need an even element count, got " << n;
      auto* d = static_cast<uint8_t*>(dst);
      auto* x = static_cast<const uint8_t*>(a);
      auto* y = static_cast<const uint8_t*>(b);
      for (int64_t i = 0; i < n; ++i) {
        int v = sum ? GetI4(x, i) + GetI4(y, i) : Apply(op, GetI4(x, i), GetI4(y, i));
        // Wrap into [-8, 7]; reads of x/y at i happen before the write (dst may alias).
        SetI4(d, i, static_cast<int8_t>(static_cast<int8_t>((v & 0xF) << 4) >> 4));
      }
      return;
    }
  }
}

void DivideInPlace(DType dtype, void* data, int64_t n, int divisor) {
  if (divisor == 1) return;
  if (dtype == DType::kF32) {
    auto* d = static_cast<float*>(data);
    const float inv = 1.0f / static_cast<float>(divisor);
    // Exact division when divisor is a power of two; otherwise within 1 ulp of x / divisor.
    for (int64_t i = 0; i < n; ++i) d[i] *= inv;
    return;
  }
  if (dtype == DType::kBool) return;
  for (int64_t i = 0; i < n; ++i) {
    double v = LoadAsDouble(dtype, data, i);
    StoreFromDouble(dtype, data, i, IsFloating(dtype) ? v / divisor : std::trunc(v / divisor));
  }
}

}  // namespace loom::comm
