#include "loom/monitor/inject/command_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "loom/base/clock.h"
#include "loom/base/file_util.h"

extern char** environ;

namespace loom::monitor {
namespace {

std::vector<std::string> FullArgv(const std::vector<std::string>& argv, const std::string& netns) {
  std::vector<std::string> full;
  if (!netns.empty()) full = {"ip", "netns", "exec", netns};
  full.insert(full.end(), argv.begin(), argv.end());
  return full;
}

}  // namespace

std::string CommandLine(const std::vector<std::string>& argv, const std::string& netns) {
  std::string line;
  for (const std::string& a : FullArgv(argv, netns)) {
    if (!line.empty()) line += ' ';
    line += a.find(' ') == std::string::npos ? a : "'" + a + "'";
  }
  return line;
}

Status CheckNetns(const std::string& netns) {
  if (netns.empty()) return OkStatus();
  if (netns.find('/') != std::string::npos || netns == "." || netns == "..") {
    return InvalidArgumentError("netns (--netns) '" + netns + "' is not a namespace name");
  }
  if (!PathExists("/var/run/netns/" + netns)) {
    return NotFoundError("network namespace '" + netns + "' does not exist (no /var/run/netns/" +
                         netns + ")");
  }
  return OkStatus();
}

Result<CommandOutput> RunCommand(const std::vector<std::string>& argv, const std::string& netns,
                                 int timeout_ms) {
  if (argv.empty()) return InvalidArgumentError("RunCommand: empty argv");
  const std::vector<std::string> full = FullArgv(argv, netns);
  std::vector<char*> cargv;
  for (const std::string& a : full) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return ErrnoError("pipe2 for", full[0], errno);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  pid_t child = -1;
  const int rc = ::posix_spawnp(&child, cargv[0], &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    if (rc == ENOENT) return NotFoundError("'" + full[0] + "' not found in PATH");
    return InternalError("cannot run '" + CommandLine(argv, netns) + "': " + std::strerror(rc));
  }

  CommandOutput out;
  const Deadline deadline = DeadlineAfter(std::chrono::milliseconds(timeout_ms));
  bool timed_out = false;
  char buf[4096];
  while (true) {
    pollfd p{fds[0], POLLIN, 0};
    const int left = static_cast<int>(TimeLeft(deadline).count());
    if (left <= 0) {
      timed_out = true;
      break;
    }
    const int n = ::poll(&p, 1, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;  // timeout: re-checked at the top
    const ssize_t got = ::read(fds[0], buf, sizeof(buf));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    out.output.append(buf, static_cast<size_t>(got));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(child, SIGKILL);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    std::string msg = CommandLine(argv, netns);
    msg.insert(0, 1, '\'');
    msg += "' did not finish within " + std::to_string(timeout_ms) + " ms";
    return DeadlineExceededError(std::move(msg));
  }
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

Result<std::string> RunChecked(const std::vector<std::string>& argv, const std::string& netns,
                               int timeout_ms) {
  LOOM_ASSIGN_OR_RETURN(CommandOutput out, RunCommand(argv, netns, timeout_ms));
  if (out.exit_code != 0) {
    std::string tool_output = out.output;
    while (!tool_output.empty() && (tool_output.back() == '\n' || tool_output.back() == ' ')) {
      tool_output.pop_back();
    }
    std::string msg = CommandLine(argv, netns);
    msg.insert(0, 1, '\'');
    msg += "' exited " + std::to_string(out.exit_code);
    if (!tool_output.empty()) msg += ": " + tool_output;
    return InternalError(std::move(msg));
  }
  return out.output;
}

}  // namespace loom::monitor
