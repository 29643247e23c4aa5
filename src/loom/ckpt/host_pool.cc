#include "loom/ckpt/host_pool.h"

#include <chrono>
#include <new>

#include "loom/base/check.h"
#include "loom/base/clock.h"

namespace loom::ckpt {

HostPool::HostPool(int slots) : slots_(slots), buffers_(slots), busy_(slots, false) {
  for (int i = 0; i < slots; ++i) slots_[i].index = i;
}

HostPool::~HostPool() = default;

void HostPool::Grow(int i, int64_t bytes) {
  if (slots_[i].capacity >= bytes) return;
  buffers_[i] = HugeBuffer();  // release first: peak memory stays at one copy
  slots_[i].data = nullptr;    // and never describe unmapped memory if the next line throws
  slots_[i].capacity = 0;
  buffers_[i] = HugeBuffer(static_cast<size_t>(bytes));
  slots_[i].data = buffers_[i].data();
  slots_[i].capacity = static_cast<int64_t>(buffers_[i].size());
}

void HostPool::Reserve(int64_t bytes) {
  MutexLock l(&mu_);
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (!busy_[i]) Grow(static_cast<int>(i), bytes);
  }
}

HostPool::Slot HostPool::Acquire(int64_t bytes) {
  MutexLock l(&mu_);
  int free_slot = -1;
  cv_.WaitUntil(&mu_, FarFuture(), [&]() LOOM_REQUIRES(mu_) {
    for (size_t i = 0; i < busy_.size(); ++i) {
      if (!busy_[i]) {
        free_slot = static_cast<int>(i);
        return true;
      }
    }
    return false;
  });
  busy_[free_slot] = true;
  try {
    Grow(free_slot, bytes);
  } catch (...) {
    busy_[free_slot] = false;
    throw;
  }
  return slots_[free_slot];
}

void HostPool::Release(const Slot& slot) {
  MutexLock l(&mu_);
  LOOM_CHECK(busy_[slot.index]);
  busy_[slot.index] = false;
  cv_.NotifyAll();
}

}  // namespace loom::ckpt
