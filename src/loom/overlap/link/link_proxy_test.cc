#include "loom/overlap/link/link_proxy.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

namespace loom::overlap {
namespace {

using std::chrono::milliseconds;

// Two thread-mode ranks with one float buffer of `n` and `signals` signals each.
struct World {
  std::vector<std::unique_ptr<Runtime>> rts;
  std::vector<float*> buf;  // buf[r]: rank r's copy (the same symmetric offset)
  SignalId sig = -1;
};

World MakeWorld(int64_t n, int32_t signals, int64_t heap_bytes = 16ll << 20) {
  RuntimeOptions o;
  o.heap_bytes = heap_bytes;
  o.num_signals = 64;
  o.timeout = milliseconds(20000);
  auto rts = CreateThreadRuntimes(2, o);
  EXPECT_TRUE(rts.ok()) << rts.status().ToString();
  World w;
  w.rts = std::move(*rts);
  for (auto& rt : w.rts) {
    auto p = rt->AllocArray<float>(n);
    EXPECT_TRUE(p.ok());
    w.buf.push_back(*p);
    auto s = rt->AllocSignals(signals);
    EXPECT_TRUE(s.ok());
    w.sig = *s;
  }
  return w;
}

std::vector<float> Iota(int64_t n, float start) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
  return v;
}

TEST(LinkMode, NamesRoundTripAndErrorListsValidNames) {
  for (LinkMode m : {LinkMode::kCopy, LinkMode::kDelayOnly, LinkMode::kPoison,
                     LinkMode::kUnlimited}) {
    auto parsed = ParseLinkMode(LinkModeName(m));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, m);
  }
  EXPECT_EQ(*ParseLinkMode("delay_only"), LinkMode::kDelayOnly);
  auto bad = ParseLinkMode("fast");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("fast"), std::string::npos);
  for (const char* name : {"copy", "delay", "poison", "unlimited"}) {
    EXPECT_NE(bad.status().message().find(name), std::string::npos) << name;
  }
}

TEST(LinkProxy, DataArrivesBeforeTheSignal) {
  const int64_t n = 4096;
  World w = MakeWorld(n, 1);
  LinkProxy proxy(w.rts[0].get(), {.bytes_per_second = 1e9, .mode = LinkMode::kCopy});
  ASSERT_TRUE(proxy.Start().ok());
  std::vector<float> src = Iota(n, 1);
  proxy.Submit({.dst = w.buf[0], .src = src.data(), .bytes = n * 4, .dst_rank = 1,
                .signal = w.sig, .value = 7});
  // Rank 1 waits on its own signal, then must see every element.
  ASSERT_TRUE(w.rts[1]->wait(w.sig, 1, 7, "test: data").ok());
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(w.buf[1][i], src[i]) << i;
  ASSERT_TRUE(proxy.Quiet("test").ok());
  EXPECT_EQ(w.buf[0][0], 0.0f);  // the source rank's own copy is untouched
  LinkStats s = proxy.stats();
  EXPECT_EQ(s.messages, 1);
  EXPECT_EQ(s.bytes, n * 4);
}

TEST(LinkProxy, FifoOrder) {
  const int kMsgs = 16;
  World w = MakeWorld(kMsgs, kMsgs);
  LinkProxy proxy(w.rts[0].get(), {.bytes_per_second = 1e6, .mode = LinkMode::kCopy});
  ASSERT_TRUE(proxy.Start().ok());
  std::vector<float> vals = Iota(kMsgs, 100);
  for (int i = 0; i < kMsgs; ++i) {
    // Every message writes element 0 (the last one must win) and its own element i.
    proxy.Submit({.dst = w.buf[0], .src = &vals[i], .bytes = 4, .dst_rank = 1});
    proxy.Submit({.dst = w.buf[0] + i, .src = &vals[i], .bytes = 4, .dst_rank = 1,
                  .signal = w.sig + i, .value = 1});
  }
  for (int i : {kMsgs / 2, kMsgs - 1}) {
    ASSERT_TRUE(w.rts[1]->wait(w.sig + i, 1, 1, "test: fifo").ok());
    // When message i has signalled, every earlier message has too.
    for (int j = 0; j < i; ++j) EXPECT_EQ(w.rts[1]->signal_value(w.sig + j, 1), 1u) << j;
  }
  ASSERT_TRUE(proxy.Quiet("test").ok());
  EXPECT_EQ(w.buf[1][0], vals[kMsgs - 1]);  // the last descriptor writing element 0 wins
  for (int i = 1; i < kMsgs; ++i) EXPECT_EQ(w.buf[1][i], vals[i]);
}

