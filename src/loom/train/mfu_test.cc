#include "loom/train/mfu.h"

#include <gtest/gtest.h>

#include "loom/train/lr_schedule.h"
#include "loom/train/progress.h"

namespace loom::train {
namespace {

TEST(MfuTest, Gpt3ConventionNumbers) {
  nn::GptConfig c;
  c.n_layers = 96;
  c.d_model = 12288;
  c.n_heads = 96;
  c.context_length = 2048;
  c.vocab_size = 50257;
  double six_n = 6.0 * static_cast<double>(c.NonEmbeddingParams());
  EXPECT_NEAR(six_n, 1.05e12, 0.01e12);
  EXPECT_NEAR(FlopsPerToken(c, 2048) - six_n, 12.0 * 96 * 12288 * 2048, 1.0);
  EXPECT_NEAR((FlopsPerToken(c, 2048) - six_n) / six_n, 0.028, 0.001);  // attention ~2.8%
  c.sliding_window = 512;  // SWA attends to w tokens, not s
  EXPECT_NEAR(FlopsPerToken(c, 2048) - six_n, 12.0 * 96 * 12288 * 512, 1.0);
}

TEST(MfuTest, Formula) {
  // 1000 tokens/s x 1e9 FLOP/token over 2 ranks of 1e12 FLOP/s = 50%.
  EXPECT_DOUBLE_EQ(Mfu(1000, 1e9, 2, 1e12), 0.5);
  EXPECT_EQ(Mfu(1000, 1e9, 2, 0), 0);
}

TEST(LrScheduleTest, WarmupThenCosine) {
  EXPECT_DOUBLE_EQ(LearningRate(0, 100, 10, 1.0, 0.1), 0.1);
  EXPECT_DOUBLE_EQ(LearningRate(9, 100, 10, 1.0, 0.1), 1.0);
  EXPECT_DOUBLE_EQ(LearningRate(10, 100, 10, 1.0, 0.1), 1.0);
  EXPECT_NEAR(LearningRate(99, 100, 10, 1.0, 0.1), 0.1, 1e-12);
  EXPECT_NEAR(LearningRate(54, 100, 10, 1.0, 0.1), 0.55, 0.01);
  EXPECT_DOUBLE_EQ(LearningRate(0, 10, 0, 1.0, 0.0), 1.0);
}

TEST(ProgressTest, Formatting) {
  EXPECT_EQ(FormatThousands(1234567.4), "1,234,567");
  EXPECT_EQ(FormatThousands(999), "999");
  EXPECT_EQ(FormatDuration(161), "2m41s");
  EXPECT_EQ(FormatDuration(3720), "1h02m");
  Progress p(200, 0);
  MetricRow row;
  row.step = 40;
  row.loss = 2.41723;
  row.eval_loss = 2.399;
  row.tokens_per_s = 3950.2;
  row.mfu = 0.4721;
  row.lr = 9.8e-4;
  std::string line = p.Line(row);
  EXPECT_NE(line.find("step  40/200 | loss 2.4172 | eval 2.3990 | 3,950 tok/s | MFU 47.2%"),
            std::string::npos)
      << line;
}

}  // namespace
}  // namespace loom::train
