#include "loom/nn/param_layout.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "loom/nn/byte_tokenizer.h"
#include "loom/nn/gpt_init.h"

namespace loom::nn {
namespace {

TEST(GptConfigTest, DefaultParameterCounts) {
  GptConfig c;
  // 6 layers x (12 d^2 + 13 d) + final LayerNorm (2 d), d = 384.
  EXPECT_EQ(c.NonEmbeddingParams(), 6 * (12 * 384 * 384 + 13 * 384) + 2 * 384);
  EXPECT_EQ(c.TotalParams(), c.NonEmbeddingParams() + 256 * 384 + 256 * 384);
  GptConfig p = c;
  p.parallel_block = true;  // one LayerNorm per block
  EXPECT_EQ(p.NonEmbeddingParams(), c.NonEmbeddingParams() - 6 * 2 * 384);
}

TEST(GptConfigTest, JsonRoundTripAndErrors) {
  auto c = GptConfigFromJson(nlohmann::json::parse(R"({"d_model": 64, "n_heads": 4})"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->d_model, 64);
  EXPECT_EQ(c->n_layers, 6);
  EXPECT_EQ(GptConfigToJson(*c)["n_heads"], 4);
  auto bad = GptConfigFromJson(nlohmann::json::parse(R"({"d_model": 65, "n_heads": 4})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("model.d_model (65) must be divisible by n_heads (4)"),
            std::string::npos)
      << bad.status().message();
  auto unknown = GptConfigFromJson(nlohmann::json::parse(R"({"n_layer": 2})"));
  EXPECT_NE(unknown.status().message().find("did you mean 'n_layers'"), std::string::npos);
}

TEST(FlatLayoutTest, ReverseOrderAlignedAndCovering) {
  GptConfig c;
  c.d_model = 20;
  c.n_heads = 2;
  c.n_layers = 2;
  c.vocab_size = 13;
  c.context_length = 9;
  FlatLayout layout(GptParamSpecs(c));
  const auto& slots = layout.slots();
  EXPECT_EQ(slots.back().spec.name, "ln_f.bias");
  EXPECT_EQ(slots.back().offset, 0);  // last in forward order = first in the buffer
  EXPECT_EQ(slots.front().spec.name, "wte");
  int64_t covered = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    EXPECT_EQ(slots[i].offset % FlatLayout::kAlignElems, 0) << slots[i].spec.name;
    if (i + 1 < slots.size()) {
      EXPECT_GE(slots[i].offset, slots[i + 1].offset + slots[i + 1].spec.numel());
    }
    covered += slots[i].spec.numel();
    EXPECT_EQ(layout.SlotAt(slots[i].offset), static_cast<int>(i));
  }
  EXPECT_GE(layout.total_elements(), covered);
  EXPECT_LT(layout.total_elements(), covered + FlatLayout::kAlignElems * (int64_t)slots.size());
}

TEST(FlatLayoutTest, BucketsArePaddedAndHoldWholeParams) {
  GptConfig c;
  c.d_model = 64;
  c.n_heads = 4;
  c.n_layers = 3;
  FlatLayout layout(GptParamSpecs(c), {.bucket_elems = 20000, .pad = 3 * 16});
  ASSERT_GT(layout.buckets().size(), 3u);
  int64_t expect_begin = 0;
  for (size_t b = 0; b < layout.buckets().size(); ++b) {
    const Bucket& bk = layout.buckets()[b];
    EXPECT_EQ(bk.begin, expect_begin);
    EXPECT_EQ(bk.size() % 48, 0);
    expect_begin = bk.end;
    for (int p : bk.params) {
      const ParamSlot& s = layout.slots()[p];
      EXPECT_EQ(s.bucket, static_cast<int>(b));
      EXPECT_GE(s.offset, bk.begin);
      EXPECT_LE(s.offset + s.spec.numel(), bk.end);
    }
    // Only a parameter larger than the target may make a bucket exceed it (plus padding).
    if (bk.params.size() > 1) EXPECT_LE(bk.size(), 20000 + 48 + 16 * 8);
  }
  EXPECT_EQ(expect_begin, layout.total_elements());
  EXPECT_EQ(layout.slots().back().bucket, 0);                      // ln_f: ready first
  EXPECT_EQ(layout.slots().front().bucket,
            static_cast<int>(layout.buckets().size()) - 1);        // wte: ready last
}

TEST(GptInitTest, DeterministicAndShaped) {
  GptConfig c;
  c.d_model = 32;
  c.n_heads = 2;
  c.n_layers = 4;
  FlatLayout layout(GptParamSpecs(c));
  std::vector<float> a(layout.total_elements()), b(layout.total_elements());
  InitGptWeights(c, layout, 7, a.data());
  InitGptWeights(c, layout, 7, b.data());
  EXPECT_EQ(a, b);
  InitGptWeights(c, layout, 8, b.data());
  EXPECT_NE(a, b);
  for (const ParamSlot& s : layout.slots()) {
    double sum = 0, sq = 0;
    for (int64_t k = 0; k < s.spec.numel(); ++k) {
      sum += a[s.offset + k];
      sq += a[s.offset + k] * a[s.offset + k];
    }
    double n = static_cast<double>(s.spec.numel());
    if (s.spec.init == InitKind::kOnes) EXPECT_EQ(sum, n) << s.spec.name;
    if (s.spec.init == InitKind::kZeros) EXPECT_EQ(sq, 0.0) << s.spec.name;
    if (s.spec.init == InitKind::kNormal && n > 1000) {
      EXPECT_NEAR(std::sqrt(sq / n), 0.02, 0.002) << s.spec.name;
    }
    if (s.spec.init == InitKind::kNormalResidual && n > 1000) {
      EXPECT_NEAR(std::sqrt(sq / n), 0.02 / std::sqrt(8.0), 0.001) << s.spec.name;
    }
  }
}

TEST(ByteTokenizerTest, RoundTripsAnyBytes) {
  std::string s = "In the beginning\n\xff\x01";
  auto ids = ByteTokenizer::Encode(s);
  EXPECT_EQ(ids.size(), s.size());
  EXPECT_EQ(ids[16], 10);
  EXPECT_EQ(ids[17], 255);
  EXPECT_EQ(ByteTokenizer::Decode(ids), s);
  EXPECT_EQ(ByteTokenizer::DecodePrintable(ids), "In the beginning\n??");
}

}  // namespace
}  // namespace loom::nn
