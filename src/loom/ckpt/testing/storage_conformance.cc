#include "loom/ckpt/testing/storage_conformance.h"

#include <cstdlib>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "loom/ckpt/metadata.h"

namespace loom::ckpt::testing {
namespace {

std::vector<char> Pattern(int64_t n, int seed) {
  std::vector<char> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<char>((i * 131 + seed) & 0xff);
  return v;
}

TEST_P(StorageConformance, AlignedAndUnalignedWritesReadBack) {
  ASSERT_TRUE(storage_->MakeDirs(P("d")).ok());
  auto f = storage_->Create(P("d/a.bin"), {.direct = true});
  ASSERT_TRUE(f.ok()) << f.status();
  char* aligned = static_cast<char*>(std::aligned_alloc(kAlignment, 3 * kAlignment));
  std::vector<char> data = Pattern(3 * kAlignment, 1);
  std::memcpy(aligned, data.data(), data.size());
  ASSERT_TRUE((*f)->WriteAt(kAlignment, aligned + kAlignment, 2 * kAlignment).ok());
  ASSERT_TRUE((*f)->WriteAt(0, aligned, 100).ok());  // unaligned length
  ASSERT_TRUE((*f)->WriteAt(100, data.data() + 100, kAlignment - 100).ok());
  ASSERT_TRUE((*f)->Sync().ok());
  ASSERT_TRUE((*f)->Close().ok());
  std::free(aligned);
  for (bool direct : {true, false}) {
    auto r = storage_->Open(P("d/a.bin"), {.direct = direct});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ((*r)->size(), 3 * kAlignment);
    std::vector<char> back(3 * kAlignment);
    ASSERT_TRUE((*r)->ReadAt(0, 3 * kAlignment, back.data()).ok());
    EXPECT_EQ(back, data);
    std::vector<char> mid(777);
    ASSERT_TRUE((*r)->ReadAt(4000, 777, mid.data()).ok());
    EXPECT_EQ(0, std::memcmp(mid.data(), data.data() + 4000, 777));
    EXPECT_GE((*r)->bytes_read(), 3 * kAlignment + 777);
  }
}

TEST_P(StorageConformance, ReadingPastTheEndIsDataLoss) {
  ASSERT_TRUE(storage_->WriteSmallFile(P("small"), "hello").ok());
  auto r = storage_->Open(P("small"), {.direct = false});
  ASSERT_TRUE(r.ok());
  char buf[16];
  Status s = (*r)->ReadAt(2, 10, buf);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("small"), std::string::npos);
  EXPECT_EQ(storage_->Open(P("missing"), {}).status().code(), StatusCode::kNotFound);
}

TEST_P(StorageConformance, SmallFilesAreReplacedWhole) {
  ASSERT_TRUE(storage_->WriteSmallFile(P("latest"), "step_1").ok());
  ASSERT_TRUE(storage_->WriteSmallFile(P("latest"), "step_22").ok());
  auto s = storage_->ReadSmallFile(P("latest"));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, "step_22");
  EXPECT_EQ(storage_->ReadSmallFile(P("nope")).status().code(), StatusCode::kNotFound);
}

TEST_P(StorageConformance, DirectoriesRenameListAndRemove) {
  ASSERT_TRUE(storage_->MakeDirs(P("s.tmp/data")).ok());
  ASSERT_TRUE(storage_->WriteSmallFile(P("s.tmp/data/x"), "1").ok());
  ASSERT_TRUE(storage_->WriteSmallFile(P("s.tmp/m"), "2").ok());
  ASSERT_TRUE(storage_->Rename(P("s.tmp"), P("s")).ok());
  EXPECT_FALSE(storage_->Exists(P("s.tmp")));
  EXPECT_TRUE(storage_->Exists(P("s/data/x")));
  auto names = storage_->List(P("s"));
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"data", "m"}));
  auto top = storage_->List(root_);
  ASSERT_TRUE(top.ok());
  EXPECT_EQ(*top, (std::vector<std::string>{"s"}));
  ASSERT_TRUE(storage_->RemoveAll(P("s")).ok());
  EXPECT_FALSE(storage_->Exists(P("s/data/x")));
  EXPECT_TRUE(storage_->RemoveAll(P("s")).ok());  // missing: fine
  EXPECT_FALSE(storage_->Create(P("no/such/dir/f"), {}).ok());
}

TEST_P(StorageConformance, ConcurrentDisjointWrites) {
  ASSERT_TRUE(storage_->MakeDirs(P("c")).ok());
  auto f = storage_->Create(P("c/f"), {.direct = false});
  ASSERT_TRUE(f.ok());
  const int64_t block = 8192;
  std::vector<char> data = Pattern(8 * block, 5);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      for (int b = t; b < 8; b += 4) {
        ASSERT_TRUE((*f)->WriteAt(b * block, data.data() + b * block, block).ok());
      }
    });
  }
  for (auto& t : ts) t.join();
  ASSERT_TRUE((*f)->Close().ok());
  auto r = storage_->Open(P("c/f"), {.direct = false});
  ASSERT_TRUE(r.ok());
  std::vector<char> back(data.size());
  ASSERT_TRUE((*r)->ReadAt(0, static_cast<int64_t>(back.size()), back.data()).ok());
  EXPECT_EQ(back, data);
}

}  // namespace
}  // namespace loom::ckpt::testing
