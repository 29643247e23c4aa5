#include "loom/overlap/runtime/runtime.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>

#include "loom/base/check.h"
#include "loom/overlap/runtime/internal/segment_layout.h"
#include "loom/overlap/runtime/internal/wait_util.h"

namespace loom::overlap {
namespace {

using Clock = std::chrono::steady_clock;
using internal::AttachState;
using internal::RankSlot;
using internal::SegmentLayout;
using internal::SignalLine;

constexpr std::chrono::milliseconds kFutexSlice{10};     // bounds a lost wake-up / dead peer
constexpr std::chrono::milliseconds kLivenessPeriod{100};  // how often waits check peer pids
constexpr int kDumpSignalsPerRank = 32;
constexpr size_t kDumpMaxChars = 8192;

// One mapping of a segment; unmapped (and its fd closed) when the last Runtime lets go.
struct Segment {
  char* base = nullptr;
  int64_t bytes = 0;
  int fd = -1;
  ino_t inode = 0;
  Segment() = default;
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;
  ~Segment() {
    if (base != nullptr) munmap(base, static_cast<size_t>(bytes));
    if (fd >= 0) close(fd);
  }
};

enum class WaitOutcome { kReady, kTimeout, kPeerDead };

std::string Hex(uint64_t x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%016" PRIx64, x);
  return buf;
}

std::string Errno(std::string_view what) {
  return std::string(what) + ": " + std::strerror(errno);
}

class SegmentRuntime final : public Runtime {
 public:
  SegmentRuntime(std::shared_ptr<Segment> seg, const SegmentLayout& layout, int rank,
                 const RuntimeOptions& options, bool process_mode, std::string shm_name)
      : seg_(std::move(seg)),
        layout_(layout),
        rank_(rank),
        options_(options),
        process_mode_(process_mode),
        shm_name_(std::move(shm_name)) {}

  ~SegmentRuntime() override {
    if (process_mode_) {
      slot(rank_)->attach_state.store(static_cast<uint32_t>(AttachState::kDetached),
                                      std::memory_order_release);
      if (rank_ == 0) Unlink();
    }
  }

  // Process mode, rank 0: removes the /dev/shm name (the mapping stays valid). Idempotent.
  void Unlink() {
    if (!unlinked_ && !shm_name_.empty()) shm_unlink(shm_name_.c_str());
    unlinked_ = true;
  }
  void Register() {
    slot(rank_)->pid.store(static_cast<int32_t>(getpid()), std::memory_order_relaxed);
    slot(rank_)->attach_state.store(static_cast<uint32_t>(AttachState::kAttached),
                                    std::memory_order_release);
  }
  RankSlot* slot(int r) const { return internal::Slots(seg_->base) + r; }
  const Segment& segment() const { return *seg_; }
  const SegmentLayout& layout() const { return layout_; }

  int rank() const override { return rank_; }
  int num_ranks() const override { return layout_.world; }
  const RuntimeOptions& options() const override { return options_; }

  Result<void*> Alloc(int64_t bytes, int64_t align) override;
  Result<SignalId> AllocSignals(int32_t n) override;
  Status Reset() override;

  void* symm_at(const void* local, int rank) const override {
    LOOM_CHECK(rank >= 0 && rank < layout_.world)
        << "symm_at: rank " << rank << " not in [0, " << layout_.world << ")";
    int64_t off = static_cast<const char*>(local) - heap(rank_);
    LOOM_CHECK(off >= 0 && off <= layout_.heap_bytes)
        << "symm_at: pointer is not in rank " << rank_ << "'s symmetric heap";
    return heap(rank) + off;
  }
  bool InHeap(const void* p) const override {
    int64_t off = static_cast<const char*>(p) - heap(rank_);
    return off >= 0 && off < layout_.heap_bytes;
  }

  void notify(SignalId sig, int rank, uint32_t value, SignalOp op) override {
    SignalLine* line = sig_line(sig, rank);
    // seq_cst (not just release) so the store and the waiters load below cannot reorder with the
    // waiter's "waiters++; load value" (Dekker); otherwise a wake-up could be lost.
    if (op == SignalOp::kSet) {
      line->value.store(value, std::memory_order_seq_cst);
    } else {
      line->value.fetch_add(value, std::memory_order_seq_cst);
    }
    if (line->waiters.load(std::memory_order_seq_cst) != 0) internal::FutexWakeAll(&line->value);
  }

