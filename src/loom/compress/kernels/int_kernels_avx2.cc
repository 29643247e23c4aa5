// IntKernels for AVX2 + FMA ("avx2"; FMA only for exact +-1 butterflies). Same structure as
// int_kernels_avx512.cc with 8-lane vectors and four registers per 32-element block; short tails go
// through small zero-padded stack buffers (AVX2 has no byte-masked loads or stores). Every function
// carries the target attribute, so the file is safe to link into a baseline x86-64 binary;
// Avx2IntKernels() itself is baseline. Bit-identical to int_kernels_scalar.cc.
#include "loom/compress/kernels/int_kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "loom/compress/kernels/int_kernels_internal.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

#define LOOM_AVX2 __attribute__((target("avx2,fma")))
#define LOOM_AVX2_INLINE inline __attribute__((always_inline, target("avx2,fma")))

namespace loom::compress {
namespace {

using internal::GroupScale;

// ---- Hadamard-32 on r[0..3] (elements 8k .. 8k + 7 in r[k]) ----

// Lanes in kUpper (the stride bit set): partner - v; the others: partner + v. One FMA with +-1:
// v * sign is exact, so the single rounding gives exactly the reference's a + b / a - b.
template <int kUpper>
LOOM_AVX2_INLINE __m256 Butterfly(__m256 v, __m256 partner) {
  const __m256 sign = _mm256_blend_ps(_mm256_set1_ps(1.0f), _mm256_set1_ps(-1.0f), kUpper);
  return _mm256_fmadd_ps(v, sign, partner);
}

LOOM_AVX2_INLINE void Pair(__m256& lo, __m256& hi) {  // (a, b) -> (a + b, a - b)
  const __m256 s = _mm256_add_ps(lo, hi), d = _mm256_sub_ps(lo, hi);
  lo = s;
  hi = d;
}

LOOM_AVX2_INLINE void Hadamard(__m256* r, __m256 scale) {
  for (int k = 0; k < 4; ++k) r[k] = Butterfly<0xAA>(r[k], _mm256_permute_ps(r[k], 0xB1));
  for (int k = 0; k < 4; ++k) r[k] = Butterfly<0xCC>(r[k], _mm256_permute_ps(r[k], 0x4E));
  for (int k = 0; k < 4; ++k) {
    r[k] = Butterfly<0xF0>(r[k], _mm256_permute2f128_ps(r[k], r[k], 0x01));
  }
  Pair(r[0], r[1]);  // h = 8
  Pair(r[2], r[3]);
  Pair(r[0], r[2]);  // h = 16
  Pair(r[1], r[3]);
  for (int k = 0; k < 4; ++k) r[k] = _mm256_mul_ps(r[k], scale);
}

// ---- Philox4x32-10, 8 blocks as two independent 4-lane chains ----
// Lane i of x = block index (counter words c0, c1), of y = stream (c2, c3); see the AVX-512 file.
struct PhiloxKeys {
  __m256i k0[internal::kPhiloxRounds];
  __m256i k1[internal::kPhiloxRounds];
  __m256i stream;
};

LOOM_AVX2 PhiloxKeys MakeKeys(uint64_t seed, uint64_t stream) {
  PhiloxKeys k;
  for (int r = 0; r < internal::kPhiloxRounds; ++r) {
    k.k0[r] = _mm256_set1_epi64x(internal::PhiloxRoundKey0(seed, r));
    k.k1[r] = _mm256_set1_epi64x(internal::PhiloxRoundKey1(seed, r));
  }
  k.stream = _mm256_set1_epi64x(static_cast<long long>(stream));
  return k;
}

LOOM_AVX2_INLINE __m256i Swap32(__m256i p) { return _mm256_shuffle_epi32(p, 0xB1); }

LOOM_AVX2_INLINE __m256 ToUniform(__m256i words) {
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(words, 8)),
                       _mm256_set1_ps(internal::kUniformScale));
}

