#include "loom/ckpt/parallel.h"

#include <atomic>
#include <memory>

#include "loom/base/clock.h"
#include "loom/base/mutex.h"

namespace loom::ckpt {

Status ParallelFor(Executor* pool, int64_t n, const std::function<Status(int64_t)>& fn) {
  struct State {
    Mutex mu;
    CondVar cv;
    int64_t left LOOM_GUARDED_BY(mu) = 0;
    Status first LOOM_GUARDED_BY(mu);
    std::atomic<bool> failed{false};
  };
  auto st = std::make_shared<State>();
  {
    MutexLock l(&st->mu);
    st->left = n;
  }
  for (int64_t i = 0; i < n; ++i) {
    pool->Schedule([st, i, &fn] {
      Status s = st->failed.load() ? OkStatus() : fn(i);
      MutexLock l(&st->mu);
      if (!s.ok() && st->first.ok()) {
        st->first = s;
        st->failed = true;
      }
      if (--st->left == 0) st->cv.NotifyAll();
    });
  }
  MutexLock l(&st->mu);
  st->cv.WaitUntil(&st->mu, FarFuture(), [&]() LOOM_REQUIRES(st->mu) { return st->left == 0; });
  return st->first;
}

}  // namespace loom::ckpt
