// Executor: where loom modules run background work; ThreadPool: the standard implementation.
//
//   ThreadPool pool({.num_threads = 1, .name = "bucket-comm"});
//   pool.Start();
//   pool.Schedule([&] { ReduceBucket(b); });
//   ...
//   pool.Stop();   // runs what was already scheduled, then joins
//
// Modules take an Executor* instead of creating std::thread themselves, so tests can inject an
// inline executor and the trainer controls how many threads exist.
// Thread-safety: Schedule() may be called from any thread, including from inside a task.
#pragma once

#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "loom/base/mutex.h"

namespace loom {

class Executor {
 public:
  virtual ~Executor() = default;
  virtual void Schedule(std::function<void()> task) = 0;
};

// Runs each task immediately in the calling thread (for tests and single-threaded setups).
class InlineExecutor final : public Executor {
 public:
  void Schedule(std::function<void()> task) override { task(); }
};

class ThreadPool final : public Executor {
 public:
  struct Options {
    int num_threads = 1;       // worker threads, >= 1
    std::string name = "pool";  // thread name prefix (shown by top -H and gdb)
  };

  explicit ThreadPool(Options options);
  ~ThreadPool() override;  // calls Stop()

  void Start();
  // Finishes the tasks already queued, then joins the workers. Idempotent.
  void Stop();
  void Schedule(std::function<void()> task) override;

  // Number of tasks queued or running.
  size_t Pending();

 private:
  void WorkerLoop();

  const Options options_;
  Mutex mu_;
  CondVar cv_;
  std::deque<std::function<void()>> queue_ LOOM_GUARDED_BY(mu_);
  size_t running_ LOOM_GUARDED_BY(mu_) = 0;
  bool stopping_ LOOM_GUARDED_BY(mu_) = false;
  bool started_ LOOM_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace loom
