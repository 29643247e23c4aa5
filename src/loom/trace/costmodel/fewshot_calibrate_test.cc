// Tests of the few-shot log calibration: an exact line is recovered, the ridge pulls the slope
// towards 1, weights act like repeated picks, and degenerate picks give a pure offset.
#include "loom/trace/costmodel/fewshot_calibrate.h"

#include <gtest/gtest.h>

namespace loom::trace::costmodel {
namespace {

TEST(LogCalibrationTest, RecoversAnExactLineWithoutRidge) {
  // ln y = 0.5 + 1.2 ln yhat.
  const std::vector<double> x = {-10, -8, -7, -4};
  std::vector<double> y;
  for (double v : x) y.push_back(0.5 + 1.2 * v);
  const LogCalibration c = FitLogCalibration(x, y, {1, 1, 1, 1}, 0);
  EXPECT_NEAR(c.slope_delta, 0.2, 1e-12);
  EXPECT_NEAR(c.center, -7.25, 1e-12);
  for (double v : {-12.0, -6.0, -1.0}) EXPECT_NEAR(c.Apply(v), 0.5 + 1.2 * v, 1e-9);
}

TEST(LogCalibrationTest, RidgeShrinksTheSlopeTowardsOne) {
  const std::vector<double> x = {-2, 0, 2};
  const std::vector<double> y = {-2 * 2.0 + 1, 1, 2 * 2.0 + 1};  // slope 2, offset 1
  // sxx = 8, sxr = 8, sw = 3: slope_delta = 8 / (8 + ridge * 3).
  EXPECT_NEAR(FitLogCalibration(x, y, {1, 1, 1}, 0).slope_delta, 1.0, 1e-12);
  EXPECT_NEAR(FitLogCalibration(x, y, {1, 1, 1}, 8.0 / 3).slope_delta, 0.5, 1e-12);
  EXPECT_NEAR(FitLogCalibration(x, y, {1, 1, 1}, 8.0 / 3).offset, 1.0, 1e-12);
}

TEST(LogCalibrationTest, WeightsActLikeRepeatedPicks) {
  const std::vector<double> x = {-3, -1, 0.5};
  const std::vector<double> y = {-2.0, -1.5, 1.0};
  const LogCalibration weighted = FitLogCalibration(x, y, {2, 1, 3}, 0.1);
  const LogCalibration repeated = FitLogCalibration({-3, -3, -1, 0.5, 0.5, 0.5},
                                                    {-2.0, -2.0, -1.5, 1.0, 1.0, 1.0},
                                                    {1, 1, 1, 1, 1, 1}, 0.1);
  EXPECT_NEAR(weighted.offset, repeated.offset, 1e-12);
  EXPECT_NEAR(weighted.slope_delta, repeated.slope_delta, 1e-12);
  EXPECT_NEAR(weighted.center, repeated.center, 1e-12);
}

TEST(LogCalibrationTest, DegeneratePicksGiveAPureOffset) {
  const LogCalibration one = FitLogCalibration({-5}, {-4.3}, {1}, 0);
  EXPECT_DOUBLE_EQ(one.slope_delta, 0);
  EXPECT_NEAR(one.Apply(-5), -4.3, 1e-12);
  EXPECT_NEAR(one.Apply(-9), -8.3, 1e-12);
  const LogCalibration same_x = FitLogCalibration({-2, -2}, {-1, -3}, {1, 1}, 0);
  EXPECT_DOUBLE_EQ(same_x.slope_delta, 0);
  EXPECT_NEAR(same_x.offset, 0, 1e-12);
}

}  // namespace
}  // namespace loom::trace::costmodel
