// IntKernels for AVX-512 F+BW+VL+DQ ("avx512"). Every function here carries the target attribute
// (nothing is compiled with -mavx512f for the whole file, so inline functions from headers stay
// baseline and the binary runs anywhere); Avx512IntKernels() is baseline and only hands out the
// table, which the dispatcher uses after checking the CPU.
//
// Encode, per group, fused: load (zero padding past n) -> Hadamard-32 in registers (two zmm per
// block, butterflies = lane permute + FMA with +-1) -> |v| max as integers (which also flags
// Inf/NaN) -> scale -> per 32 elements: t = v * inv (+ u) -> clamp -> floor or round-half-even
// and convert (embedded rounding) -> narrow -> pack 8/4/2 bits. The uniforms come from Philox4x32-10
// on 8 blocks per zmm pair (64-bit lanes, _mm512_mul_epu32), four chains interleaved, 512 at a
// time into a stack buffer. Decode: unpack through a 16-entry table of q * scale (vpermps) ->
// Hadamard -> store or add. Bit-identical to int_kernels_scalar.cc.
#include "loom/compress/kernels/int_kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics start from _mm*_undefined_*(), which -Wmaybe-uninitialized flags
// at every use (GCC bug 105593, fixed in 12.3/13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "loom/compress/kernels/int_kernels_internal.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

#define LOOM_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#define LOOM_AVX512_INLINE \
  inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vl,avx512dq")))

namespace loom::compress {
namespace {

using internal::GroupScale;

// ---- Hadamard-32 on (a = elements 0..15, b = 16..31) ----

// Lanes without the stride bit: partner + v; lanes with it: partner - v, as the reference's
// (a, b) -> (a + b, a - b) with a the lower-index element. One FMA with +-1: v * sign is exact,
// so the single rounding gives exactly the sum or difference.
LOOM_AVX512_INLINE __m512 Butterfly(__m512 v, __m512 partner, __mmask16 upper) {
  const __m512 sign = _mm512_mask_blend_ps(upper, _mm512_set1_ps(1.0f), _mm512_set1_ps(-1.0f));
  return _mm512_fmadd_ps(v, sign, partner);
}

LOOM_AVX512_INLINE void Hadamard(__m512& a, __m512& b, __m512 scale) {
  a = Butterfly(a, _mm512_permute_ps(a, 0xB1), 0xAAAA);  // h = 1
  b = Butterfly(b, _mm512_permute_ps(b, 0xB1), 0xAAAA);
  a = Butterfly(a, _mm512_permute_ps(a, 0x4E), 0xCCCC);  // h = 2
  b = Butterfly(b, _mm512_permute_ps(b, 0x4E), 0xCCCC);
  a = Butterfly(a, _mm512_shuffle_f32x4(a, a, 0xB1), 0xF0F0);  // h = 4
  b = Butterfly(b, _mm512_shuffle_f32x4(b, b, 0xB1), 0xF0F0);
  a = Butterfly(a, _mm512_shuffle_f32x4(a, a, 0x4E), 0xFF00);  // h = 8
  b = Butterfly(b, _mm512_shuffle_f32x4(b, b, 0x4E), 0xFF00);
  const __m512 s = _mm512_add_ps(a, b), d = _mm512_sub_ps(a, b);  // h = 16
  a = _mm512_mul_ps(s, scale);
  b = _mm512_mul_ps(d, scale);
}

// ---- Philox4x32-10, 8 blocks (32 words) per chain ----
// Lane i of x holds counter words (c0, c1) of one block as a 64-bit integer (= the block index),
// lane i of y holds (c2, c3) (= the stream). mul_epu32 multiplies the low words, P = hi:lo; a round
//   (c0, c1, c2, c3) <- (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0)
// is x' = swap32(P1 with its high word ^= c1 ^ k0): one multiply, one masked ternary-logic xor and
// one shuffle per half (the shuffle ports are the bottleneck, so no shifts).
struct PhiloxKeys {
  __m512i k0[internal::kPhiloxRounds];  // round key in the high word of each 64-bit lane
  __m512i k1[internal::kPhiloxRounds];
  __m512i stream;
};

LOOM_AVX512 PhiloxKeys MakeKeys(uint64_t seed, uint64_t stream) {
  PhiloxKeys k;
  for (int r = 0; r < internal::kPhiloxRounds; ++r) {
    k.k0[r] = _mm512_set1_epi64(
        static_cast<long long>(static_cast<uint64_t>(internal::PhiloxRoundKey0(seed, r)) << 32));
    k.k1[r] = _mm512_set1_epi64(
        static_cast<long long>(static_cast<uint64_t>(internal::PhiloxRoundKey1(seed, r)) << 32));
  }
  k.stream = _mm512_set1_epi64(static_cast<long long>(stream));
  return k;
}

// Uniforms of elements 4 * block .. 4 * block + 32 * kChains - 1 into out[]. The rounds of the
// kChains independent chains interleave, which hides the multiplies' latency.
template <int kChains>
LOOM_AVX512_INLINE void Uniforms(const PhiloxKeys& k, uint64_t block, float* out) {
  const __m512i m0 = _mm512_set1_epi64(internal::kPhiloxM0);
  const __m512i m1 = _mm512_set1_epi64(internal::kPhiloxM1);
  // Lane order 0,4,1,5,2,6,3,7 so that unpacklo/unpackhi below yield blocks 0..3 and 4..7.
  const __m512i order = _mm512_setr_epi64(0, 4, 1, 5, 2, 6, 3, 7);
  __m512i x[kChains], y[kChains];
  for (int c = 0; c < kChains; ++c) {
    x[c] = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(block + 8 * c)), order);
    y[c] = k.stream;
  }
#pragma GCC unroll 10
  for (int r = 0; r < internal::kPhiloxRounds; ++r) {
    for (int c = 0; c < kChains; ++c) {
      const __m512i p0 = _mm512_mul_epu32(x[c], m0), p1 = _mm512_mul_epu32(y[c], m1);
      const __m512i t1 = _mm512_mask_ternarylogic_epi32(p1, 0xAAAA, x[c], k.k0[r], 0x96);
      const __m512i t0 = _mm512_mask_ternarylogic_epi32(p0, 0xAAAA, y[c], k.k1[r], 0x96);
      x[c] = _mm512_shuffle_epi32(t1, _MM_PERM_CDAB);
      y[c] = _mm512_shuffle_epi32(t0, _MM_PERM_CDAB);
    }
  }
  // (w >> 8) * 2^-24 computed as float(w & ~0xFF) * 2^-32: the same exact value, without a shift.
  const __m512 unit = _mm512_set1_ps(0x1.0p-32f);
  const __m512i top24 = _mm512_set1_epi32(static_cast<int>(0xFFFFFF00u));
  for (int c = 0; c < kChains; ++c) {
    const __m512i w0 = _mm512_and_si512(_mm512_unpacklo_epi64(x[c], y[c]), top24);
    const __m512i w1 = _mm512_and_si512(_mm512_unpackhi_epi64(x[c], y[c]), top24);
    _mm512_store_ps(out + 32 * c, _mm512_mul_ps(_mm512_cvtepu32_ps(w0), unit));
    _mm512_store_ps(out + 32 * c + 16, _mm512_mul_ps(_mm512_cvtepu32_ps(w1), unit));
  }
}