// Uniforms of elements 4 * block .. 4 * block + 31 into u[0..3].
LOOM_AVX2_INLINE void Uniforms32(const PhiloxKeys& k, uint64_t block, __m256* u) {
  const __m256i m0 = _mm256_set1_epi64x(internal::kPhiloxM0);
  const __m256i m1 = _mm256_set1_epi64x(internal::kPhiloxM1);
  // Lane order 0,2,1,3 so that unpacklo/unpackhi yield blocks (0, 1) and (2, 3).
  const __m256i order = _mm256_setr_epi64x(0, 2, 1, 3);
  __m256i x0 = _mm256_add_epi64(_mm256_set1_epi64x(static_cast<long long>(block)), order);
  __m256i x1 = _mm256_add_epi64(_mm256_set1_epi64x(static_cast<long long>(block + 4)), order);
  __m256i y0 = k.stream, y1 = k.stream;
#pragma GCC unroll 10
  for (int r = 0; r < internal::kPhiloxRounds; ++r) {
    const __m256i p00 = _mm256_mul_epu32(x0, m0), p01 = _mm256_mul_epu32(y0, m1);
    const __m256i p10 = _mm256_mul_epu32(x1, m0), p11 = _mm256_mul_epu32(y1, m1);
    const __m256i nx0 =
        _mm256_xor_si256(_mm256_xor_si256(Swap32(p01), _mm256_srli_epi64(x0, 32)), k.k0[r]);
    const __m256i ny0 =
        _mm256_xor_si256(_mm256_xor_si256(Swap32(p00), _mm256_srli_epi64(y0, 32)), k.k1[r]);
    const __m256i nx1 =
        _mm256_xor_si256(_mm256_xor_si256(Swap32(p11), _mm256_srli_epi64(x1, 32)), k.k0[r]);
    const __m256i ny1 =
        _mm256_xor_si256(_mm256_xor_si256(Swap32(p10), _mm256_srli_epi64(y1, 32)), k.k1[r]);
    x0 = nx0;
    y0 = ny0;
    x1 = nx1;
    y1 = ny1;
  }
  u[0] = ToUniform(_mm256_unpacklo_epi64(x0, y0));
  u[1] = ToUniform(_mm256_unpackhi_epi64(x0, y0));
  u[2] = ToUniform(_mm256_unpacklo_epi64(x1, y1));
  u[3] = ToUniform(_mm256_unpackhi_epi64(x1, y1));
}

LOOM_AVX2 void UniformRange(uint64_t seed, uint64_t stream, int64_t first, int64_t n, float* u) {
  const PhiloxKeys k = MakeKeys(seed, stream);
  for (int64_t i = 0; i < n; i += 32) {
    __m256 v[4];
    Uniforms32(k, static_cast<uint64_t>(first + i) / 4, v);
    for (int j = 0; j < 4; ++j) _mm256_storeu_ps(u + i + 8 * j, v[j]);
  }
}

// ---- quantize and pack ----

LOOM_AVX2_INLINE __m256i AbsBits(__m256 v) {
  return _mm256_and_si256(_mm256_castps_si256(v), _mm256_set1_epi32(internal::kAbsMask));
}

LOOM_AVX2_INLINE uint32_t ReduceMax(__m256i v) {
  __m128i m = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0x4E));
  m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0xB1));
  return static_cast<uint32_t>(_mm_cvtsi128_si32(m));
}

template <bool kStochastic>
LOOM_AVX2_INLINE __m256i Quantize(__m256 v, __m256 inv, __m256 u, __m256 lo, __m256 hi) {
  __m256 t = _mm256_mul_ps(v, inv);
  if (kStochastic) t = _mm256_add_ps(t, u);
  t = _mm256_min_ps(_mm256_max_ps(t, lo), hi);
  constexpr int kMode =
      (kStochastic ? _MM_FROUND_TO_NEG_INF : _MM_FROUND_TO_NEAREST_INT) | _MM_FROUND_NO_EXC;
  return _mm256_cvttps_epi32(_mm256_round_ps(t, kMode));
}

// 32 quantized values (q[k] = elements 8k..8k+7) -> 32 * kBits / 8 bytes at the start.
template <int kBits>
LOOM_AVX2_INLINE __m256i Pack32(const __m256i* q) {
  // packs interleave 128-bit lanes: dwords come out as 0a 1a 2a 3a 0b 1b 2b 3b.
  const __m256i bytes = _mm256_permutevar8x32_epi32(
      _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3])),
      _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  if constexpr (kBits == 8) {
    return bytes;
  } else if constexpr (kBits == 4) {
    const __m256i w = _mm256_maddubs_epi16(_mm256_and_si256(bytes, _mm256_set1_epi8(0x0F)),
                                           _mm256_set1_epi16(0x1001));
    return _mm256_castsi128_si256(
        _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1)));
  } else {
    const __m256i w = _mm256_maddubs_epi16(_mm256_and_si256(bytes, _mm256_set1_epi8(0x03)),
                                           _mm256_set1_epi16(0x0401));
    const __m256i d = _mm256_madd_epi16(w, _mm256_set1_epi32(0x00100001));
    const __m128i x = _mm_packus_epi32(_mm256_castsi256_si128(d), _mm256_extracti128_si256(d, 1));
    return _mm256_castsi128_si256(_mm_packus_epi16(x, x));
  }
}

template <int kBits>
LOOM_AVX2_INLINE void StorePacked(uint8_t* out, __m256i packed) {
  if constexpr (kBits == 8) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), packed);
  } else if constexpr (kBits == 4) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(packed));
  } else {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(packed));
  }
}

// ---- encode ----

