#include "loom/robust/stack_dump.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include "loom/base/clock.h"
#include "loom/comm/subprocess.h"

namespace loom::robust {

Result<std::string> DumpStacks(int pid, std::chrono::milliseconds timeout) {
  comm::Subprocess proc;
  LOOM_RETURN_IF_ERROR(proc.Start({"eu-stack", "-p", std::to_string(pid)}, {}));
  std::string out, err;
  const Deadline deadline = DeadlineAfter(timeout);
  char buf[8192];
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    const int left = static_cast<int>(TimeLeft(deadline).count());
    if (left <= 0) {
      proc.Signal(SIGKILL);
      proc.Wait();
      return DeadlineExceededError("eu-stack -p " + std::to_string(pid) + " did not finish in " +
                                   std::to_string(timeout.count()) + " ms");
    }
    pollfd pfd[2] = {{out_open ? proc.stdout_fd() : -1, POLLIN, 0},
                     {err_open ? proc.stderr_fd() : -1, POLLIN, 0}};
    if (poll(pfd, 2, left) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (pfd[i].fd < 0 || pfd[i].revents == 0) continue;
      ssize_t n = read(pfd[i].fd, buf, sizeof(buf));
      if (n <= 0) {
        (i == 0 ? out_open : err_open) = false;
      } else {
        (i == 0 ? out : err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  comm::ExitStatus st = proc.Wait();
  if (st.code == 127) return NotFoundError("eu-stack not found (Debian package elfutils)");
  if (out.empty()) {
    return UnavailableError("eu-stack -p " + std::to_string(pid) + " " + st.ToString() + ": " +
                            err.substr(0, 300));
  }
  return out;
}

}  // namespace loom::robust
