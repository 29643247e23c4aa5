#include "loom/overlap/runtime/runtime.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace loom::overlap {
namespace {

using std::chrono::milliseconds;

RuntimeOptions SmallOptions() {
  RuntimeOptions o;
  o.heap_bytes = 1 << 20;
  o.num_signals = 64;
  o.timeout = milliseconds(10000);
  return o;
}

std::vector<std::unique_ptr<Runtime>> MakeThreads(int world, RuntimeOptions o = SmallOptions()) {
  auto rts = CreateThreadRuntimes(world, o);
  EXPECT_TRUE(rts.ok()) << rts.status();
  return std::move(rts).value();
}

// Runs fn(rank runtime) on one thread per rank; returns each rank's status.
std::vector<Status> RunRanks(std::vector<std::unique_ptr<Runtime>>& rts,
                             const std::function<Status(Runtime&)>& fn) {
  std::vector<Status> st(rts.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < rts.size(); ++r) {
    threads.emplace_back([&, r] { st[r] = fn(*rts[r]); });
  }
  for (auto& t : threads) t.join();
  return st;
}

bool Contains(const std::string& s, const std::string& sub) {
  return s.find(sub) != std::string::npos;
}

TEST(RuntimeTest, SymmAtRoundTripsOffsets) {
  auto rts = MakeThreads(3);
  std::vector<char*> p(3);
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(rts[r]->Alloc(100).ok());  // same sequence on every rank
    auto q = rts[r]->Alloc(1000);
    ASSERT_TRUE(q.ok());
    p[r] = static_cast<char*>(*q);
  }
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(rts[r]->InHeap(p[r]));
    EXPECT_FALSE(rts[r]->InHeap(p[(r + 1) % 3]));
    for (int q = 0; q < 3; ++q) {
      EXPECT_EQ(rts[r]->symm_at(p[r] + 17, q), p[q] + 17);
      EXPECT_EQ(rts[q]->symm_at(rts[r]->symm_at(p[r], q), r), p[r]);
    }
  }
}

TEST(RuntimeTest, AllocZeroFillsAlignsAndReportsExhaustion) {
  RuntimeOptions o = SmallOptions();
  o.heap_bytes = 64 << 10;
  o.num_signals = 8;
  auto rts = MakeThreads(2, o);
  Runtime& rt = *rts[0];
  auto a = rt.Alloc(10);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*a) % 64, 0u);
  auto b = rt.Alloc(1000, 4096);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*b) % 4096, 0u);
  const char* bytes = static_cast<const char*>(*b);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(bytes[i], 0) << i;
  EXPECT_EQ(rt.Alloc(16, 3).status().code(), StatusCode::kInvalidArgument);
  auto big = rt.Alloc(1 << 20);
  ASSERT_EQ(big.status().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(Contains(big.status().message(), "heap_bytes = 65536")) << big.status();
  auto s = rt.AllocSignals(6);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, 0);
  EXPECT_EQ(*rt.AllocSignals(2), 6);
  EXPECT_EQ(rt.AllocSignals(1).status().code(), StatusCode::kResourceExhausted);
}

TEST(RuntimeTest, ResetZeroesMemoryAndSignals) {
  auto rts = MakeThreads(2);
  auto st = RunRanks(rts, [](Runtime& rt) -> Status {
    LOOM_ASSIGN_OR_RETURN(int* x, rt.AllocArray<int>(64));
    LOOM_ASSIGN_OR_RETURN(SignalId s, rt.AllocSignals(2));
    for (int i = 0; i < 64; ++i) x[i] = i + 1;
    rt.notify(s + 1, 1 - rt.rank(), 7);
    LOOM_RETURN_IF_ERROR(rt.wait(s + 1, 1, 7, "reset test"));
    LOOM_RETURN_IF_ERROR(rt.Reset());
    LOOM_ASSIGN_OR_RETURN(int* y, rt.AllocArray<int>(64));
    LOOM_ASSIGN_OR_RETURN(SignalId s2, rt.AllocSignals(2));
    if (y != x || s2 != s) return InternalError("Reset did not rewind the allocators");
    for (int i = 0; i < 64; ++i) {
      if (y[i] != 0) return InternalError("heap not zero after Reset");
    }
    if (rt.signal_value(s2 + 1, rt.rank()) != 0) return InternalError("signal not zero");
    return OkStatus();
  });
  for (auto& s : st) EXPECT_TRUE(s.ok()) << s;
}

