// ParallelFor: runs n independent I/O tasks on an executor and waits for all of them.
// Thread-safety: reentrant; must not be called from inside a task of the same bounded pool.
#pragma once

#include <cstdint>
#include <functional>

#include "loom/base/status.h"
#include "loom/base/thread_pool.h"

namespace loom::ckpt {

// Runs fn(i) for every i in [0, n) on `pool`; after the first failure the remaining tasks are
// skipped. Returns the first error.
Status ParallelFor(Executor* pool, int64_t n, const std::function<Status(int64_t)>& fn);

}  // namespace loom::ckpt
