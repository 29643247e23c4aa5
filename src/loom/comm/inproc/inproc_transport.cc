#include "loom/comm/inproc/inproc_transport.h"

#include <cstring>

namespace loom::comm {

void InProcHub::KillRank(int rank) {
  {
    MutexLock lock(&mu_);
    dead_[rank] = true;
  }
  cv_.NotifyAll();
}

namespace {

class DoneOp final : public PendingOp {
 public:
  explicit DoneOp(Status s) : s_(std::move(s)) {}
  Status Wait(Deadline) override { return s_; }

 private:
  Status s_;
};

}  // namespace

class InProcRecv final : public PendingOp {
 public:
  InProcRecv(InProcHub* hub, InProcHub::Key key, uint64_t ticket, void* data, size_t bytes)
      : hub_(hub), key_(key), ticket_(ticket), data_(data), bytes_(bytes) {}

  Status Wait(Deadline deadline) override {
    if (done_) return OkStatus();
    auto [src, dst, slot] = key_;
    std::vector<char> msg;
    {
      MutexLock lock(&hub_->mu_);
      auto& q = hub_->queues_[key_];
      auto ready = [&]() LOOM_REQUIRES(hub_->mu_) {
        return q.messages.count(ticket_) > 0 || hub_->dead_[src];
      };
      bool ok = hub_->cv_.WaitUntil(&hub_->mu_, deadline, ready);
      if (!ok) {
        return DeadlineExceededError("rank " + std::to_string(dst) +
                                     " timed out waiting to receive " + std::to_string(bytes_) +
                                     " bytes from rank " + std::to_string(src));
      }
      auto it = q.messages.find(ticket_);
      if (it == q.messages.end()) {
        return UnavailableError("rank " + std::to_string(dst) + ": peer rank " +
                                std::to_string(src) + " failed while rank " + std::to_string(dst) +
                                " waited to receive " + std::to_string(bytes_) + " bytes");
      }
      msg = std::move(it->second);
      q.messages.erase(it);
    }
    if (msg.size() != bytes_) {
      return InternalError("rank " + std::to_string(dst) + " expected " + std::to_string(bytes_) +
                           " bytes from rank " + std::to_string(src) + " but the message has " +
                           std::to_string(msg.size()) +
                           " (mismatched collective calls across ranks?)");
    }
    if (bytes_) std::memcpy(data_, msg.data(), bytes_);
    done_ = true;
    return OkStatus();
  }

 private:
  InProcHub* hub_;
  InProcHub::Key key_;
  uint64_t ticket_;
  void* data_;
  size_t bytes_;
  bool done_ = false;
};

std::unique_ptr<PendingOp> InProcTransport::PostSend(const void* data, size_t bytes, int peer,
                                                     uint64_t slot) {
  {
    MutexLock lock(&hub_->mu_);
    if (hub_->dead_[peer]) {
      return std::make_unique<DoneOp>(UnavailableError(
          "rank " + std::to_string(rank_) + ": peer rank " + std::to_string(peer) +
          " failed; cannot send " + std::to_string(bytes) + " bytes"));
    }
    auto& q = hub_->queues_[{rank_, peer, slot}];
    const char* p = static_cast<const char*>(data);
    q.messages.emplace(q.next_send++, std::vector<char>(p, p + bytes));
  }
  hub_->cv_.NotifyAll();
  return std::make_unique<DoneOp>(OkStatus());
}

std::unique_ptr<PendingOp> InProcTransport::PostRecv(void* data, size_t bytes, int peer,
                                                     uint64_t slot) {
  InProcHub::Key key{peer, rank_, slot};
  uint64_t ticket;
  {
    MutexLock lock(&hub_->mu_);
    ticket = hub_->queues_[key].next_recv++;
  }
  return std::make_unique<InProcRecv>(hub_.get(), key, ticket, data, bytes);
}

std::vector<std::unique_ptr<Communicator>> MakeInProcCommunicators(
    int world_size, CommunicatorOptions options, std::shared_ptr<InProcHub>* hub_out) {
  auto hub = std::make_shared<InProcHub>(world_size);
  if (hub_out) *hub_out = hub;
  std::vector<std::unique_ptr<Communicator>> out;
  for (int r = 0; r < world_size; ++r) {
    out.push_back(std::make_unique<Communicator>(std::make_unique<InProcTransport>(hub, r), options));
  }
  return out;
}

}  // namespace loom::comm
