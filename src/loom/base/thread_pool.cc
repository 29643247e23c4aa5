#include "loom/base/thread_pool.h"

#include <pthread.h>

#include "loom/base/check.h"
#include "loom/base/clock.h"

namespace loom {

ThreadPool::ThreadPool(Options options) : options_(std::move(options)) {
  LOOM_CHECK(options_.num_threads >= 1) << "num_threads=" << options_.num_threads;
}

ThreadPool::~ThreadPool() { Stop(); }

void ThreadPool::Start() {
  MutexLock lock(&mu_);
  LOOM_CHECK(!started_) << "ThreadPool::Start called twice";
  started_ = true;
  for (int i = 0; i < options_.num_threads; ++i) {
    threads_.emplace_back([this, i] {
      std::string name = options_.name.substr(0, 12) + "-" + std::to_string(i);
      pthread_setname_np(pthread_self(), name.c_str());
      WorkerLoop();
    });
  }
}

void ThreadPool::Stop() {
  {
    MutexLock lock(&mu_);
    if (stopping_ || !started_) {
      stopping_ = true;
      if (threads_.empty()) return;
    }
    stopping_ = true;
  }
  cv_.NotifyAll();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void ThreadPool::Schedule(std::function<void()> task) {
  {
    MutexLock lock(&mu_);
    LOOM_CHECK(started_ && !stopping_) << "ThreadPool '" << options_.name
                                       << "': Schedule() before Start() or after Stop()";
    queue_.push_back(std::move(task));
  }
  cv_.NotifyOne();
}

size_t ThreadPool::Pending() {
  MutexLock lock(&mu_);
  return queue_.size() + running_;
}

void ThreadPool::WorkerLoop() {
  for (;;) {
    std::function<void()> task;
    {
      MutexLock lock(&mu_);
      // Wake at least once a second so a lost notification can never park a worker forever.
      while (queue_.empty() && !stopping_) {
        cv_.WaitUntil(&mu_, SteadyClock::now() + std::chrono::seconds(1),
                      [&]() LOOM_REQUIRES(mu_) { return !queue_.empty() || stopping_; });
      }
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    task();
    MutexLock lock(&mu_);
    --running_;
  }
}

}  // namespace loom
