// PushPullServer: the parameter-server shard that every rank hosts for PushPull (BytePS's
// colocated mode), on its own thread, and the push/pull wire protocol both sides speak.
//
// A PushPull call on P ranks splits the buffer into P shards; rank s's server owns shard s. For
// each piece of its shard (push_pull::SplitShard) the server receives the P - 1 encoded pushes,
// decode-adds them in fp32 together with its own rank's values (exact, never encoded), applies
// server-side error feedback, encodes the sum once and sends the same bytes to every other rank
// (the pull); its own rank's shard receives decode(those bytes), so every rank holds identical
// values. Piece c + 1's pushes travel while the server works on piece c.
//
//   PushPullServer server(comm->transport(), codec, {.seed = 1, .tag = 7});
//   server.Start();
//   server.Submit({.shard = buf + rank * count, .count = count, .pieces = pieces, ...});
//   ... push the other shards, pull the results ...
//   PushPullServer::JobResult r = server.Wait();   // before touching buf's own shard again
//
// Pushes may arrive in any order: every receive is posted when the job starts, each on its own
// (peer, piece) buffer. The sum is taken in source-rank order, so it is deterministic (a push that
// arrives early waits in its buffer). Any failure in a piece (a peer's error frame, a corrupt or
// mismatched encoding, a non-finite own value, a sum that cannot be re-encoded, a transport error)
// turns that piece's pull into an error frame naming the rank that found it, so every rank fails;
// the server still completes every receive and send of the job (each wait bounded by the job's
// deadline), so no peer is left waiting.
//
// Transport: Transport::PostSend/PostRecv directly (comm's Gloo TCP or in-process point-to-point),
// on slots of its own (push_pull::Slot) — the Communicator is single-threaded and stays with the
// worker thread. Per (peer, slot) messages match in posting order; all ranks issue jobs in the
// same order.
// Thread-safety: Submit/Wait from one thread (the worker), alternating; the job runs on the
// server's thread and touches only job.shard and the server's own buffers and residuals.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loom/base/clock.h"
#include "loom/base/mutex.h"
#include "loom/base/thread_pool.h"
#include "loom/comm/reduce_kernels.h"
#include "loom/comm/transport.h"
#include "loom/compress/codec.h"
#include "loom/compress/collectives/quantized_collectives.h"
#include "loom/compress/decorators/error_feedback.h"

namespace loom::compress {

namespace push_pull {

// Every push and pull message is a frame: a 16-byte prefix {magic "LPP1", kind (0 data, else the
// error's StatusCode, so a peer's timeout stays kDeadlineExceeded on every rank),
// origin rank (who found an error), piece} + a body of the piece's wire size (at least
// kMinBodyBytes, so that error texts fit): the codec's encoding of the piece, or the error text
// (NUL-padded, truncated to the body).
inline constexpr int64_t kFrameBytes = 16;
inline constexpr int64_t kMinBodyBytes = 496;

// Elements [begin, begin + count) of a shard, `wire` = the codec's encoded size of that many;
// `offset`: where the piece's frame starts in a buffer holding the frames of all pieces.
struct Piece {
  int64_t begin = 0, count = 0, wire = 0, offset = 0;
  int64_t FrameBytes() const { return kFrameBytes + (wire > kMinBodyBytes ? wire : kMinBodyBytes); }
};

// Pieces of at most `partition_bytes` of fp32 (rounded down to whole codec groups; <= 0: one
// piece). Equal on every rank for equal arguments.
std::vector<Piece> SplitShard(int64_t count, const Codec& codec, int64_t partition_bytes);
// Bytes of the frames of all pieces.
int64_t FramesBytes(const std::vector<Piece>& pieces);

void WriteDataFrame(char* frame, int origin, int piece);
void WriteErrorFrame(char* frame, const Piece& p, int origin, int piece, const Status& error);
// OK for a data frame; for an error frame the error its origin reported ("rank <origin>
// reports: ...");
// kDataLoss when the prefix is not a frame of this piece (mismatched calls across ranks).
Status ReadFrame(const char* frame, const Piece& p, int piece, int from);

// Transport slots of PushPull with this tag: pushes (worker -> server) and pulls (server ->
// worker). Top byte 0xC1: apart from the Communicator's slots (0xC0) and Gloo's own algorithms.
uint64_t PushSlot(uint32_t tag);
uint64_t PullSlot(uint32_t tag);

// `timeout`, else LOOM_COMM_TIMEOUT_MS, else 300 s (the Communicator's rule).
std::chrono::milliseconds ResolveTimeout(std::chrono::milliseconds timeout);
// How much longer than the servers a worker waits for pulls: a server that gives up on a silent
// peer at the deadline still gets its error frame (naming the peer) to the other workers.
std::chrono::milliseconds WorkerGrace(std::chrono::milliseconds timeout);

}  // namespace push_pull

class PushPullServer {
 public:
  struct Options {
    uint64_t seed = 0;                  // keys stochastic rounding of the server's encodings
    bool server_error_feedback = true;  // keep what the re-encoding dropped, per chunk
    uint32_t tag = 0;                   // slots (push_pull::PushSlot/PullSlot)
  };

  struct Job {
    float* shard = nullptr;  // this rank's shard of the worker's buffer: its input, then the result
    int64_t count = 0;       // elements of every shard
    std::vector<push_pull::Piece> pieces;
    comm::ReduceOp op = comm::ReduceOp::kSum;  // kSum or kAvg (the Communicator's division)
    CollectiveCall call;
    Deadline deadline;  // every wait of the job
  };

  struct JobResult {
    Status status;
    CollectiveStats stats;  // wire bytes of the pulls, decode (sum) and encode seconds
  };

  PushPullServer(comm::Transport* transport, const Codec* codec, Options options);
  ~PushPullServer();  // Stop()
  PushPullServer(const PushPullServer&) = delete;
  PushPullServer& operator=(const PushPullServer&) = delete;

  void Start();
  // Waits for a submitted job, then joins the thread. Idempotent.
  void Stop();
  // Runs `job` on the server thread. At most one job at a time: Wait() before the next Submit.
  void Submit(Job job);
  // The submitted job's result, once it finished (it always finishes: its waits have deadlines).
  JobResult Wait();

 private:
  JobResult Run(const Job& job);
  // Sums piece c into acc_ from the received pushes (`recvs`: piece-major, P per piece) and the
  // own shard, then encodes it into the pull frame and writes what the peers will decode into
  // the own shard.
  Status ServePiece(const Job& job, int c, std::vector<std::unique_ptr<comm::PendingOp>>& recvs,
                    char* pull_frame, JobResult* result);
  ErrorFeedback* Residual(int64_t chunk, int64_t count);

  comm::Transport* transport_;
  const Codec* codec_;
  const Options options_;
  const int P_, r_;
  std::vector<char> push_recv_;  // P blocks of the frames of all pieces (block r unused)
  std::vector<char> pull_send_;  // the frames of all pieces, the same bytes to every peer
  std::vector<float> acc_;       // the fp32 sum of the shard
  std::map<int64_t, std::unique_ptr<ErrorFeedback>> server_ef_;  // per chunk
  ThreadPool thread_;

  Mutex mu_;
  CondVar cv_;
  bool busy_ LOOM_GUARDED_BY(mu_) = false;
  JobResult result_ LOOM_GUARDED_BY(mu_);
};

}  // namespace loom::compress
