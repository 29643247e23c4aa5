// AppReceiver: the agent's (or executor's) side of the application-metrics channel. Binds an
// AF_UNIX SOCK_DGRAM socket at a path and drains the datagrams AppReporter sends.
//
//   LOOM_ASSIGN_OR_RETURN(auto rx, AppReceiver::Bind("/run/loom/monitor.sock"));
//   poll({rx->fd(), POLLIN}, ...);
//   for (const AppMessage& m : rx->Drain()) state[m.rank].Apply(m);
//
// Malformed datagrams are counted in malformed() and logged once (the first one), never fatal.
// A stale socket file at the path is replaced; the file is removed on destruction.
// Thread-safety: one thread drains; malformed()/received() may be read from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/monitor/app/app_message.h"

namespace loom::monitor {

class AppReceiver {
 public:
  // Receive buffer size requested with SO_RCVBUF (the kernel may clamp it).
  static constexpr int kDefaultRcvBufBytes = 1 << 20;

  static Result<std::unique_ptr<AppReceiver>> Bind(const std::string& path);
  ~AppReceiver();
  AppReceiver(const AppReceiver&) = delete;
  AppReceiver& operator=(const AppReceiver&) = delete;

  int fd() const { return fd_; }  // for poll(); readable when messages are pending
  const std::string& path() const { return path_; }

  // All pending messages, without blocking.
  std::vector<AppMessage> Drain();

  int64_t received() const { return received_.load(std::memory_order_relaxed); }
  int64_t malformed() const { return malformed_.load(std::memory_order_relaxed); }

 private:
  AppReceiver(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_;
  std::atomic<int64_t> received_{0};
  std::atomic<int64_t> malformed_{0};
};

}  // namespace loom::monitor
