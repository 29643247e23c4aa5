// TraceSink: the low-level hook through which comm, train and others emit trace spans.
//
// Modules below `trace` in the dependency graph (comm, compress, train) cannot include the
// tracer, so they record through this small interface. loom::trace::Tracer implements it; with
// nothing installed every call site costs one atomic pointer load and a branch:
//
//   {
//     ScopedTrace span(TraceCategory::kForward, "forward");   // no-op unless a sink is enabled
//     loss = model.Loss(x, y);
//   }
//   if (TraceSink* sink = ActiveTraceSink()) { TraceRecord r; ...; sink->Record(r); }
//
// Why a process-wide pointer (the one accepted exception to "no global mutable singletons"):
// the hook sits on hot paths (every ring step of every collective, every forward/backward span)
// and threading a context object through every collective, autograd hook and thread pool would
// change dozens of signatures for a feature that is off by default. It stays injectable, not
// hidden: only an explicit InstallTraceSink()/ScopedTraceSinkInstall sets it (tests install
// their own sink), nothing installs one implicitly, and it never owns the sink.
//
// Thread-safety: Record() and Intern() may be called from any thread concurrently. Installing or
// uninstalling is allowed at any time, but a sink must stay alive until every thread that may
// have loaded it has finished recording (uninstall, quiesce the recording threads, then destroy).
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "loom/base/clock.h"

namespace loom {

// What a span is. The exporter maps these to Kineto categories (cpu_op, user_annotation, comm).
enum class TraceCategory : uint8_t {
  kCompute,  // generic CPU work
  kForward,
  kBackward,
  kOptimizer,
  kStep,        // one training step ("ProfilerStep#N"); name is ignored by the exporter
  kCollective,  // one whole collective (allreduce, reduce_scatter, ...); name = the op
  kSend,        // one ring step's chunk posted to `peer`; name = the collective op
  kRecv,        // waiting for one ring step's chunk from `peer`; name = the collective op
  kCompress,
  kDecompress,
  kMemcpy,
  kDataLoader,
  kCheckpoint,
};
inline constexpr int kNumTraceCategories = 13;

// Name of a category ("forward", "send", ...), for logs and exports.
std::string_view TraceCategoryName(TraceCategory c);

// One span, 64 bytes. Fields a recorder does not know stay at their defaults (-1 / 0); the sink
// fills `rank` and `step` from its own state when they are -1.
struct TraceRecord {
  int64_t ts_ns = 0;           // start, loom::NowNanos() (steady clock)
  int64_t dur_ns = 0;          // duration
  const char* name = nullptr;  // static storage, or a pointer returned by TraceSink::Intern
  int64_t bytes = 0;           // payload of a collective / chunk / copy
  int64_t seq = -1;            // communicator operation sequence number (equal on all ranks)
  uint64_t flow_id = 0;        // joins a SEND to its RECV on the peer (0: none)
  int32_t step = -1;           // training step (-1: the sink's current step)
  int16_t rank = -1;           // recording rank (-1: the sink's rank)
  int16_t peer = -1;           // the other rank of a SEND/RECV
  int16_t ring_step = -1;      // step of a ring algorithm (reduce-scatter, then all-gather)
  int16_t chunk = -1;          // pipelined segment within the ring step
  TraceCategory category = TraceCategory::kCompute;
  uint8_t dtype = 0xFF;  // loom::DType of a collective's elements (0xFF: unknown)
  uint16_t lane = 0;     // filled by the sink: the recording thread's lane
};
static_assert(sizeof(TraceRecord) == 64, "TraceRecord must stay one cache line");

// Flow id shared by the SEND on `src` and the matching RECV on `dst`: a deterministic hash of
// (op sequence, ring step, chunk, src, dst), so ranks agree without communicating. Never 0; fits
// in 52 bits so JSON readers that use doubles keep it exact.
uint64_t TraceFlowId(int64_t seq, int ring_step, int chunk, int src, int dst);

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  // Appends one record. Must be cheap and must not block (bounded buffers drop instead).
  virtual void Record(const TraceRecord& record) = 0;
  // A stable copy of `name` for TraceRecord::name (lives as long as the sink).
  virtual const char* Intern(std::string_view name) = 0;
  // False while the sink does not want records (e.g. outside its step window). Recorders check
  // it before measuring; a plain atomic load, not a virtual call.
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }

 protected:
  void set_enabled(bool on) { enabled_.store(on, std::memory_order_relaxed); }

 private:
  std::atomic<bool> enabled_{false};
};

namespace internal {
inline std::atomic<TraceSink*> g_trace_sink{nullptr};
}  // namespace internal

// The installed sink if it is enabled, else nullptr. One atomic load (acquire: a plain load on
// x86) and a branch when none is installed.
inline TraceSink* ActiveTraceSink() {
  TraceSink* s = internal::g_trace_sink.load(std::memory_order_acquire);
  return s != nullptr && s->enabled() ? s : nullptr;
}
// Installs `sink` (nullptr uninstalls); returns the previous one. Not owned.
TraceSink* InstallTraceSink(TraceSink* sink);

// Installs a sink for its lifetime and restores the previous one on destruction.
class ScopedTraceSinkInstall {
 public:
  explicit ScopedTraceSinkInstall(TraceSink* sink) : previous_(InstallTraceSink(sink)) {}
  ~ScopedTraceSinkInstall() { InstallTraceSink(previous_); }
  ScopedTraceSinkInstall(const ScopedTraceSinkInstall&) = delete;
  ScopedTraceSinkInstall& operator=(const ScopedTraceSinkInstall&) = delete;

 private:
  TraceSink* previous_;
};

// Names the calling thread's lane in traces ("main", "comm", "loader", ...). `name` must have
// static storage. Threads that never call it get a name from the sink (see Tracer).
void SetTraceThreadName(const char* name);
const char* TraceThreadName();  // nullptr when unset

// Records one span from construction to destruction if a sink was enabled at construction.
class ScopedTrace {
 public:
  ScopedTrace(TraceCategory category, const char* name)
      : sink_(ActiveTraceSink()), name_(name), category_(category) {
    if (sink_ != nullptr) start_ns_ = NowNanos();
  }
  ~ScopedTrace() {
    if (sink_ != nullptr) Finish();
  }
  ScopedTrace(const ScopedTrace&) = delete;
  ScopedTrace& operator=(const ScopedTrace&) = delete;

  bool active() const { return sink_ != nullptr; }
  void set_bytes(int64_t bytes) { bytes_ = bytes; }

 private:
  void Finish();

  TraceSink* sink_;
  const char* name_;
  TraceCategory category_;
  int64_t start_ns_ = 0;
  int64_t bytes_ = 0;
};

}  // namespace loom
