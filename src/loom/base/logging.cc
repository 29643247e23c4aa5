#include "loom/base/logging.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <map>
#include <mutex>
#include <shared_mutex>

namespace loom {
namespace {

struct LogSpec {
  LogLevel default_level = LogLevel::kInfo;
  std::map<std::string, LogLevel, std::less<>> per_subsystem;
};

// The one process-wide logging configuration (like glog's flags): logging must work before any
// context object exists, and it is read-mostly.
std::shared_mutex& SpecMutex() {
  static std::shared_mutex mu;
  return mu;
}

LogSpec& Spec() {
  static LogSpec* spec = new LogSpec();  // never destroyed: logging works during exit
  return *spec;
}

Result<LogLevel> ParseLevel(std::string_view name) {
  if (name == "debug") return LogLevel::kDebug;
  if (name == "info") return LogLevel::kInfo;
  if (name == "warn" || name == "warning") return LogLevel::kWarning;
  if (name == "error") return LogLevel::kError;
  return InvalidArgumentError("unknown log level '" + std::string(name) +
                              "' (expected debug, info, warn or error)");
}

Result<LogSpec> ParseSpec(std::string_view spec) {
  LogSpec out;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string_view::npos) comma = spec.size();
    std::string_view item = spec.substr(pos, comma - pos);
    pos = comma + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      LOOM_ASSIGN_OR_RETURN(out.default_level, ParseLevel(item));
    } else {
      LOOM_ASSIGN_OR_RETURN(LogLevel level, ParseLevel(item.substr(eq + 1)));
      out.per_subsystem[std::string(item.substr(0, eq))] = level;
    }
  }
  return out;
}

std::once_flag env_once;

void InitFromEnv() {
  std::call_once(env_once, [] {
    const char* env = std::getenv("LOOM_LOG_LEVEL");
    if (env == nullptr) return;
    auto parsed = ParseSpec(env);
    if (!parsed.ok()) {
      std::fprintf(stderr, "loom: ignoring LOOM_LOG_LEVEL: %s\n",
                   parsed.status().message().c_str());
      return;
    }
    std::unique_lock lock(SpecMutex());
    Spec() = std::move(*parsed);
  });
}

char LevelLetter(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return 'D';
    case LogLevel::kInfo: return 'I';
    case LogLevel::kWarning: return 'W';
    case LogLevel::kError: return 'E';
    case LogLevel::kFatal: return 'F';
  }
  return '?';
}

}  // namespace

Status SetLogSpec(std::string_view spec) {
  InitFromEnv();
  LOOM_ASSIGN_OR_RETURN(LogSpec parsed, ParseSpec(spec));
  std::unique_lock lock(SpecMutex());
  Spec() = std::move(parsed);
  return OkStatus();
}

bool LogEnabled(LogLevel level, std::string_view subsystem) {
  if (level == LogLevel::kFatal) return true;
  InitFromEnv();
  std::shared_lock lock(SpecMutex());
  const LogSpec& spec = Spec();
  auto it = spec.per_subsystem.find(subsystem);
  LogLevel threshold = it == spec.per_subsystem.end() ? spec.default_level : it->second;
  return level >= threshold;
}

namespace internal {

LogMessage::LogMessage(LogLevel level, std::string_view subsystem, const char* file, int line)
    : level_(level) {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() %
      1000);
  std::tm tm;
  localtime_r(&t, &tm);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  stream_ << '[' << LevelLetter(level) << ' ' << buf << ' ' << subsystem;
  if (level >= LogLevel::kWarning) {
    std::string_view f(file);
    size_t slash = f.rfind('/');
    if (slash != std::string_view::npos) f = f.substr(slash + 1);
    stream_ << ' ' << f << ':' << line;
  }
  stream_ << "] ";
}

LogMessage::~LogMessage() {
  stream_ << '\n';
  std::string s = stream_.str();
  // One write(2) per line so that lines from threads and ranks do not interleave.
  ssize_t ignored = ::write(STDERR_FILENO, s.data(), s.size());
  (void)ignored;
  if (level_ == LogLevel::kFatal) std::abort();
}

}  // namespace internal
}  // namespace loom
