// LineChannel: newline-delimited JSON over TCP between the robust driver and its executors
// (one connection per executor; the driver listens). Plain POSIX sockets, non-blocking reads so
// one thread can poll() many connections.
//
//   LOOM_ASSIGN_OR_RETURN(auto listener, LineListener::Listen("127.0.0.1", 0));
//   LOOM_ASSIGN_OR_RETURN(auto conn, ConnectLine("127.0.0.1", listener->port(), 5s));
//   LOOM_RETURN_IF_ERROR(conn->Send(R"({"type":"hello"})"));
//   std::vector<std::string> lines;  bool open = peer->ReadLines(&lines);
//
// Thread-safety: a connection is used by one thread at a time.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loom/base/status.h"

namespace loom::robust {

class LineConnection {
 public:
  explicit LineConnection(int fd, std::string peer);
  ~LineConnection();
  LineConnection(const LineConnection&) = delete;
  LineConnection& operator=(const LineConnection&) = delete;

  int fd() const { return fd_; }
  const std::string& peer() const { return peer_; }
  // Writes `line` plus '\n' completely (blocking). Errors when the peer is gone.
  Status Send(std::string_view line);
  // Appends every complete line available now to `out`. False once the peer closed or failed
  // (lines received before that are still delivered). Lines over 16 MiB are an error.
  bool ReadLines(std::vector<std::string>* out);

 private:
  int fd_;
  std::string peer_;
  std::string pending_;
};

class LineListener {
 public:
  // Port 0: an ephemeral port (see port()).
  static Result<std::unique_ptr<LineListener>> Listen(const std::string& host, int port);
  ~LineListener();
  int fd() const { return fd_; }
  int port() const { return port_; }
  // Accepts one pending connection (call when fd() is readable).
  Result<std::unique_ptr<LineConnection>> Accept();

 private:
  LineListener(int fd, int port) : fd_(fd), port_(port) {}
  int fd_;
  int port_;
};

// Connects to host:port, retrying until `timeout` (the listener may not be up yet).
Result<std::unique_ptr<LineConnection>> ConnectLine(const std::string& host, int port,
                                                    std::chrono::milliseconds timeout);

// "host:port" -> host, port. Errors name the text.
Status ParseHostPort(const std::string& text, std::string* host, int* port);

}  // namespace loom::robust
