// Internal: shared futex wait/wake and process liveness helpers of the Runtime.
//
// Futexes are the shared kind (no FUTEX_PRIVATE_FLAG): they key on the physical page, so a
// waiter in one process is woken by a notify in another process mapping the same segment.
//
// Thread-safety: stateless functions, callable from any thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>

namespace loom::overlap::internal {

// Sleeps while `*word == expected`, at most `timeout` (spurious wake-ups are allowed).
void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::nanoseconds timeout);
// Wakes every sleeper on `word`.
void FutexWakeAll(std::atomic<uint32_t>* word);

// One pause instruction (x86 `pause`, a no-op elsewhere).
void CpuRelax();

// Whether process `pid` exists and is not a zombie (a dead child not yet reaped counts as dead).
bool ProcessAlive(pid_t pid);

}  // namespace loom::overlap::internal
