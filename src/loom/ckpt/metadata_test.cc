#include "loom/ckpt/metadata.h"

#include <gtest/gtest.h>

#include <random>

namespace loom::ckpt {
namespace {

CheckpointMeta TwoChunkMeta() {
  CheckpointMeta m;
  m.world_size = 2;
  m.step = 7;
  m.files = {{"data/r0.bin", 8192}, {"data/r1.bin", 4096}};
  TensorMeta t{DType::kF32, {4, 8}, {}};
  t.chunks.push_back({Box{{0, 0}, {2, 8}}, 0, 0, 64, 0x1234});
  t.chunks.push_back({Box{{2, 0}, {2, 8}}, 1, 0, 64, 0xabcdef0123456789ull});
  m.tensors["w"] = t;
  m.tensors["s"] = TensorMeta{DType::kI64, {}, {{Box{}, 0, 4096, 8, std::nullopt}}};
  m.objects["trainer"] = {{-1, 0, 4104, 10, 42}};
  return m;
}

TEST(Metadata, RoundTrips) {
  const CheckpointMeta m = TwoChunkMeta();
  auto back = MetadataFromJson(MetadataToJson(m), "x");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->step, 7);
  EXPECT_EQ(back->tensors.at("w").chunks[1].xxh64, 0xabcdef0123456789ull);
  EXPECT_EQ(back->tensors.at("w").chunks[1].box, (Box{{2, 0}, {2, 8}}));
  EXPECT_FALSE(back->tensors.at("s").chunks[0].xxh64.has_value());
  EXPECT_EQ(back->objects.at("trainer")[0].byte_len, 10);
  EXPECT_EQ(MetadataToJson(*back), MetadataToJson(m));
}

void ExpectError(const CheckpointMeta& m, const std::string& needle) {
  Status s = ValidateMetadata(m, "meta");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(needle), std::string::npos) << s;
}

TEST(Metadata, RejectsInconsistentChunks) {
  CheckpointMeta m = TwoChunkMeta();
  m.tensors["w"].chunks[1].box = Box{{1, 0}, {2, 8}};
  ExpectError(m, "overlap");
  m = TwoChunkMeta();
  m.tensors["w"].chunks.pop_back();
  ExpectError(m, "cover 16 of 32");
  m = TwoChunkMeta();
  m.tensors["w"].chunks[0].byte_len = 60;
  ExpectError(m, "does not match the box");
  m = TwoChunkMeta();
  m.tensors["w"].chunks[1].byte_off = 4090;
  ExpectError(m, "outside data/r1.bin");
  m = TwoChunkMeta();
  m.tensors["w"].chunks[0].box = Box{{3, 0}, {2, 8}};
  ExpectError(m, "outside the global shape");
  m = TwoChunkMeta();
  m.files[0].path = "../escape";
  ExpectError(m, "must be relative");
}

TEST(Metadata, RejectsNewerVersionAndForeignFormat) {
  std::string text = MetadataToJson(TwoChunkMeta());
  std::string newer = text;
  newer.replace(newer.find("\"version\": 1"), 12, "\"version\": 9");
  auto r = MetadataFromJson(newer, "m.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("version 9 is not supported"), std::string::npos);
  std::string foreign = text;
  foreign.replace(foreign.find("loom-ckpt"), 9, "zarr-ckpt");
  EXPECT_FALSE(MetadataFromJson(foreign, "m.json").ok());
  EXPECT_FALSE(MetadataFromJson("{\"format\": \"loom-ckpt\"", "m.json").ok());
}

// Fuzz: random truncations and byte flips must be rejected or parsed, never crash.
TEST(Metadata, FuzzedInputNeverCrashes) {
  const std::string text = MetadataToJson(TwoChunkMeta());
  std::mt19937 rng(3);
  int rejected = 0;
  for (int i = 0; i < 4000; ++i) {
    std::string s = text;
    if (i % 2 == 0) {
      s.resize(rng() % s.size());
    } else {
      for (int k = 0; k < 3; ++k) s[rng() % s.size()] = static_cast<char>(rng() % 128);
    }
    auto r = MetadataFromJson(s, "fuzz");
    if (!r.ok()) {
      ++rejected;
      EXPECT_FALSE(r.status().message().empty());
    } else {
      EXPECT_TRUE(ValidateMetadata(*r, "fuzz").ok());
    }
  }
  EXPECT_GT(rejected, 2000);
}

}  // namespace
}  // namespace loom::ckpt
