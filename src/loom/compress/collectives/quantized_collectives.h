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
// Checks, all failing on every rank (no rank is left waiting in a collective):
// - the first call exchanges every rank's codec spec and names both specs and ranks on mismatch;
// - a rank whose input holds NaN/Inf sends an error block instead of data; every rank returns an
//   error naming that rank and the element;
// - decoding rejects corrupt or mismatched headers (codec.h), naming the source rank.
// Thread-safety: one thread at a time (like Communicator); holds scratch buffers and residuals.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

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
  double encode_s = 0;
  double decode_s = 0;
  double comm_s = 0;

  CollectiveStats& operator+=(const CollectiveStats& o) {
    calls += o.calls;
    wire_bytes_sent += o.wire_bytes_sent;
    fp32_bytes += o.fp32_bytes;
    encode_s += o.encode_s;
    decode_s += o.decode_s;
    comm_s += o.comm_s;
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
  Status CheckSpecsAgree();
  // Encodes block `src` (count floats) into `dst`, with error feedback from `ef` when non-null.
  // On failure writes an error block (so peers learn why) and returns the error.
  Status EncodeBlock(const float* src, int64_t count, char* dst, int64_t block_bytes,
                     const StepContext& ctx, ErrorFeedback* ef);
  Status DecodeBlock(const char* src, int64_t block_bytes, int64_t count, float* out, bool add,
                     int from, const CollectiveCall& call);
  using ResidualTable = std::map<std::pair<int64_t, int>, std::unique_ptr<ErrorFeedback>>;
  ErrorFeedback* Residual(ResidualTable& table, int64_t chunk, int block, int64_t count);
  Status AllGatherImpl(const float* in, int64_t count, float* out, bool add,
                       const CollectiveCall& call, ErrorFeedback* ef);
  StepContext Ctx(const CollectiveCall& call, int64_t block) const;

  comm::Communicator* comm_;
  const Codec* codec_;
  Options options_;
  bool specs_checked_ = false;
  std::vector<char> send_, recv_;
  ResidualTable worker_ef_, server_ef_;
  CollectiveStats stats_;
};

// The smallest multiple of world * group (group = the codec's, 1 for float codecs) >= n: bucket
// sizes that split into whole groups on every rank.
int64_t PaddedCount(int64_t n, int world, const CodecSpec& spec);

}  // namespace loom::compress
