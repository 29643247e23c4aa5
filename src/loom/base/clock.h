// Clocks and deadlines. Monotonic time for durations and deadlines, wall time for logs/records.
#pragma once

#include <chrono>
#include <cstdint>

namespace loom {

using SteadyClock = std::chrono::steady_clock;
using Deadline = SteadyClock::time_point;

inline int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             SteadyClock::now().time_since_epoch())
      .count();
}

inline int64_t WallNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline Deadline DeadlineAfter(std::chrono::milliseconds timeout) {
  return SteadyClock::now() + timeout;
}

// A deadline that does not expire in practice (for waits that have no timeout).
inline Deadline FarFuture() { return SteadyClock::now() + std::chrono::hours(24 * 365); }

// Milliseconds left before `deadline` (never negative).
inline std::chrono::milliseconds TimeLeft(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
  return left.count() < 0 ? std::chrono::milliseconds(0) : left;
}

// Measures elapsed time from construction (or Reset()).
class Stopwatch {
 public:
  Stopwatch() : start_(SteadyClock::now()) {}
  void Reset() { start_ = SteadyClock::now(); }
  double Seconds() const {
    return std::chrono::duration<double>(SteadyClock::now() - start_).count();
  }

 private:
  SteadyClock::time_point start_;
};

}  // namespace loom
