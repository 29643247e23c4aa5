// MetricsHttpServer: a minimal HTTP/1.1 server for the agent's `GET /metrics`, on plain POSIX
// sockets with one thread of its own, so a slow or hostile client can never block the sampler.
// GET /metrics -> 200 with the body from `metrics_body()`; any other path -> 404; other methods
// -> 405; a request head over `max_request_bytes` -> 431; a client that does not send its request
// within `io_timeout_ms` is dropped. One request per connection (Connection: close).
//
//   MetricsHttpServer server({.host = "127.0.0.1", .port = 9400}, [&] { return agent.Text(); });
//   LOOM_RETURN_IF_ERROR(server.Start());
//   ... server.port() ...
//   server.Stop();
//
// Thread-safety: Start/Stop from one thread; `metrics_body` is called on the server thread and
// must be thread-safe (the agent returns a snapshot under its own mutex).
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "loom/base/status.h"

namespace loom::monitor {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 9400;                // 0: an ephemeral port (see port())
  size_t max_request_bytes = 8192;
  int io_timeout_ms = 2000;
};

// Parses "HOST:PORT" (e.g. "127.0.0.1:9400", ":9400" = 0.0.0.0).
Result<HttpServerOptions> ParseListenAddress(const std::string& text);

class MetricsHttpServer {
 public:
  MetricsHttpServer(HttpServerOptions options, std::function<std::string()> metrics_body);
  ~MetricsHttpServer();  // Stop()s
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  Status Start();  // binds, listens and starts the thread; errors name the address
  void Stop();
  int port() const { return port_; }  // the bound port (after Start)
  int64_t requests() const { return requests_.load(std::memory_order_relaxed); }

 private:
  void Loop();
  void Serve(int client_fd);

  HttpServerOptions options_;
  std::function<std::string()> metrics_body_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> requests_{0};
  std::thread thread_;
};

}  // namespace loom::monitor
