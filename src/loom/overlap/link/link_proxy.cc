// LinkProxy implementation: one pacing thread per proxy (see link_proxy.h for the model).
#include "loom/overlap/link/link_proxy.h"

#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <string>

#include "loom/base/check.h"

namespace loom::overlap {
namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;
// The proxy sleeps towards a deadline in slices of at most this long so that Stop() is prompt
// even for a message that takes seconds of modelled link time. Each slice is an absolute
// deadline, so slicing adds no drift.
constexpr int64_t kMaxSleepSliceNs = 5'000'000;

int64_t MonoNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * kNanosPerSecond + ts.tv_nsec;
}

double ClockSeconds(clockid_t clock) {
  timespec ts;
  if (clock_gettime(clock, &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void SleepUntilNanos(int64_t deadline_ns) {
  timespec ts;
  ts.tv_sec = deadline_ns / kNanosPerSecond;
  ts.tv_nsec = deadline_ns % kNanosPerSecond;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

// Quiet NaN float32 fill of `bytes` bytes (a tail that is not a whole float gets 0xFF bytes,
// also NaN bits if read as part of a float).
void FillNaN(void* dst, int64_t bytes) {
  const uint32_t nan_bits = 0x7FC00000u;
  char* p = static_cast<char*>(dst);
  const int64_t floats = bytes / 4;
  for (int64_t i = 0; i < floats; ++i) std::memcpy(p + 4 * i, &nan_bits, 4);
  std::memset(p + 4 * floats, 0xFF, static_cast<size_t>(bytes - 4 * floats));
}

}  // namespace

std::string_view LinkModeName(LinkMode mode) {
  switch (mode) {
    case LinkMode::kCopy:
      return "copy";
    case LinkMode::kDelayOnly:
      return "delay";
    case LinkMode::kPoison:
      return "poison";
    case LinkMode::kUnlimited:
      return "unlimited";
  }
  return "unknown";
}

Result<LinkMode> ParseLinkMode(std::string_view name) {
  if (name == "copy") return LinkMode::kCopy;
  if (name == "delay" || name == "delay_only" || name == "delay-only") return LinkMode::kDelayOnly;
  if (name == "poison") return LinkMode::kPoison;
  if (name == "unlimited") return LinkMode::kUnlimited;
  return InvalidArgumentError("unknown link mode '" + std::string(name) +
                              "'; valid: copy, delay (delay_only), poison, unlimited");
}

LinkProxy::LinkProxy(Runtime* runtime, LinkOptions options)
    : runtime_(runtime), options_(options) {
  LOOM_CHECK(runtime_ != nullptr);
}

LinkProxy::~LinkProxy() { Stop(); }

double LinkProxy::TransferSeconds(int64_t bytes) const {
  if (options_.mode == LinkMode::kUnlimited) return 0;
  return options_.latency_s + static_cast<double>(bytes) / options_.bytes_per_second;
}

Status LinkProxy::Start() {
  if (options_.mode != LinkMode::kUnlimited &&
      !(options_.bytes_per_second > 0 && std::isfinite(options_.bytes_per_second))) {
    return InvalidArgumentError("LinkProxy rank " + std::to_string(runtime_->rank()) +
                                ": bytes_per_second must be > 0 and finite, got " +
                                std::to_string(options_.bytes_per_second));
  }
  if (!(options_.latency_s >= 0) || !std::isfinite(options_.latency_s)) {
    return InvalidArgumentError("LinkProxy rank " + std::to_string(runtime_->rank()) +
                                ": latency_s must be ≥ 0, got " +
                                std::to_string(options_.latency_s));
  }
  if (options_.cpu >= CPU_SETSIZE) {
    return InvalidArgumentError("LinkProxy rank " + std::to_string(runtime_->rank()) +
                                ": cpu " + std::to_string(options_.cpu) + " ≥ CPU_SETSIZE");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (thread_.joinable()) {
      return FailedPreconditionError("LinkProxy rank " + std::to_string(runtime_->rank()) +
                                     ": Start() called twice");
    }
    stop_ = false;
    completed_ = submitted_ - static_cast<int64_t>(queue_.size());
  }
  thread_ = std::thread([this] { Loop(); });
  if (options_.cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(options_.cpu, &set);
    int rc = pthread_setaffinity_np(thread_.native_handle(), sizeof(set), &set);
    if (rc != 0) {
      Stop();
      return InvalidArgumentError("LinkProxy rank " + std::to_string(runtime_->rank()) +
                                  ": cannot pin the proxy thread to cpu " +
                                  std::to_string(options_.cpu) + ": " + std::strerror(rc));
    }
  }
  return OkStatus();
}

void LinkProxy::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) return;
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Abandoned descriptors never complete (their signals never fire); forget them so that a
    // restarted proxy's Quiet() only waits for new work.
    completed_ += static_cast<int64_t>(queue_.size());
    queue_.clear();
  }
  done_cv_.notify_all();
}

