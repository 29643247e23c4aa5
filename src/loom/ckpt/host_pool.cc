#include "loom/ckpt/host_pool.h"

#include <sys/mman.h>

#include <chrono>
#include <new>

#include "loom/base/check.h"
#include "loom/base/clock.h"

namespace loom::ckpt {

HostPool::HostPool(int slots) : slots_(slots), busy_(slots, false) {
  for (int i = 0; i < slots; ++i) slots_[i].index = i;
}

HostPool::~HostPool() {
  MutexLock l(&mu_);
  for (Slot& s : slots_) {
    if (s.data != nullptr) ::munmap(s.data, static_cast<size_t>(s.capacity));
  }
}

void HostPool::Grow(Slot* s, int64_t bytes) {
  if (s->capacity >= bytes) return;
  if (s->data != nullptr) ::munmap(s->data, static_cast<size_t>(s->capacity));
  const int64_t cap = (bytes + (2 << 20) - 1) / (2 << 20) * (2 << 20);
  void* p = ::mmap(nullptr, static_cast<size_t>(cap), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  ::madvise(p, static_cast<size_t>(cap), MADV_HUGEPAGE);
  s->data = static_cast<char*>(p);
  s->capacity = cap;
}

void HostPool::Reserve(int64_t bytes) {
  MutexLock l(&mu_);
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (!busy_[i]) Grow(&slots_[i], bytes);
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
  Grow(&slots_[free_slot], bytes);
  return slots_[free_slot];
}

void HostPool::Release(const Slot& slot) {
  MutexLock l(&mu_);
  LOOM_CHECK(busy_[slot.index]);
  busy_[slot.index] = false;
  cv_.NotifyAll();
}

}  // namespace loom::ckpt
