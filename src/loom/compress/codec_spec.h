// CodecSpec: a compression codec and its parameters, parsed from the `compress.grad=` syntax.
//
//   none | fp16 | bf16 | int<b>[:g<G>][:nearest|:stochastic][:hadamard]
//   | sign[:g<G>][:l2] | topk:<fraction> | randk:<fraction>[:unbiased] | powersgd:r<R>
//   | qsgd:s<levels>[:g<G>]
//   e.g. "int4:g128:hadamard" (4-bit, groups of 128, stochastic rounding, Hadamard-32 rotation)
//
// int codecs: b in {8, 4, 2}; G in [32, 4096] and a multiple of 32; rounding defaults to
// stochastic (unbiased, as SDP4Bit and ZeRO++ use); hadamard requires G % 32 == 0.
// sign: 1 bit per element and one fp32 scale per group (G a multiple of 32, default: the whole
// buffer); the scale is mean|x| (signSGD with scale / 1-bit Adam) or, with `l2`, ||x|| / sqrt(n).
// topk: the ceil(fraction * n) largest |x| with their indices. randk: ceil(fraction * n) values
// at indices drawn from the shared seed (not sent); `unbiased` scales them by n / k.
// fraction in (0, 1]. Sign and sparse codecs are biased: pair them with error feedback.
// qsgd: QSGD (Alistarh et al.) with s levels (s in [1, 127]) and one L2 norm per group of G
// elements (G a multiple of 32 in [32, 2^20], default 512 as in the paper's experiments);
// stochastic rounding of s|x|/||x|| to an integer level, unbiased; ceil(log2(2s + 1)) bits per
// element incl. the sign (s = 1: 2; 2-3: 3; 4-7: 4; 8-15: 5; 16-31: 6; 32-63: 7; 64-127: 8).
// powersgd: rank-R PowerSGD (R in [1, 64]); a low-rank all-reduce of gradient matrices rather
// than an element codec (compress/collectives/powersgd.h), so MakeCodec refuses it.
// Errors name the spec and what is wrong.
// Thread-safety: value type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "loom/base/status.h"

namespace loom::compress {

enum class CodecKind : uint8_t {
  kNone = 0, kFp16 = 1, kBf16 = 2, kInt = 3, kSign = 4, kTopK = 5, kRandK = 6, kPowerSgd = 7,
  kQsgd = 8
};

struct CodecSpec {
  CodecKind kind = CodecKind::kNone;
  int bits = 32;
  int group = 0;            // int: elements per scale
  bool stochastic = true;   // int: stochastic (unbiased) vs nearest rounding
  bool hadamard = false;    // int: rotate 32-element blocks before quantizing
  bool l2_scale = false;    // sign: ||x|| / sqrt(n) instead of mean|x|
  bool unbiased = false;    // randk: scale kept values by n / k
  float fraction = 0;       // topk, randk: share of the elements sent
  int rank = 0;             // powersgd
  int levels = 0;           // qsgd: s, levels per sign (1..127)

  std::string ToString() const;  // canonical form, parses back to the same spec
  bool operator==(const CodecSpec&) const = default;
};

Result<CodecSpec> ParseCodecSpec(std::string_view spec);

inline constexpr int kMaxQsgdLevels = 127;
inline constexpr int kDefaultQsgdGroup = 512;
inline constexpr int kMaxQsgdGroup = 1 << 20;
// Bits per QSGD element: the levels -s..s in ceil(log2(2s + 1)) bits.
int QsgdBits(int levels);

}  // namespace loom::compress
