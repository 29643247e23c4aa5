// Test helper: a 2-rank run with exactly known timing (see MakeRun) as in-memory RankTraces,
// for the trace builder, replay and what-if tests. Header-only; tests only.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "loom/trace/ingest/testing/synthetic.h"
#include "loom/trace/ingest/trace_events.h"

namespace loom::trace::dfg::testing {

using ingest::EventKind;
using ingest::testing::TraceBuilder;

constexpr int64_t kUs = 1000;
constexpr double kAlpha = 10 * kUs;
constexpr double kNsPerByte = 1.0;

// Two ranks, identical timing, steps of 10 ms: FW 2 ms, BW 4 ms; bucket 0 (2 MB) ready halfway
// through backward, bucket 1 (1 MB) at its end; ring allreduce priced exactly α + bytes/β.
// zero1: the optimizer span also holds a 200 µs main-lane all-gather of 3 MB (an update
// collective). kappa > 0: the link speed varies by step (ns/B x 0.5 .. 1.5) and backward is
// stretched by bucket 0's communication as compute at 1/kappa would be: 4 ms + L0 (1 - 1/kappa),
// where L0 is bucket 0's collective (it starts 2 ms into backward and ends before backward does).
inline std::vector<ingest::RankTrace> MakeRun(int steps, bool wait_span, bool zero1 = false,
                                              double kappa = 0) {
  std::vector<TraceBuilder> b;
  for (int r = 0; r < 2; ++r) b.emplace_back(r, 2);
  int64_t flow = 1, seq = 0;
  for (int n = 1; n <= steps; ++n) {
    const int64_t t = 1'000'000'000 + n * 10'000 * kUs;
    const double ns_per_byte = kappa > 0 ? kNsPerByte * (0.5 + 0.25 * (n % 5)) : kNsPerByte;
    auto xfer_of = [&](int64_t bytes) {
      return static_cast<int64_t>(kAlpha + bytes / 2 * ns_per_byte);
    };
    const int64_t l0 = 2 * xfer_of(2'000'000) + 20 * kUs;
    const int64_t bw_dur =
        4000 * kUs + (kappa > 0 ? static_cast<int64_t>(l0 * (1 - 1 / kappa)) : 0);
    const int64_t bw0 = t + 2300 * kUs, bw1 = bw0 + bw_dur;
    int64_t comm_end = 0;
    for (int r = 0; r < 2; ++r) {
      b[r].Add(EventKind::kStep, "ProfilerStep#" + std::to_string(n), t, 10'000 * kUs).step = n;
      b[r].Add(EventKind::kForward, "forward", t + 100 * kUs, 2000 * kUs).step = n;
      b[r].Add(EventKind::kBackward, "backward", bw0, bw_dur).step = n;
    }
    int64_t start = bw0 + 2000 * kUs;
    for (int64_t bytes : {2'000'000, 1'000'000}) {
      start = std::max(start, comm_end);
      if (bytes == 1'000'000) start = std::max(start, bw1);
      int64_t now = start;
      const int64_t chunk = bytes / 2;
      const int64_t xfer = xfer_of(bytes);
      for (int s = 0; s < 2; ++s) {
        for (int r = 0; r < 2; ++r) {
          const std::string name =
              "allreduce." + std::to_string(seq) + "~>" + std::to_string(s) + "_0";
          auto& se = b[r].P2P(true, "SEND." + name, now, 5 * kUs, 1 - r, flow);
          se.seq = seq;
          se.bytes = chunk;
          se.step = n;
          auto& re = b[1 - r].P2P(false, "RECV." + name, now - kUs, xfer + kUs, r, flow);
          re.seq = seq;
          re.bytes = chunk;
          re.step = n;
          ++flow;
        }
        now += xfer + 20 * kUs;  // 20 µs reduction before the next step's send
      }
      comm_end = now - 20 * kUs;
      for (int r = 0; r < 2; ++r) {
        b[r].Comm("allreduce", start, comm_end - start, bytes, "", seq).step = n;
      }
      ++seq;
    }
    for (int r = 0; r < 2; ++r) {
      if (wait_span) b[r].Add(EventKind::kOther, "wait_grad_sync", bw1, comm_end - bw1).step = n;
      b[r].Add(EventKind::kUpdate, "optimizer", comm_end + 50 * kUs, 500 * kUs).step = n;
      if (zero1) {
        auto& ag = b[r].Comm("allgather", comm_end + 150 * kUs, 200 * kUs, 3'000'000, "", seq);
        ag.step = n;
        ag.lane = 0;  // the main thread
      }
    }
    if (zero1) ++seq;
  }
  std::vector<ingest::RankTrace> out;
  for (TraceBuilder& tb : b) out.push_back(tb.Build());
  return out;
}

}  // namespace loom::trace::dfg::testing
