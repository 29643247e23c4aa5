// Internal: the byte layout of a Runtime segment, shared by process mode (/dev/shm) and thread
// mode (private anonymous memory), so both modes run the same code on the same structures.
//
//   [ControlHeader][RankSlot x world]   (padded to a page)          control area
//   rank 0: [SignalLine x num_signals] (padded to a page) [heap: heap_bytes, padded to a page]
//   rank 1: ...                                                      (stride = rank_stride)
//
// Every word that more than one rank touches is a lock-free std::atomic placed in the segment by
// InitializeSegment() (placement new, before the magic is published with release). Futex words
// are 32-bit atomics; FUTEX_WAIT/FUTEX_WAKE run on their address (shared, not FUTEX_PRIVATE).
//
// Thread-safety: plain layout arithmetic; the atomics inside carry all cross-rank ordering.
#pragma once

#include <atomic>
#include <cstdint>
#include <new>
#include <string>

#include "loom/base/status.h"
#include "loom/overlap/runtime/runtime.h"

namespace loom::overlap::internal {

inline constexpr uint64_t kSegmentMagic = 0x4c4f4f4d4f56524cull;  // "LOOMOVRL"
inline constexpr uint32_t kSegmentVersion = 1;
inline constexpr int64_t kPageBytes = 4096;
inline constexpr int64_t kMaxAlign = kPageBytes;  // every rank's heap base is page aligned

static_assert(std::atomic<uint32_t>::is_always_lock_free);
static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(std::atomic<int32_t>::is_always_lock_free);
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "futex word must be 32 bits");

// One signal (or barrier word) on its own cache line: the value is the futex word; `waiters`
// counts sleepers so that notify() only makes the wake syscall when someone sleeps.
struct alignas(64) SignalLine {
  std::atomic<uint32_t> value{0};
  std::atomic<uint32_t> waiters{0};
};
static_assert(sizeof(SignalLine) == 64);

enum class AttachState : uint32_t {
  kNone = 0,      // not yet attached
  kAttached = 1,  // attached and running
  kDetached = 2,  // its Runtime was destroyed cleanly (exited on purpose, not crashed)
};

// Per-rank bookkeeping in the control area, one cache line each.
struct alignas(64) RankSlot {
  std::atomic<int32_t> pid{0};
  std::atomic<uint32_t> attach_state{0};     // AttachState
  std::atomic<uint32_t> barrier_arrived{0};  // last barrier generation this rank arrived at
  std::atomic<uint32_t> config_gen{0};       // CheckSameConfig round of config_hash
  std::atomic<uint64_t> config_hash{0};
};
static_assert(sizeof(RankSlot) == 64);

struct ControlHeader {
  alignas(64) std::atomic<uint64_t> magic{0};  // kSegmentMagic, published last (release)
  uint32_t version = 0;
  int32_t world = 0;
  int32_t num_signals = 0;
  int64_t heap_bytes = 0;
  int64_t total_bytes = 0;
  SignalLine barrier_count;  // arrivals in the current barrier generation
  SignalLine barrier_gen;    // completed barrier generations (the sense word; futex)
};

inline int64_t RoundUp(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// Offsets of everything in a segment for (world, options).
struct SegmentLayout {
  int world = 0;
  int32_t num_signals = 0;
  int64_t heap_bytes = 0;
  int64_t control_bytes = 0;  // header + slots, page padded
  int64_t signals_bytes = 0;  // one rank's signal array, page padded
  int64_t rank_stride = 0;    // signals + heap of one rank
  int64_t total_bytes = 0;

  static Result<SegmentLayout> Make(int world, const RuntimeOptions& options) {
    if (world < 1) return InvalidArgumentError("overlap runtime: world must be >= 1, got " +
                                               std::to_string(world));
    if (options.heap_bytes < 0) {
      return InvalidArgumentError("overlap runtime: heap_bytes must be >= 0, got " +
                                  std::to_string(options.heap_bytes));
    }
    if (options.num_signals < 0) {
      return InvalidArgumentError("overlap runtime: num_signals must be >= 0, got " +
                                  std::to_string(options.num_signals));
    }
    SegmentLayout l;
    l.world = world;
    l.num_signals = options.num_signals;
    l.heap_bytes = options.heap_bytes;
    l.control_bytes =
        RoundUp(static_cast<int64_t>(sizeof(ControlHeader) + world * sizeof(RankSlot)), kPageBytes);
    l.signals_bytes =
        RoundUp(static_cast<int64_t>(options.num_signals) * sizeof(SignalLine), kPageBytes);
    l.rank_stride = l.signals_bytes + RoundUp(options.heap_bytes, kPageBytes);
    constexpr int64_t kMaxTotal = int64_t{1} << 42;  // 4 TiB: a typo, not a request
    if (l.rank_stride > kMaxTotal / world) {
      return InvalidArgumentError("overlap runtime: segment of " + std::to_string(world) +
                                  " ranks x " + std::to_string(l.rank_stride) +
                                  " bytes is too large");
    }
    l.total_bytes = l.control_bytes + world * l.rank_stride;
    return l;
  }

  int64_t signals_offset(int rank) const { return control_bytes + rank * rank_stride; }
  int64_t heap_offset(int rank) const { return signals_offset(rank) + signals_bytes; }
};

inline ControlHeader* Control(char* base) { return reinterpret_cast<ControlHeader*>(base); }
inline RankSlot* Slots(char* base) {
  return reinterpret_cast<RankSlot*>(base + RoundUp(sizeof(ControlHeader), 64));
}
inline SignalLine* Signals(char* base, const SegmentLayout& l, int rank) {
  return reinterpret_cast<SignalLine*>(base + l.signals_offset(rank));
}
inline char* Heap(char* base, const SegmentLayout& l, int rank) {
  return base + l.heap_offset(rank);
}

// Constructs every atomic in a zero-filled segment (the creator only, before anyone else can
// see it). The magic stays 0; PublishSegment() makes the segment visible to attachers.
inline void InitializeSegment(char* base, const SegmentLayout& l) {
  ControlHeader* ctl = new (base) ControlHeader();
  ctl->version = kSegmentVersion;
  ctl->world = l.world;
  ctl->num_signals = l.num_signals;
  ctl->heap_bytes = l.heap_bytes;
  ctl->total_bytes = l.total_bytes;
  RankSlot* slots = Slots(base);
  for (int r = 0; r < l.world; ++r) new (&slots[r]) RankSlot();
  for (int r = 0; r < l.world; ++r) {
    SignalLine* sigs = Signals(base, l, r);
    for (int32_t s = 0; s < l.num_signals; ++s) new (&sigs[s]) SignalLine();
  }
}

inline void PublishSegment(char* base) {
  Control(base)->magic.store(kSegmentMagic, std::memory_order_release);
}

}  // namespace loom::overlap::internal
