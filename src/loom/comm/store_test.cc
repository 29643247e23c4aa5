#include "loom/comm/store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>

#include "loom/comm/memory_store.h"

namespace loom::comm {
namespace {

void ExerciseStore(Store& a, Store& b) {
  ASSERT_TRUE(a.Set("k", {'h', 'i'}).ok());
  auto v = b.Get("k", std::chrono::seconds(5));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(std::string(v->begin(), v->end()), "hi");
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_TRUE(a.Set("late", {'x'}).ok());
  });
  EXPECT_TRUE(b.Wait({"k", "late"}, std::chrono::seconds(5)).ok());
  late.join();
  Status s = b.Wait({"never"}, std::chrono::milliseconds(200));
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  EXPECT_NE(s.message().find("never"), std::string::npos) << s.message();
}

TEST(StoreTest, FileStore) {
  std::string dir = ::testing::TempDir() + "/loom_store_test_" + std::to_string(::getpid());
  auto a = OpenStore("file://" + dir, "job1");
  auto b = OpenStore(dir, "job1");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ExerciseStore(**a, **b);
  // A different prefix does not see job1's keys.
  auto other = OpenStore("file://" + dir, "job2");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE((*other)->Get("k", std::chrono::milliseconds(100)).ok());
}

TEST(StoreTest, MemoryStoreWithPrefix) {
  MemoryStore base;
  auto a = PrefixedStore(&base, "p");
  auto b = PrefixedStore(&base, "p");
  ExerciseStore(*a, *b);
  EXPECT_TRUE(base.Get("p/k", std::chrono::milliseconds(10)).ok());
}

TEST(StoreTest, BadUrlsAreRejected) {
  EXPECT_EQ(OpenStore("s3://bucket", "x").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenStore("relative/dir", "x").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenStore("redis://host:notaport", "x").status().code(),
            StatusCode::kInvalidArgument);
}

TEST(StoreTest, UnreachableRedisIsUnavailable) {
  auto r = OpenStore("redis://127.0.0.1:1", "x");  // nothing listens on port 1
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
}

}  // namespace
}  // namespace loom::comm
