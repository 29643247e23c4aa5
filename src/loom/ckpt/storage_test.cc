#include <cerrno>

#include "loom/ckpt/storage/faulty_storage.h"
#include "loom/ckpt/testing/storage_conformance.h"
#include "loom/ckpt/testing/test_util.h"

namespace loom::ckpt::testing {
namespace {

std::vector<std::unique_ptr<ScratchDir>>& Dirs() {
  static std::vector<std::unique_ptr<ScratchDir>> dirs;
  return dirs;
}

INSTANTIATE_TEST_SUITE_P(
    Backends, StorageConformance,
    ::testing::Values(
        StorageFactory{"posix",
                       [](std::string* root) {
                         Dirs().push_back(std::make_unique<ScratchDir>());
                         *root = Dirs().back()->path();
                         return NewPosixStorage();
                       }},
        StorageFactory{"memory",
                       [](std::string* root) {
                         *root = "/mem";
                         auto s = NewMemoryStorage();
                         EXPECT_TRUE(s->MakeDirs(*root).ok());
                         return s;
                       }},
        StorageFactory{"faulty_without_rules",
                       [](std::string* root) -> std::unique_ptr<Storage> {
                         *root = "/mem";
                         static std::vector<std::unique_ptr<Storage>> bases;
                         bases.push_back(NewMemoryStorage());
                         EXPECT_TRUE(bases.back()->MakeDirs(*root).ok());
                         return NewFaultyStorage(bases.back().get(), {});
                       }}),
    [](const auto& info) { return info.param.name; });

TEST(FaultyStorage, FailsTheChosenOccurrenceWithTheChosenErrno) {
  auto mem = NewMemoryStorage();
  ASSERT_TRUE(mem->MakeDirs("/d").ok());
  auto faulty = NewFaultyStorage(mem.get(), {{FaultOp::kWrite, 2, ENOSPC, true},
                                             {FaultOp::kRename, 1, EIO}});
  auto f = faulty->Create("/d/x", {});
  ASSERT_TRUE(f.ok());
  std::vector<char> data(100, 'a');
  EXPECT_TRUE((*f)->WriteAt(0, data.data(), 100).ok());
  Status s = (*f)->WriteAt(100, data.data(), 100);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("injected"), std::string::npos);
  EXPECT_TRUE((*f)->WriteAt(200, data.data(), 100).ok());  // only the 2nd fails
  auto r = mem->Open("/d/x", {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->size(), 300);  // bytes [100, 150) came from the short write
  EXPECT_EQ(faulty->Rename("/d/x", "/d/y").code(), StatusCode::kInternal);
  EXPECT_TRUE(faulty->Rename("/d/x", "/d/y").ok());
}

}  // namespace
}  // namespace loom::ckpt::testing
