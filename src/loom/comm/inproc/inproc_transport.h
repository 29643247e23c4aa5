// In-process transport: N ranks as N threads of one process, for unit tests of everything built
// on Communicator (the conformance suite, ZeRO, bucketing) without sockets.
//
//   auto comms = MakeInProcCommunicators(4);      // comms[r] belongs to the thread of rank r
//   hub->KillRank(2);                             // simulate a dead peer (see InProcHub)
//
// Sends are eager (the payload is copied at PostSend); a receive waits for the matching message.
// Messages on one (src, dst, slot) are matched in posting order.
// Thread-safety: the hub is shared and internally synchronised; each transport belongs to one
// rank's thread.
#pragma once

#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "loom/base/mutex.h"
#include "loom/comm/communicator.h"
#include "loom/comm/transport.h"

namespace loom::comm {

class InProcHub {
 public:
  explicit InProcHub(int world_size) : world_size_(world_size), dead_(world_size, false) {}
  int world_size() const { return world_size_; }
  // Marks `rank` as failed: pending and future receives from it fail with kUnavailable.
  void KillRank(int rank);

 private:
  friend class InProcTransport;
  friend class InProcRecv;
  using Key = std::tuple<int, int, uint64_t>;  // src, dst, slot
  struct Queue {
    uint64_t next_send = 0;
    uint64_t next_recv = 0;
    std::map<uint64_t, std::vector<char>> messages;  // by send sequence number
  };

  const int world_size_;
  Mutex mu_;
  CondVar cv_;
  std::map<Key, Queue> queues_ LOOM_GUARDED_BY(mu_);
  std::vector<bool> dead_ LOOM_GUARDED_BY(mu_);
};

class InProcTransport final : public Transport {
 public:
  InProcTransport(std::shared_ptr<InProcHub> hub, int rank) : hub_(std::move(hub)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return hub_->world_size(); }
  std::string_view name() const override { return "inproc"; }
  std::unique_ptr<PendingOp> PostSend(const void* data, size_t bytes, int peer,
                                      uint64_t slot) override;
  std::unique_ptr<PendingOp> PostRecv(void* data, size_t bytes, int peer, uint64_t slot) override;

 private:
  std::shared_ptr<InProcHub> hub_;
  int rank_;
};

// One communicator per rank over a fresh hub; `hub` (optional) receives the hub for fault tests.
std::vector<std::unique_ptr<Communicator>> MakeInProcCommunicators(
    int world_size, CommunicatorOptions options = {}, std::shared_ptr<InProcHub>* hub = nullptr);

}  // namespace loom::comm
