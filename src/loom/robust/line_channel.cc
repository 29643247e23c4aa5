#include "loom/robust/line_channel.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "loom/base/clock.h"

namespace loom::robust {
namespace {

constexpr size_t kMaxLine = 16 << 20;

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

Status Resolve(const std::string& host, int port, sockaddr_in* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sin_family = AF_INET;
  addr->sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &addr->sin_addr) == 1) return OkStatus();
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) {
    return InvalidArgumentError("cannot resolve host '" + host + "'");
  }
  addr->sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
  freeaddrinfo(res);
  return OkStatus();
}

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

}  // namespace

LineConnection::LineConnection(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) {
  SetNonBlocking(fd_);
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

LineConnection::~LineConnection() {
  if (fd_ >= 0) close(fd_);
}

Status LineConnection::Send(std::string_view line) {
  std::string buf(line);
  buf.push_back('\n');
  size_t off = 0;
  while (off < buf.size()) {
    ssize_t n = ::send(fd_, buf.data() + off, buf.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    } else {
      return UnavailableError(Errno("send to " + peer_));
    }
  }
  return OkStatus();
}

bool LineConnection::ReadLines(std::vector<std::string>* out) {
  char buf[65536];
  bool open = true;
  for (;;) {
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n > 0) {
      pending_.append(buf, static_cast<size_t>(n));
      if (pending_.size() > kMaxLine && pending_.find('\n') == std::string::npos) {
        open = false;
        break;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    open = false;  // EOF or error
    break;
  }
  size_t start = 0;
  for (size_t nl; (nl = pending_.find('\n', start)) != std::string::npos; start = nl + 1) {
    if (nl > start) out->emplace_back(pending_.substr(start, nl - start));
  }
  pending_.erase(0, start);
  return open;
}

Result<std::unique_ptr<LineListener>> LineListener::Listen(const std::string& host, int port) {
  sockaddr_in addr;
  LOOM_RETURN_IF_ERROR(Resolve(host, port, &addr));
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return UnavailableError(Errno("socket"));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 64) != 0) {
    Status s = UnavailableError(Errno("listen on " + host + ":" + std::to_string(port)));
    close(fd);
    return s;
  }
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  SetNonBlocking(fd);
  return std::unique_ptr<LineListener>(new LineListener(fd, ntohs(addr.sin_port)));
}

LineListener::~LineListener() { close(fd_); }

Result<std::unique_ptr<LineConnection>> LineListener::Accept() {
  sockaddr_in addr;
  socklen_t len = sizeof(addr);
  int fd = accept4(fd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_CLOEXEC);
  if (fd < 0) return UnavailableError(Errno("accept"));
  char ip[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof(ip));
  return std::make_unique<LineConnection>(fd, std::string(ip) + ":" +
                                                  std::to_string(ntohs(addr.sin_port)));
}

Result<std::unique_ptr<LineConnection>> ConnectLine(const std::string& host, int port,
                                                    std::chrono::milliseconds timeout) {
  sockaddr_in addr;
  LOOM_RETURN_IF_ERROR(Resolve(host, port, &addr));
  const Deadline deadline = DeadlineAfter(timeout);
  for (;;) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return UnavailableError(Errno("socket"));
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
      return std::make_unique<LineConnection>(fd, host + ":" + std::to_string(port));
    }
    Status s = UnavailableError(Errno("connect to " + host + ":" + std::to_string(port)));
    close(fd);
    if (SteadyClock::now() >= deadline) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

Status ParseHostPort(const std::string& text, std::string* host, int* port) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return InvalidArgumentError("expected HOST:PORT, got '" + text + "'");
  }
  *host = text.substr(0, colon);
  try {
    size_t used = 0;
    *port = std::stoi(text.substr(colon + 1), &used);
    if (used != text.size() - colon - 1 || *port < 0 || *port > 65535) throw std::out_of_range("");
  } catch (const std::exception&) {
    return InvalidArgumentError("bad port in '" + text + "'");
  }
  return OkStatus();
}

}  // namespace loom::robust
