#include "loom/base/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace loom {

std::string HtmlEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

namespace {

// Tick positions at 1/2/5 x 10^k covering [lo, hi].
std::vector<double> NiceTicks(double lo, double hi, int target = 5) {
  if (!(hi > lo)) hi = lo + 1;
  double raw = (hi - lo) / target;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  }
  std::vector<double> t;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.push_back(v);
  return t;
}

std::string Fmt(double v) {
  char buf[32];
  double a = std::fabs(v);
  if (a != 0 && (a >= 1e5 || a < 1e-3)) {
    std::snprintf(buf, sizeof(buf), "%.1e", v);
  } else if (a >= 100 || v == std::floor(v)) {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%.3g", v);
  }
  return buf;
}

}  // namespace

std::string SvgLineChart(const std::string& title, const std::string& x_label,
                         const std::string& y_label, const std::vector<ChartSeries>& series,
                         int width, int height) {
  const double ml = 64, mr = 16, mt = 28, mb = 44;
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const auto& s : series) {
    for (auto [x, y] : s.points) {
      if (!std::isfinite(y)) continue;
      x0 = std::min(x0, x);
      x1 = std::max(x1, x);
      y0 = std::min(y0, y);
      y1 = std::max(y1, y);
    }
  }
  if (!std::isfinite(x0)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  if (x1 == x0) x1 = x0 + 1;
  double pad = (y1 - y0) * 0.05;
  if (pad == 0) pad = std::max(1e-6, std::fabs(y0) * 0.05);
  y0 -= pad;
  y1 += pad;
  const double pw = width - ml - mr, ph = height - mt - mb;
  auto X = [&](double x) { return ml + (x - x0) / (x1 - x0) * pw; };
  auto Y = [&](double y) { return mt + (1 - (y - y0) / (y1 - y0)) * ph; };
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" viewBox=\"0 0 " << width << " " << height
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << width / 2 << "\" y=\"16\" text-anchor=\"middle\" font-size=\"13\">"
    << HtmlEscape(title) << "</text>\n";
  for (double t : NiceTicks(y0, y1)) {
    o << "<line x1=\"" << ml << "\" x2=\"" << ml + pw << "\" y1=\"" << Y(t) << "\" y2=\"" << Y(t)
      << "\" stroke=\"#e5e5e5\"/><text x=\"" << ml - 6 << "\" y=\"" << Y(t) + 4
      << "\" text-anchor=\"end\">" << Fmt(t) << "</text>\n";
  }
  for (double t : NiceTicks(x0, x1)) {
    o << "<line x1=\"" << X(t) << "\" x2=\"" << X(t) << "\" y1=\"" << mt + ph << "\" y2=\""
      << mt + ph + 4 << "\" stroke=\"black\"/><text x=\"" << X(t) << "\" y=\"" << mt + ph + 16
      << "\" text-anchor=\"middle\">" << Fmt(t) << "</text>\n";
  }
  o << "<rect x=\"" << ml << "\" y=\"" << mt << "\" width=\"" << pw << "\" height=\"" << ph
    << "\" fill=\"none\" stroke=\"black\"/>\n";
  o << "<text x=\"" << ml + pw / 2 << "\" y=\"" << height - 8 << "\" text-anchor=\"middle\">"
    << HtmlEscape(x_label) << "</text>\n";
  o << "<text transform=\"translate(14," << mt + ph / 2
    << ") rotate(-90)\" text-anchor=\"middle\">" << HtmlEscape(y_label) << "</text>\n";
  for (const auto& s : series) {
    if (s.markers) {
      for (auto [x, y] : s.points) {
        if (std::isfinite(y)) {
          o << "<circle cx=\"" << X(x) << "\" cy=\"" << Y(y) << "\" r=\"3\" fill=\"" << s.color
            << "\"/>";
        }
      }
      o << "\n";
    }
    o << "<polyline fill=\"none\" stroke=\"" << s.color << "\" stroke-width=\"1.5\" points=\"";
    for (auto [x, y] : s.points) {
      if (std::isfinite(y)) o << X(x) << "," << Y(y) << " ";
    }
    o << "\"/>\n";
  }
  // Legend on a white box, drawn last so that lines never cover it.
  int named = 0;
  for (const auto& s : series) named += !s.points.empty();
  o << "<rect x=\"" << ml + pw - 156 << "\" y=\"" << mt + 2 << "\" width=\"152\" height=\""
    << 16 * named + 6 << "\" fill=\"white\" fill-opacity=\"0.85\"/>\n";
  int legend = 0;
  for (const auto& s : series) {
    if (s.points.empty()) continue;
    double lx = ml + pw - 150, ly = mt + 14 + 16 * legend++;
    o << "<line x1=\"" << lx << "\" x2=\"" << lx + 20 << "\" y1=\"" << ly - 4 << "\" y2=\""
      << ly - 4 << "\" stroke=\"" << s.color << "\" stroke-width=\"2\"/><text x=\"" << lx + 26
      << "\" y=\"" << ly << "\">" << HtmlEscape(s.name) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace loom
