// Thread-mode producer/consumer rounds, built with -fsanitize=thread: a missing acquire/release in
// notify/wait/barrier shows up as a data race on the payload (TSan fails the binary).
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "loom/overlap/runtime/runtime.h"

namespace loom::overlap {
namespace {

constexpr int kN = 257;  // payload floats per (producer, consumer) pair; odd on purpose

float Value(int src, int round, int i) {
  return static_cast<float>(src * 100000 + round * 300 + i);
}

// Every round each rank pushes a payload to every rank (itself included), signals it, waits for
// all payloads, checks them and acknowledges; producers wait for the acks before overwriting.
Status RankMain(Runtime& rt, int rounds) {
  const int world = rt.num_ranks();
  const int me = rt.rank();
  LOOM_ASSIGN_OR_RETURN(float* inbox, rt.AllocArray<float>(static_cast<int64_t>(world) * kN));
  LOOM_ASSIGN_OR_RETURN(SignalId data, rt.AllocSignals(world));
  LOOM_ASSIGN_OR_RETURN(SignalId ack, rt.AllocSignals(world));
  LOOM_ASSIGN_OR_RETURN(SignalId counter, rt.AllocSignals(1));
  std::vector<float> out(kN);
  for (int k = 1; k <= rounds; ++k) {
    for (int i = 0; i < kN; ++i) out[i] = Value(me, k, i);
    // Every consumer finished round k-1 with my previous payload.
    LOOM_RETURN_IF_ERROR(rt.wait(ack, world, static_cast<uint32_t>(k - 1), "tsan: acks"));
    for (int d = 0; d < world; ++d) {
      int peer = (me + d) % world;
      rt.put_signal(inbox + static_cast<int64_t>(me) * kN, out.data(), kN * sizeof(float),
                    data + me, static_cast<uint32_t>(k), SignalOp::kSet, peer);
    }
    LOOM_RETURN_IF_ERROR(rt.wait(data, world, static_cast<uint32_t>(k), "tsan: payloads"));
    for (int src = 0; src < world; ++src) {
      for (int i = 0; i < kN; ++i) {
        if (inbox[src * kN + i] != Value(src, k, i)) {
          return InternalError("rank " + std::to_string(me) + " round " + std::to_string(k) +
                               ": wrong payload from rank " + std::to_string(src));
        }
      }
    }
    for (int src = 0; src < world; ++src) rt.notify(ack + me, src, static_cast<uint32_t>(k));
    rt.notify(counter, 0, 1, SignalOp::kAdd);
    if (k % 25 == 0) LOOM_RETURN_IF_ERROR(rt.barrier_all("tsan: periodic barrier"));
  }
  if (me == 0) {
    LOOM_RETURN_IF_ERROR(
        rt.wait(counter, 1, static_cast<uint32_t>(world * rounds), "tsan: counter"));
    if (rt.signal_value(counter, 0) != static_cast<uint32_t>(world * rounds)) {
      return InternalError("counter is " + std::to_string(rt.signal_value(counter, 0)));
    }
  }
  LOOM_RETURN_IF_ERROR(rt.barrier_all("tsan: end"));
  return rt.Reset();
}

void RunWorld(int world, std::chrono::microseconds spin) {
  RuntimeOptions opts;
  opts.heap_bytes = 1 << 20;
  opts.num_signals = 64;
  opts.spin = spin;
  auto rts = CreateThreadRuntimes(world, opts);
  ASSERT_TRUE(rts.ok()) << rts.status();
  std::vector<Status> st(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] { st[r] = RankMain(*(*rts)[r], 300); });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < world; ++r) EXPECT_TRUE(st[r].ok()) << "rank " << r << ": " << st[r];
}

TEST(RuntimeTsanTest, TwoRanksSpinning) { RunWorld(2, std::chrono::microseconds(5)); }
TEST(RuntimeTsanTest, FourRanksFutexOnly) { RunWorld(4, std::chrono::microseconds(0)); }

}  // namespace
}  // namespace loom::overlap