TEST(RuntimeTest, PutSignalDataVisibleAfterWait) {
  auto rts = MakeThreads(2);
  constexpr int kN = 1001;
  auto st = RunRanks(rts, [](Runtime& rt) -> Status {
    LOOM_ASSIGN_OR_RETURN(float* buf, rt.AllocArray<float>(kN));
    LOOM_ASSIGN_OR_RETURN(SignalId ready, rt.AllocSignals(1));
    LOOM_ASSIGN_OR_RETURN(SignalId done, rt.AllocSignals(1));
    std::vector<float> src(kN);
    for (uint32_t epoch = 1; epoch <= 50; ++epoch) {
      if (rt.rank() == 0) {
        LOOM_RETURN_IF_ERROR(rt.wait(done, 1, epoch - 1, "producer: consumer done"));
        for (int i = 0; i < kN; ++i) src[i] = static_cast<float>(epoch * 10000 + i);
        rt.put_signal(buf, src.data(), kN * sizeof(float), ready, epoch, SignalOp::kSet, 1);
      } else {
        LOOM_RETURN_IF_ERROR(rt.wait(ready, 1, epoch, "consumer: data"));
        for (int i = 0; i < kN; ++i) {
          if (buf[i] != static_cast<float>(epoch * 10000 + i)) {
            return InternalError("epoch " + std::to_string(epoch) + " element " +
                                 std::to_string(i) + " = " + std::to_string(buf[i]));
          }
        }
        // get() reads rank 0's (untouched, zero) copy of the same symmetric buffer.
        float z = -1;
        rt.get(&z, buf + 5, sizeof(float), 0);
        if (z != 0.0f) return InternalError("get from rank 0 returned " + std::to_string(z));
        rt.notify(done, 0, epoch);
      }
    }
    return OkStatus();
  });
  for (auto& s : st) EXPECT_TRUE(s.ok()) << s;
}

TEST(RuntimeTest, NotifyAddFromManyThreadsSums) {
  auto rts = MakeThreads(2);
  SignalId sig = *rts[0]->AllocSignals(1);
  ASSERT_EQ(*rts[1]->AllocSignals(1), sig);
  constexpr int kThreads = 6, kAdds = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kAdds; ++i) rts[0]->notify(sig, 1, 1, SignalOp::kAdd);
    });
  }
  Status st = rts[1]->wait(sig, 1, kThreads * kAdds, "sum of adds");
  for (auto& t : threads) t.join();
  EXPECT_TRUE(st.ok()) << st;
  EXPECT_EQ(rts[1]->signal_value(sig, 1), static_cast<uint32_t>(kThreads * kAdds));
  EXPECT_EQ(rts[0]->signal_value(sig, 0), 0u);
}

TEST(RuntimeTest, WaitsOnConsecutiveSignalsAndEpochs) {
  RuntimeOptions o = SmallOptions();
  o.spin = std::chrono::microseconds(0);  // go straight to the futex
  auto rts = MakeThreads(2, o);
  SignalId first = *rts[0]->AllocSignals(4);
  std::atomic<int> stage{0};
  std::thread producer([&] {
    for (int i = 3; i >= 0; --i) rts[0]->notify(first + i, 1, 1);
    while (stage.load() != 1) std::this_thread::yield();
    for (int i = 0; i < 4; ++i) rts[0]->notify(first + i, 1, 2);
  });
  EXPECT_TRUE(rts[1]->wait(first, 4, 1, "four signals at epoch 1").ok());
  for (int i = 0; i < 4; ++i) EXPECT_GE(rts[1]->signal_value(first + i, 1), 1u);
  // Epoch 2 is not reached by epoch-1 values: the wait stays blocked until its deadline.
  Status early = rts[1]->wait(first, 4, 2, "epoch 2 too early", milliseconds(50));
  EXPECT_EQ(early.code(), StatusCode::kDeadlineExceeded) << early;
  stage.store(1);
  EXPECT_TRUE(rts[1]->wait(first, 4, 2, "four signals at epoch 2").ok());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(rts[1]->signal_value(first + i, 1), 2u);
  producer.join();
}

TEST(RuntimeTest, MissingNotifyTimesOutWithDump) {
  auto rts = MakeThreads(2);
  SignalId first = *rts[0]->AllocSignals(8);
  rts[0]->notify(first + 5, 1, 1);
  rts[1]->notify(first + 3, 0, 9);
  Status st = rts[1]->wait(first + 5, 2, 2, "ag_gemm: shard from peer", milliseconds(200));
  ASSERT_EQ(st.code(), StatusCode::kDeadlineExceeded) << st;
  const std::string& m = st.message();
  EXPECT_TRUE(Contains(m, "rank 1: ag_gemm: shard from peer")) << m;
  EXPECT_TRUE(Contains(m, "timed out after 200 ms")) << m;
  EXPECT_TRUE(Contains(m, "signals [5, 7) >= 2")) << m;
  EXPECT_TRUE(Contains(m, "not ready: sig 5 = 1, sig 6 = 0")) << m;
  // The dump covers every rank, including the other rank's non-zero signals.
  EXPECT_TRUE(Contains(m, "rank 0 (thread): sig 3 = 9")) << m;
  EXPECT_TRUE(Contains(m, "rank 1 (thread): sig 5 = 1")) << m;
}

