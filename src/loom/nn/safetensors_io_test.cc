#include "loom/nn/safetensors_io.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>

#include "loom/base/file_util.h"
#include "loom/nn/gpt_init.h"

namespace loom::nn {
namespace {

TEST(SafetensorsTest, RoundTripsEveryParameter) {
  GptConfig c;
  c.d_model = 32;
  c.n_heads = 2;
  c.n_layers = 2;
  FlatLayout layout(GptParamSpecs(c));
  std::vector<float> w(layout.total_elements());
  InitGptWeights(c, layout, 3, w.data());
  std::string path = ::testing::TempDir() + "/init_" + std::to_string(::getpid()) + ".safetensors";
  ASSERT_TRUE(WriteSafetensors(path, layout, w.data(), {{"format", "pt"}}).ok());
  auto read = ReadSafetensors(path);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(read->size(), layout.slots().size());
  for (const ParamSlot& s : layout.slots()) {
    const SafetensorsEntry& e = read->at(s.spec.name);
    EXPECT_EQ(e.dtype, "F32");
    EXPECT_EQ(e.shape, s.spec.shape);
    ASSERT_EQ(e.data.size(), static_cast<size_t>(s.spec.numel() * 4));
    EXPECT_EQ(0, std::memcmp(e.data.data(), w.data() + s.offset, e.data.size())) << s.spec.name;
  }
  // The header length is a multiple of 8 so the data is aligned.
  std::string bytes = *ReadFileToString(path);
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
}

TEST(SafetensorsTest, CorruptFilesAreDataLossNamingTheFile) {
  std::string path = ::testing::TempDir() + "/bad.safetensors";
  ASSERT_TRUE(WriteFileAtomic(path, std::string("\xff\xff\xff\xff\x00\x00\x00\x00{}", 10)).ok());
  auto r = ReadSafetensors(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find(path), std::string::npos);
}

}  // namespace
}  // namespace loom::nn
