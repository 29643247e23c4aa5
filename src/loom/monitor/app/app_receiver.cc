// AppReceiver: binds the agent's datagram socket and drains it; see app_receiver.h.
#include "loom/monitor/app/app_receiver.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "loom/base/logging.h"

namespace loom::monitor {

Result<std::unique_ptr<AppReceiver>> AppReceiver::Bind(const std::string& path) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return InvalidArgumentError("monitor socket path '" + path + "' must have 1.." +
                                std::to_string(sizeof(addr.sun_path) - 1) + " characters");
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return FailedPreconditionError("monitor socket path '" + path +
                                     "' exists and is not a socket");
    }
    ::unlink(path.c_str());  // stale socket of a previous agent
  }
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return UnavailableError(std::string("monitor socket: socket(): ") + strerror(errno));
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    int err = errno;
    ::close(fd);
    return UnavailableError("monitor socket: bind('" + path + "'): " + strerror(err));
  }
  int rcvbuf = kDefaultRcvBufBytes;
  (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));  // best effort
  return std::unique_ptr<AppReceiver>(new AppReceiver(path, fd));
}

AppReceiver::~AppReceiver() {
  ::close(fd_);
  ::unlink(path_.c_str());
}

std::vector<AppMessage> AppReceiver::Drain() {
  std::vector<AppMessage> out;
  char buf[2048];
  while (true) {
    ssize_t n = ::recv(fd_, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;  // EAGAIN: drained
    }
    received_.fetch_add(1, std::memory_order_relaxed);
    Result<AppMessage> m = n > static_cast<ssize_t>(sizeof(buf))
                               ? Result<AppMessage>(InvalidArgumentError(
                                     "app message: datagram of " + std::to_string(n) +
                                     " bytes is too long"))
                               : ParseAppMessage(std::string_view(buf, static_cast<size_t>(n)));
    if (!m.ok()) {
      if (malformed_.fetch_add(1, std::memory_order_relaxed) == 0) {
        LOOM_LOG(WARNING, "monitor") << "dropping malformed app message on " << path_ << ": "
                                     << m.status() << " (further ones are only counted)";
      }
      continue;
    }
    out.push_back(std::move(m).value());
  }
  return out;
}

}  // namespace loom::monitor
