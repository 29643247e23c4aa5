// QuantizedCollectives: reduce-scatter, all-gather and all-reduce whose blocks travel encoded by a
// Codec (SDP4Bit / ZeRO++ style), over loom's Communicator.
//
//   QuantizedCollectives qc(&comm, codec.get(), {.seed = cfg.seed});
//   // grad holds P * shard floats; this rank's shard ends up reduced (averaged) in place.
//   LOOM_RETURN_IF_ERROR(qc.ReduceScatter(grad, shard, grad + shard * rank, comm::ReduceOp::kAvg,
//                                         {.step = step, .chunk = bucket}));
//
// ReduceScatter ("quantized reduce-scatter as all-to-all"): rank r encodes block j of its input
// for every j != r, one all-to-all moves the fixed-size encoded blocks, and each owner sums the
// decoded blocks in fp32 (its own block exact). Every element is quantized once, by its source;
// a requantizing ring would add P - 1 quantization errors.
// AllGather: every rank encodes its block; one all-gather; every rank decodes every block, its
// own included, so all ranks end with identical values. `add` decodes into the output (weight
// differences, qWD) instead of overwriting it (plain quantized weights, qW).
// AllReduce: ReduceScatter, then each owner re-encodes its reduced block with server-side error
// feedback and AllGather: every rank ends bit-identical.
// Error feedback (Options): worker-side keeps, per (chunk, destination block), what the encoding
// of that block dropped and adds it to the next call with the same chunk; server-side does the
// same for the owner's re-encoding in AllReduce.
//
// Pipelining (Options::pipeline_bytes): a call whose blocks exceed pipeline_bytes of fp32 is cut
// into pieces (the same slice of every block; boundaries on whole codec groups) that go through
// the stages above one after another: a helper thread encodes piece c + 1 while the calling
// thread exchanges piece c, and decodes piece c while piece c + 1 travels. For AllReduce the
// calling thread issues all-to-all(c + 1) before all-gather(c), so the owner's reduce and
// re-encode of piece c overlap the next exchange too. Only the calling thread touches the
// Communicator; the piece sizes follow from the call's sizes, so every rank issues the same
// collectives. Each piece is a separate encoding with its own header and random stream, so the
// result differs from the unpipelined one by rounding draws only (same error bounds); codecs
// without groups (sign without :g, topk, randk) then scale or select per piece.
// Calls that fit one piece run entirely on the calling thread, as before.
//
// Checks, all failing on every rank (no rank is left waiting in a collective):
// - the first call exchanges every rank's codec spec and names both specs and ranks on mismatch;
// - a rank whose input holds NaN/Inf sends an error block instead of data (in the piece that
//   holds it); every rank returns an error naming that rank and the element; every rank stops
//   after the exchange that carried the error block, so all stop at the same collective;
// - an AllReduce owner whose reduced block cannot be re-encoded (a sum that overflowed, a corrupt
//   block from a peer) sends an error block in the all-gather: every rank fails;
// - decoding rejects corrupt or mismatched headers (codec.h), naming the source rank; such a local
//   error does not stop the exchange of the remaining pieces (peers would wait for them).
// After an error the output and the error-feedback residuals of that call's chunk hold partial
// results.
// Thread-safety: one thread at a time (like Communicator); holds scratch buffers and residuals.
// The pipeline's helper thread (Options::executor, or one owned here, started on the first call
// that pipelines) only runs encode/decode work; every call waits for its work before returning.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "loom/base/thread_pool.h"
#include "loom/comm/communicator.h"
#include "loom/compress/codec.h"
#include "loom/compress/decorators/error_feedback.h"

namespace loom::compress {

struct CollectiveCall {
  int64_t step = 0;   // keys stochastic rounding (with the seed, the rank and the block)
  int64_t chunk = 0;  // names the buffer (e.g. the bucket); error-feedback state is per chunk
  std::string what;   // for errors, e.g. "bucket 3"
};

struct CollectiveStats {
  int64_t calls = 0;
  int64_t wire_bytes_sent = 0;  // encoded bytes this rank handed to the transport
  int64_t fp32_bytes = 0;       // what the same calls would have sent uncompressed
  // Seconds spent encoding / decoding (on the helper thread when pipelined: they overlap comm_s
  // then, and encode_s + decode_s + comm_s exceeds the wall time of the calls).
  double encode_s = 0;
  double decode_s = 0;
  double comm_s = 0;  // in collectives, on the calling thread
  double wait_s = 0;  // the calling thread waiting for encode/decode work: compute not hidden