  Status wait(SignalId first, int32_t n, uint32_t value, std::string_view what,
              std::chrono::milliseconds timeout) override;

  uint32_t signal_value(SignalId sig, int rank) const override {
    return sig_line(sig, rank)->value.load(std::memory_order_acquire);
  }

  void put(void* dst, const void* src, int64_t bytes, int pe) override {
    CheckRange(dst, bytes, "put");
    if (bytes > 0) std::memcpy(symm_at(dst, pe), src, static_cast<size_t>(bytes));
  }
  void put_signal(void* dst, const void* src, int64_t bytes, SignalId sig, uint32_t value,
                  SignalOp op, int pe) override {
    put(dst, src, bytes, pe);
    notify(sig, pe, value, op);  // the release in notify orders the copy before the signal
  }
  void get(void* dst, const void* src, int64_t bytes, int pe) override {
    CheckRange(src, bytes, "get");
    if (bytes > 0) std::memcpy(dst, symm_at(src, pe), static_cast<size_t>(bytes));
  }
  void fence() override { std::atomic_thread_fence(std::memory_order_seq_cst); }
  void quiet() override { std::atomic_thread_fence(std::memory_order_seq_cst); }

  Status barrier_all(std::string_view what, std::chrono::milliseconds timeout) override;
  Status CheckSameConfig(uint64_t hash, std::string_view what) override;

  bool PeerAlive(int rank) const override {
    LOOM_CHECK(rank >= 0 && rank < layout_.world) << "PeerAlive: bad rank " << rank;
    if (!process_mode_ || rank == rank_) return true;
    auto state = static_cast<AttachState>(slot(rank)->attach_state.load(std::memory_order_acquire));
    if (state == AttachState::kDetached) return false;
    return internal::ProcessAlive(slot(rank)->pid.load(std::memory_order_relaxed));
  }
  std::string DumpSignals() const override;

 private:
  char* heap(int r) const { return internal::Heap(seg_->base, layout_, r); }
  internal::ControlHeader* ctl() const { return internal::Control(seg_->base); }
  SignalLine* sig_line(SignalId sig, int rank) const {
    LOOM_CHECK(rank >= 0 && rank < layout_.world)
        << "signal " << sig << ": rank " << rank << " not in [0, " << layout_.world << ")";
    LOOM_CHECK(sig >= 0 && sig < layout_.num_signals)
        << "signal " << sig << " not in [0, " << layout_.num_signals << ")";
    return internal::Signals(seg_->base, layout_, rank) + sig;
  }
  void CheckRange(const void* p, int64_t bytes, const char* op) const {
    int64_t off = static_cast<const char*>(p) - heap(rank_);
    LOOM_CHECK(bytes >= 0 && off >= 0 && off + bytes <= layout_.heap_bytes)
        << op << ": [" << off << ", " << off + bytes << ") is not inside rank " << rank_
        << "'s heap of " << layout_.heap_bytes << " bytes";
  }
  // "rank 1 (pid 42, dead)" style label of a peer's liveness.
  std::string PeerLabel(int r) const;
  // A rank that attached and whose process is gone without detaching (crashed), or -1.
  int CrashedPeer(const std::vector<int>& candidates) const;
  std::vector<int> AllPeers() const;
  // Waits until line->value >= target: spins until spin_until, then sleeps on the futex in
  // slices; every kLivenessPeriod checks `peers` for a crash (process mode).
  WaitOutcome WaitAtLeast(SignalLine* line, uint32_t target, Clock::time_point spin_until,
                          Clock::time_point deadline, const std::vector<int>& peers,
                          int* dead) const;
  std::chrono::milliseconds Effective(std::chrono::milliseconds t) const {
    return t.count() > 0 ? t : options_.timeout;
  }

