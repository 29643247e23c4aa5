// PushPull: BytePS-Compress's two-way compressed all-reduce through parameter-server shards,
// colocated (every rank hosts the server of one shard, on its own thread: push_pull_server.h).
//
//   PushPull ps(&comm, codec.get(), {.seed = cfg.seed, .worker_error_feedback = true});
//   // buf holds n floats, n a multiple of size() (pad to world x group: PaddedCount)
//   LOOM_RETURN_IF_ERROR(ps.AllReduce(buf, n, comm::ReduceOp::kAvg, {.step = s, .chunk = b}));
//
// The buffer is split into P shards; shard s belongs to rank s's server. The calling thread (the
// worker) encodes every other shard, piece by piece (worker-side error feedback per (chunk,
// shard)), and pushes each piece to its server; its own shard goes to the colocated server
// unencoded. Each server sums the pushes of a piece in fp32 as they come in, applies server-side
// error feedback, encodes the sum once and sends it to every worker (the pull); workers decode.
// Every element is encoded twice (by its source and by its server) and every rank ends with
// bit-identical values. Pieces (Options::partition_bytes, BytePS's partition size) pipeline the
// call: the worker encodes piece c + 1 while piece c travels and is summed by the servers, and
// the servers' work overlaps the transfers of later pieces. With codec `none` the result equals
// the Communicator's direct all-reduce bit for bit (the server sums in rank order).
//
// Compared with QuantizedCollectives::AllReduce (the same two encodings, as all-to-all + all-
// gather on the calling thread plus a helper), the sum and the re-encoding run on the server
// thread: "CPU offload" of the server half, messages instead of collectives.
//
// Checks, all failing on every rank (no rank is left waiting): the first call compares every
// rank's codec spec (CheckCodecAgreement: names both specs and ranks); a NaN/Inf in a worker's
// input becomes an error frame in its pushes (or in its server's pulls, for its own shard), and
// every rank returns an error naming that rank and the element; a corrupt or mismatched encoding
// is named by the rank that sent it. A dead or silent peer fails the call with kUnavailable or
// kDeadlineExceeded after at most Options::comm.timeout (else LOOM_COMM_TIMEOUT_MS, else 300 s).
// After an error the buffer and the chunk's residuals hold partial results.
//
// Transport: the Communicator's Transport (Gloo TCP or in-process) point-to-point, on PushPull's
// own slots; the Communicator itself is used only for the codec check (first call).
// Thread-safety: one thread at a time (like Communicator); one PushPull per (communicator, tag)
// in use at a time, because its messages are matched by order on the tag's slots.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "loom/comm/communicator.h"
#include "loom/compress/codec.h"
#include "loom/compress/collectives/push_pull_server.h"
#include "loom/compress/collectives/quantized_collectives.h"
#include "loom/compress/decorators/error_feedback.h"

namespace loom::compress {

class PushPull {
 public:
  struct Options {
    uint64_t seed = 0;
    bool worker_error_feedback = false;
    bool server_error_feedback = true;
    comm::CommOptions comm;  // tag (slots and the codec check) and timeout of the whole call
    // Pieces of at most this many bytes of fp32 per shard (whole codec groups); <= 0: one piece.
    // Default 4 MiB, BytePS's partition size (BYTEPS_PARTITION_BYTES 4096000).
    int64_t partition_bytes = int64_t{4} << 20;
  };

  PushPull(comm::Communicator* comm, const Codec* codec, Options options);
  ~PushPull();  // stops the server thread
  PushPull(const PushPull&) = delete;
  PushPull& operator=(const PushPull&) = delete;

  // buf holds n floats, n a multiple of size(); every rank ends with the same reduced values
  // (kSum or kAvg).
  Status AllReduce(float* buf, int64_t n, comm::ReduceOp op, const CollectiveCall& call);

  // Worker and server together: wire_bytes_sent = pushes + pulls (frames included);
  // fp32_bytes = what the same messages hold in fp32 (2 (P - 1) / P x the buffer, as a ring).
  const CollectiveStats& stats() const { return stats_; }
  const Codec& codec() const { return *codec_; }

 private:
  // Encodes piece c of every other shard into its push frame; on failure every push frame of
  // the piece is an error frame (every server learns it) and the error is returned.
  Status EncodePushes(const float* buf, int64_t count, const std::vector<push_pull::Piece>& pieces,
                      int c, const CollectiveCall& call);
  ErrorFeedback* Residual(int64_t chunk, int shard, int64_t count);

  comm::Communicator* comm_;
  const Codec* codec_;
  const Options options_;
  const int P_, r_;
  bool specs_checked_ = false;
  PushPullServer server_;
  std::vector<char> push_send_;  // P blocks of the frames of all pieces (block r unused)
  std::vector<char> pull_recv_;  // the same for the pulls
  std::map<std::pair<int64_t, int>, std::unique_ptr<ErrorFeedback>> worker_ef_;
  CollectiveStats stats_;
};

}  // namespace loom::compress
