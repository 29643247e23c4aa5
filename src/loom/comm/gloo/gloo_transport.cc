#include "loom/comm/gloo/gloo_transport.h"

#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>

#include "loom/base/env_params.h"
#include "loom/base/logging.h"
#include "loom/comm/gloo/gloo_store.h"
#include "loom/comm/gloo/gloo_transport_internal.h"

namespace loom::comm {
namespace internal {
namespace {

Status FromGlooError(const std::string& what, const std::exception& e) {
  std::string msg = what + " (gloo: " + e.what() + ")";
  std::string w = e.what();
  if (w.find("Timed out") != std::string::npos || w.find("timed out") != std::string::npos ||
      w.find("imeout") != std::string::npos) {
    return DeadlineExceededError(msg);
  }
  return UnavailableError(msg);
}

class GlooOp final : public PendingOp {
 public:
  GlooOp(std::unique_ptr<gloo::transport::UnboundBuffer> buf, bool send, int rank, int peer,
         size_t bytes)
      : buf_(std::move(buf)), send_(send), rank_(rank), peer_(peer), bytes_(bytes) {}

  Status Wait(Deadline deadline) override {
    if (done_) return OkStatus();
    auto timeout = TimeLeft(deadline);
    if (timeout.count() == 0) timeout = std::chrono::milliseconds(1);
    std::string what =
        send_ ? "rank " + std::to_string(rank_) + " sending " + std::to_string(bytes_) +
                    " bytes to rank " + std::to_string(peer_)
              : "rank " + std::to_string(rank_) + " receiving " + std::to_string(bytes_) +
                    " bytes from rank " + std::to_string(peer_);
    try {
      bool ok = send_ ? buf_->waitSend(timeout) : buf_->waitRecv(timeout);
      if (!ok) return AbortedError(what + ": aborted");
    } catch (const gloo::Exception& e) {
      return FromGlooError(what + " failed", e);
    } catch (const std::exception& e) {
      return FromGlooError(what + " failed", e);
    }
    done_ = true;
    return OkStatus();
  }

 private:
  std::unique_ptr<gloo::transport::UnboundBuffer> buf_;
  bool send_;
  int rank_;
  int peer_;
  size_t bytes_;
  bool done_ = false;
};

class FailedOp final : public PendingOp {
 public:
  explicit FailedOp(Status s) : s_(std::move(s)) {}
  Status Wait(Deadline) override { return s_; }

 private:
  Status s_;
};

}  // namespace

GlooTransport::~GlooTransport() = default;

std::unique_ptr<PendingOp> GlooTransport::PostSend(const void* data, size_t bytes, int peer,
                                                   uint64_t slot) {
  try {
    // Gloo's UnboundBuffer takes a mutable pointer but only reads it for sends.
    auto buf = context_->createUnboundBuffer(const_cast<void*>(data), bytes);
    buf->send(peer, slot);
    return std::make_unique<GlooOp>(std::move(buf), true, rank(), peer, bytes);
  } catch (const std::exception& e) {
    return std::make_unique<FailedOp>(FromGlooError(
        "rank " + std::to_string(rank()) + " cannot send to rank " + std::to_string(peer), e));
  }
}

std::unique_ptr<PendingOp> GlooTransport::PostRecv(void* data, size_t bytes, int peer,
                                                   uint64_t slot) {
  try {
    auto buf = context_->createUnboundBuffer(data, bytes);
    buf->recv(peer, slot);
    return std::make_unique<GlooOp>(std::move(buf), false, rank(), peer, bytes);
  } catch (const std::exception& e) {
    return std::make_unique<FailedOp>(FromGlooError(
        "rank " + std::to_string(rank()) + " cannot receive from rank " + std::to_string(peer),
        e));
  }
}

}  // namespace internal

Result<std::unique_ptr<Communicator>> ConnectGloo(const WorldInfo& world, Store& store,
                                                  GlooOptions options) {
  Env env = Env::Process();
  std::string host = options.host_addr;
  if (host.empty()) host = env.Get("LOOM_HOST_ADDR").value_or("");
  if (host.empty() && world.local_world_size == world.world_size) host = "127.0.0.1";
  auto timeout = options.timeout;
  if (timeout.count() <= 0) {
    LOOM_ASSIGN_OR_RETURN(int64_t ms, env.GetInt("LOOM_COMM_TIMEOUT_MS", 300000));
    timeout = std::chrono::milliseconds(ms);
  }
  if (options.comm.default_timeout.count() <= 0) options.comm.default_timeout = timeout;

  std::shared_ptr<gloo::transport::Device> device;
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = host;
    device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    return UnavailableError("rank " + std::to_string(world.rank) +
                            ": cannot create Gloo TCP device on '" + host + "': " + e.what() +
                            " (set LOOM_HOST_ADDR to an address of this host)");
  }
  auto context = std::make_shared<gloo::rendezvous::Context>(world.rank, world.world_size);
  context->setTimeout(timeout);
  internal::GlooStoreAdapter adapter(&store, timeout);
  try {
    context->connectFullMesh(adapter, device);
  } catch (const std::exception& e) {
    std::string w = e.what();
    std::string msg = "rank " + std::to_string(world.rank) + " of " +
                      std::to_string(world.world_size) + ": rendezvous through " +
                      store.Describe() + " failed: " + w;
    if (w.find("imeout") != std::string::npos || w.find("DEADLINE") != std::string::npos) {
      return DeadlineExceededError(msg + " (did every rank start, with the same LOOM_STORE?)");
    }
    return UnavailableError(msg);
  }
  LOOM_LOG(DEBUG, "comm") << "rank " << world.rank << " connected to " << world.world_size - 1
                          << " peers via " << device->str();
  return std::make_unique<Communicator>(std::make_unique<internal::GlooTransport>(context),
                                        options.comm);
}

}  // namespace loom::comm