  std::shared_ptr<Segment> seg_;
  SegmentLayout layout_;
  int rank_;
  RuntimeOptions options_;
  bool process_mode_;
  std::string shm_name_;
  bool unlinked_ = false;
  // Collective state: identical on every rank because collectives are called in the same order.
  int64_t heap_used_ = 0;
  int32_t signals_used_ = 0;
  uint32_t barrier_gen_ = 0;
  uint32_t config_gen_ = 0;
};

Result<void*> SegmentRuntime::Alloc(int64_t bytes, int64_t align) {
  if (bytes < 0) {
    return InvalidArgumentError("overlap runtime: Alloc: negative size " + std::to_string(bytes));
  }
  if (align <= 0 || (align & (align - 1)) != 0 || align > internal::kMaxAlign) {
    return InvalidArgumentError("overlap runtime: Alloc: alignment " + std::to_string(align) +
                                " is not a power of two <= " +
                                std::to_string(internal::kMaxAlign));
  }
  align = std::max<int64_t>(align, 64);
  int64_t off = internal::RoundUp(heap_used_, align);
  if (off > layout_.heap_bytes || bytes > layout_.heap_bytes - off) {
    return ResourceExhaustedError(
        "overlap runtime: rank " + std::to_string(rank_) + ": Alloc of " + std::to_string(bytes) +
        " bytes (align " + std::to_string(align) + ") does not fit: " +
        std::to_string(std::max<int64_t>(0, layout_.heap_bytes - off)) +
        " bytes left of RuntimeOptions::heap_bytes = " + std::to_string(layout_.heap_bytes));
  }
  heap_used_ = off + bytes;
  return static_cast<void*>(heap(rank_) + off);  // zero since creation or the last Reset()
}

Result<SignalId> SegmentRuntime::AllocSignals(int32_t n) {
  if (n < 0) {
    return InvalidArgumentError("overlap runtime: AllocSignals: negative count " +
                                std::to_string(n));
  }
  if (n > layout_.num_signals - signals_used_) {
    return ResourceExhaustedError(
        "overlap runtime: rank " + std::to_string(rank_) + ": AllocSignals(" + std::to_string(n) +
        ") does not fit: " + std::to_string(layout_.num_signals - signals_used_) +
        " signals left of RuntimeOptions::num_signals = " + std::to_string(layout_.num_signals));
  }
  SignalId first = signals_used_;
  signals_used_ += n;
  return first;
}

Status SegmentRuntime::Reset() {
  LOOM_RETURN_IF_ERROR(barrier_all("Reset (before clearing)", std::chrono::milliseconds(0)));
  std::memset(heap(rank_), 0, static_cast<size_t>(heap_used_));
  SignalLine* sigs = internal::Signals(seg_->base, layout_, rank_);
  for (int32_t s = 0; s < signals_used_; ++s) sigs[s].value.store(0, std::memory_order_relaxed);
  heap_used_ = 0;
  signals_used_ = 0;
  // Nobody may write into a rank's heap or signals before that rank has cleared them.
  return barrier_all("Reset (after clearing)", std::chrono::milliseconds(0));
}

WaitOutcome SegmentRuntime::WaitAtLeast(SignalLine* line, uint32_t target,
                                        Clock::time_point spin_until, Clock::time_point deadline,
                                        const std::vector<int>& peers, int* dead) const {
  auto ready = [&] { return line->value.load(std::memory_order_acquire) >= target; };
  if (ready()) return WaitOutcome::kReady;
  for (;;) {
    for (int k = 0; k < 32; ++k) internal::CpuRelax();
    if (ready()) return WaitOutcome::kReady;
    if (Clock::now() >= spin_until) break;
  }
  Clock::time_point next_liveness = Clock::now() + kLivenessPeriod;
  for (;;) {
    Clock::time_point now = Clock::now();
    if (now >= deadline) return ready() ? WaitOutcome::kReady : WaitOutcome::kTimeout;
    if (process_mode_ && now >= next_liveness) {
      next_liveness = now + kLivenessPeriod;
      int d = CrashedPeer(peers);
      if (d >= 0) {
        if (ready()) return WaitOutcome::kReady;
        *dead = d;
        return WaitOutcome::kPeerDead;
      }
    }
    line->waiters.fetch_add(1, std::memory_order_seq_cst);
    uint32_t v = line->value.load(std::memory_order_seq_cst);
    if (v < target) {
      auto slice = std::min<Clock::duration>(kFutexSlice, deadline - now);
      internal::FutexWait(&line->value, v, slice);
    }
    line->waiters.fetch_sub(1, std::memory_order_seq_cst);
    if (ready()) return WaitOutcome::kReady;
  }
}

Status SegmentRuntime::wait(SignalId first, int32_t n, uint32_t value, std::string_view what,
                            std::chrono::milliseconds timeout) {
  LOOM_CHECK(n >= 0 && first >= 0 && first <= layout_.num_signals - n)
      << "wait(" << what << "): signals [" << first << ", " << first + n << ") not in [0, "
      << layout_.num_signals << ")";
  std::chrono::milliseconds t = Effective(timeout);
  Clock::time_point start = Clock::now();
  Clock::time_point deadline = start + t;
  Clock::time_point spin_until = start + options_.spin;
  std::vector<int> peers = AllPeers();
  SignalLine* sigs = internal::Signals(seg_->base, layout_, rank_);
  for (int32_t i = 0; i < n; ++i) {
    int dead = -1;
    WaitOutcome o = WaitAtLeast(&sigs[first + i], value, spin_until, deadline, peers, &dead);
    if (o == WaitOutcome::kReady) continue;
    std::string msg = "overlap runtime: rank " + std::to_string(rank_) + ": " + std::string(what);
    std::string waiting = "signals [" + std::to_string(first) + ", " + std::to_string(first + n) +
                          ") >= " + std::to_string(value) + "; not ready:";
    int shown = 0;
    for (int32_t j = i; j < n && shown < 16; ++j) {
      uint32_t v = sigs[first + j].value.load(std::memory_order_acquire);
      if (v >= value) continue;
      waiting += (shown == 0 ? " sig " : ", sig ") + std::to_string(first + j) + " = " +
                 std::to_string(v);
      ++shown;
    }
    std::string peers_text;
    for (int r : peers) peers_text += (peers_text.empty() ? "" : ", ") + PeerLabel(r);
    std::string tail = "; peers: " + (peers_text.empty() ? std::string("none") : peers_text) +
                       "; signal dump: " + DumpSignals();
    if (o == WaitOutcome::kPeerDead) {
      return UnavailableError(msg + ": rank " + std::to_string(dead) + " died (pid " +
                              std::to_string(slot(dead)->pid.load(std::memory_order_relaxed)) +
                              ") while waiting for " + waiting + tail);
    }
    return DeadlineExceededError(msg + ": timed out after " + std::to_string(t.count()) +
                                 " ms waiting for " + waiting + tail);
  }
  return OkStatus();
}

Status SegmentRuntime::barrier_all(std::string_view what, std::chrono::milliseconds timeout) {
  std::chrono::milliseconds t = Effective(timeout);
  Clock::time_point start = Clock::now();
  uint32_t target = ++barrier_gen_;
  slot(rank_)->barrier_arrived.store(target, std::memory_order_release);
  internal::ControlHeader* c = ctl();
  // The acq_rel RMW chain makes the last arriver see every earlier arriver's writes; its release
  // store of the generation then publishes them all to the waiters.
  uint32_t arrived = c->barrier_count.value.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (arrived == static_cast<uint32_t>(layout_.world)) {
    c->barrier_count.value.store(0, std::memory_order_relaxed);
    c->barrier_gen.value.store(target, std::memory_order_seq_cst);
    if (c->barrier_gen.waiters.load(std::memory_order_seq_cst) != 0) {
      internal::FutexWakeAll(&c->barrier_gen.value);
    }
    return OkStatus();
  }
  std::vector<int> peers = AllPeers();
  int dead = -1;
  WaitOutcome o =
      WaitAtLeast(&c->barrier_gen, target, start + options_.spin, start + t, peers, &dead);
  if (o == WaitOutcome::kReady) return OkStatus();
  std::string missing;
  for (int r = 0; r < layout_.world; ++r) {
    if (slot(r)->barrier_arrived.load(std::memory_order_acquire) >= target) continue;
    missing += (missing.empty() ? "" : ", ") + PeerLabel(r);
  }
  std::string msg = "overlap runtime: rank " + std::to_string(rank_) + ": barrier_all(" +
                    std::string(what) + ") #" + std::to_string(target);
  std::string tail = "; ranks that did not arrive: " + (missing.empty() ? "none" : missing) +
                     ". The runtime is unusable after a failed barrier.";
  if (o == WaitOutcome::kPeerDead) {
    return UnavailableError(msg + ": rank " + std::to_string(dead) + " died" + tail);
  }
  return DeadlineExceededError(msg + ": timed out after " + std::to_string(t.count()) + " ms" +
                               tail);
}

Status SegmentRuntime::CheckSameConfig(uint64_t hash, std::string_view what) {
  uint32_t gen = ++config_gen_;
  slot(rank_)->config_hash.store(hash, std::memory_order_relaxed);
  slot(rank_)->config_gen.store(gen, std::memory_order_release);
  std::string label = "CheckSameConfig(" + std::string(what) + ")";
  LOOM_RETURN_IF_ERROR(barrier_all(label, std::chrono::milliseconds(0)));
  uint64_t h0 = slot(0)->config_hash.load(std::memory_order_relaxed);
  std::string problem;
  for (int r = 1; r < layout_.world && problem.empty(); ++r) {
    uint32_t g = slot(r)->config_gen.load(std::memory_order_acquire);
    uint64_t h = slot(r)->config_hash.load(std::memory_order_relaxed);
    if (g != gen) {
      problem = "rank " + std::to_string(r) + " is at config check #" + std::to_string(g) +
                " but rank " + std::to_string(rank_) + " at #" + std::to_string(gen);
    } else if (h != h0) {
      problem = "rank " + std::to_string(r) + " has config hash " + Hex(h) +
                " but rank 0 has " + Hex(h0);
    }
  }
  // Second barrier: nobody overwrites its slot (next check) before everyone has read them.
  LOOM_RETURN_IF_ERROR(barrier_all(label, std::chrono::milliseconds(0)));
  if (problem.empty()) return OkStatus();
  return InvalidArgumentError("overlap runtime: rank " + std::to_string(rank_) + ": " +
                              std::string(what) + ": op configuration differs across ranks: " +
                              problem);
}

std::vector<int> SegmentRuntime::AllPeers() const {
  std::vector<int> peers;
  for (int r = 0; r < layout_.world; ++r) {
    if (r != rank_) peers.push_back(r);
  }
  return peers;
}

int SegmentRuntime::CrashedPeer(const std::vector<int>& candidates) const {
  if (!process_mode_) return -1;
  for (int r : candidates) {
    auto state = static_cast<AttachState>(slot(r)->attach_state.load(std::memory_order_acquire));
    if (state != AttachState::kAttached) continue;  // clean exit is not a crash
    if (!internal::ProcessAlive(slot(r)->pid.load(std::memory_order_relaxed))) return r;
  }
  return -1;
}

std::string SegmentRuntime::PeerLabel(int r) const {
  std::string s = "rank " + std::to_string(r);
  if (!process_mode_) return s + " (thread)";
  int32_t pid = slot(r)->pid.load(std::memory_order_relaxed);
  auto state = static_cast<AttachState>(slot(r)->attach_state.load(std::memory_order_acquire));
  const char* live = "alive";
  if (state == AttachState::kNone) {
    live = "not attached";
  } else if (state == AttachState::kDetached) {
    live = "exited";
  } else if (r != rank_ && !internal::ProcessAlive(pid)) {
    live = "dead";
  }
  return s + " (pid " + std::to_string(pid) + ", " + live + ")";
}

std::string SegmentRuntime::DumpSignals() const {
  internal::ControlHeader* c = ctl();
  std::string out = "barrier #" + std::to_string(c->barrier_gen.value.load()) + " with " +
                    std::to_string(c->barrier_count.value.load()) + "/" +
                    std::to_string(layout_.world) + " arrived";
  for (int r = 0; r < layout_.world; ++r) {
    out += "; " + PeerLabel(r) + ":";
    const SignalLine* sigs = internal::Signals(seg_->base, layout_, r);
    int shown = 0;
    int more = 0;
    for (int32_t s = 0; s < layout_.num_signals; ++s) {
      uint32_t v = sigs[s].value.load(std::memory_order_acquire);
      if (v == 0) continue;
      if (shown >= kDumpSignalsPerRank || out.size() > kDumpMaxChars) {
        ++more;
        continue;
      }
      out += (shown == 0 ? " sig " : ", sig ") + std::to_string(s) + " = " + std::to_string(v);
      ++shown;
    }
    if (shown == 0 && more == 0) out += " all signals 0";
    if (more > 0) out += " (+" + std::to_string(more) + " more non-zero)";
  }
  return out;
}

Status ValidateJob(std::string_view job) {
  if (job.empty() || job.size() > 200) {
    return InvalidArgumentError("overlap runtime: job name must have 1..200 characters, got " +
                                std::to_string(job.size()));
  }
  for (char ch : job) {
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '-' || ch == '_' || ch == '.';
    if (!ok) {
      return InvalidArgumentError("overlap runtime: job name '" + std::string(job) +
                                  "' may only contain [A-Za-z0-9._-]");
    }
  }
  return OkStatus();
}

// Rank 0: a fresh, initialised, published segment under `name` (a stale one is replaced).
Result<std::shared_ptr<Segment>> CreateSegment(const std::string& name,
                                               const SegmentLayout& layout) {
  shm_unlink(name.c_str());  // stale segment of a crashed job with the same name
  auto seg = std::make_shared<Segment>();
  seg->fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (seg->fd < 0) return UnavailableError(Errno("overlap runtime: rank 0: shm_open " + name));
  if (ftruncate(seg->fd, layout.total_bytes) != 0) {
    Status s = ResourceExhaustedError(Errno("overlap runtime: rank 0: ftruncate " + name + " to " +
                                            std::to_string(layout.total_bytes) + " bytes"));
    shm_unlink(name.c_str());
    return s;
  }
  void* p = mmap(nullptr, static_cast<size_t>(layout.total_bytes), PROT_READ | PROT_WRITE,
                 MAP_SHARED, seg->fd, 0);
  if (p == MAP_FAILED) {
    Status s = ResourceExhaustedError(Errno("overlap runtime: rank 0: mmap " + name));
    shm_unlink(name.c_str());
    return s;
  }
  seg->base = static_cast<char*>(p);
  seg->bytes = layout.total_bytes;
  struct stat st;
  if (fstat(seg->fd, &st) == 0) seg->inode = st.st_ino;
  internal::InitializeSegment(seg->base, layout);
  // Rank 0's pid goes in before the magic so attachers can tell a stale segment (dead creator).
  internal::Slots(seg->base)[0].pid.store(static_cast<int32_t>(getpid()),
                                          std::memory_order_relaxed);
  internal::PublishSegment(seg->base);
  return seg;
}

// One attempt to map a published segment whose creator is alive; nullptr means "not yet, retry".
Result<std::shared_ptr<Segment>> TryAttach(const std::string& name, const SegmentLayout& layout,
                                           int rank) {
  int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) {
    if (errno == ENOENT) return std::shared_ptr<Segment>();
    return UnavailableError(Errno("overlap runtime: rank " + std::to_string(rank) +
                                  ": shm_open " + name));
  }
  auto seg = std::make_shared<Segment>();
  seg->fd = fd;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < layout.control_bytes) return std::shared_ptr<Segment>();
  seg->inode = st.st_ino;
  void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED,
                 fd, 0);
  if (p == MAP_FAILED) return std::shared_ptr<Segment>();
  seg->base = static_cast<char*>(p);
  seg->bytes = st.st_size;
  internal::ControlHeader* c = internal::Control(seg->base);
  if (c->magic.load(std::memory_order_acquire) != internal::kSegmentMagic) {
    return std::shared_ptr<Segment>();  // not yet published
  }
  if (!internal::ProcessAlive(internal::Slots(seg->base)[0].pid.load())) {
    return std::shared_ptr<Segment>();  // stale: its creator is gone; rank 0 will replace it
  }
  if (c->version != internal::kSegmentVersion || c->world != layout.world ||
      c->num_signals != layout.num_signals || c->heap_bytes != layout.heap_bytes ||
      st.st_size != layout.total_bytes) {
    return InvalidArgumentError(
        "overlap runtime: rank " + std::to_string(rank) + ": segment " + name +
        " was created by rank 0 with world " + std::to_string(c->world) + ", num_signals " +
        std::to_string(c->num_signals) + ", heap_bytes " + std::to_string(c->heap_bytes) +
        " (version " + std::to_string(c->version) + ") but this rank has world " +
        std::to_string(layout.world) + ", num_signals " + std::to_string(layout.num_signals) +
        ", heap_bytes " + std::to_string(layout.heap_bytes));
  }
  return seg;
}