// The uniforms of a stretch of the buffer, made 128 at a time while at least 128 are wanted.
// Encode asks for elements e = 0, 32, 64, ... in order.
struct UniformRing {
  static constexpr int64_t kSize = 512;
  alignas(64) float u[kSize];
  int64_t start = 0, end = 0;  // u holds elements [start, end)
};

LOOM_AVX512_INLINE const float* UniformsAt(UniformRing& ring, const PhiloxKeys& k, int64_t e,
                                           int64_t m) {
  if (e >= ring.end) {
    const int64_t count = std::min<int64_t>(UniformRing::kSize, (m - e + 31) / 32 * 32);
    int64_t i = 0;
    for (; i + 128 <= count; i += 128) Uniforms<4>(k, static_cast<uint64_t>(e + i) / 4, ring.u + i);
    for (; i < count; i += 32) Uniforms<1>(k, static_cast<uint64_t>(e + i) / 4, ring.u + i);
    ring.start = e;
    ring.end = e + count;
  }
  return ring.u + (e - ring.start);
}

LOOM_AVX512 void UniformRange(uint64_t seed, uint64_t stream, int64_t first, int64_t n,
                              float* u) {
  const PhiloxKeys k = MakeKeys(seed, stream);
  alignas(64) float buf[128];
  for (int64_t i = 0; i < n; i += 128) {
    const int64_t count = std::min<int64_t>(128, (n - i + 31) / 32 * 32);
    if (count == 128) {
      Uniforms<4>(k, static_cast<uint64_t>(first + i) / 4, buf);
    } else {
      for (int64_t c = 0; c < count; c += 32) {
        Uniforms<1>(k, static_cast<uint64_t>(first + i + c) / 4, buf + c);
      }
    }
    std::memcpy(u + i, buf, static_cast<size_t>(count) * sizeof(float));
  }
}