TEST(RuntimeTest, BarrierTimeoutNamesMissingRank) {
  auto rts = MakeThreads(3);
  rts.resize(2);  // rank 2 never arrives (its Runtime is destroyed; the segment is shared)
  auto st = RunRanks(rts, [](Runtime& rt) { return rt.barrier_all("step 7", milliseconds(200)); });
  for (auto& s : st) {
    ASSERT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s;
    EXPECT_TRUE(Contains(s.message(), "barrier_all(step 7)")) << s;
    EXPECT_TRUE(Contains(s.message(), "did not arrive: rank 2 (thread)")) << s;
  }
}

TEST(RuntimeTest, CheckSameConfigNamesDifferingRank) {
  auto rts = MakeThreads(3);
  auto same = RunRanks(rts, [](Runtime& rt) { return rt.CheckSameConfig(42, "ag_gemm"); });
  for (auto& s : same) EXPECT_TRUE(s.ok()) << s;
  auto diff = RunRanks(rts, [](Runtime& rt) {
    return rt.CheckSameConfig(rt.rank() == 2 ? 43 : 42, "gemm_rs M=512");
  });
  for (auto& s : diff) {
    ASSERT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
    EXPECT_TRUE(Contains(s.message(), "gemm_rs M=512")) << s;
    EXPECT_TRUE(Contains(s.message(), "rank 2 has config hash")) << s;
  }
  auto again = RunRanks(rts, [](Runtime& rt) { return rt.CheckSameConfig(7, "next op"); });
  for (auto& s : again) EXPECT_TRUE(s.ok()) << s;
}

TEST(RuntimeTest, RejectsBadProcessArguments) {
  RuntimeOptions o = SmallOptions();
  EXPECT_EQ(CreateProcessRuntime("bad/name", 0, 2, o).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateProcessRuntime("", 0, 2, o).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateProcessRuntime("job", 2, 2, o).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateProcessRuntime("job", 0, 0, o).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateThreadRuntimes(0, o).status().code(), StatusCode::kInvalidArgument);
}

// ---- Process mode: rank 1 is a fork()ed child; its exit code reports its checks. ----

std::string JobName(const char* tag) {
  return std::string("rt-test-") + tag + "-" + std::to_string(getpid());
}

bool ShmExists(const std::string& job) {
  return access(("/dev/shm/loom-" + job).c_str(), F_OK) == 0;
}

pid_t ForkRank(const std::function<int()>& child) {
  pid_t pid = fork();
  if (pid == 0) _exit(child());
  return pid;
}

