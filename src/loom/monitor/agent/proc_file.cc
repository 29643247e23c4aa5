// ReadProcFile: see proc_file.h.
#include "loom/monitor/agent/proc_file.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "loom/base/file_util.h"

namespace loom::monitor {

Status ReadProcFile(const std::string& path, std::string* out, size_t max_bytes) {
  out->clear();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open", path, errno);
  char buf[8192];
  while (out->size() < max_bytes) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      // ESRCH: the process exited between open and read.
      return err == ESRCH ? NotFoundError("read '" + path + "': process gone")
                          : ErrnoError("read", path, err);
    }
    if (n == 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return OkStatus();
}

}  // namespace loom::monitor
