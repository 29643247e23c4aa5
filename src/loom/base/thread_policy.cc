#include "loom/base/thread_policy.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

namespace loom {
namespace {

int CallingTid() { return static_cast<int>(::syscall(SYS_gettid)); }

}  // namespace

std::vector<int> ProcessThreadIds() {
  std::vector<int> tids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos) {
      tids.push_back(std::stoi(name));
    }
  }
  return tids;
}

ScopedBatchPolicy::ScopedBatchPolicy(Scope scope) {
  const std::vector<int> tids =
      scope == Scope::kThread ? std::vector<int>{CallingTid()} : ProcessThreadIds();
  std::string why;
  int batch_threads = 0;  // already under SCHED_BATCH, or switched here
  for (int tid : tids) {
    const int policy = ::sched_getscheduler(tid);
    if (policy == SCHED_BATCH) {
      ++batch_threads;
      continue;
    }
    if (policy != SCHED_OTHER) {
      // Gone (ESRCH), or real-time / idle on purpose: leave it alone.
      if (policy >= 0 && why.empty()) {
        why = "thread " + std::to_string(tid) + " runs under " + ThreadPolicyName(tid);
      }
      continue;
    }
    sched_param batch{};
    if (::sched_setscheduler(tid, SCHED_BATCH, &batch) == 0) {
      changed_.push_back(tid);
      ++batch_threads;
    } else if (why.empty()) {
      why = "cannot set SCHED_BATCH on thread " + std::to_string(tid) + ": " +
            std::strerror(errno);
    }
  }
  if (batch_threads == 0) {
    status_ = FailedPreconditionError(why.empty() ? std::string("no thread to change")
                                                  : why + "; left unchanged");
  }
}

ScopedBatchPolicy::~ScopedBatchPolicy() {
  for (int tid : changed_) {
    sched_param normal{};
    (void)::sched_setscheduler(tid, SCHED_OTHER, &normal);  // ESRCH: the thread has exited
  }
}

std::string ThreadPolicyName(int tid) {
  switch (const int policy = ::sched_getscheduler(tid)) {
    case -1: return "unknown";
    case SCHED_OTHER: return "normal";
    case SCHED_BATCH: return "batch";
    case SCHED_IDLE: return "idle";
    case SCHED_FIFO: return "fifo";
    case SCHED_RR: return "rr";
    default: return "other(" + std::to_string(policy) + ")";
  }
}

}  // namespace loom
