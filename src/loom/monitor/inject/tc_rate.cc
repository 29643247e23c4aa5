#include "loom/monitor/inject/tc_rate.h"

#include <cmath>
#include <cstdlib>
#include <map>

namespace loom::monitor {

Result<double> ParseTcRate(const std::string& rate) {
  static const std::map<std::string, double> kUnits = {
      {"bit", 1}, {"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}, {"tbit", 1e12},
      {"bps", 8}, {"kbps", 8e3}, {"mbps", 8e6}, {"gbps", 8e9}, {"tbps", 8e12}};
  char* end = nullptr;
  const double v = std::strtod(rate.c_str(), &end);
  const std::string unit = end ? std::string(end) : "";
  auto it = kUnits.find(unit);
  if (rate.empty() || end == rate.c_str() || !std::isfinite(v) || v <= 0 || it == kUnits.end()) {
    return InvalidArgumentError("rate (--rate) '" + rate +
                                "' is not a tc rate like 10mbit, 1gbit, 500kbit or 125kbps");
  }
  const double bps = v * it->second;
  if (bps < 8000) {
    return InvalidArgumentError("rate (--rate) '" + rate + "' is below tc's useful minimum 8kbit");
  }
  return bps;
}

}  // namespace loom::monitor
