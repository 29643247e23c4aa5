// CodecSpec: a compression codec and its parameters, parsed from the `compress.grad=` syntax.
//
//   none | fp16 | bf16 | int<b>[:g<G>][:nearest|:stochastic][:hadamard]
//   e.g. "int4:g128:hadamard" (4-bit, groups of 128, stochastic rounding, Hadamard-32 rotation)
//
// int codecs: b in {8, 4, 2}; G in [32, 4096] and a multiple of 32; rounding defaults to
// stochastic (unbiased, as SDP4Bit and ZeRO++ use); hadamard requires G % 32 == 0.
// Errors name the spec and what is wrong.
// Thread-safety: value type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "loom/base/status.h"

namespace loom::compress {

enum class CodecKind : uint8_t { kNone = 0, kFp16 = 1, kBf16 = 2, kInt = 3 };

struct CodecSpec {
  CodecKind kind = CodecKind::kNone;
  int bits = 32;
  int group = 0;            // int: elements per scale
  bool stochastic = true;   // int: stochastic (unbiased) vs nearest rounding
  bool hadamard = false;    // int: rotate 32-element blocks before quantizing

  std::string ToString() const;  // canonical form, parses back to the same spec
  bool operator==(const CodecSpec&) const = default;
};

Result<CodecSpec> ParseCodecSpec(std::string_view spec);

}  // namespace loom::compress
