// Cost per span of loom::ScopedTrace in its three states: no sink installed, a Tracer installed
// but the step outside its window, and recording. Build: ninja loom_trace_tracer_bench.
#include <cstdio>

#include "loom/base/clock.h"
#include "loom/base/trace_sink.h"
#include "loom/trace/tracer/tracer.h"

namespace {

double NanosPerSpan(int64_t n) {
  const int64_t t0 = loom::NowNanos();
  for (int64_t i = 0; i < n; ++i) {
    loom::ScopedTrace s(loom::TraceCategory::kForward, "forward");
    asm volatile("" ::: "memory");
  }
  return static_cast<double>(loom::NowNanos() - t0) / static_cast<double>(n);
}

}  // namespace

int main() {
  const int64_t n = 2000000;
  const double none = NanosPerSpan(n);
  loom::trace::Tracer tracer({.start_step = 10, .capacity_per_thread = 1 << 22});
  loom::ScopedTraceSinkInstall install(&tracer);
  tracer.SetStep(0);
  const double outside = NanosPerSpan(n);
  tracer.SetStep(10);
  const double recording = NanosPerSpan(n);
  const int64_t c0 = loom::NowNanos();
  for (int64_t i = 0; i < n; ++i) {
    volatile int64_t x = loom::NowNanos();
    (void)x;
  }
  const double clock = static_cast<double>(loom::NowNanos() - c0) / static_cast<double>(n);
  const loom::trace::TracerStats st = tracer.stats();
  std::printf(
      "ns per span: no sink %.2f, sink outside its window %.2f, recording %.2f "
      "(one NowNanos %.2f); %lld records kept, %lld dropped\n",
      none, outside, recording, clock, static_cast<long long>(st.records),
      static_cast<long long>(st.dropped));
  return 0;
}
