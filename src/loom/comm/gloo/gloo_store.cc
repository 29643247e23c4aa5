#include "loom/comm/gloo/gloo_store.h"

#include <gloo/common/error.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/redis_store.h>

#include "loom/base/file_util.h"

namespace loom::comm::internal {
namespace {

// Wraps a gloo store (owned) behind a prefix, translating Gloo's exceptions into Status.
class GlooBackedStore final : public Store {
 public:
  GlooBackedStore(std::unique_ptr<gloo::rendezvous::Store> base, std::string prefix,
                  std::string description)
      : base_(std::move(base)),
        prefixed_(prefix, *base_),
        description_(std::move(description) + " prefix " + prefix) {}

  Status Set(const std::string& key, const std::vector<char>& value) override {
    try {
      prefixed_.set(key, value);
      return OkStatus();
    } catch (const std::exception& e) {
      return UnavailableError("store " + description_ + ": set '" + key + "' failed: " + e.what());
    }
  }

  Result<std::vector<char>> Get(const std::string& key,
                                std::chrono::milliseconds timeout) override {
    LOOM_RETURN_IF_ERROR(Wait({key}, timeout));
    try {
      return prefixed_.get(key);
    } catch (const std::exception& e) {
      return UnavailableError("store " + description_ + ": get '" + key + "' failed: " + e.what());
    }
  }

  Status Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    try {
      prefixed_.wait(keys, timeout);
      return OkStatus();
    } catch (const std::exception& e) {
      std::string what = e.what();
      std::string names;
      for (const auto& k : keys) names += (names.empty() ? "" : ", ") + k;
      if (what.find("imeout") != std::string::npos || what.find("timed out") != std::string::npos) {
        return DeadlineExceededError("store " + description_ + ": timed out after " +
                                     std::to_string(timeout.count()) +
                                     " ms waiting for key(s) " + names +
                                     " (is every rank running and using the same store?)");
      }
      return UnavailableError("store " + description_ + ": wait for " + names +
                              " failed: " + what);
    }
  }

  std::string Describe() const override { return description_; }

 private:
  std::unique_ptr<gloo::rendezvous::Store> base_;
  gloo::rendezvous::PrefixStore prefixed_;
  std::string description_;
};

}  // namespace

Result<std::unique_ptr<Store>> OpenGlooFileStore(const std::string& dir,
                                                 const std::string& prefix) {
  LOOM_RETURN_IF_ERROR(MakeDirs(dir));
  try {
    auto base = std::make_unique<gloo::rendezvous::FileStore>(dir);
    return std::unique_ptr<Store>(
        std::make_unique<GlooBackedStore>(std::move(base), prefix, "file://" + dir));
  } catch (const std::exception& e) {
    return UnavailableError("cannot open file store '" + dir + "': " + e.what());
  }
}

Result<std::unique_ptr<Store>> OpenGlooRedisStore(const std::string& host, int port,
                                                  const std::string& prefix) {
  try {
    auto base = std::make_unique<gloo::rendezvous::RedisStore>(host, port);
    return std::unique_ptr<Store>(std::make_unique<GlooBackedStore>(
        std::move(base), prefix, "redis://" + host + ":" + std::to_string(port)));
  } catch (const std::exception& e) {
    return UnavailableError("cannot connect to redis store " + host + ":" + std::to_string(port) +
                            ": " + e.what() + " (is redis-server running there?)");
  }
}

void GlooStoreAdapter::set(const std::string& key, const std::vector<char>& data) {
  Status s = store_->Set(key, data);
  if (!s.ok()) throw gloo::IoException(s.ToString());
}

std::vector<char> GlooStoreAdapter::get(const std::string& key) {
  auto r = store_->Get(key, timeout_);
  if (!r.ok()) throw gloo::IoException(r.status().ToString());
  return std::move(r).value();
}

void GlooStoreAdapter::wait(const std::vector<std::string>& keys,
                            const std::chrono::milliseconds& timeout) {
  Status s = store_->Wait(keys, timeout);
  if (!s.ok()) throw gloo::IoException(s.ToString());
}

}  // namespace loom::comm::internal
