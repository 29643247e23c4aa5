#include "loom/monitor/inject/process_target.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

#include "loom/base/file_util.h"

namespace loom::monitor {
namespace {

// Fields after the "(comm)" of /proc/PID/stat; comm may contain spaces and parentheses.
Result<std::string> StatTail(int pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  auto text = ReadFileToString(path);
  if (!text.ok())
    return NotFoundError("pid " + std::to_string(pid) + " does not exist (" + path +
                         " unreadable)");
  const size_t close = text->rfind(')');
  if (close == std::string::npos || close + 2 >= text->size()) {
    return DataLossError("malformed " + path);
  }
  return text->substr(close + 2);
}

}  // namespace

bool ProcessExists(int pid) {
  if (pid <= 0) return false;
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

bool ProcessAlive(int pid) {
  auto state = ProcState(pid);
  return state.ok() && *state != 'Z' && *state != 'X';
}

Status CheckTargetPid(int pid) {
  if (pid <= 1) {
    return InvalidArgumentError("pid (--pid) must name a process other than init, got " +
                                std::to_string(pid));
  }
  if (pid == ::getpid()) {
    return InvalidArgumentError("pid (--pid) " + std::to_string(pid) + " is the injector itself");
  }
  if (!ProcessExists(pid)) {
    return NotFoundError("pid " + std::to_string(pid) + " does not exist");
  }
  if (!ProcessAlive(pid)) {
    return NotFoundError("pid " + std::to_string(pid) + " has exited (zombie)");
  }
  return OkStatus();
}

Status SendSignal(int pid, int sig) {
  if (::kill(pid, sig) == 0) return OkStatus();
  if (errno == ESRCH) return NotFoundError("pid " + std::to_string(pid) + " does not exist");
  return InternalError("kill(" + std::to_string(pid) + ", " + strsignal(sig) +
                       "): " + std::strerror(errno));
}

Result<char> ProcState(int pid) {
  LOOM_ASSIGN_OR_RETURN(std::string tail, StatTail(pid));
  return tail[0];
}

Result<int64_t> ProcCpuTicks(int pid) {
  LOOM_ASSIGN_OR_RETURN(std::string tail, StatTail(pid));
  // tail starts at field 3 (state); utime and stime are fields 14 and 15.
  std::istringstream in(tail);
  std::string field;
  int64_t utime = -1, stime = -1;
  for (int i = 3; i <= 15 && (in >> field); ++i) {
    if (i == 14) utime = std::strtoll(field.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoll(field.c_str(), nullptr, 10);
  }
  if (utime < 0 || stime < 0) {
    return DataLossError("malformed /proc/" + std::to_string(pid) + "/stat");
  }
  return utime + stime;
}

}  // namespace loom::monitor
