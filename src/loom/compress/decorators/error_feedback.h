// ErrorFeedback: keeps what compression dropped and adds it to the next input (EF-SGD, 1-bit
// Adam, BytePS-Compress's worker- and server-side feedback).
//
//   ErrorFeedback ef(codec.get(), n);
//   LOOM_ASSIGN_OR_RETURN(int64_t bytes, ef.Encode(grad, wire, ctx));  // encodes grad + residual
//
// Invariant (tested): the sum of everything decoded so far plus the current residual equals the
// sum of all inputs, up to fp32 rounding of the residual update.
// A buffer sent in pieces (QuantizedCollectives' pipelining) encodes each piece with EncodeRange;
// pieces are independent: the residual of one range never touches another's.
// A failed encode (e.g. a NaN in x) leaves the residual as it was.
// Thread-safety: one owner; calls on disjoint ranges may run concurrently (the pipeline's helper
// threads), calls on overlapping ranges may not.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/compress/codec.h"

namespace loom::compress {

class ErrorFeedback {
 public:
  ErrorFeedback(const Codec* codec, int64_t n) : codec_(codec), residual_(n, 0.f), work_(n) {}
  // Encodes x + residual into `out` (codec->MaxEncodedBytes(n) bytes) and keeps the new residual.
  Result<int64_t> Encode(const float* x, char* out, const StepContext& ctx) {
    return EncodeRange(x, 0, static_cast<int64_t>(residual_.size()), out, ctx);
  }
  // The same for x[0, n) against residual[begin, begin + n) (out: codec->MaxEncodedBytes(n)
  // bytes). When `decoded` is non-null it receives decode(out), what every receiver gets; it may
  // alias x (an owner replacing its values by what it sent saves decoding its own block).
  Result<int64_t> EncodeRange(const float* x, int64_t begin, int64_t n, char* out,
                              const StepContext& ctx, float* decoded = nullptr);
  const std::vector<float>& residual() const { return residual_; }
  void Reset() { std::fill(residual_.begin(), residual_.end(), 0.f); }

 private:
  const Codec* codec_;
  std::vector<float> residual_;
  std::vector<float> work_;
};

}  // namespace loom::compress
