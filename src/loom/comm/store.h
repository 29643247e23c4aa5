// Store: the key-value rendezvous ranks use to find each other (addresses, run metadata).
//
// Backed by Gloo's stores: FileStore on a directory all ranks can see (the default; one host or a
// shared filesystem) and RedisStore (`redis://host:port`, hosts without a shared filesystem).
// The in-memory store serves tests with ranks as threads.
//
//   LOOM_ASSIGN_OR_RETURN(auto store, OpenStore("file:///tmp/run42", "train"));
//   LOOM_RETURN_IF_ERROR(store->Set("addr/0", bytes));
//   LOOM_ASSIGN_OR_RETURN(auto v, store->Get("addr/1", std::chrono::seconds(30)));
//
// Keys are namespaced by the prefix given to OpenStore, so several jobs or groups can share one
// server or directory. Thread-safety: implementations are safe to call from several threads.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "loom/base/status.h"

namespace loom::comm {

class Store {
 public:
  virtual ~Store() = default;

  virtual Status Set(const std::string& key, const std::vector<char>& value) = 0;
  // Blocks until `key` exists or `timeout` passes (kDeadlineExceeded naming the key).
  virtual Result<std::vector<char>> Get(const std::string& key,
                                        std::chrono::milliseconds timeout) = 0;
  virtual Status Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  // "file:///dir", "redis://host:port" or "memory://name", plus the prefix.
  virtual std::string Describe() const = 0;
};

// Opens a store from a URL: "file:///abs/dir" (or a bare path), "redis://host:port",
// "memory://name" (process-local, shared by every OpenStore of the same name).
// Every key is prefixed with `prefix` + "/".
Result<std::unique_ptr<Store>> OpenStore(const std::string& url, const std::string& prefix);

}  // namespace loom::comm
