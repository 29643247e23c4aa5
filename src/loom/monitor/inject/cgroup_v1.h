// A cgroup v1 child cgroup made for one target process in one controller hierarchy
// (freezer, cpu, memory): created under the cgroup the process is in now (so limits of the
// enclosing cgroup still apply), the process (all its threads) moved in, and on Release() moved
// back to where it was and the directory removed.
//
//   LOOM_ASSIGN_OR_RETURN(auto cg, ScopedCgroup::Create("cpu", pid, "loom-inject-42-7-0"));
//   LOOM_RETURN_IF_ERROR(cg->Write("cpu.cfs_quota_us", "30000"));
//   LOOM_RETURN_IF_ERROR(cg->MoveTargetIn());
//   ...
//   LOOM_RETURN_IF_ERROR(cg->Release());   // the destructor does it too
//
// Thread-safety: one owner.
#pragma once

#include <memory>
#include <string>

#include "loom/base/status.h"

namespace loom::monitor {

// "/sys/fs/cgroup/<controller>"; FailedPrecondition if that v1 hierarchy is not mounted.
Result<std::string> CgroupV1Root(const std::string& controller);

// The path (relative to the hierarchy root, starting with '/') of `pid` in `controller`'s v1
// hierarchy, from /proc/PID/cgroup.
Result<std::string> CgroupV1PathOf(int pid, const std::string& controller);

class ScopedCgroup {
 public:
  // Makes <root>/<pid's current path>/<name>. Nothing is moved yet.
  static Result<std::unique_ptr<ScopedCgroup>> Create(const std::string& controller, int pid,
                                                      const std::string& name);
  ~ScopedCgroup();
  ScopedCgroup(const ScopedCgroup&) = delete;
  ScopedCgroup& operator=(const ScopedCgroup&) = delete;

  const std::string& dir() const { return dir_; }
  const std::string& original_dir() const { return original_dir_; }

  // Writes `value` to <dir>/<file>; errors name the file and the value.
  Status Write(const std::string& file, const std::string& value) const;
  Result<std::string> Read(const std::string& file) const;

  // Moves the process (all its threads: cgroup.procs) into this cgroup.
  Status MoveTargetIn();
  // Moves the process back (if it still exists) and removes the directory. Idempotent.
  Status Release();

 private:
  ScopedCgroup(std::string controller, int pid, std::string dir, std::string original_dir)
      : controller_(std::move(controller)),
        pid_(pid),
        dir_(std::move(dir)),
        original_dir_(std::move(original_dir)) {}

  std::string controller_;
  int pid_;
  std::string dir_;
  std::string original_dir_;
  bool moved_in_ = false;
  bool released_ = false;
};

}  // namespace loom::monitor
