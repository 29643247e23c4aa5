#include "loom/monitor/inject/stale_cleanup.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <thread>

#include "loom/base/file_util.h"
#include "loom/monitor/inject/cgroup_v1.h"
#include "loom/monitor/inject/command_runner.h"
#include "loom/monitor/inject/process_target.h"

namespace loom::monitor {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string part; std::getline(in, part, sep);) out.push_back(part);
  return out;
}

bool AllDigits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

Status WriteValue(const std::string& path, const std::string& value) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return ErrnoError("open", path, errno);
  const bool ok = std::fputs(value.c_str(), f) >= 0;
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) return ErrnoError("write '" + value + "' to", path, errno);
  return OkStatus();
}

// Thaws / unlimits, moves members to the parent, removes the directory.
Status RemoveStaleCgroup(const std::string& controller, const fs::path& dir) {
  if (controller == "freezer") {
    WriteValue(dir / "freezer.state", "THAWED").IgnoreError();
  } else if (controller == "memory") {
    WriteValue(dir / "memory.limit_in_bytes", "-1").IgnoreError();
  }
  auto procs = ReadFileToString(dir / "cgroup.procs");
  if (procs.ok()) {
    for (const std::string& pid : Split(*procs, '\n')) {
      if (AllDigits(pid)) {
        WriteValue(dir.parent_path() / "cgroup.procs", pid).IgnoreError();
      }
    }
  }
  for (int attempt = 0;; ++attempt) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return OkStatus();
    if (errno != EBUSY || attempt >= 100) return ErrnoError("remove cgroup", dir, errno);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void CleanCgroups(const std::string& controller, StaleCleanupReport* report) {
  auto root = CgroupV1Root(controller);
  if (!root.ok()) return;
  std::vector<fs::path> stale;
  std::error_code ec;
  fs::recursive_directory_iterator it(*root, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it.depth() > 8) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_directory(ec)) continue;
    const std::string name = it->path().filename();
    const int owner = InjectorPidOf(name);
    if (owner < 0) continue;
    it.disable_recursion_pending();  // we never nest injections
    if (ProcessExists(owner)) {
      report->live.push_back("cgroup " + it->path().string());
    } else {
      stale.push_back(it->path());
    }
  }
  for (const fs::path& dir : stale) {
    Status s = RemoveStaleCgroup(controller, dir);
    if (s.ok()) {
      report->removed.push_back("cgroup " + dir.string());
    } else {
      report->errors.push_back(s.ToString());
    }
  }
}

void CleanNftTables(const std::string& netns, StaleCleanupReport* report) {
  auto listed = RunCommand({"nft", "list", "tables"}, netns);
  if (!listed.ok() || listed->exit_code != 0) return;  // no nft: nothing of ours can exist
  const std::string where = netns.empty() ? "" : " in netns " + netns;
  for (const std::string& line : Split(listed->output, '\n')) {
    const std::vector<std::string> words = Split(line, ' ');  // "table inet loom_inject_345_0"
    if (words.size() != 3 || words[0] != "table") continue;
    const int owner = InjectorPidOf(words[2]);
    if (owner < 0) continue;
    const std::string what = "nft table " + words[1] + " " + words[2] + where;
    if (ProcessExists(owner)) {
      report->live.push_back(what);
      continue;
    }
    auto del = RunChecked({"nft", "delete", "table", words[1], words[2]}, netns);
    if (del.ok()) {
      report->removed.push_back(what);
    } else {
      report->errors.push_back(del.status().ToString());
    }
  }
}

}  // namespace

int InjectorPidOf(const std::string& name) {
  std::vector<std::string> parts;
  if (name.rfind("loom-inject-", 0) == 0) {
    parts = Split(name.substr(12), '-');
    if (parts.size() != 3) return -1;  // <target>-<injector>-<n>
  } else if (name.rfind("loom_inject_", 0) == 0) {
    parts = Split(name.substr(12), '_');
    if (parts.size() != 2) return -1;  // <injector>_<n>
  } else {
    return -1;
  }
  for (const std::string& p : parts) {
    if (!AllDigits(p) || p.size() > 9) return -1;
  }
  return std::atoi(parts[parts.size() - 2].c_str());
}

Result<StaleCleanupReport> CleanupStaleInjections(const std::string& netns) {
  LOOM_RETURN_IF_ERROR(CheckNetns(netns));
  StaleCleanupReport report;
  for (const char* controller : {"freezer", "cpu", "memory"}) CleanCgroups(controller, &report);
  CleanNftTables(netns, &report);
  return report;
}

}  // namespace loom::monitor
