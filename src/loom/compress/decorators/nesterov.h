// NesterovMomentum: momentum applied on the worker before compression, as BytePS-Compress's
// `nesterov_momentum` compressor decorator (dist-EF-SGDM, arXiv 1905.10936):
//
//   m <- mu * m + g;   sent = g + mu * m   (with the updated m)
//
// so the codec (and error feedback, when used) sees the Nesterov look-ahead instead of the raw
// gradient. Composition, worker side: NesterovMomentum -> ErrorFeedback -> codec.
//
//   NesterovMomentum nesterov(0.9f, n);
//   nesterov.Apply(grad);                                    // grad becomes g + mu * m
//   LOOM_ASSIGN_OR_RETURN(int64_t bytes, ef.Encode(grad, wire, ctx));
//
// Not for servers (the momentum belongs to each worker's gradient stream), and the optimizer's
// own momentum should then be off (BytePS's rule), or momentum is applied twice.
// Pieces of a buffer may be applied separately with ApplyRange (each element's momentum is its
// own). mu = 0 makes Apply the identity.
// Thread-safety: one owner; ApplyRange on disjoint ranges may run concurrently.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace loom::compress {

class NesterovMomentum {
 public:
  // mu in [0, 1) (checked by the caller's config validation; LOOM_CHECKed here).
  NesterovMomentum(float mu, int64_t n);

  // x[0, n) <- x + mu * m after m <- mu * m + x, for the whole buffer.
  void Apply(float* x) { ApplyRange(x, 0, static_cast<int64_t>(momentum_.size())); }
  // The same for x[0, n) against momentum[begin, begin + n).
  void ApplyRange(float* x, int64_t begin, int64_t n);

  float mu() const { return mu_; }
  const std::vector<float>& momentum() const { return momentum_; }
  void Reset() { std::fill(momentum_.begin(), momentum_.end(), 0.f); }

 private:
  float mu_;
  std::vector<float> momentum_;
};

}  // namespace loom::compress
