#include "loom/base/thread_policy.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>

namespace loom {
namespace {

using Scope = ScopedBatchPolicy::Scope;

std::string PolicyOfNewThread() {
  std::string name;
  std::thread t([&name] { name = ThreadPolicyName(); });
  t.join();
  return name;
}

// A thread that exists before the scope and waits until told to stop.
class Sleeper {
 public:
  Sleeper() : t_([this] {
      tid_ = static_cast<int>(::syscall(SYS_gettid));
      while (!stop_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }) {
    while (tid_ == 0) std::this_thread::yield();
  }
  ~Sleeper() {
    stop_ = true;
    t_.join();
  }
  int tid() const { return tid_; }

 private:
  std::atomic<int> tid_{0};
  std::atomic<bool> stop_{false};
  std::thread t_;
};

TEST(ScopedBatchPolicyTest, ThreadScopeSetsBatchAndRestoresNormal) {
  ASSERT_EQ(ThreadPolicyName(), "normal");
  Sleeper other;
  {
    ScopedBatchPolicy batch(Scope::kThread);
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    EXPECT_EQ(ThreadPolicyName(), "batch");
    EXPECT_EQ(ThreadPolicyName(other.tid()), "normal");  // only the calling thread
    // Threads created inside the scope inherit it.
    EXPECT_EQ(PolicyOfNewThread(), "batch");
  }
  EXPECT_EQ(ThreadPolicyName(), "normal");
  EXPECT_EQ(PolicyOfNewThread(), "normal");
}

TEST(ScopedBatchPolicyTest, ProcessScopeCoversThreadsThatAlreadyRun) {
  Sleeper a, b;
  {
    ScopedBatchPolicy batch(Scope::kProcess);
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    EXPECT_EQ(ThreadPolicyName(), "batch");
    EXPECT_EQ(ThreadPolicyName(a.tid()), "batch");
    EXPECT_EQ(ThreadPolicyName(b.tid()), "batch");
    const auto& changed = batch.changed();
    EXPECT_NE(std::find(changed.begin(), changed.end(), a.tid()), changed.end());
    EXPECT_GE(changed.size(), 3u);  // this thread, a, b (gtest may run more)
  }
  EXPECT_EQ(ThreadPolicyName(), "normal");
  EXPECT_EQ(ThreadPolicyName(a.tid()), "normal");
  EXPECT_EQ(ThreadPolicyName(b.tid()), "normal");
}

TEST(ScopedBatchPolicyTest, NestedScopesKeepTheOuterOne) {
  {
    ScopedBatchPolicy outer(Scope::kProcess);
    ASSERT_TRUE(outer.ok());
    {
      ScopedBatchPolicy inner(Scope::kThread);
      EXPECT_TRUE(inner.ok());
      EXPECT_TRUE(inner.changed().empty());  // already batch: nothing to restore
      ScopedBatchPolicy inner_process(Scope::kProcess);
      EXPECT_TRUE(inner_process.ok()) << inner_process.status().ToString();
      EXPECT_TRUE(inner_process.changed().empty());
    }
    EXPECT_EQ(ThreadPolicyName(), "batch");
  }
  EXPECT_EQ(ThreadPolicyName(), "normal");
}

TEST(ScopedBatchPolicyTest, LeavesAnIdleThreadAlone) {
  std::string during, after, why;
  bool ok = true, idle_set = false;
  std::thread t([&] {
    sched_param p{};
    if (::sched_setscheduler(0, SCHED_IDLE, &p) != 0) return;
    idle_set = true;
    {
      ScopedBatchPolicy batch(Scope::kThread);
      ok = batch.ok();
      why = batch.status().message();
      during = ThreadPolicyName();
    }
    after = ThreadPolicyName();
  });
  t.join();
  if (!idle_set) GTEST_SKIP() << "this host does not let a thread enter SCHED_IDLE";
  EXPECT_FALSE(ok);
  EXPECT_NE(why.find("idle"), std::string::npos) << why;
  EXPECT_EQ(during, "idle");
  EXPECT_EQ(after, "idle");
}

TEST(ScopedBatchPolicyTest, ListsThisProcessThreads) {
  Sleeper s;
  const std::vector<int> tids = ProcessThreadIds();
  EXPECT_NE(std::find(tids.begin(), tids.end(), s.tid()), tids.end());
  EXPECT_NE(std::find(tids.begin(), tids.end(), static_cast<int>(::getpid())), tids.end());
}

}  // namespace
}  // namespace loom
