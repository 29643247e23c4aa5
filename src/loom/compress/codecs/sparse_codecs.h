// Sparsifying codecs: k = ceil(fraction * n) of the n elements travel, the rest decode to 0.
//
// TopKCodec: the k largest |x| (ties broken by the lower index), sent as k uint32 indices in
// ascending order, then their k fp32 values. Decoding rejects indices out of range or not
// strictly ascending (a corrupt buffer).
// RandKCodec: k values at indices both sides derive from a 64-bit key (sent, 8 bytes) by
// systematic sampling: index_j = floor((j + u) * n / k) for one u ~ U[0, 1) drawn from Philox
// under the key, so every element is kept with probability exactly k / n and no index is sent.
// The key comes from the StepContext (seed, step, rank, chunk): ranks and steps differ.
// `unbiased` multiplies kept values by n / k (an unbiased, high-variance estimate); without it
// the codec is meant for error feedback (Stich et al.'s sparsified SGD with memory).
// Both are biased without error feedback: use compress.error_feedback=true.
// Thread-safety: immutable (TopK uses a thread_local scratch index array).
#pragma once

#include "loom/compress/codec.h"

namespace loom::compress {

class TopKCodec : public Codec {
 public:
  explicit TopKCodec(CodecSpec spec) : Codec(spec) {}
  int64_t MaxEncodedBytes(int64_t n) const override;
  Result<int64_t> Encode(const float* x, int64_t n, char* out,
                         const StepContext& ctx) const override;

 protected:
  Status DecodeInto(const char* in, int64_t bytes, int64_t n, float* y, bool add) const override;
};

class RandKCodec : public Codec {
 public:
  explicit RandKCodec(CodecSpec spec) : Codec(spec) {}
  int64_t MaxEncodedBytes(int64_t n) const override;
  Result<int64_t> Encode(const float* x, int64_t n, char* out,
                         const StepContext& ctx) const override;

 protected:
  Status DecodeInto(const char* in, int64_t bytes, int64_t n, float* y, bool add) const override;
};

// k for n elements at `fraction`: ceil(fraction * n), at least 1 and at most n (0 for n = 0).
int64_t KeptCount(float fraction, int64_t n);

}  // namespace loom::compress
