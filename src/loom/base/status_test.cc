#include "loom/base/status.h"

#include <gtest/gtest.h>

namespace loom {
namespace {

Result<int> Half(int x) {
  if (x % 2) return InvalidArgumentError("odd: " + std::to_string(x));
  return x / 2;
}

Result<int> Quarter(int x) {
  LOOM_ASSIGN_OR_RETURN(int h, Half(x));
  LOOM_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status CheckPositive(int x) {
  if (x <= 0) return OutOfRangeError("not positive");
  return OkStatus();
}

Status Both(int a, int b) {
  LOOM_RETURN_IF_ERROR(CheckPositive(a));
  LOOM_RETURN_IF_ERROR(CheckPositive(b));
  return OkStatus();
}

TEST(StatusTest, CodesAndMessages) {
  Status s = DeadlineExceededError("allreduce timed out");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(s.ToString(), "DEADLINE_EXCEEDED: allreduce timed out");
  EXPECT_EQ(s.WithContext("rank 1").message(), "rank 1: allreduce timed out");
  EXPECT_TRUE(OkStatus().WithContext("x").ok());
  EXPECT_EQ(OkStatus().ToString(), "OK");
}

TEST(StatusTest, ResultPropagation) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> r = Quarter(6);  // 6/2 = 3 is odd
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "odd: 3");
  EXPECT_EQ(Both(1, -1).code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(Both(1, 2).ok());
}

TEST(StatusTest, ResultFromOkStatusIsAnError) {
  Result<int> r = OkStatus();
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

TEST(StatusDeathTest, ValueOfErrorAborts) {
  Result<int> r = NotFoundError("nope");
  EXPECT_DEATH((void)r.value(), "nope");
}

}  // namespace
}  // namespace loom