template <int kBits, bool kStochastic, bool kHadamard>
LOOM_AVX2 int64_t EncodeImpl(const IntEncodeArgs& a) {
  const IntFormat& f = a.format;
  const int64_t n = a.n, m = IntWireElements(n, f), groups = IntGroups(m, f);
  const int qmax = internal::QMax(kBits);
  const __m256 lo = _mm256_set1_ps(static_cast<float>(-qmax));
  const __m256 hi = _mm256_set1_ps(static_cast<float>(qmax));
  const __m256 hscale = _mm256_set1_ps(internal::HadamardScale());
  const PhiloxKeys keys = MakeKeys(a.seed, a.stream);
  alignas(32) float rotated[kMaxIntGroup];
  alignas(32) float tmp[32];
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t b = g * f.group, len = std::min<int64_t>(f.group, m - b);
    const float* v = a.x + b;
    __m256i amax0 = _mm256_setzero_si256(), amax1 = _mm256_setzero_si256();
    uint32_t amax_bits = 0;
    if (kHadamard) {  // len is a multiple of 32
      for (int64_t i = 0; i < len; i += 32) {
        const float* src = a.x + b + i;
        if (b + i + 32 > n) {  // zero padding past n
          std::memset(tmp, 0, sizeof tmp);
          std::memcpy(tmp, src, static_cast<size_t>(n - (b + i)) * 4);
          src = tmp;
        }
        __m256 r[4];
        for (int k = 0; k < 4; ++k) r[k] = _mm256_loadu_ps(src + 8 * k);
        Hadamard(r, hscale);
        for (int k = 0; k < 4; ++k) _mm256_store_ps(rotated + i + 8 * k, r[k]);
        amax0 = _mm256_max_epu32(amax0, _mm256_max_epu32(AbsBits(r[0]), AbsBits(r[1])));
        amax1 = _mm256_max_epu32(amax1, _mm256_max_epu32(AbsBits(r[2]), AbsBits(r[3])));
      }
      v = rotated;
    } else {
      int64_t i = 0;
      for (; i + 32 <= len; i += 32) {
        amax0 = _mm256_max_epu32(amax0, _mm256_max_epu32(AbsBits(_mm256_loadu_ps(v + i)),
                                                         AbsBits(_mm256_loadu_ps(v + i + 8))));
        amax1 = _mm256_max_epu32(amax1, _mm256_max_epu32(AbsBits(_mm256_loadu_ps(v + i + 16)),
                                                         AbsBits(_mm256_loadu_ps(v + i + 24))));
      }
      for (; i < len; ++i) {
        uint32_t bits;
        std::memcpy(&bits, v + i, 4);
        amax_bits = std::max(amax_bits, bits & internal::kAbsMask);
      }
    }
    amax_bits = std::max(amax_bits, ReduceMax(_mm256_max_epu32(amax0, amax1)));
    if (amax_bits >= internal::kNonFiniteBits) return g;
    const GroupScale s = internal::ScaleOfGroup(amax_bits, qmax);
    std::memcpy(a.scales + 4 * g, &s.scale, 4);
    const __m256 inv = _mm256_set1_ps(s.inv);
    uint8_t* out = a.payload + b * kBits / 8;
    __m256 u[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
    for (int64_t c = 0; c < len; c += 32) {
      const float* src = v + c;
      const int64_t r = std::min<int64_t>(32, len - c);
      if (r < 32) {  // the last, short group without Hadamard: zeros quantize to 0
        std::memset(tmp, 0, sizeof tmp);
        std::memcpy(tmp, src, static_cast<size_t>(r) * 4);
        src = tmp;
      }
      if (kStochastic) Uniforms32(keys, static_cast<uint64_t>(b + c) / 4, u);
      __m256i q[4];
      for (int k = 0; k < 4; ++k) {
        q[k] = Quantize<kStochastic>(_mm256_loadu_ps(src + 8 * k), inv, u[k], lo, hi);
      }
      const __m256i packed = Pack32<kBits>(q);
      if (r == 32) {
        StorePacked<kBits>(out + c * kBits / 8, packed);
      } else {
        alignas(32) uint8_t bytes[32];
        _mm256_store_si256(reinterpret_cast<__m256i*>(bytes), packed);
        std::memcpy(out + c * kBits / 8, bytes, static_cast<size_t>((r * kBits + 7) / 8));
      }
    }
  }
  return -1;
}

// ---- decode ----

