// Runtime: one rank's view of a symmetric heap and its signals (TileLink's low-level layer, in
// NVSHMEM's shape) for ranks that share one host's memory.
//
//   LOOM_ASSIGN_OR_RETURN(auto rt, CreateProcessRuntime("job42", rank, world, {}));
//   LOOM_ASSIGN_OR_RETURN(float* shard, rt->AllocArray<float>(n));      // collective, same order
//   LOOM_ASSIGN_OR_RETURN(SignalId ready, rt->AllocSignals(world));    // collective
//   rt->put_signal(shard, local, n * 4, ready + rt->rank(), epoch, SignalOp::kSet, peer);
//   LOOM_RETURN_IF_ERROR(rt->wait(ready + peer, 1, epoch, "ag_gemm: shard from peer"));
//
// Layout: one segment per job holds a control area (magic, world, pid table, barrier words,
// config-hash slots), then per rank a signal array (one 64-byte line per signal) and a heap of
// RuntimeOptions::heap_bytes. symm_at(p, r) maps a pointer into this rank's heap to the same offset
// in rank r's heap. Process mode maps the segment from /dev/shm (shm_open); thread mode allocates
// it privately and hands one Runtime per rank to threads in one process (for tests, TSan).
//
// Signals are epoch-valued uint32 words (a caller bumps the target value per call instead of
// resetting). notify() is a release store/add; wait() is an acquire load that spins for
// RuntimeOptions::spin, then sleeps on a shared (not FUTEX_PRIVATE) futex, woken by notify().
// Every wait has a deadline. On expiry it returns kDeadlineExceeded whose message names this
// rank, the signals waited for and their values, `what`, any dead peer (process mode: by pid),
// and a dump of every rank's non-zero signals (DumpSignals()). It never aborts.
//
// Thread-safety: a Runtime belongs to one rank; its methods may be called from that rank's
// threads concurrently (workers, the link proxy) except Alloc*/Reset/barrier_all/CheckSameConfig,
// which are collective and called by one thread per rank in the same order on every rank.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loom/base/status.h"

namespace loom::overlap {

// Index of a signal in every rank's signal array (the same index names the "same" signal on
// every rank, like a symmetric address).
using SignalId = int32_t;

enum class SignalOp {
  kSet,  // release store of the value
  kAdd,  // release fetch-add of the value
};

struct RuntimeOptions {
  int64_t heap_bytes = 64ll << 20;           // per rank; default 64 MiB
  int32_t num_signals = 4096;                // per rank; default 4096 (256 KiB of lines)
  std::chrono::milliseconds timeout{30000};  // default deadline of wait/barrier; default 30 s
  std::chrono::microseconds spin{5};         // busy-wait before sleeping on the futex; default 5 µs
};

class Runtime {
 public:
  virtual ~Runtime() = default;

  virtual int rank() const = 0;
  virtual int num_ranks() const = 0;
  virtual const RuntimeOptions& options() const = 0;

  // Collective: every rank calls with the same sizes in the same order; returns this rank's
  // copy, zero-filled, aligned to `align` (power of two, ≥ 64). kResourceExhausted when the heap
  // is full (the message says how much is left and RuntimeOptions::heap_bytes).
  virtual Result<void*> Alloc(int64_t bytes, int64_t align = 64) = 0;
  template <typename T>
  Result<T*> AllocArray(int64_t n) {
    LOOM_ASSIGN_OR_RETURN(void* p, Alloc(n * static_cast<int64_t>(sizeof(T))));
    return static_cast<T*>(p);
  }
  // Collective: `n` consecutive signals, zero; returns the first id. kResourceExhausted if full.
  virtual Result<SignalId> AllocSignals(int32_t n) = 0;
  // Collective: frees every allocation and signal (after a barrier, so no rank still uses them).
  virtual Status Reset() = 0;

  // Same offset as `local` (a pointer into this rank's heap) in rank `rank`'s heap.
  virtual void* symm_at(const void* local, int rank) const = 0;
  template <typename T>
  T* symm_at(T* local, int rank) const {
    return static_cast<T*>(symm_at(static_cast<const void*>(local), rank));
  }
  // True when `p` points into this rank's heap.
  virtual bool InHeap(const void* p) const = 0;

  // Release-sets or release-adds `value` on signal `sig` of rank `rank`, and wakes its waiters.
  virtual void notify(SignalId sig, int rank, uint32_t value, SignalOp op = SignalOp::kSet) = 0;
  // Waits until this rank's signals [first, first + n) are all ≥ `value` (acquire). `timeout`
  // 0 means options().timeout. `what` names the operation in the error message.
  virtual Status wait(SignalId first, int32_t n, uint32_t value, std::string_view what,
                      std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) = 0;
  // Acquire load of signal `sig` on rank `rank`.
  virtual uint32_t signal_value(SignalId sig, int rank) const = 0;

  // NVSHMEM-like data movement, executed by the calling thread at memory speed (no link model;
  // the link proxy adds pacing). `dst` and, for get, `src` are this rank's heap addresses naming
  // the symmetric location; put_signal copies into rank `pe`'s copy, then notifies `sig` on `pe`.
  virtual void put(void* dst, const void* src, int64_t bytes, int pe) = 0;
  virtual void put_signal(void* dst, const void* src, int64_t bytes, SignalId sig,
                          uint32_t value, SignalOp op, int pe) = 0;
  virtual void get(void* dst, const void* src, int64_t bytes, int pe) = 0;
  // Orders this rank's earlier puts before its later ones / completes them (puts are synchronous
  // here, so both are release fences; kept for the NVSHMEM contract).
  virtual void fence() = 0;
  virtual void quiet() = 0;
  // Collective barrier of all ranks (sense-reversing, on the control area), with a deadline;
  // on expiry names the ranks that did not arrive and whether they are alive.
  virtual Status barrier_all(std::string_view what,
                             std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) = 0;
  // Collective: every rank publishes `hash` of its op configuration (shapes, mode, splits, ...);
  // kInvalidArgument naming the first rank whose hash differs from rank 0's, with `what`.
  virtual Status CheckSameConfig(uint64_t hash, std::string_view what) = 0;

  // Whether rank `rank` is alive (process mode: its pid exists; thread mode: always true).
  virtual bool PeerAlive(int rank) const = 0;
  // Every rank's non-zero signals ("rank 1: sig 3 = 2, sig 4 = 1"), pids and liveness.
  virtual std::string DumpSignals() const = 0;
};

// Thread mode: `world` ranks as threads of this process sharing one private segment.
Result<std::vector<std::unique_ptr<Runtime>>> CreateThreadRuntimes(int world,
                                                                   const RuntimeOptions& options);

// Process mode: this process is rank `rank` of `world` on one host. Rank 0 creates
// /dev/shm/loom-<job> (replacing a stale one), the others attach; returns once all ranks have
// attached (kDeadlineExceeded naming the missing ranks after options.timeout). The segment is
// unlinked when rank 0's Runtime is destroyed. `job` must be unique per concurrent job.
Result<std::unique_ptr<Runtime>> CreateProcessRuntime(std::string_view job, int rank, int world,
                                                      const RuntimeOptions& options);

}  // namespace loom::overlap
