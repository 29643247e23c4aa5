#include "loom/compress/weight_spec.h"

#include <gtest/gtest.h>

namespace loom::compress {
namespace {

TEST(WeightSpec, ParsesDifferencesPlainCodecsAndNone) {
  auto qwd = ParseWeightSpec("qwd4:g2048");
  ASSERT_TRUE(qwd.ok()) << qwd.status();
  EXPECT_TRUE(qwd->difference);
  EXPECT_TRUE(qwd->enabled());
  EXPECT_EQ(qwd->codec.kind, CodecKind::kInt);
  EXPECT_EQ(qwd->codec.bits, 4);
  EXPECT_EQ(qwd->codec.group, 2048);
  EXPECT_EQ(qwd->ToString(), "qwd4:g2048:stochastic");
  EXPECT_EQ(ParseWeightSpec(qwd->ToString())->ToString(), qwd->ToString());

  auto qw = ParseWeightSpec("int8:g256:nearest");
  ASSERT_TRUE(qw.ok());
  EXPECT_FALSE(qw->difference);
  EXPECT_EQ(qw->codec.bits, 8);
  EXPECT_FALSE(qw->codec.stochastic);

  auto none = ParseWeightSpec("none");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->enabled());
}

TEST(WeightSpec, ErrorsNameTheSpec) {
  auto bad_bits = ParseWeightSpec("qwd3:g128");
  ASSERT_FALSE(bad_bits.ok());
  EXPECT_NE(bad_bits.status().message().find("qwd3:g128"), std::string::npos);
  EXPECT_NE(bad_bits.status().message().find("3-bit"), std::string::npos);
  auto unknown = ParseWeightSpec("fp8");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("qwd<bits>"), std::string::npos);
}

}  // namespace
}  // namespace loom::compress
