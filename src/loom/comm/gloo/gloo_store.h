// Gloo-backed Stores (FileStore, RedisStore) and the adapter that lets Gloo's rendezvous use any
// loom Store. Internal to comm: public headers never include gloo.
#pragma once

#include <memory>
#include <string>

#include <gloo/rendezvous/store.h>

#include "loom/comm/store.h"

namespace loom::comm::internal {

// "file" stores take a directory path; "redis" stores host and port.
Result<std::unique_ptr<Store>> OpenGlooFileStore(const std::string& dir,
                                                 const std::string& prefix);
Result<std::unique_ptr<Store>> OpenGlooRedisStore(const std::string& host, int port,
                                                  const std::string& prefix);

// Presents a loom Store to gloo::rendezvous::Context::connectFullMesh. Errors become
// gloo::IoException (the only way through Gloo's interface) and are turned back into a Status by
// the caller.
class GlooStoreAdapter final : public gloo::rendezvous::Store {
 public:
  explicit GlooStoreAdapter(loom::comm::Store* store, std::chrono::milliseconds timeout)
      : store_(store), timeout_(timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  loom::comm::Store* store_;
  std::chrono::milliseconds timeout_;
};

}  // namespace loom::comm::internal
