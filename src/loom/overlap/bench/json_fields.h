// JSON helpers shared by the overlap bench's report and its own-R analysis: numbers that may be
// NaN/inf (JSON has none: written as null) and optional numeric fields (missing: NaN).
#pragma once

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

namespace loom::overlap {

inline nlohmann::json JsonNumber(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

inline double JsonDouble(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>()
                                          : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace loom::overlap
