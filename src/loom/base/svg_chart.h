// SvgLineChart: a small self-contained SVG line chart (axes, ticks, legend) for HTML reports
// that open in any browser with no scripts or network access.
// Thread-safety: value type.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace loom {

struct ChartSeries {
  std::string name;
  std::string color;  // CSS colour
  std::vector<std::pair<double, double>> points;
  bool markers = false;  // draw dots (sparse series such as eval loss)
};

std::string SvgLineChart(const std::string& title, const std::string& x_label,
                         const std::string& y_label, const std::vector<ChartSeries>& series,
                         int width = 640, int height = 320);

// Escapes &, <, >, " for HTML text and attributes.
std::string HtmlEscape(const std::string& s);

}  // namespace loom
