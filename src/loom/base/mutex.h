// Mutex, MutexLock and CondVar with clang thread-safety annotations.
//
//   class Queue {
//     Mutex mu_;
//     std::deque<int> items_ LOOM_GUARDED_BY(mu_);
//   };
//
// With clang and -Wthread-safety the annotations are checked; with g++ they expand to nothing.
// CondVar waits always take a deadline (STYLE.md: every wait has a timeout).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define LOOM_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define LOOM_THREAD_ANNOTATION_(x)
#endif

#define LOOM_CAPABILITY(x) LOOM_THREAD_ANNOTATION_(capability(x))
#define LOOM_SCOPED_CAPABILITY LOOM_THREAD_ANNOTATION_(scoped_lockable)
#define LOOM_GUARDED_BY(x) LOOM_THREAD_ANNOTATION_(guarded_by(x))
#define LOOM_PT_GUARDED_BY(x) LOOM_THREAD_ANNOTATION_(pt_guarded_by(x))
#define LOOM_REQUIRES(...) LOOM_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define LOOM_EXCLUDES(...) LOOM_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
#define LOOM_ACQUIRE(...) LOOM_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define LOOM_RELEASE(...) LOOM_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))

namespace loom {

class LOOM_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() LOOM_ACQUIRE() { mu_.lock(); }
  void Unlock() LOOM_RELEASE() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

class LOOM_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) LOOM_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() LOOM_RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* mu_;
};

class CondVar {
 public:
  // Waits until `pred()` holds or `deadline` passes; returns pred()'s final value.
  // The caller holds `mu`.
  template <typename Clock, typename Duration, typename Pred>
  bool WaitUntil(Mutex* mu, std::chrono::time_point<Clock, Duration> deadline, Pred pred)
      LOOM_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    bool ok = cv_.wait_until(lock, deadline, pred);
    lock.release();  // ownership stays with the caller's MutexLock
    return ok;
  }

  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace loom
