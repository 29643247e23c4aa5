// ErrorFeedback: keeps what compression dropped and adds it to the next input (EF-SGD, 1-bit
// Adam, BytePS-Compress's worker- and server-side feedback).
//
//   ErrorFeedback ef(codec.get(), n);
//   LOOM_ASSIGN_OR_RETURN(int64_t bytes, ef.Encode(grad, wire, ctx));  // encodes grad + residual
//
// Invariant (tested): the sum of everything decoded so far plus the current residual equals the
// sum of all inputs, up to fp32 rounding of the residual update.
// Thread-safety: one owner; holds the residual of one buffer.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/compress/codec.h"

namespace loom::compress {

class ErrorFeedback {
 public:
  ErrorFeedback(const Codec* codec, int64_t n) : codec_(codec), residual_(n, 0.f), work_(n) {}
  // Encodes x + residual into `out` (codec->MaxEncodedBytes(n) bytes) and keeps the new residual.
  Result<int64_t> Encode(const float* x, char* out, const StepContext& ctx);
  const std::vector<float>& residual() const { return residual_; }
  void Reset() { std::fill(residual_.begin(), residual_.end(), 0.f); }

 private:
  const Codec* codec_;
  std::vector<float> residual_;
  std::vector<float> work_;
};

}  // namespace loom::compress
