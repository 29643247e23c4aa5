// Transport: the swappable point-to-point layer under Communicator.
//
// A transport moves bytes between ranks: PostSend/PostRecv start a transfer tagged with a 64-bit
// slot and return a PendingOp to wait on. Messages between one pair of ranks on one slot are
// matched in the order they were posted. loom's collective algorithms (communicator.cc) are
// written once over this interface; backends are `gloo/` (Gloo's TCP transport, real processes)
// and `inproc/` (ranks as threads of one process, for unit tests).
//
// Thread-safety: a Transport may be used by one thread at a time per slot stream; Communicator
// uses it from one thread at a time.
#pragma once

#include <memory>
#include <string_view>

#include "loom/base/clock.h"
#include "loom/base/status.h"

namespace loom::comm {

class PendingOp {
 public:
  virtual ~PendingOp() = default;
  // Blocks until the transfer completes, the deadline passes (kDeadlineExceeded) or the peer
  // fails (kUnavailable). Errors name this rank, the peer, the direction and the byte count.
  virtual Status Wait(Deadline deadline) = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string_view name() const = 0;

  // `data` must stay valid and unmodified (send) / untouched (recv) until Wait returns.
  // Zero-byte transfers are allowed.
  virtual std::unique_ptr<PendingOp> PostSend(const void* data, size_t bytes, int peer,
                                              uint64_t slot) = 0;
  virtual std::unique_ptr<PendingOp> PostRecv(void* data, size_t bytes, int peer,
                                              uint64_t slot) = 0;
};

}  // namespace loom::comm
