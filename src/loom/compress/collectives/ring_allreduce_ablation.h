// RequantizingRingAllReduce: the naive way to compress a ring all-reduce, kept only as an
// ablation (issue #3, spec §7.2): every hop of the ring's reduce-scatter decodes the partial sum
// it receives, adds its own values in fp32 and re-encodes the new partial sum for the next hop.
// The chunk that ends at its owner has been quantized P - 1 times, at growing magnitudes, so
// the error grows with the world size, unlike QuantizedCollectives' all-to-all, where each
// element is quantized once by its source (the test asserts the growth for P = 2 vs 8).
//
//   RequantizingRingAllReduce ring(&comm, codec.get(), {.seed = 1});
//   LOOM_RETURN_IF_ERROR(ring.AllReduce(buf, n, ReduceOp::kAvg, {.step = step, .chunk = 0}));
//
// Algorithm (P ranks, n = P * count): reduce-scatter in P - 1 ring steps (rank r sends chunk
// (r - s) mod P to r + 1 and adds the chunk (r - s - 1) mod P it receives from r - 1); the
// owner of chunk (r + 1) mod P then encodes its reduced chunk once more and the all-gather
// forwards those bytes unchanged for P - 1 steps; every rank (the owner too) decodes the same
// bytes, so all ranks end bit-identical. Messages are fixed-size (codec->MaxEncodedBytes).
// Point-to-point over the communicator's Transport in a slot space of its own (0xC3).
// Errors: a rank that cannot encode (NaN/Inf) sends error blocks from then on; they travel the
// ring, so every rank returns an error naming the first failing rank; no rank is left waiting.
// Thread-safety: one thread at a time, which must own `comm` meanwhile.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/comm/communicator.h"
#include "loom/compress/codec.h"
#include "loom/compress/collectives/quantized_collectives.h"

namespace loom::compress {

class RequantizingRingAllReduce {
 public:
  struct Options {
    uint64_t seed = 0;
    comm::CommOptions comm;  // tag (< 2^24) and timeout (0: 300 s) of the ring's messages
  };

  RequantizingRingAllReduce(comm::Communicator* comm, const Codec* codec, Options options)
      : comm_(comm), codec_(codec), options_(options) {}

  // buf holds n floats, n a multiple of size(); every rank ends with the same reduced values.
  Status AllReduce(float* buf, int64_t n, comm::ReduceOp op, const CollectiveCall& call);

  const CollectiveStats& stats() const { return stats_; }

 private:
  // Sends send_ to the next rank and receives recv_ from the previous one (step `hop`).
  Status Exchange(int64_t hop, Deadline deadline);

  comm::Communicator* comm_;
  const Codec* codec_;
  Options options_;
  std::vector<char> send_, recv_;
  int64_t calls_ = 0;
  CollectiveStats stats_;
};

}  // namespace loom::compress
