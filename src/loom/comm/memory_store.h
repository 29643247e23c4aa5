// MemoryStore: a process-local Store for ranks that are threads of one test process.
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <map>

#include "loom/base/mutex.h"
#include "loom/comm/store.h"

namespace loom::comm {

class MemoryStore final : public Store {
 public:
  Status Set(const std::string& key, const std::vector<char>& value) override;
  Result<std::vector<char>> Get(const std::string& key,
                                std::chrono::milliseconds timeout) override;
  Status Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  std::string Describe() const override { return "memory://"; }

 private:
  Mutex mu_;
  CondVar cv_;
  std::map<std::string, std::vector<char>> map_ LOOM_GUARDED_BY(mu_);
};

// A view of `base` with every key prefixed by `prefix` + "/". Does not own `base`.
std::unique_ptr<Store> PrefixedStore(Store* base, const std::string& prefix);

}  // namespace loom::comm
