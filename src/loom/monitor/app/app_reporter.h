// AppReporter: the trainer's side of the application-metrics channel. Sends each message as one
// non-blocking datagram (AF_UNIX SOCK_DGRAM, MSG_DONTWAIT) to the socket named by
// $LOOM_MONITOR_SOCKET. It never blocks or fails training: no socket, agent absent, or a full
// receive buffer drop the message and count it in dropped().
//
//   auto reporter = AppReporter::FromEnv(rank);  // nullptr when LOOM_MONITOR_SOCKET is unset
//   if (reporter) reporter->Step(step, step_time_s, data_wait_s, compute_s);
//
// Thread-safety: all methods may be called from any thread (collectives may be reported from a
// communication thread while the training loop reports steps).
#pragma once

#include <cmath>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "loom/monitor/app/app_message.h"

namespace loom::monitor {

inline constexpr const char* kMonitorSocketEnv = "LOOM_MONITOR_SOCKET";

class AppReporter {
 public:
  // nullptr when $LOOM_MONITOR_SOCKET is unset or empty.
  static std::unique_ptr<AppReporter> FromEnv(int rank);
  // A reporter sending to `socket_path` (which need not exist yet).
  AppReporter(std::string socket_path, int rank);
  ~AppReporter();
  AppReporter(const AppReporter&) = delete;
  AppReporter& operator=(const AppReporter&) = delete;

  void Step(int64_t step, double step_time_s, double data_wait_s, double compute_s = NAN);
  void Collective(std::string_view op, int64_t bytes, int64_t seq, double duration_s);
  void Phase(std::string_view phase);
  // Sends an arbitrary message (rank and ts_ms are filled in when zero).
  void Send(AppMessage m);

  int64_t sent() const { return sent_.load(std::memory_order_relaxed); }
  int64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  const std::string& socket_path() const { return path_; }

 private:
  std::string path_;
  int rank_;
  int fd_ = -1;  // -1 when socket() failed: every message is dropped
  std::atomic<int64_t> sent_{0};
  std::atomic<int64_t> dropped_{0};
};

}  // namespace loom::monitor
