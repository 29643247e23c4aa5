#include "loom/base/trace_sink.h"

namespace loom {
namespace {
thread_local const char* t_thread_name = nullptr;

uint64_t Mix64(uint64_t x) {  // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}
}  // namespace

std::string_view TraceCategoryName(TraceCategory c) {
  switch (c) {
    case TraceCategory::kCompute:
      return "compute";
    case TraceCategory::kForward:
      return "forward";
    case TraceCategory::kBackward:
      return "backward";
    case TraceCategory::kOptimizer:
      return "optimizer";
    case TraceCategory::kStep:
      return "step";
    case TraceCategory::kCollective:
      return "collective";
    case TraceCategory::kSend:
      return "send";
    case TraceCategory::kRecv:
      return "recv";
    case TraceCategory::kCompress:
      return "compress";
    case TraceCategory::kDecompress:
      return "decompress";
    case TraceCategory::kMemcpy:
      return "memcpy";
    case TraceCategory::kDataLoader:
      return "dataloader";
    case TraceCategory::kCheckpoint:
      return "checkpoint";
  }
  return "unknown";
}

uint64_t TraceFlowId(int64_t seq, int ring_step, int chunk, int src, int dst) {
  uint64_t h = Mix64(static_cast<uint64_t>(seq) + 0x9e3779b97f4a7c15ULL);
  h = Mix64(h ^ (static_cast<uint64_t>(static_cast<uint32_t>(ring_step)) << 32 |
                 static_cast<uint32_t>(chunk)));
  h = Mix64(h ^
            (static_cast<uint64_t>(static_cast<uint32_t>(src)) << 32 | static_cast<uint32_t>(dst)));
  h &= (uint64_t{1} << 52) - 1;
  return h == 0 ? 1 : h;
}

TraceSink* InstallTraceSink(TraceSink* sink) {
  return internal::g_trace_sink.exchange(sink, std::memory_order_acq_rel);
}

void SetTraceThreadName(const char* name) { t_thread_name = name; }
const char* TraceThreadName() { return t_thread_name; }

void ScopedTrace::Finish() {
  TraceRecord r;
  r.ts_ns = start_ns_;
  r.dur_ns = NowNanos() - start_ns_;
  r.name = name_;
  r.category = category_;
  r.bytes = bytes_;
  sink_->Record(r);
}

}  // namespace loom