// 32 values from 32 * kBits / 8 payload bytes (`bytes` of them readable, the rest taken as 0).
template <int kBits>
LOOM_AVX2_INLINE void Dequantize32(const uint8_t* in, int64_t bytes, __m256 scale, __m256* v) {
  constexpr int kFull = 32 * kBits / 8;
  alignas(32) uint8_t tmp[32];
  if (bytes < kFull) {
    std::memset(tmp, 0, sizeof tmp);
    std::memcpy(tmp, in, static_cast<size_t>(bytes));
    in = tmp;
  }
  for (int k = 0; k < 4; ++k) {
    __m256i q;
    if constexpr (kBits == 8) {
      q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(in + 8 * k)));
    } else if constexpr (kBits == 4) {  // element i of the word in bits 4i..4i+3
      uint32_t w;
      std::memcpy(&w, in + 4 * k, 4);
      q = _mm256_srai_epi32(_mm256_sllv_epi32(_mm256_set1_epi32(static_cast<int>(w)),
                                              _mm256_setr_epi32(28, 24, 20, 16, 12, 8, 4, 0)),
                            28);
    } else {  // element i in bits 2i..2i+1
      uint16_t w;
      std::memcpy(&w, in + 2 * k, 2);
      q = _mm256_srai_epi32(_mm256_sllv_epi32(_mm256_set1_epi32(w),
                                              _mm256_setr_epi32(30, 28, 26, 24, 22, 20, 18, 16)),
                            30);
    }
    v[k] = _mm256_mul_ps(_mm256_cvtepi32_ps(q), scale);
  }
}

template <bool kAdd>
LOOM_AVX2_INLINE void Store32(float* y, const __m256* v, int64_t keep) {
  if (keep >= 32) {
    for (int k = 0; k < 4; ++k) {
      _mm256_storeu_ps(y + 8 * k, kAdd ? _mm256_add_ps(_mm256_loadu_ps(y + 8 * k), v[k]) : v[k]);
    }
    return;
  }
  alignas(32) float tmp[32];
  for (int k = 0; k < 4; ++k) _mm256_store_ps(tmp + 8 * k, v[k]);
  for (int64_t i = 0; i < keep; ++i) y[i] = kAdd ? y[i] + tmp[i] : tmp[i];
}

template <int kBits, bool kHadamard, bool kAdd>
LOOM_AVX2 void DecodeImpl(const IntDecodeArgs& a) {
  const IntFormat& f = a.format;
  const int64_t n = a.n, m = IntWireElements(n, f), groups = IntGroups(m, f);
  const __m256 hscale = _mm256_set1_ps(internal::HadamardScale());
  const int64_t payload_bytes = IntPayloadBytes(m, f);
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t b = g * f.group, len = std::min<int64_t>(f.group, m - b);
    float scale_value;
    std::memcpy(&scale_value, a.scales + 4 * g, 4);
    const __m256 scale = _mm256_set1_ps(scale_value);
    for (int64_t c = 0; c < len; c += 32) {
      const int64_t offset = (b + c) * kBits / 8;
      __m256 v[4];
      Dequantize32<kBits>(a.payload + offset, payload_bytes - offset, scale, v);
      if (kHadamard) Hadamard(v, hscale);
      const int64_t keep = std::min<int64_t>(std::min<int64_t>(32, len - c), n - (b + c));
      Store32<kAdd>(a.y + b + c, v, keep);
    }
  }
}

// ---- dispatch over the compile-time parameters ----

template <int kBits>
LOOM_AVX2 int64_t EncodeBits(const IntEncodeArgs& a) {
  const bool s = a.format.stochastic, h = a.format.hadamard;
  if (s) return h ? EncodeImpl<kBits, true, true>(a) : EncodeImpl<kBits, true, false>(a);
  return h ? EncodeImpl<kBits, false, true>(a) : EncodeImpl<kBits, false, false>(a);
}

LOOM_AVX2 int64_t Encode(const IntEncodeArgs& a) {
  switch (a.format.bits) {
    case 8:
      return EncodeBits<8>(a);
    case 4:
      return EncodeBits<4>(a);
    default:
      return EncodeBits<2>(a);
  }
}

template <int kBits>
LOOM_AVX2 void DecodeBits(const IntDecodeArgs& a) {
  const bool h = a.format.hadamard;
  if (a.add) return h ? DecodeImpl<kBits, true, true>(a) : DecodeImpl<kBits, false, true>(a);
  return h ? DecodeImpl<kBits, true, false>(a) : DecodeImpl<kBits, false, false>(a);
}

LOOM_AVX2 void Decode(const IntDecodeArgs& a) {
  switch (a.format.bits) {
    case 8:
      return DecodeBits<8>(a);
    case 4:
      return DecodeBits<4>(a);
    default:
      return DecodeBits<2>(a);
  }
}

}  // namespace

const IntKernels* Avx2IntKernels() {
  static constexpr IntKernels kAvx2 = {"avx2", &Encode, &Decode, &UniformRange};
  return &kAvx2;
}

}  // namespace loom::compress

#else  // not x86-64

namespace loom::compress {
const IntKernels* Avx2IntKernels() { return nullptr; }
}  // namespace loom::compress

#endif