  CollectiveStats& operator+=(const CollectiveStats& o) {
    calls += o.calls;
    wire_bytes_sent += o.wire_bytes_sent;
    fp32_bytes += o.fp32_bytes;
    encode_s += o.encode_s;
    decode_s += o.decode_s;
    comm_s += o.comm_s;
    wait_s += o.wait_s;
    return *this;
  }
};

class QuantizedCollectives {
 public:
  struct Options {
    uint64_t seed = 0;
    bool worker_error_feedback = false;
    bool server_error_feedback = true;  // AllReduce only
    comm::CommOptions comm;             // tag and timeout of the underlying collectives
    // Pieces of at most this many bytes of fp32 per block (rounded down to whole codec groups);
    // <= 0: never pipeline. Default 4 MiB: a 64 MiB all-reduce over 2 ranks is 8 pieces.
    int64_t pipeline_bytes = int64_t{4} << 20;
    // Runs the pipeline's encode/decode work; nullptr (default): a one-thread pool owned by this
    // object. Never the executor the calling thread itself runs on (the call waits for its work).
    Executor* executor = nullptr;
  };

  QuantizedCollectives(comm::Communicator* comm, const Codec* codec, Options options);
  ~QuantizedCollectives();

  // `in` holds size() * count floats; rank r receives block r reduced (kSum or kAvg) in `out`
  // (count floats; may alias block r of `in`).
  Status ReduceScatter(const float* in, int64_t count, float* out, comm::ReduceOp op,
                       const CollectiveCall& call);
  // Each rank contributes `in` (count floats); `out` holds size() * count floats and receives
  // block j = decode(rank j's encoding), added to it when `add`. `in` may alias block rank().
  Status AllGather(const float* in, int64_t count, float* out, bool add,
                   const CollectiveCall& call);
  // buf holds n floats, n a multiple of size() (pad buckets to world x group: see
  // PaddedCount); every rank ends with the same reduced values.
  Status AllReduce(float* buf, int64_t n, comm::ReduceOp op, const CollectiveCall& call);

  const CollectiveStats& stats() const { return stats_; }
  const Codec& codec() const { return *codec_; }

 private:
  class PipelinedCall;  // one call cut into pieces (quantized_collectives.cc)
  // Elements [begin, begin + count) of every block, sent as `wire` bytes per block; `offset` is
  // the sum of the earlier pieces' `wire`.
  struct Piece {
    int64_t begin = 0, count = 0, wire = 0, offset = 0;
  };

  Status CheckSpecsAgree();
  std::vector<Piece> Pieces(int64_t count) const;
  Executor* PipelineExecutor();
  using ResidualTable = std::map<std::pair<int64_t, int>, std::unique_ptr<ErrorFeedback>>;
  ErrorFeedback* Residual(ResidualTable& table, int64_t chunk, int block, int64_t count);

  comm::Communicator* comm_;
  const Codec* codec_;
  Options options_;
  bool specs_checked_ = false;
  // Encoded pieces: the all-to-all's send and receive blocks, the all-gather's own block and
  // everybody's. All pieces of a call have their own bytes (several are in flight at once).
  std::vector<char> scatter_send_, scatter_recv_, gather_send_, gather_recv_;
  ResidualTable worker_ef_, server_ef_;
  CollectiveStats stats_;
  InlineExecutor inline_;             // calls of one piece
  std::unique_ptr<ThreadPool> pool_;  // when options_.executor is null; started on first use
};

// The first call's check that every rank uses the same codec: one all-gather of the specs; on a
// mismatch every rank returns kFailedPrecondition naming both specs and ranks. Shared by the
// compressed collectives (QuantizedCollectives, PushPull).
Status CheckCodecAgreement(comm::Communicator* comm, const Codec& codec,
                           const comm::CommOptions& opts);

// The smallest multiple of world * group (group = the codec's, 1 for float codecs) >= n: bucket
// sizes that split into whole groups on every rank.
int64_t PaddedCount(int64_t n, int world, const CodecSpec& spec);

}  // namespace loom::compress
