// Test helpers: build RankTraces in memory (no files) and generate multi-rank runs with known
// per-rank clock offsets and realistic collective timing, for matching and alignment tests.
// Header-only; tests only. Thread-safety: none needed (value types).
#pragma once

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "loom/trace/ingest/trace_events.h"

namespace loom::trace::ingest::testing {

class TraceBuilder {
 public:
  TraceBuilder(int rank, int world_size) : tp_(std::make_unique<RankTrace>()), t_(*tp_) {
    t_.rank = rank;
    t_.world_size = world_size;
    t_.dialect = Dialect::kLoom;
    t_.path = "synthetic_rank" + std::to_string(rank) + ".json";
    t_.lane_names = {"main", "comm"};
    names_ = std::make_unique<NameTable>(&t_.names);
  }
  TraceEvent& Comm(const std::string& name, int64_t ts, int64_t dur, int64_t bytes = kUnknown,
                   const std::string& group = "", int64_t seq = kUnknown) {
    TraceEvent& e = Add(EventKind::kComm, name, ts, dur);
    e.op = ParseCollectiveOp(name);
    e.bytes = bytes;
    e.seq = seq;
    e.group = group.empty() ? 0 : names_->Intern(group);
    return e;
  }
  TraceEvent& P2P(bool send, const std::string& name, int64_t ts, int64_t dur, int peer,
                  int64_t flow) {
    TraceEvent& e = Add(send ? EventKind::kSend : EventKind::kRecv, name, ts, dur);
    e.peer = peer;
    e.flow_id = flow;
    e.op = ParseCollectiveOp(name.substr(5));
    return e;
  }
  TraceEvent& Add(EventKind kind, const std::string& name, int64_t ts, int64_t dur) {
    TraceEvent e;
    e.rank = t_.rank;
    e.kind = kind;
    e.ts_ns = ts;
    e.dur_ns = dur;
    e.lane = kind == EventKind::kComm || kind == EventKind::kSend || kind == EventKind::kRecv;
    e.name = names_->Intern(name);
    t_.events.push_back(e);
    return t_.events.back();
  }
  RankTrace Build() {
    std::stable_sort(t_.events.begin(), t_.events.end(),
                     [](const TraceEvent& a, const TraceEvent& b) { return a.ts_ns < b.ts_ns; });
    names_.reset();
    return std::move(t_);
  }
  RankTrace& trace() { return t_; }

 private:
  std::unique_ptr<RankTrace> tp_;  // stable address: names_ points into it
  RankTrace& t_;
  std::unique_ptr<NameTable> names_;
};

struct RunSpec {
  int world = 4;
  int steps = 40;
  int buckets = 3;                // large gradient allreduces per step
  int64_t bucket_ns = 3'000'000;  // their duration after the last rank arrives
  int64_t arrival_jitter_ns = 3'000'000;
  int64_t small_ns = 30'000;       // a small (loss) allreduce per step
  int64_t end_jitter_ns = 20'000;  // ranks leave a collective at slightly different times
  bool ring_p2p = false;           // add ring SEND/RECV chunks to each bucket
  unsigned seed = 1;
};

// A run in global time; rank r's trace is written on a clock with local = global - offset[r]
// (so the alignment to recover is θ_r = offset[r] - offset[0]).
inline std::vector<RankTrace> GenerateRun(const RunSpec& s, const std::vector<int64_t>& offset) {
  std::mt19937_64 rng(s.seed);
  auto uni = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  std::vector<TraceBuilder> b;
  for (int r = 0; r < s.world; ++r) b.emplace_back(r, s.world);
  int64_t now = 1'000'000'000;
  int64_t flow = 1;
  for (int step = 0; step < s.steps; ++step) {
    const int n_coll = s.buckets + 1;
    for (int c = 0; c < n_coll; ++c) {
      const bool small = c == s.buckets;
      std::vector<int64_t> arrive(s.world);
      for (int r = 0; r < s.world; ++r) {
        arrive[r] = now + uni(0, small ? s.arrival_jitter_ns / 6 : s.arrival_jitter_ns);
      }
      const int64_t last = *std::max_element(arrive.begin(), arrive.end());
      const int64_t dur = small ? s.small_ns : s.bucket_ns + uni(0, s.bucket_ns);
      const int64_t done = last + dur;
      for (int r = 0; r < s.world; ++r) {
        const int64_t end = done + uni(0, s.end_jitter_ns);
        b[r].Comm(small ? "allreduce_loss" : "allreduce", arrive[r] - offset[r], end - arrive[r],
                  small ? 4 : 1 << 20);
      }
      if (s.ring_p2p && !small) {
        for (int k = 0; k < 2 * (s.world - 1); ++k) {
          const int64_t t0 = last + k * dur / (2 * s.world);
          for (int r = 0; r < s.world; ++r) {
            const int dst = (r + 1) % s.world;
            const int64_t send_start = t0 + uni(0, 5'000);
            const int64_t send_dur = uni(20'000, 40'000);
            const int64_t recv_end = send_start + send_dur + uni(2'000, 10'000);
            const int64_t recv_start = t0 - uni(0, 5'000);
            const std::string name =
                "allreduce." + std::to_string(step) + "~>" + std::to_string(k) + "_0";
            b[r].P2P(true, "SEND." + name, send_start - offset[r], send_dur, dst, flow);
            b[dst].P2P(false, "RECV." + name, recv_start - offset[dst], recv_end - recv_start, r,
                       flow);
            ++flow;
          }
        }
      }
      now = done + uni(100'000, 800'000);
    }
    now += 2'000'000;
  }
  std::vector<RankTrace> out;
  for (TraceBuilder& tb : b) out.push_back(tb.Build());
  return out;
}

}  // namespace loom::trace::ingest::testing
