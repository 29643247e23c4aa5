// Linux scheduling policy of this process's threads.
//
// A training rank runs a compute thread, a gradient-reduction thread and Gloo's TCP event loop,
// which hand every bucket and segment to each other; when several ranks share a few cores, each
// hand-off wakes a thread. Under the default policy a woken thread preempts the one running,
// which was usually about to block on its own: two context switches where none was needed, and
// the preempted thread waits for its next slice. SCHED_BATCH turns wake-up preemption off for the
// threads that carry it; they keep their fair share of CPU. Measured in src/loom/train/README.md
// (2 ranks on 2 vCPUs, unshaped veth: about 2x per step). No privilege is needed to switch
// between SCHED_OTHER and SCHED_BATCH.
#pragma once

#include <string>
#include <vector>

#include "loom/base/status.h"

namespace loom {

// Sets SCHED_BATCH for its lifetime on the calling thread (kThread) or on every thread of the
// process that runs under the default policy (kProcess), and restores SCHED_OTHER on those
// threads on destruction (threads that have exited meanwhile are skipped). Threads created
// meanwhile by a SCHED_BATCH thread inherit it and are not restored. Threads under another policy
// (real-time, idle, or already batch) are left alone. `ok()` is false, with the reason in
// `status()`, when no thread ends up under SCHED_BATCH; the process then runs unchanged. Process
// scopes that overlap (ranks run as threads of one test process) are safe: the first to end
// restores the threads it changed, and the others find them already batch and change nothing.
class ScopedBatchPolicy {
 public:
  enum class Scope { kThread, kProcess };
  explicit ScopedBatchPolicy(Scope scope);
  ~ScopedBatchPolicy();
  ScopedBatchPolicy(const ScopedBatchPolicy&) = delete;
  ScopedBatchPolicy& operator=(const ScopedBatchPolicy&) = delete;

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  // Threads (Linux tids) switched to SCHED_BATCH by this object.
  const std::vector<int>& changed() const { return changed_; }

 private:
  Status status_;
  std::vector<int> changed_;
};

// A thread's policy by name: "normal", "batch", "idle", "fifo", "rr", "other(N)"; "unknown" when
// the thread cannot be read. `tid` 0: the calling thread.
std::string ThreadPolicyName(int tid = 0);

// The Linux thread ids of this process (from /proc/self/task).
std::vector<int> ProcessThreadIds();

}  // namespace loom
