// SummableAllReduce: all-reduce for codecs whose encodings can be summed without decoding the
// whole buffer first (Codec::Summable(): none, fp16, bf16). The buffer is encoded once into the
// codec's wire format and loom's pipelined ring all-reduce (comm, Algorithm::kRing) runs on its
// 16-bit payload: every hop adds the incoming 16-bit values to its own in fp32 and rounds once
// back to 16 bits (comm/reduce_kernels.h), so the wire stays 16-bit and no per-group scales are
// needed. Each rounding is relative (2^-11 for fp16, 2^-8 for bf16), so unlike the int
// requantizing ring (ring_allreduce_ablation.h) the error stays at the format's precision.
// Horovod's and PyTorch's fp16 compression work this way; compare with QuantizedCollectives'
// fp16 all-to-all, which moves the same bytes in a reduce-scatter + all-gather of its own.
//
//   SummableAllReduce sum(&comm, fp16.get(), {});
//   LOOM_RETURN_IF_ERROR(sum.AllReduce(buf, n, ReduceOp::kAvg, {.what = "bucket 3"}));
//
// Errors: a codec that is not summable is rejected (kInvalidArgument naming the spec). A rank
// whose input holds NaN/Inf (or a sum that overflows fp16's 65504) still runs the all-reduce
// with NaN payload, so every rank sees a non-finite result and fails; the rank that held it
// names its element. Thread-safety: one thread at a time, which must own `comm` meanwhile.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/comm/communicator.h"
#include "loom/compress/codec.h"
#include "loom/compress/collectives/quantized_collectives.h"

namespace loom::compress {

class SummableAllReduce {
 public:
  struct Options {
    comm::CommOptions comm;  // tag, timeout; algorithm kAuto lets small buffers go direct
  };

  // Fails unless codec->Summable().
  static Result<std::unique_ptr<SummableAllReduce>> Create(comm::Communicator* comm,
                                                           const Codec* codec, Options options);

  // Every rank ends with the same values (buf: n floats, any n).
  Status AllReduce(float* buf, int64_t n, comm::ReduceOp op, const CollectiveCall& call);

  const CollectiveStats& stats() const { return stats_; }

 private:
  SummableAllReduce(comm::Communicator* comm, const Codec* codec, Options options)
      : comm_(comm), codec_(codec), options_(options) {}

  comm::Communicator* comm_;
  const Codec* codec_;
  Options options_;
  std::vector<char> wire_;
  CollectiveStats stats_;
};

}  // namespace loom::compress
