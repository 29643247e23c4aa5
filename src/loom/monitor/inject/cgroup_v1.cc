#include "loom/monitor/inject/cgroup_v1.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <sstream>
#include <thread>

#include "loom/base/file_util.h"
#include "loom/monitor/inject/process_target.h"

namespace loom::monitor {
namespace {

// Plain write(2) of the whole value: cgroup files must not go through WriteFileAtomic's rename.
Status WriteControlFile(const std::string& path, const std::string& value) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open", path, errno);
  const ssize_t n = ::write(fd, value.data(), value.size());
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(value.size())) {
    return ErrnoError("write '" + value + "' to", path, n < 0 ? err : EIO);
  }
  return OkStatus();
}

}  // namespace

Result<std::string> CgroupV1Root(const std::string& controller) {
  const std::string root = "/sys/fs/cgroup/" + controller;
  if (!PathExists(root + "/cgroup.procs") || PathExists(root + "/cgroup.controllers")) {
    return FailedPreconditionError("cgroup v1 '" + controller + "' hierarchy is not mounted at " +
                                   root);
  }
  return root;
}

Result<std::string> CgroupV1PathOf(int pid, const std::string& controller) {
  const std::string path = "/proc/" + std::to_string(pid) + "/cgroup";
  auto text = ReadFileToString(path);
  if (!text.ok()) return NotFoundError("pid " + std::to_string(pid) + " does not exist");
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    // "4:memory:/some/path" or "1:cpu,cpuacct:/path"
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    std::istringstream ctrls(line.substr(a + 1, b - a - 1));
    std::string c;
    while (std::getline(ctrls, c, ',')) {
      if (c == controller) return line.substr(b + 1);
    }
  }
  return FailedPreconditionError("pid " + std::to_string(pid) + " is in no cgroup v1 '" +
                                 controller + "' hierarchy (" + path + ")");
}

Result<std::unique_ptr<ScopedCgroup>> ScopedCgroup::Create(const std::string& controller, int pid,
                                                           const std::string& name) {
  LOOM_ASSIGN_OR_RETURN(std::string root, CgroupV1Root(controller));
  LOOM_ASSIGN_OR_RETURN(std::string rel, CgroupV1PathOf(pid, controller));
  const std::string original = rel == "/" ? root : root + rel;
  const std::string dir = original + "/" + name;
  if (::mkdir(dir.c_str(), 0755) != 0) return ErrnoError("create cgroup", dir, errno);
  return std::unique_ptr<ScopedCgroup>(new ScopedCgroup(controller, pid, dir, original));
}

ScopedCgroup::~ScopedCgroup() { Release().IgnoreError(); }

Status ScopedCgroup::Write(const std::string& file, const std::string& value) const {
  return WriteControlFile(dir_ + "/" + file, value);
}

Result<std::string> ScopedCgroup::Read(const std::string& file) const {
  return ReadFileToString(dir_ + "/" + file);
}

Status ScopedCgroup::MoveTargetIn() {
  Status s = Write("cgroup.procs", std::to_string(pid_));
  if (s.ok()) moved_in_ = true;
  if (!s.ok() && !ProcessExists(pid_)) {
    return NotFoundError("pid " + std::to_string(pid_) + " does not exist (exited)");
  }
  return s;
}

Status ScopedCgroup::Release() {
  if (released_) return OkStatus();
  released_ = true;
  Status first;
  if (moved_in_ && ProcessExists(pid_)) {
    Status s = WriteControlFile(original_dir_ + "/cgroup.procs", std::to_string(pid_));
    // The target may exit between the check and the write (ESRCH): not an error.
    if (!s.ok() && ProcessExists(pid_)) first = s;
  }
  // rmdir fails with EBUSY while exiting tasks are still being removed: retry for up to 2 s.
  for (int attempt = 0;; ++attempt) {
    if (::rmdir(dir_.c_str()) == 0 || errno == ENOENT) break;
    if (errno != EBUSY || attempt >= 100) {
      if (first.ok()) first = ErrnoError("remove cgroup", dir_, errno);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return first;
}

}  // namespace loom::monitor
