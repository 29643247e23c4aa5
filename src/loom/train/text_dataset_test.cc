#include "loom/train/text_dataset.h"

#include <gtest/gtest.h>

namespace loom::train {
namespace {

std::string Corpus() {
  std::string s;
  for (int i = 0; i < 5000; ++i) s += static_cast<char>('a' + (i * 7) % 26);
  return s;
}

TEST(TextDatasetTest, SplitsAndSamplesDeterministically) {
  TextDataset d = TextDataset::FromText(Corpus(), 0.1);
  EXPECT_EQ(d.train_size(), 4500);
  EXPECT_EQ(d.val_size(), 500);
  TokenBatch a = d.TrainBatch(1, 5, 0, 2, 1, 0, 4, 16);
  TokenBatch b = d.TrainBatch(1, 5, 0, 2, 1, 0, 4, 16);
  TokenBatch other_rank = d.TrainBatch(1, 5, 1, 2, 1, 0, 4, 16);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_NE(a.tokens, other_rank.tokens);
  ASSERT_EQ(a.tokens.size(), 64u);
  std::string text = Corpus();
  for (int i = 0; i < 4; ++i) {
    for (int t = 0; t + 1 < 16; ++t) EXPECT_EQ(a.targets[i * 16 + t], a.tokens[i * 16 + t + 1]);
  }
}

TEST(TextDatasetTest, ValidationWindowsStayInTheValidationSplit) {
  std::string text(1000, 'x');
  for (int i = 900; i < 1000; ++i) text[i] = 'v';
  TextDataset d = TextDataset::FromText(text, 0.1);
  for (int64_t i = 0; i < 3; ++i) {
    TokenBatch b = d.ValBatch(i, 3, 2, 32);
    for (int64_t t : b.tokens) EXPECT_EQ(t, 'v');
  }
}

TEST(TextDatasetTest, MissingFileIsNamed) {
  auto r = TextDataset::Load("file", "/nonexistent/corpus.txt", 0.05);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("data.path"), std::string::npos);
  EXPECT_NE(r.status().message().find("/nonexistent/corpus.txt"), std::string::npos);
}

}  // namespace
}  // namespace loom::train