// ---- masks and loads ----

LOOM_AVX512_INLINE __mmask16 FirstLanes(int64_t count) {  // count clipped to [0, 16]
  return count >= 16 ? __mmask16(0xFFFF) : count <= 0 ? __mmask16(0) : __mmask16((1u << count) - 1);
}

LOOM_AVX512_INLINE __m512i AbsBits(__m512 v) {
  return _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(internal::kAbsMask));
}

// ---- quantize and pack 32 values ----

template <bool kStochastic>
LOOM_AVX512_INLINE __m512i Quantize(__m512 v, __m512 inv, __m512 u, __m512 lo, __m512 hi) {
  __m512 t = _mm512_mul_ps(v, inv);
  if (kStochastic) t = _mm512_add_ps(t, u);
  t = _mm512_min_ps(_mm512_max_ps(t, lo), hi);
  // floor / round-half-even and convert in one instruction (embedded rounding, not MXCSR).
  constexpr int kMode =
      (kStochastic ? _MM_FROUND_TO_NEG_INF : _MM_FROUND_TO_NEAREST_INT) | _MM_FROUND_NO_EXC;
  return _mm512_cvt_roundps_epi32(t, kMode);
}

// 32 quantized values -> 32 * kBits / 8 packed bytes at the start of the result.
template <int kBits>
LOOM_AVX512_INLINE __m256i Pack32(__m512i q0, __m512i q1) {
  const __m256i bytes = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm512_cvtepi32_epi8(q0)),
                                                _mm512_cvtepi32_epi8(q1), 1);
  if constexpr (kBits == 8) {
    return bytes;
  } else if constexpr (kBits == 4) {  // byte j = q[2j] & 15 | (q[2j+1] & 15) << 4
    const __m256i w = _mm256_maddubs_epi16(_mm256_and_si256(bytes, _mm256_set1_epi8(0x0F)),
                                           _mm256_set1_epi16(0x1001));
    return _mm256_castsi128_si256(_mm256_cvtepi16_epi8(w));
  } else {  // byte j = q[4j] & 3 | (q[4j+1] & 3) << 2 | ... << 4 | ... << 6
    const __m256i w = _mm256_maddubs_epi16(_mm256_and_si256(bytes, _mm256_set1_epi8(0x03)),
                                           _mm256_set1_epi16(0x0401));
    const __m256i d = _mm256_madd_epi16(w, _mm256_set1_epi32(0x00100001));
    return _mm256_castsi128_si256(_mm256_cvtepi32_epi8(d));
  }
}