void LinkProxy::Submit(const CopyDesc& desc) {
  LOOM_CHECK(desc.bytes >= 0) << "LinkProxy::Submit: negative bytes " << desc.bytes;
  LOOM_CHECK(desc.dst_rank >= 0 && desc.dst_rank < runtime_->num_ranks())
      << "LinkProxy::Submit: dst_rank " << desc.dst_rank << " outside world "
      << runtime_->num_ranks();
  if (desc.bytes > 0) {
    LOOM_CHECK(desc.dst != nullptr && desc.src != nullptr) << "LinkProxy::Submit: null pointer";
    LOOM_CHECK(runtime_->InHeap(desc.dst))
        << "LinkProxy::Submit: dst is not in rank " << runtime_->rank() << "'s symmetric heap";
    if (options_.mode == LinkMode::kPoison) {
      FillNaN(runtime_->symm_at(desc.dst, desc.dst_rank), desc.bytes);
    }
  }
  const int64_t now = MonoNanos();
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(desc);
    submit_ns_.push_back(now);
    ++submitted_;
  }
  cv_.notify_one();
}

Status LinkProxy::Quiet(std::string_view what, std::chrono::milliseconds timeout) {
  if (timeout.count() == 0) timeout = runtime_->options().timeout;
  std::unique_lock<std::mutex> lock(mu_);
  const int64_t target = submitted_;
  if (completed_ >= target) return OkStatus();
  if (!thread_.joinable()) {
    return FailedPreconditionError("LinkProxy rank " + std::to_string(runtime_->rank()) +
                                   ": quiet '" + std::string(what) + "' with " +
                                   std::to_string(target - completed_) +
                                   " descriptors pending but the proxy is not running");
  }
  const bool done = done_cv_.wait_for(lock, timeout, [&] {
    return completed_ >= target || stop_;
  });
  if (done && completed_ >= target) return OkStatus();
  const int64_t pending = target - completed_;
  const int64_t depth = static_cast<int64_t>(queue_.size());
  const std::string head =
      "LinkProxy rank " + std::to_string(runtime_->rank()) + ": quiet '" + std::string(what) + "'";
  const std::string detail = ": " + std::to_string(pending) + " of " + std::to_string(target) +
                             " descriptors incomplete, queue depth " + std::to_string(depth) +
                             ", mode " + std::string(LinkModeName(options_.mode)) + ", " +
                             std::to_string(options_.bytes_per_second) + " B/s";
  if (stop_) return FailedPreconditionError(head + " interrupted by Stop()" + detail);
  return DeadlineExceededError(head + " timed out after " + std::to_string(timeout.count()) +
                               " ms" + detail);
}

LinkStats LinkProxy::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  LinkStats s = stats_;
  s.mean_late_s = s.messages > 0 ? late_sum_s_ / static_cast<double>(s.messages) : 0;
  double cpu = last_thread_cpu_s_;
  if (thread_.joinable()) {
    clockid_t clock;
    if (pthread_getcpuclockid(const_cast<std::thread&>(thread_).native_handle(), &clock) == 0) {
      cpu = ClockSeconds(clock);
    }
  }
  s.thread_cpu_s = std::max(0.0, cpu - cpu_base_s_);
  return s;
}

void LinkProxy::ResetStats() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_ = LinkStats();
  late_sum_s_ = 0;
  double cpu = last_thread_cpu_s_;
  if (thread_.joinable()) {
    clockid_t clock;
    if (pthread_getcpuclockid(thread_.native_handle(), &clock) == 0) cpu = ClockSeconds(clock);
  }
  cpu_base_s_ = cpu;
}

// Sleeps until `deadline_ns` (absolute, CLOCK_MONOTONIC) in slices; false if Stop() came first.
bool LinkProxy::SleepUntil(int64_t deadline_ns) {
  for (;;) {
    const int64_t now = MonoNanos();
    if (now >= deadline_ns) return true;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return false;
    }
    SleepUntilNanos(std::min(deadline_ns, now + kMaxSleepSliceNs));
  }
}

void LinkProxy::Execute(const CopyDesc& desc) {
  if (desc.bytes > 0 && options_.mode != LinkMode::kDelayOnly) {
    std::memcpy(runtime_->symm_at(desc.dst, desc.dst_rank), desc.src,
                static_cast<size_t>(desc.bytes));
  }
  if (desc.signal >= 0) runtime_->notify(desc.signal, desc.dst_rank, desc.value, desc.op);
}

void LinkProxy::Loop() {
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  const bool paced = options_.mode != LinkMode::kUnlimited;
  int64_t last_done_ns = 0;  // modelled completion of the previous message (absolute)
  for (;;) {
    CopyDesc desc;
    int64_t submit_ns = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) break;
      desc = queue_.front();
      submit_ns = submit_ns_.front();
    }
    const double seconds = TransferSeconds(desc.bytes);
    double late_s = 0;
    if (paced) {
      // Ceil keeps the modelled time a lower bound of the real completion time.
      const int64_t deadline_ns = std::max(submit_ns, last_done_ns) +
                                  static_cast<int64_t>(std::ceil(seconds * 1e9));
      if (!SleepUntil(deadline_ns)) break;
      last_done_ns = deadline_ns;
      late_s = static_cast<double>(MonoNanos() - deadline_ns) * 1e-9;
    }
    Execute(desc);
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.pop_front();
      submit_ns_.pop_front();
      ++completed_;
      ++stats_.messages;
      stats_.bytes += desc.bytes;
      stats_.busy_s += seconds;
      stats_.max_late_s = std::max(stats_.max_late_s, late_s);
      late_sum_s_ += late_s;
    }
    done_cv_.notify_all();
  }
  const double cpu = ClockSeconds(CLOCK_THREAD_CPUTIME_ID);
  std::lock_guard<std::mutex> lock(mu_);
  last_thread_cpu_s_ = cpu;
}

}  // namespace loom::overlap
