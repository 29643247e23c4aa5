// Subprocess: one child process with its stdout and stderr on pipes, in its own process group,
// killed with SIGKILL if the parent dies first (PR_SET_PDEATHSIG), so a crashed launcher never
// leaves orphaned ranks behind.
// Thread-safety: one owner thread.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loom/base/status.h"

namespace loom::comm {

struct ExitStatus {
  int code = 0;    // exit code when the child exited normally
  int signal = 0;  // terminating signal, 0 when it exited normally
  bool ok() const { return code == 0 && signal == 0; }
  // "exited with status 3" / "was killed by signal 9 (Killed)".
  std::string ToString() const;
  // Shell convention: code, or 128 + signal.
  int ShellCode() const { return signal ? 128 + signal : code; }
};

class Subprocess {
 public:
  Subprocess() = default;
  ~Subprocess();  // closes pipes; kills the child's group with SIGKILL if still running
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // Starts argv[0] (searched in PATH) with the current environment plus `env` overrides.
  // An exec failure shows up as exit status 127 with a message on the child's stderr.
  // `capture_output`: stdout/stderr on pipes (read them via stdout_fd/stderr_fd); otherwise the
  // child writes to this process's stdout/stderr.
  Status Start(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
               bool capture_output = true);

  pid_t pid() const { return pid_; }
  int stdout_fd() const { return out_fd_; }
  int stderr_fd() const { return err_fd_; }
  void CloseStdout();
  void CloseStderr();

  // Sends `sig` to the child's whole process group (no-op once it was reaped).
  void Signal(int sig);
  // Non-blocking reap: the exit status once the child has exited.
  std::optional<ExitStatus> Poll();
  // Blocks until the child exits.
  ExitStatus Wait();
  std::optional<ExitStatus> exit_status() const { return exit_; }

 private:
  // waitpid with `flags`; records the exit status. False on an unrecoverable waitpid error.
  bool Reap(int flags);

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::optional<ExitStatus> exit_;
};

}  // namespace loom::comm