int Reap(pid_t pid) {
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// Ping-pong: rank 0 pushes epoch-stamped data to rank 1, which checks it and pushes it back + 1.
int PingPong(Runtime& rt, int rounds) {
  constexpr int kN = 513;
  auto buf = rt.AllocArray<int32_t>(kN);
  auto sig = rt.AllocSignals(2);
  if (!buf.ok() || !sig.ok()) return 2;
  std::vector<int32_t> out(kN);
  int peer = 1 - rt.rank();
  for (int k = 1; k <= rounds; ++k) {
    if (rt.rank() == 0) {
      for (int i = 0; i < kN; ++i) out[i] = k * 1000 + i;
      rt.put_signal(*buf, out.data(), kN * 4, *sig, k, SignalOp::kSet, peer);
      if (!rt.wait(*sig + 1, 1, k, "rank 0: echo").ok()) return 3;
      for (int i = 0; i < kN; ++i) {
        if ((*buf)[i] != k * 1000 + i + 1) return 4;
      }
    } else {
      if (!rt.wait(*sig, 1, k, "rank 1: data").ok()) return 3;
      for (int i = 0; i < kN; ++i) {
        if ((*buf)[i] != k * 1000 + i) return 4;
        out[i] = (*buf)[i] + 1;
      }
      rt.put_signal(*buf, out.data(), kN * 4, *sig + 1, k, SignalOp::kSet, peer);
    }
  }
  if (!rt.barrier_all("ping-pong end").ok()) return 5;
  if (!rt.CheckSameConfig(1234, "ping-pong").ok()) return 6;
  return 0;
}

TEST(RuntimeProcessTest, TwoProcessesExchangeData) {
  const std::string job = JobName("pingpong");
  RuntimeOptions o = SmallOptions();
  pid_t child = ForkRank([&] {
    auto rt = CreateProcessRuntime(job, 1, 2, o);
    return rt.ok() ? PingPong(**rt, 200) : 1;
  });
  auto rt = CreateProcessRuntime(job, 0, 2, o);
  ASSERT_TRUE(rt.ok()) << rt.status();
  EXPECT_FALSE(ShmExists(job)) << "rank 0 unlinks the name once all ranks attached";
  EXPECT_TRUE((*rt)->PeerAlive(1));
  EXPECT_EQ(PingPong(**rt, 200), 0);
  EXPECT_EQ(Reap(child), 0);
  rt = Status(StatusCode::kCancelled, "released");
  EXPECT_FALSE(ShmExists(job));
}

TEST(RuntimeProcessTest, DeadPeerIsNamed) {
  const std::string job = JobName("dead");
  RuntimeOptions o = SmallOptions();
  pid_t child = ForkRank([&] {
    auto rt = CreateProcessRuntime(job, 1, 2, o);
    if (!rt.ok()) return 1;
    (void)(*rt)->AllocSignals(1);
    _exit(0);  // dies without notifying (and without detaching, like a crash)
  });
  auto rt = CreateProcessRuntime(job, 0, 2, o);
  ASSERT_TRUE(rt.ok()) << rt.status();
  SignalId sig = *(*rt)->AllocSignals(1);
  Status st = (*rt)->wait(sig, 1, 1, "gemm_rs: segment from rank 1", milliseconds(10000));
  ASSERT_EQ(st.code(), StatusCode::kUnavailable) << st;
  EXPECT_TRUE(Contains(st.message(), "rank 1 died (pid " + std::to_string(child))) << st;
  EXPECT_TRUE(Contains(st.message(), "gemm_rs: segment from rank 1")) << st;
  EXPECT_FALSE((*rt)->PeerAlive(1));
  Status bar = (*rt)->barrier_all("after death", milliseconds(10000));
  EXPECT_EQ(bar.code(), StatusCode::kUnavailable) << bar;
  EXPECT_TRUE(Contains(bar.message(), "rank 1 died")) << bar;
  EXPECT_EQ(Reap(child), 0);
  EXPECT_FALSE(ShmExists(job));
}

TEST(RuntimeProcessTest, ConfigMismatchAcrossProcesses) {
  const std::string job = JobName("config");
  RuntimeOptions o = SmallOptions();
  pid_t child = ForkRank([&] {
    auto rt = CreateProcessRuntime(job, 1, 2, o);
    if (!rt.ok()) return 1;
    Status s = (*rt)->CheckSameConfig(0xbeef, "moe layer0");
    if (s.code() != StatusCode::kInvalidArgument) return 2;
    return Contains(s.message(), "rank 1 has config hash 0x000000000000beef") ? 0 : 3;
  });
  auto rt = CreateProcessRuntime(job, 0, 2, o);
  ASSERT_TRUE(rt.ok()) << rt.status();
  Status s = (*rt)->CheckSameConfig(0xcafe, "moe layer0");
  ASSERT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(Contains(s.message(), "rank 1 has config hash 0x000000000000beef but rank 0 has "
                                    "0x000000000000cafe")) << s;
  EXPECT_EQ(Reap(child), 0);
  EXPECT_FALSE(ShmExists(job));
}

TEST(RuntimeProcessTest, MismatchedWorldIsRejected) {
  const std::string job = JobName("world");
  RuntimeOptions o = SmallOptions();
  o.timeout = milliseconds(1500);
  pid_t child = ForkRank([&] {
    auto rt = CreateProcessRuntime(job, 1, 3, o);  // rank 0 says world 2
    if (rt.status().code() != StatusCode::kInvalidArgument) return 1;
    return Contains(rt.status().message(), "world 2") ? 0 : 2;
  });
  auto rt = CreateProcessRuntime(job, 0, 2, o);
  EXPECT_EQ(rt.status().code(), StatusCode::kDeadlineExceeded) << rt.status();
  EXPECT_TRUE(Contains(rt.status().message(), "ranks 1 of 2 did not attach")) << rt.status();
  EXPECT_EQ(Reap(child), 0);
  EXPECT_FALSE(ShmExists(job));
}

}  // namespace
}  // namespace loom::overlap
