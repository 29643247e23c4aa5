// Communicator: loom's collectives over a point-to-point Transport.
//
//   LOOM_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> comm, ConnectGloo(world, store, {}));
//   LOOM_RETURN_IF_ERROR(comm->AllReduce(TensorView::Of(grad, n), ReduceOp::kAvg));
//   LOOM_RETURN_IF_ERROR(comm->ReduceScatter(in, out, ReduceOp::kSum, {.timeout = 10s, .tag = 1}));
//
// The algorithms are loom's own and run unchanged on every transport: pipelined rings (reduce-
// scatter + all-gather, chunks split into segments so the reduction of one segment overlaps the
// transfer of the next) for large buffers; a direct exchange reduced in rank order for small
// ones; a pipelined chain for broadcast; pairwise exchange for all-to-all; a dissemination
// barrier. Every rank ends with bit-identical results.
//
// Errors: every call has a deadline (CommOptions::timeout, else the communicator default, else
// LOOM_COMM_TIMEOUT_MS). A timeout or a dead peer returns a Status naming the operation, this
// rank, the peer and the bytes. After the first failure the communicator is broken and every
// later call fails fast with kFailedPrecondition quoting the first error (recreate it to recover).
//
// Thread-safety: not thread-safe; use one Communicator from one thread at a time. Operations must
// be issued in the same order on all ranks (as with MPI/NCCL); `tag` separates independent
// sequences of operations on one transport.
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/base/tensor_view.h"
#include "loom/comm/reduce_kernels.h"
#include "loom/comm/transport.h"

namespace loom::comm {

enum class Algorithm {
  kAuto,    // direct below CommunicatorOptions::direct_max_bytes, ring above
  kRing,    // pipelined ring
  kDirect,  // every rank exchanges its whole buffer with every other rank
};

struct CommOptions {
  std::chrono::milliseconds timeout{0};  // 0: the communicator's default timeout
  uint32_t tag = 0;                      // < 2^24; separates independent operation streams
  Algorithm algorithm = Algorithm::kAuto;
  int64_t segment_bytes = 0;             // ring pipelining unit; 0: communicator default
};

struct CommunicatorOptions {
  std::chrono::milliseconds default_timeout{0};  // 0: LOOM_COMM_TIMEOUT_MS, else 300 s
  int64_t segment_bytes = 1 << 20;               // default ring pipelining unit
  int64_t direct_max_bytes = 32 << 10;           // kAuto uses the direct algorithm up to this
};

// Told about every operation a Communicator finishes (successfully or not), e.g. so the trainer
// can report collectives to the metrics agent. Called on the thread that issued the operation,
// after it returned; must be cheap and must not call back into the communicator.
struct CollectiveObserver {
  virtual ~CollectiveObserver() = default;
  // op: "allreduce", "broadcast", "reduce_scatter", "allgather", "alltoall", "barrier", "send",
  // "recv". bytes: the operation's size on this rank (the buffer for allreduce, broadcast, send,
  // recv; the input for reduce_scatter and alltoall; the output for allgather; 0 for barrier).
  // seq: this communicator's operation counter (0, 1, 2, ...), equal on all ranks for the same
  // operation because all ranks issue operations in the same order. seconds: time in the call.
  virtual void OnCollective(const char* op, int64_t bytes, int64_t seq, double seconds,
                            bool ok) = 0;
};

class Communicator {
 public:
  Communicator(std::unique_ptr<Transport> transport, CommunicatorOptions options = {});
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  std::string_view backend() const { return transport_->name(); }
  Transport* transport() { return transport_.get(); }
  // OK while usable; the first error once broken.
  const Status& broken_status() const { return broken_; }

  Status Send(const TensorView& data, int dst, const CommOptions& opts = {});
  Status Recv(const TensorView& data, int src, const CommOptions& opts = {});
  Status Broadcast(const TensorView& data, int root, const CommOptions& opts = {});
  Status AllReduce(const TensorView& data, ReduceOp op, const CommOptions& opts = {});
  // in.numel() == size() * out.numel(); rank r receives block r reduced. `out` may alias
  // block r of `in`.
  Status ReduceScatter(const TensorView& in, const TensorView& out, ReduceOp op,
                       const CommOptions& opts = {});
  // out.numel() == size() * in.numel(); `in` may alias block rank() of `out`.
  Status AllGather(const TensorView& in, const TensorView& out, const CommOptions& opts = {});
  // counts[i] elements from rank i, concatenated in rank order into `out`.
  Status AllGatherV(const TensorView& in, const TensorView& out, std::span<const int64_t> counts,
                    const CommOptions& opts = {});
  // Block i of `in` goes to rank i; block j of `out` comes from rank j. Equal block sizes.
  Status AllToAll(const TensorView& in, const TensorView& out, const CommOptions& opts = {});
  Status AllToAllV(const TensorView& in, std::span<const int64_t> in_counts, const TensorView& out,
                   std::span<const int64_t> out_counts, const CommOptions& opts = {});
  Status Barrier(const CommOptions& opts = {});

  // Reports every later operation to `observer` (not owned; nullptr removes it). With no observer
  // the only cost is a counter increment.
  void SetObserver(CollectiveObserver* observer) { observer_ = observer; }
  // Operations issued so far (the next operation's sequence number).
  int64_t next_seq() const { return next_seq_; }

 private:
  struct Call;  // per-operation context (deadline, slots, error wrapping)

  template <typename Body>
  Status Run(const char* op, int64_t bytes, const std::string& what, const CommOptions& opts,
             Body body);
  template <typename Body>
  Status RunUnobserved(const char* op, const std::string& what, const CommOptions& opts,
                       Body body);

  Status RingAllReduce(Call& call, char* buf, DType dtype, int64_t n, ReduceOp op);
  Status DirectAllReduce(Call& call, char* buf, DType dtype, int64_t n, ReduceOp op);
  Status RingReduceScatter(Call& call, const char* in, char* out, DType dtype, int64_t m,
                           ReduceOp op);
  Status RingAllGatherV(Call& call, char* out, DType dtype, std::span<const int64_t> counts);
  char* Scratch(size_t bytes);

  std::unique_ptr<Transport> transport_;
  CommunicatorOptions options_;
  int rank_;
  int size_;
  Status broken_;
  std::vector<char> scratch_;
  CollectiveObserver* observer_ = nullptr;
  int64_t next_seq_ = 0;
};

}  // namespace loom::comm
