// ReadProcFile: reads a small pseudo-file (/proc, /sys, cgroupfs) with open/read/close into a
// caller-owned buffer, so a 1 Hz sampler reuses its allocations. Pseudo-files report size 0, so
// the whole file is read until EOF (bounded by `max_bytes`).
//
//   std::string buf;
//   LOOM_RETURN_IF_ERROR(ReadProcFile("/proc/stat", &buf));
//
// Thread-safety: reentrant.
#pragma once

#include <cstddef>
#include <string>

#include "loom/base/status.h"

namespace loom::monitor {

// NotFound when the file does not exist (a process that is gone, a kernel without PSI).
Status ReadProcFile(const std::string& path, std::string* out, size_t max_bytes = 1 << 20);

}  // namespace loom::monitor