TEST(LinkProxy, PoisonFillsNaNUntilArrival) {
  const int64_t n = 1024;
  World w = MakeWorld(n, 2);
  std::vector<float> src = Iota(n, 3);
  {
    // A link that will not deliver for 10 s: the destination must read NaN right after Submit.
    LinkProxy slow(w.rts[0].get(),
                   {.bytes_per_second = 1e9, .latency_s = 10, .mode = LinkMode::kPoison});
    ASSERT_TRUE(slow.Start().ok());
    slow.Submit({.dst = w.buf[0], .src = src.data(), .bytes = n * 4, .dst_rank = 1,
                 .signal = w.sig, .value = 1});
    EXPECT_EQ(w.rts[1]->signal_value(w.sig, 1), 0u);
    for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(std::isnan(w.buf[1][i])) << i;
    slow.Stop();  // abandons the descriptor
    EXPECT_EQ(w.rts[1]->signal_value(w.sig, 1), 0u);
  }
  LinkProxy proxy(w.rts[0].get(), {.bytes_per_second = 1e9, .mode = LinkMode::kPoison});
  ASSERT_TRUE(proxy.Start().ok());
  proxy.Submit({.dst = w.buf[0], .src = src.data(), .bytes = n * 4, .dst_rank = 1,
                .signal = w.sig + 1, .value = 1});
  ASSERT_TRUE(w.rts[1]->wait(w.sig + 1, 1, 1, "test: poison").ok());
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(w.buf[1][i], src[i]) << i;
}

TEST(LinkProxy, DelayOnlyNotifiesWithoutCopying) {
  const int64_t n = 256;
  World w = MakeWorld(n, 1);
  LinkProxy proxy(w.rts[0].get(), {.bytes_per_second = 1e8, .mode = LinkMode::kDelayOnly});
  ASSERT_TRUE(proxy.Start().ok());
  std::vector<float> src = Iota(n, 1);
  proxy.Submit({.dst = w.buf[0], .src = src.data(), .bytes = n * 4, .dst_rank = 1,
                .signal = w.sig, .value = 3});
  ASSERT_TRUE(w.rts[1]->wait(w.sig, 1, 3, "test: delay").ok());
  ASSERT_TRUE(proxy.Quiet("test").ok());
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(w.buf[1][i], 0.0f) << i;
  EXPECT_EQ(proxy.stats().bytes, n * 4);
}

TEST(LinkProxy, UnlimitedCopiesWithZeroModelledTime) {
  const int64_t n = 512;
  World w = MakeWorld(n, 1);
  LinkProxy proxy(w.rts[0].get(), {.bytes_per_second = 1, .mode = LinkMode::kUnlimited});
  ASSERT_TRUE(proxy.Start().ok());  // bandwidth is ignored: 1 B/s would take minutes
  std::vector<float> src = Iota(n, 9);
  proxy.Submit({.dst = w.buf[0], .src = src.data(), .bytes = n * 4, .dst_rank = 1,
                .signal = w.sig, .value = 1});
  ASSERT_TRUE(proxy.Quiet("test").ok());
  EXPECT_EQ(w.rts[1]->signal_value(w.sig, 1), 1u);
  EXPECT_EQ(w.buf[1][n - 1], src[n - 1]);
  EXPECT_EQ(proxy.TransferSeconds(1 << 20), 0.0);
  EXPECT_EQ(proxy.stats().busy_s, 0.0);
}

TEST(LinkProxy, BusyTimeIsTheModelledSumExactly) {
  World w = MakeWorld(1 << 16, 1);
  const LinkOptions opts{.bytes_per_second = 2e9, .latency_s = 3e-6, .mode = LinkMode::kCopy};
  LinkProxy proxy(w.rts[0].get(), opts);
  ASSERT_TRUE(proxy.Start().ok());
  std::vector<float> src(1 << 16, 1.0f);
  double expected = 0;
  int64_t total = 0;
  for (int64_t bytes : {4ll, 4096ll, 100000ll, 0ll, 262144ll, 12ll}) {
    proxy.Submit({.dst = w.buf[0], .src = src.data(), .bytes = bytes, .dst_rank = 1});
    expected += opts.latency_s + static_cast<double>(bytes) / opts.bytes_per_second;
    total += bytes;
  }
  ASSERT_TRUE(proxy.Quiet("test").ok());
  LinkStats s = proxy.stats();
  EXPECT_EQ(s.messages, 6);
  EXPECT_EQ(s.bytes, total);
  EXPECT_EQ(s.busy_s, expected);
  EXPECT_EQ(proxy.TransferSeconds(4096), opts.latency_s + 4096 / opts.bytes_per_second);
  EXPECT_GE(s.max_late_s, s.mean_late_s);
  EXPECT_GE(s.mean_late_s, 0.0);
  proxy.ResetStats();
  EXPECT_EQ(proxy.stats().messages, 0);
  EXPECT_EQ(proxy.stats().busy_s, 0.0);
}

