#include "loom/ckpt/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "loom/base/file_util.h"
#include "loom/ckpt/testing/test_util.h"

namespace loom::ckpt {
namespace {

// Golden file: tests/data/ckpt/golden.safetensors, produced by tests/data/ckpt/make_golden.py
// (stdlib only): "a" F32 [2, 3] = 0..5, "b" BF16 [4] = 1, 2, 3, 4, "c" I64 [] = 7,
// __metadata__ {"format": "pt"}.
std::string GoldenPath() { return std::string(LOOM_SOURCE_DIR) + "/tests/data/ckpt/golden.safetensors"; }

TEST(Safetensors, ImportsTheGoldenFileAndReadsSlices) {
  auto storage = NewPosixStorage();
  auto src = OpenSafetensors(*storage, GoldenPath());
  ASSERT_TRUE(src.ok()) << src.status();
  ASSERT_EQ(src->meta.tensors.size(), 3u);
  EXPECT_EQ(src->meta.tensors.at("b").dtype, DType::kBF16);
  // Column 1..2 of "a" only.
  std::vector<float> cols(4, -1);
  StateDict d;
  d.AddTensor({"a", DType::kF32, {2, 3}, Box{{0, 1}, {2, 2}}, cols.data()});
  uint16_t b[4];
  d.AddFull("b", DType::kBF16, {4}, b, false);
  int64_t c = 0;
  d.AddFull("c", DType::kI64, {}, &c, false);
  auto rep = Load(*storage, *src, d);
  ASSERT_TRUE(rep.ok()) << rep.status();
  EXPECT_EQ(cols, (std::vector<float>{1, 2, 4, 5}));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(BF16ToFloat(b[i]), i + 1.f);
  EXPECT_EQ(c, 7);
}

TEST(Safetensors, ExportThenImportRoundTripsInOneFileAndInShards) {
  testing::ScratchDir dir;
  auto storage = NewPosixStorage();
  auto src = OpenSafetensors(*storage, GoldenPath());
  ASSERT_TRUE(src.ok());
  const std::string one = dir.path() + "/one.safetensors";
  auto rep = ExportSafetensors(*storage, *src, one, {});
  ASSERT_TRUE(rep.ok()) << rep.status();
  EXPECT_EQ(rep->tensors, 3);
  auto back = OpenSafetensors(*storage, one);
  ASSERT_TRUE(back.ok()) << back.status();
  std::vector<float> a(6);
  StateDict d;
  d.AddFull("a", DType::kF32, {2, 3}, a.data(), false);
  ASSERT_TRUE(Load(*storage, *back, d).ok());
  EXPECT_EQ(a, (std::vector<float>{0, 1, 2, 3, 4, 5}));
  // Shards of at most 24 bytes: "a" (24 B) alone, then "b" + "c".
  ExportOptions small;
  small.max_shard_bytes = 24;
  auto sharded = ExportSafetensors(*storage, *src, dir.path() + "/hf", small);
  ASSERT_TRUE(sharded.ok()) << sharded.status();
  EXPECT_EQ(sharded->files, 2);
  auto set = OpenCheckpoint(*storage, dir.path() + "/hf");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->kind, "safetensors");
  int64_t c = 0;
  StateDict dc;
  dc.AddFull("c", DType::kI64, {}, &c, false);
  ASSERT_TRUE(Load(*storage, *set, dc).ok());
  EXPECT_EQ(c, 7);
}

TEST(Safetensors, MalformedHeadersAreErrorsNamingTheFile) {
  testing::ScratchDir dir;
  auto storage = NewPosixStorage();
  const std::string p = dir.path() + "/bad.safetensors";
  ASSERT_TRUE(WriteFileAtomic(p, std::string("\xff\xff\xff\xff\0\0\0\0{}", 10)).ok());
  Status s = OpenSafetensors(*storage, p).status();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("bad.safetensors"), std::string::npos);
  uint64_t n = 2;
  std::string t(reinterpret_cast<char*>(&n), 8);
  ASSERT_TRUE(WriteFileAtomic(p, t + "[]").ok());
  EXPECT_EQ(OpenSafetensors(*storage, p).status().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace loom::ckpt
