#include "loom/overlap/ops/overlap_mode.h"

#include <string>

namespace loom::overlap {

std::string_view OverlapModeName(OverlapMode mode) {
  switch (mode) {
    case OverlapMode::kSequential:
      return "sequential";
    case OverlapMode::kDecomposed:
      return "decomposed";
    case OverlapMode::kFused:
      return "fused";
    case OverlapMode::kAuto:
      return "auto";
  }
  return "unknown";
}

Result<OverlapMode> ParseOverlapMode(std::string_view name) {
  for (OverlapMode mode : {OverlapMode::kSequential, OverlapMode::kDecomposed, OverlapMode::kFused,
                           OverlapMode::kAuto}) {
    if (name == OverlapModeName(mode)) return mode;
  }
  return InvalidArgumentError("unknown overlap mode '" + std::string(name) +
                              "' (expected sequential, decomposed, fused or auto)");
}

}  // namespace loom::overlap
