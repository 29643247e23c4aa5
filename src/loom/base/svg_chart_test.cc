#include "loom/base/svg_chart.h"

#include <gtest/gtest.h>

#include <string>

namespace loom {
namespace {

TEST(SvgChartTest, PointsMapIntoThePlotArea) {
  std::string svg = SvgLineChart("t", "x", "y", {{"s", "red", {{0, 1}, {10, 2}}, false}}, 200, 100);
  // x from 64 (left margin) to 184 (200 - 16); the first point is at the left edge.
  EXPECT_NE(svg.find("points=\"64,"), std::string::npos) << svg;
  EXPECT_NE(svg.find("184,"), std::string::npos) << svg;
}

TEST(SvgChartTest, HtmlEscapeEscapesMarkupCharacters) {
  EXPECT_EQ(HtmlEscape("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
}

TEST(SvgChartTest, EmptySeriesStillDrawAnAxisWithoutNaN) {
  std::string svg = SvgLineChart("empty", "x", "y", {{"s", "red", {}, false}}, 200, 100);
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("NaN"), std::string::npos) << svg;
}

}  // namespace
}  // namespace loom
