#include "loom/comm/memory_store.h"

#include "loom/base/clock.h"

namespace loom::comm {

Status MemoryStore::Set(const std::string& key, const std::vector<char>& value) {
  {
    MutexLock lock(&mu_);
    map_[key] = value;
  }
  cv_.NotifyAll();
  return OkStatus();
}

Result<std::vector<char>> MemoryStore::Get(const std::string& key,
                                           std::chrono::milliseconds timeout) {
  LOOM_RETURN_IF_ERROR(Wait({key}, timeout));
  MutexLock lock(&mu_);
  return map_.at(key);
}

Status MemoryStore::Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  MutexLock lock(&mu_);
  auto all_present = [&]() LOOM_REQUIRES(mu_) {
    for (const auto& k : keys) {
      if (!map_.count(k)) return false;
    }
    return true;
  };
  if (!cv_.WaitUntil(&mu_, DeadlineAfter(timeout), all_present)) {
    std::string missing;
    for (const auto& k : keys) {
      if (!map_.count(k)) missing += (missing.empty() ? "" : ", ") + k;
    }
    return DeadlineExceededError("store memory://: timed out after " +
                                 std::to_string(timeout.count()) + " ms waiting for key(s) " +
                                 missing);
  }
  return OkStatus();
}

namespace {

class PrefixStore final : public Store {
 public:
  PrefixStore(Store* base, std::string prefix) : base_(base), prefix_(std::move(prefix) + "/") {}
  Status Set(const std::string& key, const std::vector<char>& value) override {
    return base_->Set(prefix_ + key, value);
  }
  Result<std::vector<char>> Get(const std::string& key,
                                std::chrono::milliseconds timeout) override {
    return base_->Get(prefix_ + key, timeout);
  }
  Status Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    std::vector<std::string> full;
    for (const auto& k : keys) full.push_back(prefix_ + k);
    return base_->Wait(full, timeout);
  }
  std::string Describe() const override { return base_->Describe() + " prefix " + prefix_; }

 private:
  Store* base_;
  std::string prefix_;
};

}  // namespace

std::unique_ptr<Store> PrefixedStore(Store* base, const std::string& prefix) {
  return std::make_unique<PrefixStore>(base, prefix);
}

}  // namespace loom::comm
