// LinkProxy: the modelled "copy engine" of one rank. A thread executes copy descriptors in FIFO
// order over a link paced at LinkOptions::bytes_per_second: message i completes at
//   done_i = max(now at submit, done_{i-1}) + latency_s + bytes_i / bytes_per_second
// measured with absolute deadlines (clock_nanosleep TIMER_ABSTIME, PR_SET_TIMERSLACK 1 ns) so the
// mean rate stays exact despite wake-up jitter. At done_i the data is copied (mode kCopy/kPoison)
// and then the descriptor's signal is notified on the destination rank (release), so a consumer
// that waited on the signal sees the data.
//
// The link is a model, not hardware: the bandwidth is chosen so that the communication/compute
// ratio R matches the GPU regime being studied (say so wherever results are reported).
//
//   LinkProxy proxy(rt.get(), {.bytes_per_second = 117e6, .mode = LinkMode::kCopy});
//   LOOM_RETURN_IF_ERROR(proxy.Start());
//   proxy.Submit({.dst = recv, .src = shard, .bytes = n * 4, .dst_rank = peer,
//                 .signal = ready + me, .value = epoch});
//   LOOM_RETURN_IF_ERROR(proxy.Quiet("ag_gemm"));
//
// Modes:
//   kCopy       copy at the deadline, then notify.
//   kDelayOnly  notify at the deadline without copying; the consumer reads the source in the
//               producer's heap (a pull over a free engine; near-zero proxy CPU).
//   kPoison     like kCopy, but Submit() first fills the destination with quiet NaNs (float32),
//               so a consumer that reads before waiting computes NaNs (tests).
//   kUnlimited  copy and notify at once, no pacing: the negative control (memory speed).
//
// Thread-safety: Submit/Quiet/stats may be called from any of the rank's threads. Start/Stop from
// the owner. Stop() drains nothing: it abandons queued descriptors (their signals never fire).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string_view>
#include <thread>

#include "loom/base/status.h"
#include "loom/overlap/runtime/runtime.h"

namespace loom::overlap {

enum class LinkMode { kCopy, kDelayOnly, kPoison, kUnlimited };
std::string_view LinkModeName(LinkMode mode);
Result<LinkMode> ParseLinkMode(std::string_view name);  // "copy", "delay", "poison", "unlimited"

struct LinkOptions {
  double bytes_per_second = 1e9;  // modelled link bandwidth; ignored by kUnlimited; default 1 GB/s
  double latency_s = 0;           // per-message α added to each message; default 0
  LinkMode mode = LinkMode::kCopy;
  int cpu = -1;                   // pin the proxy thread to this CPU; default -1 (not pinned)
};

// One transfer: `bytes` from `src` (this rank's memory) to symm_at(dst, dst_rank), where `dst`
// is this rank's heap address naming the symmetric location; then notify(signal, dst_rank,
// value, op). signal < 0: no notification. dst_rank may be this rank (a local copy, also paced).
struct CopyDesc {
  void* dst = nullptr;
  const void* src = nullptr;
  int64_t bytes = 0;
  int dst_rank = 0;
  SignalId signal = -1;
  uint32_t value = 0;
  SignalOp op = SignalOp::kSet;
};

struct LinkStats {
  int64_t messages = 0;
  int64_t bytes = 0;
  double busy_s = 0;         // modelled link busy time (sum of latency + bytes / bandwidth)
  double thread_cpu_s = 0;   // CPU time of the proxy thread (CLOCK_THREAD_CPUTIME_ID)
  double max_late_s = 0;     // worst wake-up lateness past a deadline
  double mean_late_s = 0;
};

class LinkProxy {
 public:
  LinkProxy(Runtime* runtime, LinkOptions options);
  ~LinkProxy();  // Stop()
  LinkProxy(const LinkProxy&) = delete;
  LinkProxy& operator=(const LinkProxy&) = delete;

  Status Start();
  void Stop();

  const LinkOptions& options() const { return options_; }
  // Modelled seconds to move `bytes` as one message (latency + bytes / bandwidth; 0 unlimited).
  double TransferSeconds(int64_t bytes) const;

  // Enqueues `desc` (never blocks on the link). kPoison fills the destination with NaN first.
  void Submit(const CopyDesc& desc);
  // Waits until every descriptor submitted so far has completed; kDeadlineExceeded after
  // `timeout` (0: the runtime's default) naming `what` and the queue depth.
  Status Quiet(std::string_view what,
               std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

  LinkStats stats() const;
  void ResetStats();

 private:
  void Loop();
  bool SleepUntil(int64_t deadline_ns);  // false when Stop() interrupted the sleep
  void Execute(const CopyDesc& desc);     // copy (unless kDelayOnly), then notify

  Runtime* runtime_;
  LinkOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;       // work arrived or stop
  std::condition_variable done_cv_;  // a descriptor completed
  std::deque<CopyDesc> queue_;     // front: the descriptor in flight
  std::deque<int64_t> submit_ns_;  // CLOCK_MONOTONIC submit time of each queued descriptor
  int64_t submitted_ = 0;
  int64_t completed_ = 0;
  bool stop_ = false;
  LinkStats stats_;
  double late_sum_s_ = 0;
  double cpu_base_s_ = 0;         // proxy thread CPU at the last ResetStats()
  double last_thread_cpu_s_ = 0;  // proxy thread CPU when its loop last exited
  std::thread thread_;
};

}  // namespace loom::overlap
