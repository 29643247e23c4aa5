// Leveled logging with a subsystem tag, written to stderr one whole line at a time.
//
//   LOOM_LOG(INFO, "comm") << "connected " << n << " peers";
//
// The threshold comes from LOOM_LOG_LEVEL ("info", "debug", "warn", "error", optionally with
// per-subsystem overrides: "info,comm=debug"); SetLogSpec() changes it at run time.
// Thread-safety: all functions may be called from any thread; lines never interleave.
#pragma once

#include <sstream>
#include <string>
#include <string_view>

#include "loom/base/status.h"

namespace loom {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kFatal = 4 };

// Parses "info" or "warn,comm=debug,train=error". Unknown level names are an error.
Status SetLogSpec(std::string_view spec);
bool LogEnabled(LogLevel level, std::string_view subsystem);

namespace internal {

class LogMessage {
 public:
  LogMessage(LogLevel level, std::string_view subsystem, const char* file, int line);
  ~LogMessage();  // writes the line; aborts for kFatal
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

// Swallows the stream in the disabled branch of LOOM_LOG.
struct LogVoidify {
  void operator&(std::ostream&) {}
};

}  // namespace internal
}  // namespace loom

#define LOOM_LOG_LEVEL_DEBUG ::loom::LogLevel::kDebug
#define LOOM_LOG_LEVEL_INFO ::loom::LogLevel::kInfo
#define LOOM_LOG_LEVEL_WARNING ::loom::LogLevel::kWarning
#define LOOM_LOG_LEVEL_ERROR ::loom::LogLevel::kError
#define LOOM_LOG_LEVEL_FATAL ::loom::LogLevel::kFatal

#define LOOM_LOG(level, subsystem)                                                        \
  !::loom::LogEnabled(LOOM_LOG_LEVEL_##level, subsystem)                                  \
      ? (void)0                                                                            \
      : ::loom::internal::LogVoidify() &                                                   \
            ::loom::internal::LogMessage(LOOM_LOG_LEVEL_##level, subsystem, __FILE__, __LINE__) \
                .stream()