// Whether `name` now names a different segment than `seg` (rank 0 replaced a stale one).
bool Replaced(const std::string& name, const Segment& seg) {
  int fd = shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0) return false;
  struct stat st;
  bool replaced = fstat(fd, &st) == 0 && st.st_ino != seg.inode;
  close(fd);
  return replaced;
}

}  // namespace

Result<std::vector<std::unique_ptr<Runtime>>> CreateThreadRuntimes(int world,
                                                                   const RuntimeOptions& options) {
  LOOM_ASSIGN_OR_RETURN(SegmentLayout layout, SegmentLayout::Make(world, options));
  auto seg = std::make_shared<Segment>();
  void* p = mmap(nullptr, static_cast<size_t>(layout.total_bytes), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    return ResourceExhaustedError(Errno("overlap runtime: thread mode: mmap of " +
                                        std::to_string(layout.total_bytes) + " bytes"));
  }
  seg->base = static_cast<char*>(p);
  seg->bytes = layout.total_bytes;
  internal::InitializeSegment(seg->base, layout);
  internal::PublishSegment(seg->base);
  std::vector<std::unique_ptr<Runtime>> out;
  for (int r = 0; r < world; ++r) {
    auto rt = std::make_unique<SegmentRuntime>(seg, layout, r, options, false, "");
    rt->Register();
    out.push_back(std::move(rt));
  }
  return out;
}

