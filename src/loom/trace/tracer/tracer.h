// Tracer: loom's in-process span recorder (the TraceSink that `loom train trace.steps=A-B`
// installs), with step-window sampling, bounded per-thread buffers and Kineto JSON export.
//
//   Tracer tracer({.rank = comm.rank(), .world_size = comm.size(), .start_step = 20,
//                  .end_step = 40});
//   LOOM_ASSIGN_OR_RETURN(ClockOffset off, EstimateClockOffset(comm, tracer));  // clock_sync.h
//   tracer.set_clock_offset(off);
//   ScopedTraceSinkInstall install(&tracer);
//   for (step...) { tracer.SetStep(step); ScopedTrace s(TraceCategory::kForward, "forward"); ... }
//   LOOM_RETURN_IF_ERROR(tracer.WriteKinetoJson(dir + "/rank0.trace.json"));
//
// Recording: each thread appends 64-byte TraceRecords to its own lane, a list of fixed-size
// chunks allocated lazily up to `capacity_per_thread` records. A thread registers its lane once
// (under a mutex); after that appends take no lock (a thread_local cache finds the lane). When a
// lane is full further records are dropped and counted: memory never grows past
// lanes x capacity x 64 bytes. Steps outside the window switch the sink off (TraceSink::enabled),
// so recorders skip the clock reads entirely.
//
// Lanes are the recording threads, exported as Kineto "threads" (tid = lane id, pid = rank):
// a name set with loom::SetTraceThreadName wins; else the thread that constructed the tracer is
// "main"; else a thread whose first record is communication is "comm"; else the pthread name.
//
// Timestamps: steady-clock ns (+ clock_skew_ns, for tests). The export writes them as µs with ns
// precision; baseTimeNanoseconds (CLOCK_REALTIME - CLOCK_MONOTONIC at construction) turns them
// into wall-clock time, and "loom.clock_offset_ns" maps them onto rank 0's clock:
// rank0_ns = ts_ns + clock_offset_ns.
//
// Thread-safety: Record/Intern/SetStep from any thread. Export, Snapshot and stats read only
// records whose append completed (release/acquire on the lane size), so they are safe while
// other threads record, but a consistent trace needs the recorders quiesced (uninstall first).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <vector>

#include "loom/base/mutex.h"
#include "loom/base/status.h"
#include "loom/base/trace_sink.h"

namespace loom::trace {

struct TracerOptions {
  int rank = 0;                           // this process's rank (records with rank -1 get it)
  int world_size = 1;                     // "distributedInfo.world_size" and "Group size"
  int64_t start_step = 0;                 // first traced step (inclusive)
  int64_t end_step = -1;                  // last traced step (inclusive); -1: no end (always on)
  int64_t every_n = 1;                    // within the window trace start, start+n, start+2n, ...
  int64_t capacity_per_thread = 1 << 18;  // records per lane (64 B each: 16 MiB); then drop
  int64_t chunk_records = 4096;           // allocation unit of a lane
  int64_t clock_skew_ns = 0;              // added to every timestamp (tests emulate skewed clocks)
  std::string trace_name = "";            // "traceName" of the export; empty: "loom rank <r>"
  std::string run_id = "";                // "loom.run_id": equal on all ranks of one job; "" omits it
};

// Estimated offset of this rank's tracer clock against rank 0's (see clock_sync.h).
struct ClockOffset {
  int64_t offset_ns = 0;  // rank0_clock ~= this_clock + offset_ns
  int64_t rtt_ns = 0;     // round trip of the kept (minimum-RTT) sample; error <= rtt/2
  int rounds = 0;         // ping-pong rounds measured (0: not measured)
};

struct TracerStats {
  int64_t records = 0;  // kept
  int64_t dropped = 0;  // lost to full lanes
  int lanes = 0;
  int64_t reserved_bytes = 0;  // chunk memory allocated so far
};

struct LaneInfo {
  int id = 0;
  std::string name;
};

class Tracer final : public TraceSink {
 public:
  explicit Tracer(TracerOptions options);
  ~Tracer() override;
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // TraceSink. Record stamps lane, rank and step (when -1) and adds clock_skew_ns to ts_ns.
  void Record(const TraceRecord& record) override;
  const char* Intern(std::string_view name) override;

  // The step the trainer is on; enables the sink iff the step is sampled.
  void SetStep(int64_t step);
  int64_t current_step() const { return current_step_.load(std::memory_order_relaxed); }
  bool Sampled(int64_t step) const;

  // This tracer's clock: loom::NowNanos() + clock_skew_ns.
  int64_t NowNanos() const;
  void set_clock_offset(const ClockOffset& offset) { clock_offset_ = offset; }
  const ClockOffset& clock_offset() const { return clock_offset_; }

  const TracerOptions& options() const { return options_; }
  TracerStats stats() const;
  std::vector<LaneInfo> lanes() const;
  // Every kept record, lane by lane in append order.
  std::vector<TraceRecord> Snapshot() const;

  // Kineto-compatible JSON (schemaVersion 1), written as a stream: events sorted by start time,
  // thread-name metadata, NCCL-style collective args, SEND->RECV flow events. See
  // src/loom/trace/README.md for the exact shape.
  void WriteKineto(std::ostream& out) const;
  // To `path` through a temporary file renamed into place; errors name the path.
  Status WriteKinetoJson(const std::string& path) const;

 private:
  struct Lane;
  Lane* LaneForThisThread(const TraceRecord& first);

  const TracerOptions options_;
  const uint64_t id_;  // unique per tracer instance: keys the thread_local lane cache
  const std::thread::id owner_thread_;
  const int64_t mono_at_init_ns_;
  const int64_t real_at_init_ns_;
  std::atomic<int64_t> current_step_{-1};
  ClockOffset clock_offset_;

  mutable Mutex mu_;
  std::vector<std::unique_ptr<Lane>> lanes_ LOOM_GUARDED_BY(mu_);
  std::unordered_set<std::string> interned_ LOOM_GUARDED_BY(mu_);
};

// Routes records by TraceRecord::rank to one sink per rank: for tests that run N ranks as
// threads of one process (the process has one installed sink). Records with rank -1 go to the
// sink of rank 0. Enabled while any rank's sink is enabled. Thread-safety: as TraceSink.
class RankRouter final : public TraceSink {
 public:
  explicit RankRouter(std::vector<TraceSink*> per_rank);
  void Record(const TraceRecord& record) override;
  const char* Intern(std::string_view name) override;
  // Recomputes enabled() from the per-rank sinks (call after their SetStep).
  void Refresh();

 private:
  std::vector<TraceSink*> sinks_;
};

}  // namespace loom::trace
