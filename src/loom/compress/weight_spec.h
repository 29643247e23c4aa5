// WeightSpec: how ZeRO's parameter all-gather is compressed (`compress.weights=`).
//
//   none                    full precision (bf16 or fp32, as the trainer computes)
//   qwd<b>[:codec options]  SDP4Bit's qWD: each owner sends the b-bit quantized *difference*
//                           between its new master weights and the copy every rank already
//                           holds; every rank adds the decoded differences, so the copies stay
//                           identical and the quantization error is corrected at the next step
//                           (the difference is taken against the copy, not the old master)
//   <codec spec>            qW: the weights themselves are quantized (the ablation SDP4Bit
//                           compares against; error does not carry over), e.g. int4:g2048
//
// e.g. "qwd4:g2048" = differences as int4 in groups of 2048, stochastic rounding.
// Thread-safety: value type.
#pragma once

#include <string>
#include <string_view>

#include "loom/base/status.h"
#include "loom/compress/codec_spec.h"

namespace loom::compress {

struct WeightSpec {
  bool difference = false;  // qWD
  CodecSpec codec;          // kind kNone: uncompressed

  bool enabled() const { return codec.kind != CodecKind::kNone; }
  std::string ToString() const;  // canonical form
};

Result<WeightSpec> ParseWeightSpec(std::string_view text);

}  // namespace loom::compress
