#include "loom/cli/parse_bytes.h"

#include <cstdlib>

namespace loom::cli {

Result<int64_t> ParseBytes(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || v <= 0) return InvalidArgumentError("bad size '" + s + "'");
  std::string unit(end);
  if (unit.size() == 3 && unit.substr(1) == "iB") unit = unit.substr(0, 1);
  double mult = unit.empty() || unit == "B" ? 1
                : unit == "K"               ? 1024
                : unit == "M"               ? 1024.0 * 1024
                : unit == "G"               ? 1024.0 * 1024 * 1024
                                            : -1;
  if (mult < 0) {
    return InvalidArgumentError("bad size unit in '" + s + "' (use K, M, G or KiB, MiB, GiB)");
  }
  return static_cast<int64_t>(v * mult);
}

}  // namespace loom::cli
