#include "loom/trace/tracer/tracer.h"

#include <pthread.h>

#include <algorithm>

#include "loom/base/check.h"
#include "loom/base/clock.h"

namespace loom::trace {
namespace {

std::atomic<uint64_t> g_next_tracer_id{1};

// The lane this thread appends to, for the tracer it used last. A thread that alternates between
// tracers takes the mutex-protected lookup on every switch (tests only).
struct LaneCache {
  uint64_t tracer_id = 0;
  void* lane = nullptr;
};
thread_local LaneCache t_lane_cache;

bool IsComm(TraceCategory c) {
  return c == TraceCategory::kCollective || c == TraceCategory::kSend || c == TraceCategory::kRecv;
}

}  // namespace

struct Tracer::Lane {
  int id = 0;
  std::string name;
  std::thread::id thread;
  int64_t chunk_records = 0;
  int64_t capacity = 0;
  // Sized once at registration (capacity / chunk_records entries); chunk i is allocated by the
  // owning thread before `size` is published past its start.
  std::vector<std::unique_ptr<TraceRecord[]>> chunks;
  std::atomic<int64_t> size{0};
  std::atomic<int64_t> dropped{0};
  std::atomic<int64_t> allocated_chunks{0};
};

Tracer::Tracer(TracerOptions options)
    : options_(std::move(options)),
      id_(g_next_tracer_id.fetch_add(1)),
      owner_thread_(std::this_thread::get_id()),
      mono_at_init_ns_(loom::NowNanos() + options_.clock_skew_ns),
      real_at_init_ns_(loom::WallNanos()) {
  LOOM_CHECK(options_.capacity_per_thread >= 1) << "capacity_per_thread must be >= 1";
  LOOM_CHECK(options_.chunk_records >= 1) << "chunk_records must be >= 1";
  LOOM_CHECK(options_.every_n >= 1) << "every_n must be >= 1";
}

Tracer::~Tracer() = default;

int64_t Tracer::NowNanos() const { return loom::NowNanos() + options_.clock_skew_ns; }

bool Tracer::Sampled(int64_t step) const {
  if (step < options_.start_step) return false;
  if (options_.end_step >= 0 && step > options_.end_step) return false;
  return (step - options_.start_step) % options_.every_n == 0;
}

void Tracer::SetStep(int64_t step) {
  current_step_.store(step, std::memory_order_relaxed);
  set_enabled(Sampled(step));
}

Tracer::Lane* Tracer::LaneForThisThread(const TraceRecord& first) {
  const std::thread::id me = std::this_thread::get_id();
  MutexLock lock(&mu_);
  for (auto& lane : lanes_) {
    if (lane->thread == me) return lane.get();
  }
  auto lane = std::make_unique<Lane>();
  lane->id = static_cast<int>(lanes_.size()) + 1;
  lane->thread = me;
  lane->chunk_records = std::min(options_.chunk_records, options_.capacity_per_thread);
  lane->capacity = options_.capacity_per_thread;
  lane->chunks.resize(
      static_cast<size_t>((lane->capacity + lane->chunk_records - 1) / lane->chunk_records));
  if (const char* explicit_name = TraceThreadName()) {
    lane->name = explicit_name;
  } else if (me == owner_thread_) {
    lane->name = "main";
  } else if (IsComm(first.category)) {
    lane->name = "comm";
  } else {
    char buf[32] = {0};
    if (pthread_getname_np(pthread_self(), buf, sizeof(buf)) == 0 && buf[0] != '\0') {
      lane->name = buf;
    } else {
      lane->name = "thread " + std::to_string(lane->id);
    }
  }
  lanes_.push_back(std::move(lane));
  return lanes_.back().get();
}

void Tracer::Record(const TraceRecord& record) {
  Lane* lane = nullptr;
  if (t_lane_cache.tracer_id == id_) {
    lane = static_cast<Lane*>(t_lane_cache.lane);
  } else {
    lane = LaneForThisThread(record);
    t_lane_cache = {id_, lane};
  }
  const int64_t n = lane->size.load(std::memory_order_relaxed);  // only this thread writes it
  if (n >= lane->capacity) {
    lane->dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const int64_t c = n / lane->chunk_records;
  auto& chunk = lane->chunks[static_cast<size_t>(c)];
  if (!chunk) {
    chunk.reset(new TraceRecord[static_cast<size_t>(lane->chunk_records)]);
    lane->allocated_chunks.fetch_add(1, std::memory_order_relaxed);
  }
  TraceRecord& r = chunk[static_cast<size_t>(n % lane->chunk_records)];
  r = record;
  r.ts_ns += options_.clock_skew_ns;
  r.lane = static_cast<uint16_t>(lane->id);
  if (r.rank < 0) r.rank = static_cast<int16_t>(options_.rank);
  if (r.step < 0) r.step = static_cast<int32_t>(current_step_.load(std::memory_order_relaxed));
  lane->size.store(n + 1, std::memory_order_release);
}

const char* Tracer::Intern(std::string_view name) {
  MutexLock lock(&mu_);
  return interned_.emplace(name).first->c_str();
}

TracerStats Tracer::stats() const {
  TracerStats s;
  MutexLock lock(&mu_);
  s.lanes = static_cast<int>(lanes_.size());
  for (const auto& lane : lanes_) {
    s.records += lane->size.load(std::memory_order_acquire);
    s.dropped += lane->dropped.load(std::memory_order_relaxed);
    s.reserved_bytes += lane->allocated_chunks.load(std::memory_order_relaxed) *
                        lane->chunk_records * static_cast<int64_t>(sizeof(TraceRecord));
  }
  return s;
}

std::vector<LaneInfo> Tracer::lanes() const {
  std::vector<LaneInfo> out;
  MutexLock lock(&mu_);
  for (const auto& lane : lanes_) out.push_back({lane->id, lane->name});
  return out;
}

std::vector<TraceRecord> Tracer::Snapshot() const {
  std::vector<TraceRecord> out;
  MutexLock lock(&mu_);
  for (const auto& lane : lanes_) {
    const int64_t n = lane->size.load(std::memory_order_acquire);
    for (int64_t i = 0; i < n; ++i) {
      out.push_back(lane->chunks[static_cast<size_t>(i / lane->chunk_records)]
                                [static_cast<size_t>(i % lane->chunk_records)]);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

RankRouter::RankRouter(std::vector<TraceSink*> per_rank) : sinks_(std::move(per_rank)) {
  LOOM_CHECK(!sinks_.empty()) << "RankRouter needs at least one sink";
  Refresh();
}

void RankRouter::Record(const TraceRecord& record) {
  const int r = record.rank < 0 ? 0 : record.rank;
  if (r >= static_cast<int>(sinks_.size())) return;
  if (sinks_[static_cast<size_t>(r)]->enabled()) sinks_[static_cast<size_t>(r)]->Record(record);
}

const char* RankRouter::Intern(std::string_view name) { return sinks_[0]->Intern(name); }

void RankRouter::Refresh() {
  bool any = false;
  for (TraceSink* s : sinks_) any = any || s->enabled();
  set_enabled(any);
}

}  // namespace loom::trace
