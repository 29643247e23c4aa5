// IntKernels: the whole-buffer loops of IntCodec (codecs/int_codec.h), one implementation per
// instruction set, chosen at run time.
//
//   const IntKernels& k = SelectIntKernels();   // best for this CPU, or what LOOM_SIMD asks for
//   int64_t bad = k.encode({format, x, n, seed, stream, payload, scales});
//   k.decode({format, payload, scales, n, y, /*add=*/true});
//
// Implementations: "scalar" (the reference, plain C++, any CPU), "avx2" (AVX2 + FMA) and
// "avx512" (AVX-512 F+BW+VL+DQ), each in its own file compiled for its ISA by function attributes,
// so the binary still runs on baseline x86-64. Every implementation produces byte-identical
// payloads and scales and bit-identical decoded floats (same IEEE operations in the same order;
// the kernel files are compiled with -ffp-contract=off; the only FMAs are Hadamard butterflies
// with +-1, which round exactly like the add or subtract); int_kernels_test.cc checks this.
// No heap allocation: about 20 KB of stack per call (one rotated group, 512 uniforms).
// `uniforms` exposes the Philox draws alone, identical across implementations.
//
// Semantics (the reference, kernels/int_kernels_scalar.cc). m = n, or n rounded up to a multiple
// of 32 with `hadamard` (x zero-padded). Per group of `group` elements starting at b:
//   v      = x[b, b + len), each 32-block multiplied by H32/sqrt(32) with `hadamard` (Hadamard32)
//   amax   = max |v|; a non-finite v makes encode return the group's index
//   scale  = amax / qmax, qmax = 2^(bits-1) - 1; flushed to 0 below FLT_MIN (then q = 0)
//   inv    = scale > 0 ? 1 / scale : 0
//   t      = v * inv (+ u with `stochastic`), clamped to [-qmax, qmax]
//   q      = floor(t) (stochastic) or round-half-to-even(t) (nearest)
// u for element j of the buffer is PhiloxStream(seed, stream).NextUniform() of its j-th draw:
// word j % 4 of Philox4x32-10 block j / 4 (counter {j/4 lo, j/4 hi, stream lo, stream hi}, key
// = seed), u = (word >> 8) * 2^-24. Decode: v = float(q) * scale, then Hadamard32 per block, then
// y = v or y += v for the first n elements.
//
// Thread-safety: kernels are pure functions of their arguments; the selection is made once
// (thread-safe static) and never changes.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "loom/base/env_params.h"
#include "loom/base/status.h"

namespace loom::compress {

inline constexpr int kMaxIntGroup = 4096;

// What an int-codec buffer holds (the CodecSpec fields that matter to the kernels).
struct IntFormat {
  int bits = 4;            // 8, 4 or 2
  int group = 128;         // multiple of 32 in [32, kMaxIntGroup]
  bool stochastic = true;  // stochastic (floor(t + u)) vs nearest rounding
  bool hadamard = false;   // rotate each 32-element block before quantizing
};

// Elements on the wire: n, or n rounded up to a multiple of 32 with `hadamard`.
inline int64_t IntWireElements(int64_t n, const IntFormat& f) {
  return f.hadamard ? (n + 31) / 32 * 32 : n;
}
inline int64_t IntGroups(int64_t m, const IntFormat& f) { return (m + f.group - 1) / f.group; }
inline int64_t IntPayloadBytes(int64_t m, const IntFormat& f) { return (m * f.bits + 7) / 8; }

struct IntEncodeArgs {
  IntFormat format;
  const float* x = nullptr;  // n elements, any alignment
  int64_t n = 0;
  uint64_t seed = 0;           // Philox key (stochastic rounding only)
  uint64_t stream = 0;         // Philox stream
  uint8_t* payload = nullptr;  // IntPayloadBytes(m) bytes
  char* scales = nullptr;      // 4 * IntGroups(m) bytes of fp32, unaligned
};

struct IntDecodeArgs {
  IntFormat format;
  const uint8_t* payload = nullptr;
  const char* scales = nullptr;
  int64_t n = 0;
  float* y = nullptr;  // n elements
  bool add = false;    // y += decoded instead of y = decoded
};

struct IntKernels {
  const char* name;  // "scalar", "avx2", "avx512"
  // Quantizes and packs x; returns -1, or the index of the first group holding a non-finite
  // value (NaN/Inf in x, or a Hadamard rotation that overflowed), the output then unspecified.
  int64_t (*encode)(const IntEncodeArgs& args);
  void (*decode)(const IntDecodeArgs& args);
  // The stochastic-rounding uniforms of buffer elements first .. first + n - 1 (see Semantics;
  // `first` a multiple of 32) into u[0, n); u must have room for n rounded up to 32. QSGD draws
  // them (codecs/qsgd_codec.h).
  void (*uniforms)(uint64_t seed, uint64_t stream, int64_t first, int64_t n, float* u);
};

// The reference implementation; always available.
const IntKernels& ScalarIntKernels();

// Every implementation this CPU can run, scalar first, then in increasing width.
std::vector<const IntKernels*> AvailableIntKernels();

// The implementation called `name`: kInvalidArgument for an unknown name, kFailedPrecondition
// when this CPU (or OS) lacks its instructions; both messages list what is available here.
Result<const IntKernels*> FindIntKernels(std::string_view name);

// LOOM_SIMD=scalar|avx2|avx512 from `env`, or the widest available when unset or "auto".
Result<const IntKernels*> ChooseIntKernels(const Env& env);

// ChooseIntKernels(Env::Process()), made once per process; aborts with ChooseIntKernels's message
// when LOOM_SIMD names something this machine cannot run.
const IntKernels& SelectIntKernels();

// In-place orthonormal Hadamard transform of 32 values (self-inverse): butterflies with strides
// 1, 2, 4, 8, 16 (v[j], v[j+h]) -> (v[j] + v[j+h], v[j] - v[j+h]), then * (1 / sqrt(32)).
void Hadamard32(float* v);

}  // namespace loom::compress