template <int kBits>
LOOM_AVX512_INLINE void StorePacked(uint8_t* out, __m256i packed) {
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
LOOM_AVX512 int64_t EncodeImpl(const IntEncodeArgs& a) {
  const IntFormat& f = a.format;
  const int64_t n = a.n, m = IntWireElements(n, f), groups = IntGroups(m, f);
  const int qmax = internal::QMax(kBits);
  const __m512 lo = _mm512_set1_ps(static_cast<float>(-qmax));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(qmax));
  const __m512 hscale = _mm512_set1_ps(internal::HadamardScale());
  const PhiloxKeys keys = MakeKeys(a.seed, a.stream);
  UniformRing ring;
  alignas(64) float rotated[kMaxIntGroup];
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t b = g * f.group, len = std::min<int64_t>(f.group, m - b);
    const float* v = a.x + b;
    __m512i amax0 = _mm512_setzero_si512(), amax1 = _mm512_setzero_si512();
    if (kHadamard) {  // len is a multiple of 32
      for (int64_t i = 0; i < len; i += 32) {
        __m512 r0, r1;
        if (b + i + 32 <= n) {
          r0 = _mm512_loadu_ps(a.x + b + i);
          r1 = _mm512_loadu_ps(a.x + b + i + 16);
        } else {  // zero padding past n
          r0 = _mm512_maskz_loadu_ps(FirstLanes(n - (b + i)), a.x + b + i);
          r1 = _mm512_maskz_loadu_ps(FirstLanes(n - (b + i + 16)), a.x + b + i + 16);
        }
        Hadamard(r0, r1, hscale);
        _mm512_store_ps(rotated + i, r0);
        _mm512_store_ps(rotated + i + 16, r1);
        amax0 = _mm512_max_epu32(amax0, AbsBits(r0));
        amax1 = _mm512_max_epu32(amax1, AbsBits(r1));
      }
      v = rotated;
    } else {
      int64_t i = 0;
      for (; i + 32 <= len; i += 32) {
        amax0 = _mm512_max_epu32(amax0, AbsBits(_mm512_loadu_ps(v + i)));
        amax1 = _mm512_max_epu32(amax1, AbsBits(_mm512_loadu_ps(v + i + 16)));
      }
      for (; i < len; i += 16) {
        amax0 = _mm512_max_epu32(amax0, AbsBits(_mm512_maskz_loadu_ps(FirstLanes(len - i), v + i)));
      }
    }
    const uint32_t amax_bits = _mm512_reduce_max_epu32(_mm512_max_epu32(amax0, amax1));
    if (amax_bits >= internal::kNonFiniteBits) return g;
    const GroupScale s = internal::ScaleOfGroup(amax_bits, qmax);
    std::memcpy(a.scales + 4 * g, &s.scale, 4);
    const __m512 inv = _mm512_set1_ps(s.inv);
    uint8_t* out = a.payload + b * kBits / 8;
    __m512 u0 = _mm512_setzero_ps(), u1 = _mm512_setzero_ps();
    int64_t c = 0;
    for (; c + 32 <= len; c += 32) {
      if (kStochastic) {  // compute-bound: fetch the next group meanwhile
        _mm_prefetch(reinterpret_cast<const char*>(a.x + b + f.group + c), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(a.x + b + f.group + c + 16), _MM_HINT_T0);
        const float* u = UniformsAt(ring, keys, b + c, m);
        u0 = _mm512_load_ps(u);
        u1 = _mm512_load_ps(u + 16);
      }
      const __m512i q0 = Quantize<kStochastic>(_mm512_loadu_ps(v + c), inv, u0, lo, hi);
      const __m512i q1 = Quantize<kStochastic>(_mm512_loadu_ps(v + c + 16), inv, u1, lo, hi);
      StorePacked<kBits>(out + c * kBits / 8, Pack32<kBits>(q0, q1));
    }
    if (c < len) {  // the last, short group without Hadamard: masked lanes quantize to 0
      const int64_t r = len - c;
      if (kStochastic) {
        const float* u = UniformsAt(ring, keys, b + c, m);
        u0 = _mm512_load_ps(u);
        u1 = _mm512_load_ps(u + 16);
      }
      const __m512i q0 =
          Quantize<kStochastic>(_mm512_maskz_loadu_ps(FirstLanes(r), v + c), inv, u0, lo, hi);
      const __m512i q1 = Quantize<kStochastic>(
          _mm512_maskz_loadu_ps(FirstLanes(r - 16), v + c + 16), inv, u1, lo, hi);
      const int64_t bytes = (r * kBits + 7) / 8;
      _mm256_mask_storeu_epi8(out + c * kBits / 8, static_cast<__mmask32>((1ull << bytes) - 1),
                              Pack32<kBits>(q0, q1));
    }
  }
  return -1;
}

// ---- decode ----

// Table of float(q) * scale indexed by a field's bits (vpermps reads the low 4 bits of each
// index): int4 nibble k -> q = k - 16 * (k >= 8); int2: k & 3 -> 0, 1, -2, -1.
template <int kBits>
LOOM_AVX512_INLINE __m512 ValueTable(__m512 scale) {
  const __m512i q = kBits == 4
                        ? _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1)
                        : _mm512_setr_epi32(0, 1, -2, -1, 0, 1, -2, -1, 0, 1, -2, -1, 0, 1, -2, -1);
  return _mm512_mul_ps(_mm512_cvtepi32_ps(q), scale);
}

