// MetricsHttpServer: see http_server.h.
#include "loom/monitor/agent/http_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "loom/monitor/agent/prometheus_text.h"

namespace loom::monitor {
namespace {

int64_t MonoMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Writes all of `data` before `deadline_ms`; false on error or timeout.
bool WriteAll(int fd, const std::string& data, int64_t deadline_ms) {
  size_t off = 0;
  while (off < data.size()) {
    int64_t left = deadline_ms - MonoMs();
    if (left <= 0) return false;
    pollfd p{fd, POLLOUT, 0};
    int r = ::poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return false;
    }
    off += static_cast<size_t>(n);
  }
  return true;
}

std::string Response(int code, const char* reason, const char* content_type,
                     const std::string& body) {
  return "HTTP/1.1 " + std::to_string(code) + " " + reason + "\r\nContent-Type: " +
         content_type + "\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

}  // namespace

Result<HttpServerOptions> ParseListenAddress(const std::string& text) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    return InvalidArgumentError("--listen '" + text + "': expected HOST:PORT");
  }
  HttpServerOptions o;
  o.host = colon == 0 ? "0.0.0.0" : text.substr(0, colon);
  std::string port = text.substr(colon + 1);
  char* end = nullptr;
  long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 0 || p > 65535) {
    return InvalidArgumentError("--listen '" + text + "': port must be 0..65535");
  }
  in_addr addr{};
  if (::inet_pton(AF_INET, o.host.c_str(), &addr) != 1) {
    return InvalidArgumentError("--listen '" + text + "': host must be an IPv4 address");
  }
  o.port = static_cast<int>(p);
  return o;
}

MetricsHttpServer::MetricsHttpServer(HttpServerOptions options,
                                     std::function<std::string()> metrics_body)
    : options_(std::move(options)), metrics_body_(std::move(metrics_body)) {}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

Status MetricsHttpServer::Start() {
  const std::string where = options_.host + ":" + std::to_string(options_.port);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(options_.port));
  if (::inet_pton(AF_INET, options_.host.c_str(), &addr.sin_addr) != 1) {
    return InvalidArgumentError("metrics http: '" + options_.host + "' is not an IPv4 address");
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return UnavailableError(std::string("metrics http: socket(): ") + strerror(errno));
  int one = 1;
  (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 16) != 0) {
    int err = errno;
    ::close(fd);
    return UnavailableError("metrics http: cannot listen on " + where + ": " + strerror(err));
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  listen_fd_ = fd;
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
  return OkStatus();
}

void MetricsHttpServer::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

void MetricsHttpServer::Loop() {
  while (!stop_.load()) {
    pollfd p{listen_fd_, POLLIN, 0};
    int r = ::poll(&p, 1, 100);  // wakes every 100 ms to notice Stop()
    if (r <= 0) continue;
    int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (client < 0) continue;
    Serve(client);
    ::close(client);
  }
}

void MetricsHttpServer::Serve(int fd) {
  const int64_t deadline = MonoMs() + options_.io_timeout_ms;
  std::string req;
  char buf[2048];
  // Read until the end of the request head, a size limit, EOF or the deadline.
  while (req.find("\r\n\r\n") == std::string::npos && req.find("\n\n") == std::string::npos) {
    if (req.size() > options_.max_request_bytes) {
      WriteAll(fd, Response(431, "Request Header Fields Too Large", "text/plain", "too large\n"),
               deadline);
      return;
    }
    int64_t left = deadline - MonoMs();
    if (left <= 0 || stop_.load()) return;
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 100)));
    if (r < 0 && errno != EINTR) return;
    if (r <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0) return;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return;
    }
    req.append(buf, static_cast<size_t>(n));
  }
  requests_.fetch_add(1, std::memory_order_relaxed);
  size_t eol = req.find_first_of("\r\n");
  std::string line = req.substr(0, eol);
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string::npos ? std::string::npos : line.find(' ', sp1 + 1);
  if (sp2 == std::string::npos || line.compare(sp2 + 1, 5, "HTTP/") != 0) {
    WriteAll(fd, Response(400, "Bad Request", "text/plain", "bad request line\n"), deadline);
    return;
  }
  std::string method = line.substr(0, sp1);
  std::string target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string path = target.substr(0, target.find('?'));
  if (path != "/metrics") {
    WriteAll(fd, Response(404, "Not Found", "text/plain", "not found; try /metrics\n"), deadline);
    return;
  }
  if (method != "GET" && method != "HEAD") {
    WriteAll(fd, Response(405, "Method Not Allowed", "text/plain", "GET only\n"), deadline);
    return;
  }
  std::string body = metrics_body_();
  std::string resp = Response(200, "OK", kPrometheusContentType, body);
  if (method == "HEAD") resp.resize(resp.size() - body.size());
  WriteAll(fd, resp, deadline);
}

}  // namespace loom::monitor