TEST(LinkProxy, PacedTransferNeverCompletesBeforeItsModelledTime) {
  // 4 MB at 200 MB/s in 4 messages: ≥ 20.97 ms of modelled link time. Only the lower bound is
  // asserted (wall-clock upper bounds are noise on a shared machine).
  const int64_t n = 1 << 20;  // floats per rank: 4 MiB
  World w = MakeWorld(n, 1);
  const LinkOptions opts{.bytes_per_second = 200e6, .latency_s = 1e-4, .mode = LinkMode::kCopy};
  LinkProxy proxy(w.rts[0].get(), opts);
  ASSERT_TRUE(proxy.Start().ok());
  std::vector<float> src = Iota(n, 0);
  const int64_t part = n / 4;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 4; ++i) {
    proxy.Submit({.dst = w.buf[0] + i * part, .src = src.data() + i * part, .bytes = part * 4,
                  .dst_rank = 1, .signal = w.sig, .value = 1, .op = SignalOp::kAdd});
  }
  ASSERT_TRUE(w.rts[1]->wait(w.sig, 1, 4, "test: paced").ok());
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double modelled = 4 * proxy.TransferSeconds(part * 4);
  EXPECT_GE(elapsed, modelled);
  EXPECT_EQ(w.buf[1][n - 1], src[n - 1]);
  ASSERT_TRUE(proxy.Quiet("test").ok());
  EXPECT_DOUBLE_EQ(proxy.stats().busy_s, modelled);
  EXPECT_GT(proxy.stats().thread_cpu_s, 0.0);
}

TEST(LinkProxy, QuietDeadlineNamesWhatAndQueueDepth) {
  World w = MakeWorld(16, 1);
  LinkProxy proxy(w.rts[0].get(),
                  {.bytes_per_second = 1e9, .latency_s = 30, .mode = LinkMode::kCopy});
  ASSERT_TRUE(proxy.Start().ok());
  std::vector<float> src(16, 1.0f);
  proxy.Submit({.dst = w.buf[0], .src = src.data(), .bytes = 64, .dst_rank = 1});
  proxy.Submit({.dst = w.buf[0], .src = src.data(), .bytes = 64, .dst_rank = 1});
  Status s = proxy.Quiet("ag_gemm epoch 3", milliseconds(50));
  ASSERT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  EXPECT_NE(s.message().find("ag_gemm epoch 3"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("queue depth 2"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("rank 0"), std::string::npos) << s.message();
  proxy.Stop();
  // Stopped with work pending: the abandoned descriptors are forgotten, Quiet is OK again.
  EXPECT_TRUE(proxy.Quiet("after stop", milliseconds(10)).ok());
}

TEST(LinkProxy, QuietWithPendingWorkOnAStoppedProxyFails) {
  World w = MakeWorld(16, 1);
  LinkProxy proxy(w.rts[0].get(), {});
  std::vector<float> src(16, 1.0f);
  proxy.Submit({.dst = w.buf[0], .src = src.data(), .bytes = 64, .dst_rank = 1});
  Status s = proxy.Quiet("never started", milliseconds(10));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  ASSERT_TRUE(proxy.Start().ok());  // a late Start() still runs the queued descriptor
  ASSERT_TRUE(proxy.Quiet("started").ok());
  EXPECT_EQ(w.buf[1][0], 1.0f);
}

TEST(LinkProxy, BadOptionsAndDoubleStart) {
  World w = MakeWorld(16, 1);
  LinkProxy bad(w.rts[0].get(), {.bytes_per_second = 0});
  Status s = bad.Start();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("bytes_per_second"), std::string::npos);
  LinkProxy proxy(w.rts[0].get(), {});
  ASSERT_TRUE(proxy.Start().ok());
  EXPECT_EQ(proxy.Start().code(), StatusCode::kFailedPrecondition);
}

TEST(LinkProxy, PinnedToCpuZeroWorks) {
  World w = MakeWorld(16, 1);
  LinkProxy proxy(w.rts[0].get(), {.cpu = 0});
  ASSERT_TRUE(proxy.Start().ok());
  std::vector<float> src(16, 2.0f);
  proxy.Submit({.dst = w.buf[0], .src = src.data(), .bytes = 64, .dst_rank = 1});
  ASSERT_TRUE(proxy.Quiet("pinned").ok());
  EXPECT_EQ(w.buf[1][15], 2.0f);
  LinkProxy nowhere(w.rts[0].get(), {.cpu = 1000});
  EXPECT_EQ(nowhere.Start().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace loom::overlap
