// ParseBytes: "4096", "1K", "64M", "5GiB", "1.5G" -> bytes (binary units; K/KiB, M/MiB, G/GiB).
#pragma once

#include <cstdint>
#include <string>

#include "loom/base/status.h"

namespace loom::cli {

Result<int64_t> ParseBytes(const std::string& s);

}  // namespace loom::cli
