// TwoLevelCollectives: SDP4Bit's two-level gradient quantization (TLq, TLq-HS with a Hadamard
// inter codec): a quantized reduce-scatter done in two stages, first inside a "node" of
// `node_size` consecutive ranks with a fine codec (int8), then across nodes with a coarse one
// (int4) on the node-reduced values; plus the matching all-gather and all-reduce.
//
//   auto tl = TwoLevelCollectives::Create(&comm, int8.get(), int4_hadamard.get(),
//                                         {.node_size = 2, .seed = cfg.seed});
//   // grad holds P * shard floats; this rank's shard ends up reduced (averaged) in place.
//   LOOM_RETURN_IF_ERROR((*tl)->ReduceScatter(grad, shard, grad + shard * rank, ReduceOp::kAvg,
//                                             {.step = step, .chunk = bucket}));
//
// Ranks: global rank r = node n * L + local l (L = node_size, N = P / L nodes). The intra group
// of r is the L ranks of its node, its rail is the N ranks with the same local index l.
// ReduceScatter (block j of the input belongs to rank j):
//   1. intra (codec `intra`): local rank l receives, for every node m, the node's sum of block
//      m * L + l: one quantized all-to-all reduce-scatter inside the node (each element
//      quantized once by its source, summed in fp32 by the receiver, own part exact);
//   2. inter (codec `inter`): along the rail, rank (m, l) receives the sum over nodes of block
//      m * L + l: the node sums are quantized once more, at the coarse codec.
// So every element passes one fine and at most one coarse quantization, and the coarse one
// sees N - 1 node sums instead of P - 1 single inputs: its error is about sqrt((P - L) / (P - 1))
// of single-level int4's (tested). Stage 1 moves (L-1)/L of the buffer inside the node at 8
// bits; stage 2 moves (N-1)/N of a 1/L-sized buffer across nodes at 4 bits.
// AllGather: each rank encodes its block once (codec `inter`), the bytes travel along the rail
// and then inside the node (no re-encoding: a node link carries N blocks, the slow link N - 1),
// every rank decodes every block: all ranks end bit-identical. AllReduce = ReduceScatter +
// server-side error feedback on the owner's encoding + AllGather.
// The groups are sub-communicators over the same Transport (their own slot space), built at
// Create; node_size 1 or P degenerates to one level.
// Errors: node_size must divide the world (else kInvalidArgument naming both). The first call
// checks that every rank uses the same codecs and node_size. A stage that fails on some ranks
// (NaN/Inf, corrupt blocks) still completes its exchanges and poisons the next stage, so every
// rank returns an error and none is left waiting; messages name the stage and its global ranks.
// Thread-safety: one thread at a time (like Communicator), which must own `comm` meanwhile.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "loom/comm/communicator.h"
#include "loom/compress/codec.h"
#include "loom/compress/collectives/quantized_collectives.h"
#include "loom/compress/decorators/error_feedback.h"

namespace loom::compress {

class TwoLevelCollectives {
 public:
  struct Options {
    int node_size = 1;  // consecutive ranks per node; must divide the world size
    uint64_t seed = 0;
    bool worker_error_feedback = false;  // per stage, per (chunk, block), as QuantizedCollectives
    bool server_error_feedback = true;   // AllReduce: the owner's encoding of its reduced block
    comm::CommOptions comm;              // tag and timeout of the underlying collectives
    int64_t pipeline_bytes = int64_t{4} << 20;  // per stage, see QuantizedCollectives::Options
    Executor* executor = nullptr;               // ditto
  };

  // `intra` and `inter` must outlive the object; they may be the same codec.
  static Result<std::unique_ptr<TwoLevelCollectives>> Create(comm::Communicator* comm,
                                                             const Codec* intra,
                                                             const Codec* inter, Options options);
  ~TwoLevelCollectives();

  // `in` holds size() * count floats; rank r receives block r reduced (kSum or kAvg) in `out`
  // (count floats; may alias block r of `in`).
  Status ReduceScatter(const float* in, int64_t count, float* out, comm::ReduceOp op,
                       const CollectiveCall& call);
  // Each rank contributes `in` (count floats, encoded once with `inter`); `out` holds size() *
  // count floats and receives block j = decode(rank j's encoding) (added when `add`).
  Status AllGather(const float* in, int64_t count, float* out, bool add,
                   const CollectiveCall& call);
  // buf holds n floats, n a multiple of size(); every rank ends with the same reduced values.
  Status AllReduce(float* buf, int64_t n, comm::ReduceOp op, const CollectiveCall& call);

  // Both stages and the gathers together.
  CollectiveStats stats() const;
  const Codec& intra_codec() const { return *intra_; }
  const Codec& inter_codec() const { return *inter_; }
  int node_size() const { return options_.node_size; }

 private:
  TwoLevelCollectives(comm::Communicator* comm, const Codec* intra, const Codec* inter,
                      Options options);
  Status CheckConfigAgrees();
  // Encodes `in` (with server-side error feedback for `chunk` when `feedback`) and gathers
  // every rank's encoding; a failed encoding (or a failed `prior` step on this rank) travels as
  // an error block that fails every rank.
  Status GatherEncoded(const float* in, int64_t count, float* out, bool add, bool feedback,
                       const CollectiveCall& call, const Status& prior);

  comm::Communicator* comm_;
  const Codec* intra_;
  const Codec* inter_;
  Options options_;
  int nodes_ = 1;
  std::unique_ptr<comm::Communicator> intra_comm_, rail_comm_;  // nullptr when of size 1
  std::unique_ptr<QuantizedCollectives> intra_qc_, rail_qc_;
  bool config_checked_ = false;
  std::vector<float> staged_, node_sums_;
  std::vector<char> gather_send_, rail_recv_, node_recv_;
  std::map<int64_t, std::unique_ptr<ErrorFeedback>> server_ef_;  // per chunk
  CollectiveStats gather_stats_;
};

}  // namespace loom::compress