// 32 values from 32 * kBits / 8 payload bytes (`bytes` of them readable, the rest taken as 0).
template <int kBits>
LOOM_AVX512_INLINE void Dequantize32(const uint8_t* in, int64_t bytes, __m512 scale, __m512 table,
                                     __m512* v0, __m512* v1) {
  constexpr int kFull = 32 * kBits / 8;
  const __mmask32 mask = bytes >= kFull ? static_cast<__mmask32>((1ull << kFull) - 1)
                                        : static_cast<__mmask32>((1ull << bytes) - 1);
  if constexpr (kBits == 8) {
    const __m256i raw = bytes >= kFull ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in))
                                       : _mm256_maskz_loadu_epi8(mask, in);
    *v0 =
        _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(raw))), scale);
    *v1 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(raw, 1))),
                        scale);
  } else if constexpr (kBits == 4) {
    const __m128i raw = bytes >= kFull ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(in))
                                       : _mm_maskz_loadu_epi8(static_cast<__mmask16>(mask), in);
    const __m512i low = _mm512_cvtepu8_epi32(raw);   // byte j: element 2j in bits 0..3
    const __m512i high = _mm512_srli_epi32(low, 4);  // element 2j + 1
    const __m512i i0 = _mm512_permutex2var_epi32(
        low, _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23), high);
    const __m512i i1 = _mm512_permutex2var_epi32(
        low, _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31), high);
    *v0 = _mm512_permutexvar_ps(i0, table);
    *v1 = _mm512_permutexvar_ps(i1, table);
  } else {
    uint32_t w[2] = {0, 0};
    std::memcpy(w, in, static_cast<size_t>(std::min<int64_t>(bytes, kFull)));
    const __m512i shifts =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    *v0 = _mm512_permutexvar_ps(
        _mm512_srlv_epi32(_mm512_set1_epi32(static_cast<int>(w[0])), shifts), table);
    *v1 = _mm512_permutexvar_ps(
        _mm512_srlv_epi32(_mm512_set1_epi32(static_cast<int>(w[1])), shifts), table);
  }
}

template <bool kAdd>
LOOM_AVX512_INLINE void Store16(float* y, __m512 v, __mmask16 mask) {
  if (mask == 0xFFFF) {
    _mm512_storeu_ps(y, kAdd ? _mm512_add_ps(_mm512_loadu_ps(y), v) : v);
  } else if (mask != 0) {
    _mm512_mask_storeu_ps(y, mask, kAdd ? _mm512_add_ps(_mm512_maskz_loadu_ps(mask, y), v) : v);
  }
}

template <int kBits, bool kHadamard, bool kAdd>
LOOM_AVX512 void DecodeImpl(const IntDecodeArgs& a) {
  const IntFormat& f = a.format;
  const int64_t n = a.n, m = IntWireElements(n, f), groups = IntGroups(m, f);
  const __m512 hscale = _mm512_set1_ps(internal::HadamardScale());
  const int64_t payload_bytes = IntPayloadBytes(m, f);
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t b = g * f.group, len = std::min<int64_t>(f.group, m - b);
    float scale_value;
    std::memcpy(&scale_value, a.scales + 4 * g, 4);
    const __m512 scale = _mm512_set1_ps(scale_value);
    __m512 table = scale;
    if constexpr (kBits != 8) table = ValueTable<kBits>(scale);
    for (int64_t c = 0; c < len; c += 32) {
      const int64_t offset = (b + c) * kBits / 8;
      __m512 v0, v1;
      Dequantize32<kBits>(a.payload + offset, payload_bytes - offset, scale, table, &v0, &v1);
      if (kHadamard) Hadamard(v0, v1, hscale);
      float* y = a.y + b + c;
      const int64_t keep = std::min<int64_t>(std::min<int64_t>(32, len - c), n - (b + c));
      Store16<kAdd>(y, v0, FirstLanes(keep));
      Store16<kAdd>(y + 16, v1, FirstLanes(keep - 16));
    }
  }
}

// ---- dispatch over the compile-time parameters ----

template <int kBits>
LOOM_AVX512 int64_t EncodeBits(const IntEncodeArgs& a) {
  const bool s = a.format.stochastic, h = a.format.hadamard;
  if (s) return h ? EncodeImpl<kBits, true, true>(a) : EncodeImpl<kBits, true, false>(a);
  return h ? EncodeImpl<kBits, false, true>(a) : EncodeImpl<kBits, false, false>(a);
}

LOOM_AVX512 int64_t Encode(const IntEncodeArgs& a) {
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
LOOM_AVX512 void DecodeBits(const IntDecodeArgs& a) {
  const bool h = a.format.hadamard;
  if (a.add) return h ? DecodeImpl<kBits, true, true>(a) : DecodeImpl<kBits, false, true>(a);
  return h ? DecodeImpl<kBits, true, false>(a) : DecodeImpl<kBits, false, false>(a);
}

LOOM_AVX512 void Decode(const IntDecodeArgs& a) {
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

const IntKernels* Avx512IntKernels() {
  static constexpr IntKernels kAvx512 = {"avx512", &Encode, &Decode, &UniformRange};
  return &kAvx512;
}

}  // namespace loom::compress

#else  // not x86-64

namespace loom::compress {
const IntKernels* Avx512IntKernels() { return nullptr; }
}  // namespace loom::compress

#endif