Result<std::unique_ptr<Runtime>> CreateProcessRuntime(std::string_view job, int rank, int world,
                                                      const RuntimeOptions& options) {
  LOOM_RETURN_IF_ERROR(ValidateJob(job));
  if (world < 1 || rank < 0 || rank >= world) {
    return InvalidArgumentError("overlap runtime: rank " + std::to_string(rank) +
                                " not in [0, world = " + std::to_string(world) + ")");
  }
  LOOM_ASSIGN_OR_RETURN(SegmentLayout layout, SegmentLayout::Make(world, options));
  const std::string name = "/loom-" + std::string(job);
  const Clock::time_point deadline = Clock::now() + options.timeout;
  for (;;) {  // more than one round only when a rank attached to a stale segment
    std::shared_ptr<Segment> seg;
    if (rank == 0) {
      LOOM_ASSIGN_OR_RETURN(seg, CreateSegment(name, layout));
    } else {
      while (seg == nullptr) {
        LOOM_ASSIGN_OR_RETURN(seg, TryAttach(name, layout, rank));
        if (seg != nullptr) break;
        if (Clock::now() >= deadline) {
          return DeadlineExceededError(
              "overlap runtime: rank " + std::to_string(rank) + ": segment " + name +
              " did not appear within " + std::to_string(options.timeout.count()) +
              " ms (is rank 0 running with the same job name?)");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    auto rt = std::make_unique<SegmentRuntime>(seg, layout, rank, options, true, name);
    rt->Register();
    bool stale = false;
    for (int polls = 0;; ++polls) {
      std::string missing;
      for (int r = 0; r < world; ++r) {
        if (rt->slot(r)->attach_state.load(std::memory_order_acquire) == 0) {
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        }
      }
      if (missing.empty()) break;
      if (Clock::now() >= deadline) {
        return DeadlineExceededError("overlap runtime: rank " + std::to_string(rank) + ": " +
                                     name + ": ranks " + missing + " of " +
                                     std::to_string(world) + " did not attach within " +
                                     std::to_string(options.timeout.count()) + " ms");
      }
      if (rank != 0 && polls % 16 == 15 && Replaced(name, rt->segment())) {
        stale = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (stale) continue;  // rt's destructor marks us detached in the stale segment
    if (rank == 0) rt->Unlink();  // all attached: a crash from here on leaves no /dev/shm file
    return std::unique_ptr<Runtime>(std::move(rt));
  }
}

}  // namespace loom::overlap
