#include "loom/base/file_util.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

namespace loom {
namespace {

TEST(FileUtilTest, AtomicWriteReplacesAndLeavesNoTemporary) {
  std::string dir = ::testing::TempDir() + "/file_util_test_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(MakeDirs(dir).ok());
  std::string path = dir + "/a.json";
  ASSERT_TRUE(WriteFileAtomic(path, "first").ok());
  ASSERT_TRUE(WriteFileAtomic(path, "second").ok());
  EXPECT_EQ(*ReadFileToString(path), "second");
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1);
  ASSERT_TRUE(AppendLine(dir + "/log", "x").ok());
  ASSERT_TRUE(AppendLine(dir + "/log", "y").ok());
  EXPECT_EQ(*ReadFileToString(dir + "/log"), "x\ny\n");
  std::filesystem::remove_all(dir);
}

TEST(FileUtilTest, MissingFileIsNotFound) {
  auto r = ReadFileToString("/nonexistent/loom/file");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/loom/file"), std::string::npos);
}

}  // namespace
}  // namespace loom
