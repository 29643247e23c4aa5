#include "loom/base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>

namespace loom {
namespace {

TEST(ThreadPoolTest, RunsEveryTaskBeforeStopReturns) {
  ThreadPool pool({.num_threads = 3, .name = "test"});
  pool.Start();
  std::atomic<int> sum{0};
  for (int i = 1; i <= 1000; ++i) pool.Schedule([&sum, i] { sum += i; });
  pool.Stop();
  EXPECT_EQ(sum.load(), 500500);
  EXPECT_EQ(pool.Pending(), 0u);
}

TEST(ThreadPoolTest, SingleThreadKeepsOrder) {
  ThreadPool pool({.num_threads = 1, .name = "order"});
  pool.Start();
  std::vector<int> seen;
  for (int i = 0; i < 100; ++i) pool.Schedule([&seen, i] { seen.push_back(i); });
  pool.Stop();
  ASSERT_EQ(seen.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(seen[i], i);
}

TEST(ThreadPoolTest, TasksMayScheduleTasks) {
  ThreadPool pool({.num_threads = 2, .name = "nest"});
  pool.Start();
  std::atomic<int> n{0};
  pool.Schedule([&] {
    n++;
    pool.Schedule([&] { n++; });
  });
  while (n.load() < 2) std::this_thread::yield();
  pool.Stop();
  EXPECT_EQ(n.load(), 2);
}

}  // namespace
}  // namespace loom
