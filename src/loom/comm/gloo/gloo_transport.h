// Gloo TCP transport: ranks as processes (or hosts), connected through Gloo's full-mesh
// rendezvous over a loom Store. This is the production backend.
//
//   LOOM_ASSIGN_OR_RETURN(auto store, OpenStore(world.store_url, world.run_id));
//   LOOM_ASSIGN_OR_RETURN(auto comm, ConnectGloo(world, *store, {}));
//
// Thread-safety: as Communicator (one thread at a time).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "loom/comm/communicator.h"
#include "loom/comm/store.h"
#include "loom/comm/world.h"

namespace loom::comm {

struct GlooOptions {
  // Address to bind and advertise. Empty: LOOM_HOST_ADDR, else 127.0.0.1 when every rank is on
  // this host, else this host's name as Gloo resolves it.
  std::string host_addr;
  // Rendezvous and default operation timeout; 0: LOOM_COMM_TIMEOUT_MS (default 300 s).
  std::chrono::milliseconds timeout{0};
  CommunicatorOptions comm;
};

// Connects this rank to all others. Fails with kDeadlineExceeded naming the missing ranks'
// keys when peers do not show up in time.
Result<std::unique_ptr<Communicator>> ConnectGloo(const WorldInfo& world, Store& store,
                                                  GlooOptions options = {});

}  // namespace loom::comm
