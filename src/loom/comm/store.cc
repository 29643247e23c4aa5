#include "loom/comm/store.h"

#include <charconv>

#include "loom/comm/gloo/gloo_store.h"

namespace loom::comm {

Result<std::unique_ptr<Store>> OpenStore(const std::string& url, const std::string& prefix) {
  if (url.empty()) return InvalidArgumentError("empty store URL");
  constexpr std::string_view kFile = "file://";
  constexpr std::string_view kRedis = "redis://";
  if (url.rfind(kRedis, 0) == 0) {
    std::string hostport = url.substr(kRedis.size());
    size_t colon = hostport.rfind(':');
    std::string host = hostport.substr(0, colon);
    int port = 6379;
    if (colon != std::string::npos) {
      std::string p = hostport.substr(colon + 1);
      auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
      if (ec != std::errc() || ptr != p.data() + p.size() || port <= 0 || port > 65535) {
        return InvalidArgumentError("bad port in store URL '" + url + "'");
      }
    }
    if (host.empty()) return InvalidArgumentError("no host in store URL '" + url + "'");
    return internal::OpenGlooRedisStore(host, port, prefix);
  }
  std::string dir = url.rfind(kFile, 0) == 0 ? url.substr(kFile.size()) : url;
  if (dir.find("://") != std::string::npos) {
    return InvalidArgumentError("unsupported store URL '" + url +
                                "' (expected file:///dir or redis://host:port)");
  }
  if (dir.empty() || dir[0] != '/') {
    return InvalidArgumentError("file store path must be absolute, got '" + url + "'");
  }
  return internal::OpenGlooFileStore(dir, prefix);
}

}  // namespace loom::comm
